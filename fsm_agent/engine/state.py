"""What the loop carries, and what one iteration learns.

`LoopState` survives iterations and is rebuilt whole at every Continue edge
(`fsm_agent.engine.actions`); `Iteration` is the per-iteration scratch that
starts fresh each time round; `Facts` is what a phase found out, read only by
the guards in `fsm_agent.engine.machine` (with the run's configuration).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any, Literal

from attrs import field, frozen
from cattrs.gen import make_dict_unstructure_fn, override

from fsm_agent.context.collapse import CollapseStore
from fsm_agent.core.codec import converter, unstructure_hook
from fsm_agent.core.events import PromptBlocked
from fsm_agent.core.jsontext import canonical
from fsm_agent.core.messages import Message, ToolResultBlock, ToolUseBlock, Usage
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.reasons import Continue


@frozen
class ToolContext:
    """What tools need to run: the workspace, the model, files read so far."""

    cwd: str
    model: str
    permission_mode: str = "default"
    """Never read: calls are judged in `LoopState.permissions.mode`. It stays because
    every recorded state digest holds it."""
    read_files: dict[str, float] = field(factory=dict)
    memory_checked: tuple[str, ...] = ()
    """Nested CLAUDE.md paths already looked for, so each is shown at most once."""
    seen: dict[str, str] = field(factory=dict)
    """The digests of the files whose whole text the model holds, "" for one it changed
    without holding it (`ToolOutcome.seen`). Absent from a state digest while empty, as
    in every log written before it was kept; a run starts with none."""


@frozen
class Permissions:
    """The permission mode calls are judged in, the mode a PermissionRequest hook's
    `setMode` asked for (it holds from the next group of calls on, so calls running
    together are judged in one mode, live and on replay), and the directories beyond
    the workspace the tools may use (a hook may add some)."""

    mode: str = "default"
    next_mode: str = "default"
    additional_directories: tuple[str, ...] = ()

    def updated(self, mode: str | None, directories: tuple[str, ...] | None) -> Permissions:
        """As a hook's updates leave them: a mode for the next group, directories now."""
        return Permissions(
            self.mode,
            self.next_mode if mode is None else mode,
            self.additional_directories if directories is None else directories,
        )

    def next_group(self) -> Permissions:
        """For the next group of calls: the mode a hook asked for holds from now."""
        if self.mode == self.next_mode:
            return self
        return Permissions(self.next_mode, self.next_mode, self.additional_directories)


@frozen
class AutoCompactTracking:
    compacted: bool = False
    turn_counter: int = 0
    consecutive_failures: int = 0


@frozen
class BudgetTracker:
    """Token-budget continuation bookkeeping (Claude Code's budgetTracker)."""

    continuation_count: int = 0
    last_delta_tokens: int = 0
    last_output_tokens: int = 0


@frozen
class LoopState:
    """The seed's ten fields, plus the four Claude Code keeps in module state.

    `collapse`, `budget` and `usage` live in mutable module or closure state
    in Claude Code; here they are fields so that a state is whole and a
    replay can rebuild it step by step. `stop_hook_blocks` counts consecutive
    `stop_hook_blocking` continues, as Claude Code's `stopHookBlockingCount`:
    every other continue resets it, and a block past the cap (8) is overridden.
    `permissions` is what the tool calls are judged by, as the run's hooks left it,
    so a fork and the debugger carry and show it.
    """

    messages: Transcript
    tool_context: ToolContext
    auto_compact_tracking: AutoCompactTracking | None = None
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    max_output_tokens_override: int | None = None
    pending_tool_use_summary: str | None = None
    """The tool round just run (names), taken up by the next round: only `next_turn` sets it."""
    stop_hook_active: bool = False
    stop_hook_blocks: int = 0
    turn_count: int = 1
    transition: Continue | None = None
    collapse: CollapseStore = CollapseStore()
    budget: BudgetTracker = BudgetTracker()
    usage: Usage = Usage()
    permissions: Permissions = Permissions()

    def digest(self, start: Permissions | None = None) -> str:
        """A digest of the whole state, recorded at every step. `permissions` counts only
        where it differs from `start` (the run's first): the digests in logs of
        engines whose state did not hold it then still match."""
        fields = _digested()(self)
        _LAST_DIGESTED[:] = [self, dict(fields)]
        if start is not None and self.permissions != start:
            fields["permissions"] = _unstructure_permissions(self.permissions)
        payload = self.messages.digest.encode() + canonical(fields)
        return hashlib.sha256(payload).hexdigest()[:16]


_LAST_DIGESTED: list[Any] = [None, {}]
"""The last state `digest` turned into data, and that data: a log's state delta, made
right after for the same state, takes it rather than making it again."""


