"""Context management: token accounting and the preprocessing levels.

Each level is a pure function over the messages. Levels that need the model
(autocompact's summary) take their result as an argument, so the phase that
calls them is the only place an effect happens.
"""

from __future__ import annotations

import json

from attrs import evolve, frozen

from fsm_agent.codec import block_to_api
from fsm_agent.messages import Message, TextBlock, ToolResultBlock, system_reminder, user
from fsm_agent.state import Collapse, CollapseStore, Transcript

CHARS_PER_TOKEN = 4
TOOL_RESULT_MAX_CHARS = 100_000
TOOL_RESULT_PREVIEW_CHARS = 2_000


def estimate_tokens(message: Message) -> int:
    """A rough count, as Claude Code makes for messages the API has not counted yet."""
    size = sum(len(json.dumps(block_to_api(b))) for b in message.content)
    return max(1, size // CHARS_PER_TOKEN)


def token_count(messages: Transcript) -> int:
    """Exact usage from the last response plus an estimate for what came after it.

    Walks back only to the last assistant message that carries usage.
    """
    extra = 0
    for message in reversed(messages.items):
        if message.role == "assistant" and message.usage is not None:
            return message.usage.context_tokens + extra
        extra += estimate_tokens(message)
    return extra


def apply_tool_result_budget(messages: Transcript, max_chars: int) -> Transcript:
    """Replace oversized tool results in the newest message by a preview."""
    if not messages.items:
        return messages
    last = messages.items[-1]
    if last.role != "user" or not any(
        isinstance(b, ToolResultBlock) and len(b.text) > max_chars for b in last.content
    ):
        return messages
    content = tuple(
        evolve(b, content=_preview(b.text, max_chars))
        if isinstance(b, ToolResultBlock) and len(b.text) > max_chars
        else b
        for b in last.content
    )
    return Transcript.of((*messages.items[:-1], evolve(last, content=content)))


def _preview(text: str, max_chars: int) -> str:
    head = text[:TOOL_RESULT_PREVIEW_CHARS]
    return f"{head}\n\n[Output too large: {len(text)} characters, showing the first {len(head)}]"


def project_collapses(messages: Transcript, store: CollapseStore) -> Transcript:
    """The read-time view: committed collapses shown as their summaries."""
    if not store.committed:
        return messages
    items = list(messages.items)
    for collapse in sorted(store.committed, key=lambda c: c.start, reverse=True):
        if collapse.end <= len(items):
            items[collapse.start : collapse.end] = [system_reminder(collapse.summary)]
    return Transcript.of(items)


def stage_collapse(messages: Transcript, store: CollapseStore) -> CollapseStore:
    """Stage a collapse of the oldest whole tool rounds, keeping the first and last rounds."""
    boundaries = _round_starts(messages)
    if len(boundaries) < 3:
        return store
    start, end = boundaries[0], boundaries[-1]
    if any(c.start == start and c.end == end for c in store.staged):
        return store
    summary = f"[{end - start} earlier messages collapsed]"
    return evolve(store, staged=(*store.staged, Collapse(start, end, summary)))


def drain_collapses(store: CollapseStore) -> CollapseStore:
    return CollapseStore(staged=(), committed=(*store.committed, *store.staged))


def _round_starts(messages: Transcript) -> list[int]:
    """Indexes where an assistant message starts a round, after the first user message."""
    return [i for i, m in enumerate(messages.items) if m.role == "assistant" and i > 0]


def reactive_compact(messages: Transcript) -> Transcript:
    """Keep the first user message and the last round; summarise what lies between."""
    starts = _round_starts(messages)
    if len(starts) < 2:
        return messages
    first, last = starts[0], starts[-1]
    dropped = last - first
    note = system_reminder(f"[{dropped} earlier messages were compacted to fit the context]")
    return Transcript.of((*messages.items[:first], note, *messages.items[last:]))


@frozen
class UserContext:
    """Context prepended to every request as a meta message, as Claude Code does."""

    values: dict[str, str]

    def message(self) -> Message | None:
        if not self.values:
            return None
        body = "\n".join(f"# {k}\n{v}" for k, v in self.values.items())
        return system_reminder(
            "As you answer the user's questions, you can use the following context:\n"
            f"{body}\n\n"
            "      IMPORTANT: this context may or may not be relevant to your tasks. "
            "You should not respond to this context unless it is highly relevant to your task."
        )


def prepend_user_context(messages: Transcript, context: dict[str, str]) -> Transcript:
    message = UserContext(context).message()
    return messages if message is None else messages.with_prefix((message,))


def append_system_context(system_prompt: str, context: dict[str, str]) -> tuple[str, ...]:
    extra = "\n".join(f"{k}: {v}" for k, v in context.items())
    return tuple(p for p in (system_prompt, extra) if p)


MAX_OUTPUT_RECOVERY_MESSAGE = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. "
    "Break remaining work into smaller pieces."
)


def budget_nudge(spent: int, budget: int) -> str:
    pct = round(100 * spent / budget)
    return (
        f"Stopped at {pct}% of token target ({spent} / {budget}). Keep working — do not summarize."
    )


def meta(text: str) -> Message:
    return user(text, is_meta=True)


__all__ = ["TextBlock"]
