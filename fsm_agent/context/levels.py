"""Context management: token accounting and the five preprocessing levels.

Each level is a pure function over the messages. Levels that need the world
(a stored file for the tool-result budget, the model's summary for
autocompact) take its answer as an argument, so the phase that calls them
(`fsm_agent.engine.preprocess`) is the only place an effect happens. See
docs/context.md.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence

from attrs import evolve, frozen

from fsm_agent.context.collapse import Collapse, CollapseStore
from fsm_agent.core import jsontext
from fsm_agent.core.codec import block_to_api
from fsm_agent.core.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    Usage,
    system_reminder,
    user,
)
from fsm_agent.core.transcript import Transcript, message_digest

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 2_000
"""Claude Code's estimate for an image: the API resizes it, so it costs at most about
1,600 tokens however large the file."""
TOOL_RESULT_MAX_CHARS = 100_000
TOOL_RESULT_MAX_CHARS_BY_TOOL: dict[str, int] = {"Bash": 30_000}
"""Tools whose results go to a file sooner, as in Claude Code: Bash's output past
30,000 characters (`BASH_MAX_OUTPUT_LENGTH`)."""
TOOL_RESULTS_PER_MESSAGE_CHARS = 200_000
"""Claude Code's `MAX_TOOL_RESULTS_PER_MESSAGE_CHARS`: the results of one message together."""
UNSTORED_TOOLS = frozenset({"Read"})
"""Tools whose results the per-message budget never stores, as Claude Code's Read
(`maxResultSizeChars: Infinity`): the model would read the stored file back."""
TOOL_RESULT_PREVIEW_CHARS = 2_000
CLEARED = "[Old tool result content cleared]"
COMPACTABLE_TOOLS = frozenset(
    {"Read", "Bash", "Grep", "Glob", "Edit", "Write", "WebFetch", "WebSearch"}
)
MICROCOMPACT_KEEP = 5
SNIP_KEEP_ROUNDS = 2
COMPACT_KEEP_ROUNDS = 2
MAX_AUTOCOMPACT_FAILURES = 3


# --- token accounting ---------------------------------------------------------


