"""The machine's names: its phases (states), why an iteration goes round again, why a run
ends, and what kind each edge is.

Apart from the table (`fsm_agent.engine.machine`) so that the state, which records the
last Continue reason, and the table, whose guards read the state, need not import
each other.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    PREPROCESS = "preprocess"
    BLOCKING_LIMIT_CHECK = "blocking_limit_check"
    API_CALL = "api_call"
    ABORT_CHECK = "abort_check"
    RECOVERY = "recovery"
    STOP_HOOKS = "stop_hooks"
    TOOL_EXECUTION = "tool_execution"
    ATTACHMENTS = "attachments"
    CONTINUATION = "continuation"


class Continue(StrEnum):
    """Why an iteration went round again: `LoopState.transition`."""

    NEXT_TURN = "next_turn"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    COLLAPSE_DRAIN_RETRY = "collapse_drain_retry"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"


class Terminal(StrEnum):
    """Why the loop ended; each is also the name of a final state."""

    COMPLETED = "completed"
    BLOCKING_LIMIT = "blocking_limit"
    PROMPT_TOO_LONG = "prompt_too_long"
    IMAGE_ERROR = "image_error"
    MODEL_ERROR = "model_error"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    STOP_HOOK_PREVENTED = "stop_hook_prevented"
    HOOK_STOPPED = "hook_stopped"
    MAX_TURNS = "max_turns"


class Kind(StrEnum):
    """What taking an edge does: the driver reads it at every step.

    A `continue` edge builds the next `LoopState` and starts a fresh iteration;
    a `terminal` edge ends the run; a `retry` edge redoes its phase on a changed
    iteration (the fallback model); a `phase` edge moves on within the iteration.
    """

    CONTINUE = "continue"
    TERMINAL = "terminal"
    RETRY = "retry"
    PHASE = "phase"


PROMPT_BLOCKED = "prompt_blocked"
"""The final state of a run whose prompt a UserPromptSubmit hook refused. Not one of the
loop's Terminal reasons: Claude Code ends such a run in `processUserInput`, before
`query()`; the machine takes it as the first edge it tries, so a run's path always says
how it ended."""

CONTINUE_REASONS = frozenset(c.value for c in Continue)
TERMINAL_REASONS = frozenset(t.value for t in Terminal)
MODEL_FALLBACK = "model_fallback"
