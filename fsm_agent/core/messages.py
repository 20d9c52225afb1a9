"""Messages and content blocks, shaped like the Anthropic Messages API.

Every class is small and frozen; `fsm_agent.core.codec` turns them into the API's
JSON and back, so nothing else in the package builds dicts by hand.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from attrs import field, fields, frozen
from attrs.validators import ge

Role = Literal["user", "assistant"]


@frozen
class TextBlock:
    type: ClassVar[str] = "text"
    text: str


@frozen
class ThinkingBlock:
    type: ClassVar[str] = "thinking"
    thinking: str
    signature: str = ""


@frozen
class RedactedThinkingBlock:
    type: ClassVar[str] = "redacted_thinking"
    data: str


@frozen
class ImageSource:
    media_type: str
    data: str
    type: str = "base64"


@frozen
class ImageBlock:
    type: ClassVar[str] = "image"
    source: ImageSource


@frozen
class ToolUseBlock:
    type: ClassVar[str] = "tool_use"
    id: str
    name: str
    input: dict = field(factory=dict, hash=False)


ToolResultContent = str | tuple[TextBlock | ImageBlock, ...]


@frozen
class ToolResultBlock:
    type: ClassVar[str] = "tool_result"
    tool_use_id: str
    content: ToolResultContent = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


ContentBlock = (
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ImageBlock | ToolUseBlock | ToolResultBlock
)


@frozen
class Usage:
    """Token counts, as the API reports them: never negative. A count read from a
    scenario or a log is checked as it is read (`check_counts`), not each time the
    loop adds two `Usage`s, which it does several times an iteration."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    def updated_by(self, delta: Usage) -> Usage:
        """The usage after a `message_delta`'s cumulative counts, taken as Claude Code
        takes them: each one above zero. The API repeats the prompt's counts there; a
        compatible server may send them only there, or leave them at zero."""
        return Usage(
            delta.input_tokens or self.input_tokens,
            delta.output_tokens or self.output_tokens,
            delta.cache_creation_input_tokens or self.cache_creation_input_tokens,
            delta.cache_read_input_tokens or self.cache_read_input_tokens,
        )

    @property
    def context_tokens(self) -> int:
        """Tokens the context held at this response: what Claude Code counts against the window."""
        return (
            self.input_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
            + self.output_tokens
        )


_NOT_NEGATIVE = ge(0)


def check_counts(usage: Usage) -> Usage:
    """`usage`, if no count is negative (a scenario's or a log's negative count would
    drive the context pipeline with a count no model sends); attrs' `ge` says why not."""
    for attribute in fields(Usage):
        _NOT_NEGATIVE(usage, attribute, getattr(usage, attribute.name))
    return usage


@frozen
class Message:
    """One conversation message.

    `is_meta` marks messages the loop injects (context, nudges, recovery
    prompts); `id`, `model`, `stop_reason` and `usage` are set on assistant
    messages from the API and never sent back.
    """

    role: Role
    content: tuple[ContentBlock, ...]
    is_meta: bool = False
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


def user(text: str, *, is_meta: bool = False) -> Message:
    return Message("user", (TextBlock(text),), is_meta=is_meta)


def reminder_text(text: str) -> str:
    """`text` wrapped the way Claude Code wraps injected context."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def system_reminder(text: str) -> Message:
    """A meta user message of `reminder_text(text)`, with the newline Claude Code's
    context notes end in."""
    return user(reminder_text(text) + "\n", is_meta=True)


def tool_results(results: tuple[ToolResultBlock, ...]) -> Message:
    return Message("user", results)