def digested_fields(state: LoopState, *, with_permissions: bool = True) -> dict[str, Any]:
    """Every field of `state` but its messages, as plain data (permissions whole, unless
    left out): what a log's state deltas hold, and reports compare by name."""
    last, known = _LAST_DIGESTED
    fields = dict(known) if last is state else _digested()(state)
    if with_permissions:
        fields["permissions"] = _unstructure_permissions(state.permissions)
    return fields


@functools.cache
def _digested() -> Callable[[LoopState], dict[str, Any]]:
    """Every field but the transcript, whose own chained digest stands for it, and the
    permissions (`LoopState.digest`), each one whole (defaults too): one cattrs hook,
    made on first use."""
    return make_dict_unstructure_fn(
        LoopState,
        converter,
        _cattrs_omit_if_default=False,
        messages=override(omit=True),
        permissions=override(omit=True),
    )


_unstructure_permissions = unstructure_hook(Permissions)


Withheld = Literal["prompt_too_long", "media"]


@frozen
class Iteration:
    """Per-iteration scratch: starts fresh each time round the loop.

    Phases fill it in; Continue edges read it to build the next `LoopState`;
    terminal edges read it to build the final messages.
    """

    messages_for_query: Transcript
    model: str
    collapse: CollapseStore
    token_count: int = 0
    auto_compact_tracking: AutoCompactTracking | None = None
    assistant_messages: tuple[Message, ...] = ()
    tool_use_blocks: tuple[ToolUseBlock, ...] = ()
    invalid_tool_inputs: dict[str, str] = field(factory=dict)
    stop_reason: str | None = None
    withheld: Withheld | None = None
    withheld_message: str | None = None
    """The API's words for the withheld error: what the user is told if recovery fails."""
    not_compacted: str | None = None
    """Why reactive compaction could not change the refused request (nothing older than
    the last round, a PreCompact hook's block): the user is told with the error."""
    api_error: str | None = None
    api_error_status: int | None = None
    """The HTTP status of the API error the iteration met (`api_error`, a model error,
    a withheld one), when a response carried one."""
    model_error: str | None = None
    streamed_calls: tuple[str, ...] = ()
    """The tool_use ids a failed stream completed: the calls a fallback discards."""
    tool_results: tuple[ToolResultBlock, ...] = ()
    read_files: dict[str, float] = field(factory=dict)
    seen: dict[str, str] = field(factory=dict)
    permissions: Permissions | None = None
    """As the turn's tool calls left them, when they ran: the next state takes them."""
    hook_stop_reason: str | None = None
    attachments: tuple[str, ...] = ()
    memory_checked: tuple[str, ...] = ()
    memory_forgotten: bool = False
    """A compaction summarised the messages that showed nested CLAUDE.md files:
    they are shown again when a file in their directory is next read."""
    usage: Usage = Usage()
    prompt_blocked: PromptBlocked | None = None
    """What a UserPromptSubmit hook answered in the model's place, when it refused the
    prompt (the first iteration only): `preprocess` then ends the run."""


@frozen
class Facts:
    """What a phase found out. Guards read these, the state and the run's configuration."""

    prompt_blocked: bool = False
    """A UserPromptSubmit hook refused the run's prompt: no call is made."""
    over_hard_limit: bool = False
    overloaded: bool = False
    model: str | None = None
    """The model a failed call went to: the fallback guard switches only to another."""
    model_error: str | None = None
    aborted: bool = False
    needs_follow_up: bool = False
    withheld: Withheld | None = None
    collapses_staged: int = 0
    nothing_to_compact: bool = False
    """Reactive compaction would leave the refused request as it is (nothing older than
    the last round, no image to strip, or a PreCompact hook blocked it): its retry
    would be refused the same way."""
    truncated: bool = False
    at_output_limit: bool = False
    """The cut request already asked for as many tokens as the escalated retry would:
    escalating would send the same request again."""
    api_error: str | None = None
    hook_prevented: bool = False
    stop_reason: str | None = None
    blocking_errors: tuple[str, ...] = ()
    stop_context: tuple[str, ...] = ()
    budget_nudge: str | None = None

    @property
    def stop_blocked(self) -> bool:
        """A Stop hook asked the model to go on (a block, or context to go on with)."""
        return bool(self.blocking_errors or self.stop_context)


NO_FACTS = Facts()
"""A phase that found nothing out: every guard takes its edge's usual way."""

facts = functools.lru_cache(maxsize=256)(Facts)
"""`Facts(...)`, each distinct one made once: a phase's facts take few shapes, and a
frozen class of this many fields is dear to build on every step."""
