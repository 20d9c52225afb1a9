"""What a tool is, what it is handed, and what it gives back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, overload

from attrs import field, frozen

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.messages import ImageBlock, TextBlock, ToolResultContent

INTERRUPTED = "[Request interrupted by user for tool use]"


@frozen
class ToolCall:
    id: str
    name: str
    input: dict[str, Any] = field(factory=dict, hash=False)


@frozen
class ToolOutcome:
    """A tool's answer. `read_files` maps each absolute path the tool read to its mtime;
    `seen` maps a file whose whole text the model now holds (a full Read, its own Write
    or Edit) to that text's digest, and to "" a file it changed without holding it
    (`fsm_agent.tools.read_state`).

    `stop_reason` is set when a hook stopped the run during this call
    (`continue: false`): the loop then ends `hook_stopped`. `duration_s` is
    measured by the effects door, so a replay shows the recorded timing.
    `interrupted` is set when Ctrl-C (or a cancelled stream) stopped the call.
    `response` is Claude Code's structured result of the tool (its `toolUseResult`,
    e.g. Bash's `{stdout, stderr, interrupted, isImage}`), which PostToolUse hooks
    get as `tool_response`; tools build it only when `ToolEnv.wants_response`.
    """

    content: ToolResultContent
    is_error: bool = False
    read_files: dict[str, float] = field(factory=dict)
    seen: dict[str, str] = field(factory=dict)
    stop_reason: str | None = None
    duration_s: float = 0.0
    interrupted: bool = False
    response: dict[str, Any] | None = None

    @classmethod
    def error(cls, text: str) -> ToolOutcome:
        return cls(text, is_error=True)


class ToolInterrupted(asyncio.CancelledError):
    """A cancelled tool that has something to show for it (a Bash command's output so
    far, which Claude Code keeps): the cancellation goes on, carrying the outcome the
    model reads when the cancel was the user's Ctrl-C."""

    def __init__(self, outcome: ToolOutcome) -> None:
        super().__init__()
        self.outcome = outcome


@frozen
class ToolEnv:
    """Everything a tool run may look at, and nothing else."""

    cwd: str
    read_files: Mapping[str, float] = field(factory=dict)
    seen: Mapping[str, str] = field(factory=dict)
    """The digests of the files whose whole text the model holds (`ToolOutcome.seen`)."""
    model: str = ""
    """The run's configured model: Claude Code's read-before-write rule depends on it."""
    additional_dirs: tuple[str, ...] = ()
    permission_mode: str = "default"
    cancel: AbortSignal | None = field(default=None, eq=False)
    """Set when the call's stream failed: the call is stopped, its outcome `interrupted`."""
    hidden: Callable[[str], bool] | None = field(default=None, eq=False)
    """Files a Read deny rule covers: Glob and Grep leave them out of what they list."""
    wants_response: bool = False
    """Set when a PostToolUse hook will read the call's `ToolOutcome.response`: only
    then is it built (a diff, a copy of the file) and written to the log."""
    readable: Callable[[str], bool] | None = field(default=None, eq=False)
    """Whether the model may Read a file without being asked (the rules and the mode
    allow it): Edit and Write may then change it unread (`fsm_agent.tools.read_state`)."""
    session_env: str | None = None
    """The directory of the session's `CLAUDE_ENV_FILE`s, which a Bash command sources
    first (`fsm_agent.tools.session_env`)."""


class Tool(Protocol):
    """A tool may also have a `close()` (Grep: its search processes), which `close_tools`
    calls when a run ends; a later call must still work."""

    name: str
    description: str
    input_schema: dict[str, Any]

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome: ...


class ToolOutputs(Protocol):
    """The output shapes of a run's tools, for a PostToolUse hook that replaces a call's
    output (`updatedToolOutput`): the app hands them to the engine, which checks a
    replacement against its tool's shape and renders it as the tool renders its own,
    without importing any tool. `structured`: the call's output was an object (a
    built-in tool's `tool_response`), not its text."""

    def problem(self, name: str, structured: bool, value: Any) -> str | None:
        """None when `value` fits, else why not (after "updatedToolOutput that")."""
        ...

    def rendered(self, name: str, structured: bool, value: Any) -> ToolResultContent:
        """What the model reads of a replacement that fits."""
        ...

    def marked_error(self, name: str, structured: bool, value: Any) -> bool:
        """Whether the model reads a replacement that fits as an error."""
        ...


def close_tools(tools: Iterable[Tool]) -> None:
    """End what the tools of a run hold, once it is over (however it ended)."""
    for tool in tools:
        close = getattr(tool, "close", None)
        if close is not None:
            close()


@overload
def integer(input: Mapping[str, Any], key: str) -> int | None: ...
@overload
def integer(input: Mapping[str, Any], key: str, default: int) -> int: ...
def integer(input: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
    """An `integer` parameter as an int: JSON Schema's `integer` admits 2.0 (JSON has
    one number type), which Python's ranges and slices refuse."""
    value = input.get(key)
    return default if value is None else int(value)


class ToolInputError(ValueError):
    """The model gave a tool an input it cannot use; becomes an `is_error` result."""


__all__ = [
    "ImageBlock",
    "TextBlock",
    "Tool",
    "ToolCall",
    "ToolEnv",
    "ToolInputError",
    "ToolOutcome",
    "close_tools",
    "integer",
]