def estimate_tokens(message: Message) -> int:
    """A rough count, as Claude Code makes for messages the API has not counted yet:
    the length of each block's compact JSON (`JSON.stringify`'s) over four, and
    `IMAGE_TOKENS` for an image, whose base64 says nothing of what it costs."""
    return max(1, sum(_size(block) for block in message.content) // CHARS_PER_TOKEN)


def _size(block: ContentBlock) -> int:
    """A block's length in characters, an image as `IMAGE_TOKENS` tokens' worth."""
    if isinstance(block, ImageBlock):
        return IMAGE_TOKENS * CHARS_PER_TOKEN
    images = 0
    if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
        shown = tuple(b for b in block.content if not isinstance(b, ImageBlock))
        images = len(block.content) - len(shown)
        block = evolve(block, content=shown)
    return (
        len(jsontext.dumps(block_to_api(block)).decode()) + images * IMAGE_TOKENS * CHARS_PER_TOKEN
    )


def estimate_all(messages: Iterable[Message]) -> int:
    return sum(estimate_tokens(m) for m in messages)


@frozen
class TokenCount:
    """A count and whether it is anchored on a response's exact usage."""

    tokens: int
    exact: bool


def count_tokens(messages: Sequence[Message]) -> TokenCount:
    """Exact usage from the last response plus an estimate for what came after it.

    Walks back only to the last assistant message that carries usage, so the
    cost is that of what was added since the last response, not the history.
    A usage that counts no input anchors nothing: every request has input, so
    it is missing (a compatible server that reports zeros, or no usage), not
    small, and the messages before it are estimated.
    """
    extra = 0
    for message in reversed(messages):
        usage = message.usage
        if message.role == "assistant" and usage is not None and _input_tokens(usage) > 0:
            return TokenCount(usage.context_tokens + extra, True)
        extra += estimate_tokens(message)
    return TokenCount(extra, False)


def _input_tokens(usage: Usage) -> int:
    return usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens


def token_count(messages: Sequence[Message]) -> int:
    return count_tokens(messages).tokens


# --- level 1: tool-result budget ------------------------------------------------


def oversized_results(messages: Transcript, max_chars: int) -> tuple[ToolResultBlock, ...]:
    """Tool results in the newest message too large to send whole: over `max_chars`, or
    over their tool's own size (`TOOL_RESULT_MAX_CHARS_BY_TOOL`), named by the call;
    then, while the others pass `TOOL_RESULTS_PER_MESSAGE_CHARS` together, the largest
    of them (not Read's), as Claude Code holds parallel calls to one budget."""
    if not messages or messages[-1].role != "user":
        return ()
    calls = messages[-2].tool_uses if len(messages) > 1 else ()
    names = {c.id: c.name for c in calls}
    results = [b for b in messages[-1].content if isinstance(b, ToolResultBlock)]
    sizes = [len(b.text) for b in results]
    big = {
        i
        for i, b in enumerate(results)
        if sizes[i] > TOOL_RESULT_MAX_CHARS_BY_TOOL.get(names.get(b.tool_use_id, ""), max_chars)
    }
    total = sum(size for i, size in enumerate(sizes) if i not in big)
    if total > TOOL_RESULTS_PER_MESSAGE_CHARS:  # rare: the sort is not paid every iteration
        for i in sorted(range(len(results)), key=lambda i: sizes[i], reverse=True):
            if total <= TOOL_RESULTS_PER_MESSAGE_CHARS:
                break
            if i not in big and names.get(results[i].tool_use_id) not in UNSTORED_TOOLS:
                big.add(i)
                total -= sizes[i]
    return tuple(results[i] for i in sorted(big))


def blob_name(block: ToolResultBlock) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in block.tool_use_id)
    return f"{safe or 'result'}.txt"


def apply_tool_result_budget(
    messages: Transcript, max_chars: int, stored: Mapping[str, str]
) -> Transcript:
    """Replace each oversized result of the newest message by a preview and its file.

    `stored` maps tool_use ids to where the whole result was written; a
    result that could not be stored is left whole, so nothing is lost.
    """
    big = {b.tool_use_id for b in oversized_results(messages, max_chars)} & stored.keys()
    if not big:
        return messages
    last = messages[-1]
    content = tuple(
        evolve(b, content=persisted_preview(b.text, stored[b.tool_use_id]))
        if isinstance(b, ToolResultBlock) and b.tool_use_id in big
        else b
        for b in last.content
    )
    return messages.replace_from(len(messages) - 1, (evolve(last, content=content),))


def persisted_preview(text: str, path: str) -> str:
    """What the model reads of a stored result, in Claude Code's words
    (`buildLargeToolResultMessage`): its size, its file, and its first 2KB cut at the
    end of a line when one ends past the first half (`generatePreview`), `...` after it
    when there is more."""
    head = text[:TOOL_RESULT_PREVIEW_CHARS]
    more = ""
    if len(text) > len(head):
        end = head.rfind("\n")
        head, more = (head[:end] if end > TOOL_RESULT_PREVIEW_CHARS // 2 else head), "...\n"
    return (
        "<persisted-output>\n"
        f"Output too large ({file_size(len(text))}). Full output saved to: {path}\n\n"
        f"Preview (first {file_size(TOOL_RESULT_PREVIEW_CHARS)}):\n{head}\n"
        f"{more}</persisted-output>"
    )


def file_size(size: int) -> str:
    """Claude Code's `formatFileSize`: `900 bytes`, `1.5KB`, `2KB`, `3.1MB`."""
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f}".removesuffix(".0") + unit
        value /= 1024
    return f"{value:.1f}".removesuffix(".0") + "GB"


# --- rounds -------------------------------------------------------------------------


