"""Events: what a model stream delivers, and what the driver yields to its caller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

from fsm_agent.core.messages import ContentBlock, Message, ToolResultBlock, ToolUseBlock, Usage

if TYPE_CHECKING:  # core.mcp needs core.model, which needs these events
    from fsm_agent.core.mcp import McpServerState

# --- the model stream, normalised from the API's SSE events -----------------


@frozen
class MessageStart:
    id: str
    model: str
    usage: Usage = Usage()


@frozen
class BlockStart:
    index: int
    block: ContentBlock


DeltaKind = Literal["text", "thinking", "signature", "input_json"]


@frozen
class BlockDelta:
    index: int
    kind: DeltaKind
    delta: str


@frozen
class BlockStop:
    """A content block is complete. `error` is set when a tool_use's JSON did not parse."""

    index: int
    block: ContentBlock
    error: str | None = None


@frozen
class MessageDelta:
    stop_reason: str | None
    usage: Usage = Usage()


@frozen
class MessageStop:
    pass


@frozen
class ModelRetry:
    """The request failed and is sent again, as Claude Code retries (or, status 400 and no
    `max_retries`, a request overflowing the context window is refitted and sent
    again): not part of the message, but the user waiting on a 429's
    `retry-after` should know why nothing comes, and the log what was sent.

    `attempt` is the retry about to go out (1 for the first); `delay_s` is the
    wait before it (None in logs from when the SDK made the retries and backed
    off on its own). `status` is 0 when no response came (a timeout, a lost
    connection). `max_retries` is how many are made in all (None in logs
    written before it was recorded).
    """

    attempt: int
    status: int
    error: str
    delay_s: float | None = None
    max_retries: int | None = None

    @property
    def text(self) -> str:
        if not self.status:
            return f"{self.error}; retry {self.attempt} going out"
        wait = f"in {self.delay_s:g} s" if self.delay_s is not None else "after a backoff"
        return f"the API answered {self.status} ({self.error}); retry {self.attempt} {wait}"


StreamEvent = (
    MessageStart | BlockStart | BlockDelta | BlockStop | MessageDelta | MessageStop | ModelRetry
)


ErrorKind = Literal[
    "prompt_too_long",
    "media",
    "overloaded",
    "api",
    "rate_limit",
    "connection",
    "server",
    "incomplete_stream",
    "invalid_response",
]
"""The kinds of `ModelCallError`: what the loop tells apart in a failed call."""


class ModelCallError(Exception):
    """A model call failed. `kind` is what the loop reacts to.

    Kinds (`ErrorKind`): `prompt_too_long` and `media` are withheld for
    recovery; `overloaded` may switch to the fallback model; `api` is an
    error response recovery cannot fix; `rate_limit`, `connection`,
    `incomplete_stream`, `server` and `invalid_response` end the run with
    `model_error`.
    """

    def __init__(self, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status

    def __reduce__(self) -> tuple[type, tuple[str, str, int | None]]:
        return (type(self), (self.kind, self.message, self.status))


# --- what the driver yields -------------------------------------------------


@frozen
class TextDelta:
    text: str


@frozen
class ThinkingDelta:
    text: str


@frozen
class ToolUseComplete:
    """A tool_use block finished streaming; the streaming executor may start it."""

    block: ToolUseBlock


@frozen
class AssistantMessage:
    """An assistant message is complete (or was cut short) and joins the conversation."""

    message: Message


@frozen
class ResponseUsage:
    """What one model response used, emitted once per response that reported usage.

    A response counts whether or not its message joins the conversation (a
    stream that failed, the overloaded try before a fallback, a compaction
    summary): the run's `usage` adds these up, and the cost prices each one.
    """

    model: str
    usage: Usage


@frozen
class ModelEvent:
    """One raw event of the model's stream, for callers that pass the stream through."""

    event: StreamEvent


@frozen
class ToolStarted:
    block: ToolUseBlock


@frozen
class ToolFinished:
    """`response` is the tool's structured result, when one was asked for
    (`RunConfig.structured_results`, a PostToolUse hook)."""

    result: ToolResultBlock
    name: str
    duration_s: float
    response: dict[str, Any] | None = None


Denier = Literal[
    "rule", "mode", "user", "no_terminal", "permission_request_hook",
    "pre_tool_use_hook", "rule_over_hook",
]  # fmt: skip
"""Who refused a call: a deny rule, the mode (dontAsk), the user, no terminal to ask,
a PermissionRequest hook; or, before the permission check, a PreToolUse hook's deny
or a deny rule overriding a PreToolUse hook's allow."""

DECIDED_BEFORE_ASKING: frozenset[Denier] = frozenset({"rule_over_hook"})
"""Refusals `permission_denials` leaves out: a deny rule overriding a PreToolUse hook's
allow. A PreToolUse hook's own deny is listed, as Claude Code 2.1.x lists it (measured
by tests/conformance)."""


@frozen
class ToolRefused:
    """A call answered without running: a bad input, a hook, a permission, a stop.

    `denied_by` names who said no when a permission was refused: `claude -p` lists as
    `permission_denials` only what its permission check (`canUseTool`) refused, so a
    reader must tell those apart from a PreToolUse hook's deny (`DECIDED_BEFORE_ASKING`).
    """

    block: ToolUseBlock
    result: ToolResultBlock
    denied_by: Denier | None = None


@frozen
class CallsDiscarded:
    """The message that asked for these calls was dropped (its model was overloaded and
    a fallback model answers instead): the calls were cancelled, and what they
    reported is no part of the run, as Claude Code discards its streaming executor."""

    ids: tuple[str, ...]


@frozen
class Transition:
    step: int
    source: str
    dest: str
    edge: str
    turn: int


@frozen
class Notice:
    """Something the loop did that a user may want to see: compaction, retry, fallback."""

    kind: str
    text: str


@frozen
class PromptBlocked(Notice):
    """A UserPromptSubmit hook ended the run before the loop began: `text` is what Claude
    Code answers in its place (`result`), `reason` the hook's own words. `outcome` is
    `blocked_by_hook` (the prompt is erased) or `stopped_by_hook` (`continue: false`:
    the prompt is kept in the conversation)."""

    reason: str
    outcome: str

    @property
    def prompt_kept(self) -> bool:
        return self.outcome == "stopped_by_hook"


REACTIVE = "reactive_compact"
"""The level of a reactive compaction, made after the API refused a request."""


@frozen
class ContextReport(Notice):
    """What one context level did, with the token count before and after it: a
    preprocessing level, or a reactive compaction (`REACTIVE`)."""

    level: str
    before: int
    after: int


@frozen
class McpReady:
    """The run's MCP servers have started (or failed to): what stream-json's `system/init`
    line lists, and the tools they add."""

    servers: tuple[McpServerState, ...]


@frozen
class SyntheticPrompt:
    """A user message the loop wrote itself to send the model on (a `max_tokens`
    recovery, a Stop hook's block, the token budget's nudge): Claude Code's stream-json
    shows it as a `user` line marked `isSynthetic`, and counts it in `num_turns`."""

    text: str


DriverEvent = (
    TextDelta
    | ThinkingDelta
    | ToolUseComplete
    | AssistantMessage
    | ResponseUsage
    | ModelEvent
    | ToolStarted
    | ToolFinished
    | ToolRefused
    | CallsDiscarded
    | Transition
    | Notice
    | ContextReport
    | McpReady
    | SyntheticPrompt
)