def round_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of assistant messages after the first message: where a round begins.

    A round is an assistant message and the user messages after it, so
    dropping whole rounds never separates a tool_use from its tool_result.
    """
    return [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]


# --- level 2: snip ------------------------------------------------------------------


def snip(
    messages: Transcript, tokens_to_free: int, keep_rounds: int = SNIP_KEEP_ROUNDS
) -> tuple[Transcript, int]:
    """Drop the oldest whole rounds until `tokens_to_free` is freed; report what was freed.

    The messages before the first round (the prompt) and the last
    `keep_rounds` rounds always stay.
    """
    if tokens_to_free <= 0:
        return messages, 0
    starts = round_starts(messages)
    if len(starts) <= keep_rounds:
        return messages, 0
    items = messages.items
    freed = 0
    cut = starts[0]
    for n in range(len(starts) - keep_rounds):
        end = starts[n + 1]
        freed += estimate_all(items[cut:end])
        cut = end
        if freed >= tokens_to_free:
            break
    head = items[: starts[0]]
    return Transcript.of((*head, *items[cut:])), freed


# --- level 3: microcompact ----------------------------------------------------------


def microcompact(
    messages: Transcript,
    keep: int = MICROCOMPACT_KEEP,
    tools: frozenset[str] = COMPACTABLE_TOOLS,
) -> tuple[Transcript, int]:
    """Clear the content of old results of `tools`, keeping the newest `keep`.

    A result no longer than the marker stays: clearing it would make the
    history longer. Walks back from the end and stops at the first result
    already cleared: every older one was cleared with it, so a run costs what
    was added since.
    """
    items = messages.items
    names: dict[str, str] = {}
    kept = 0
    changed: dict[int, Message] = {}
    done = False
    for i in range(len(items) - 1, -1, -1):
        message = items[i]
        if message.role != "user" or not any(
            isinstance(b, ToolResultBlock) for b in message.content
        ):
            continue
        names.update(_tool_names(items, i))
        content = list(message.content)
        for j in range(len(content) - 1, -1, -1):
            block = content[j]
            if not isinstance(block, ToolResultBlock) or names.get(block.tool_use_id) not in tools:
                continue
            if block.content == CLEARED:
                if kept >= keep:
                    done = True
                    break
                continue
            if kept < keep:
                kept += 1
                continue
            cleared = evolve(block, content=CLEARED)
            if _size(cleared) < _size(block):
                content[j] = cleared
        if tuple(content) != message.content:
            changed[i] = evolve(message, content=tuple(content))
        if done:
            break
    if not changed:
        return messages, 0
    first = min(changed)
    freed = sum(estimate_tokens(items[i]) - estimate_tokens(m) for i, m in changed.items())
    tail = (changed.get(i, items[i]) for i in range(first, len(items)))
    return messages.replace_from(first, tail), freed


def _tool_names(items: Sequence[Message], index: int) -> dict[str, str]:
    """Tool names of the tool_use blocks in the assistant message before `index`."""
    for k in range(index - 1, -1, -1):
        if items[k].role == "assistant":
            return {b.id: b.name for b in items[k].tool_uses}
    return {}


# --- level 4: context collapse -----------------------------------------------------


def project_collapses(
    messages: Transcript, store: CollapseStore
) -> tuple[Transcript, CollapseStore, int]:
    """The read-time view: committed collapses not yet in the view shown as their summaries.

    A collapse applies where its anchors still match and is then marked
    applied: the continuation stores this view, so the next projection has
    nothing to do. Returns the view, the store, and the tokens freed.
    """
    pending = [c for c in store.committed if not c.applied]
    if not pending:
        return messages, store, 0
    items = list(messages.items)
    freed = 0
    first_changed = len(items)
    for collapse in sorted(pending, key=lambda c: c.start, reverse=True):
        if not _anchored(items, collapse):
            continue
        note = system_reminder(collapse.summary)
        freed += estimate_all(items[collapse.start : collapse.end]) - estimate_tokens(note)
        items[collapse.start : collapse.end] = [note]
        first_changed = min(first_changed, collapse.start)
    committed = tuple(evolve(c, applied=True) if not c.applied else c for c in store.committed)
    store = evolve(store, committed=committed)
    if first_changed == len(items) and len(items) == len(messages):
        return messages, store, 0
    return messages.replace_from(first_changed, items[first_changed:]), store, freed


def _anchored(items: Sequence[Message], collapse: Collapse) -> bool:
    if not 0 < collapse.start < collapse.end < len(items):
        return False
    return (
        message_digest(items[collapse.start]) == collapse.first
        and message_digest(items[collapse.end]) == collapse.after
    )


def stage_collapse(messages: Transcript, store: CollapseStore) -> CollapseStore:
    """Stage a collapse of the rounds between the first and the last, for a later drain.

    Finds both ends from the ends of the list, so staging does not walk the
    history; a newer staging replaces an overlapping staged one.
    """
    items = messages.items
    start = next((i for i in range(1, len(items)) if items[i].role == "assistant"), None)
    end = next((i for i in range(len(items) - 1, 0, -1) if items[i].role == "assistant"), None)
    if start is None or end is None or end - start < 2:
        return store
    first, after = message_digest(items[start]), message_digest(items[end])
    if any(c.first == first and c.after == after for c in store.staged):
        return store
    summary = f"[{end - start} earlier messages collapsed]"
    collapse = Collapse(start, end, summary, first, after)
    kept = tuple(c for c in store.staged if c.end <= start or c.start >= end)
    return evolve(store, staged=(*kept, collapse))


def drain_collapses(store: CollapseStore) -> CollapseStore:
    return CollapseStore(staged=(), committed=(*store.committed, *store.staged))


# --- level 5: autocompact ---------------------------------------------------------

COMPACT_SYSTEM_PROMPT = "You are a helpful AI assistant tasked with summarizing conversations."
COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions. Include: the "
    "primary request and intent; key technical concepts; files and code sections examined "
    "or changed; errors and how they were fixed; all user messages; pending tasks; the "
    "current work; and the next step, if any. Wrap your analysis in <analysis> tags and the "
    "summary in <summary> tags."
)
COMPACT_MAX_OUTPUT_TOKENS = 20_000
SUMMARY_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
CONTINUE_INSTRUCTION = (
    "\n\nPlease continue the conversation from where we left it off without asking the "
    "user any further questions. Continue with the last task that you were asked to work on."
)


def compact_request_messages(messages: Transcript) -> Transcript:
    """The history, then the instruction to summarise it."""
    return messages.extend((user(COMPACT_PROMPT),))


def parse_summary(text: str) -> str:
    """The `<summary>` of a compaction answer, without its `<analysis>` scratchpad."""
    text = re.sub(r"<analysis>.*?</analysis>", "", text, flags=re.DOTALL)
    match = re.search(r"<summary>(.*?)</summary>", text, flags=re.DOTALL)
    return (match.group(1) if match else text).strip()


def keep_from(messages: Sequence[Message], max_tokens: int, max_rounds: int) -> int:
    """Where the tail kept verbatim after a compaction starts: whole recent rounds
    worth at most `max_tokens` (estimated), at most `max_rounds` of them."""
    cut = len(messages)
    size = 0
    rounds = 0
    for i in range(len(messages) - 1, 0, -1):
        size += estimate_tokens(messages[i])
        if size > max_tokens:
            break
        if messages[i].role == "assistant":
            cut = i
            rounds += 1
            if rounds >= max_rounds:
                break
    return cut


def apply_compact_summary(messages: Transcript, summary: str, cut: int) -> Transcript:
    """The summary as a meta user message, then the kept tail: what Claude Code sends
    after its compact boundary, which is never sent itself (the session log records
    the compaction as a `context` record).

    The kept messages lose their usage: it counted the old history, so the
    next count is an estimate until the next response.
    """
    tail = tuple(evolve(m, usage=None) for m in messages.items[cut:])
    body = SUMMARY_PREFIX + summary + ("" if tail else CONTINUE_INSTRUCTION)
    return Transcript.of((user(body, is_meta=True), *tail))


def is_compact_summary(message: Message) -> bool:
    return message.is_meta and message.text.startswith(SUMMARY_PREFIX)


# --- reactive compaction ----------------------------------------------------------


def reactive_compact(messages: Transcript) -> Transcript:
    """Keep the first messages and the last round; note what was dropped between.

    Local, without a model call: the request that just failed was already too
    long, and a summary request over the same history would be too.
    """
    starts = round_starts(messages)
    if len(starts) < 2:
        return messages
    first, last = starts[0], starts[-1]
    dropped = last - first
    note = system_reminder(f"[{dropped} earlier messages were compacted to fit the context]")
    tail = tuple(evolve(m, usage=None) for m in messages.items[last:])
    return Transcript.of((*messages.items[:first], note, *tail))


IMAGE_PLACEHOLDER = "[image]"


def strip_images(messages: Transcript) -> Transcript:
    """Every image, in a message or a tool result, as the text `[image]`, as Claude
    Code's compaction strips them: after a media error, the image the API refused
    would fail the retry again. The same transcript when there is none."""
    items = messages.items
    kept = tuple(_without_images(m) for m in items)
    if all(a is b for a, b in zip(kept, items, strict=True)):
        return messages
    return Transcript.of(kept)


NOTHING_OLDER = "nothing older than the last round to compact"


def reactive_compaction(messages: Transcript, images: bool) -> tuple[Transcript, str | None]:
    """What reactive compaction makes of `messages` (after a media error, `images`: the
    images go too), and what it did, in words; None when it leaves them as they are,
    so that a retry would be the refused request again."""
    compacted = reactive_compact(messages)
    done = (
        [] if compacted is messages else [f"compacted {len(messages)} messages to {len(compacted)}"]
    )
    if images:
        unseen = strip_images(compacted)
        if unseen is not compacted:
            compacted = unseen
            done.append(f"images sent as {IMAGE_PLACEHOLDER}")
    return compacted, "; ".join(done) or None


def _without_images(message: Message) -> Message:
    content = tuple(_block_without_images(b) for b in message.content)
    if all(a is b for a, b in zip(content, message.content, strict=True)):
        return message
    return evolve(message, content=content)


def _block_without_images(block: ContentBlock) -> ContentBlock:
    if isinstance(block, ImageBlock):
        return TextBlock(IMAGE_PLACEHOLDER)
    if not isinstance(block, ToolResultBlock) or isinstance(block.content, str):
        return block
    if not any(isinstance(b, ImageBlock) for b in block.content):
        return block
    shown = tuple(
        TextBlock(IMAGE_PLACEHOLDER) if isinstance(b, ImageBlock) else b for b in block.content
    )
    return evolve(block, content=shown)


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
    return messages.with_prefix(_user_prefix(tuple(context.items())))


@functools.lru_cache(maxsize=16)
def _user_prefix(items: tuple[tuple[str, str], ...]) -> Transcript:
    """The user-context message, hashed once: every request of a run sends the same one."""
    message = UserContext(dict(items)).message()
    return Transcript.of(() if message is None else (message,))


def append_system_context(system_prompt: str, context: dict[str, str]) -> tuple[str, ...]:
    """The system blocks: a blank one is left out, as the API refuses text blocks of
    whitespace alone."""
    extra = "\n".join(f"{k}: {v}" for k, v in context.items())
    return tuple(p for p in (system_prompt, extra) if p.strip())


MAX_OUTPUT_RECOVERY_MESSAGE = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. "
    "Break remaining work into smaller pieces."
)


def budget_nudge(spent: int, budget: int) -> str:
    """Claude Code's words: `Math.round` (half up) and en-US thousands separators."""
    pct = math.floor(100 * spent / budget + 0.5)
    return (
        f"Stopped at {pct}% of token target ({spent:,} / {budget:,}). "
        "Keep working — do not summarize."
    )


def meta(text: str) -> Message:
    return user(text, is_meta=True)


__all__ = ["TextBlock"]
