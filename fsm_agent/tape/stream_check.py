"""A recorded model stream's deltas checked against the blocks they build.

The engine takes each block from its `BlockStop`; the deltas before it are what
the user saw arrive (and what a replay shows again). A log whose deltas say one
thing and whose blocks another would replay a run no one saw, so a replay
refuses it as damaged, naming the block and the first place the two part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fsm_agent.core.events import BlockDelta, BlockStart, BlockStop, StreamEvent
from fsm_agent.core.messages import TextBlock, ThinkingBlock, ToolUseBlock
from fsm_agent.tape.divergence import text_diff


def stream_problem(events: Sequence[StreamEvent]) -> str | None:
    """What in `events` is not what its deltas build (block index, field, a short diff
    of the two), or None when every stopped block is what its start and deltas make."""
    open_: dict[int, tuple[object, list[str], list[str]]] = {}
    for event in events:
        if isinstance(event, BlockStart):
            open_[event.index] = (event.block, [], [])
        elif isinstance(event, BlockDelta):
            block = open_.get(event.index)
            if block is None:
                return f"a {event.kind} delta for block {event.index}, which is not open"
            (block[2] if event.kind == "signature" else block[1]).append(event.delta)
        elif isinstance(event, BlockStop):
            start, parts, signatures = open_.pop(event.index, (None, [], []))
            if start is None:
                return f"block {event.index} stops without having started"
            problem = _built(start, "".join(parts), signatures, event)
            if problem is not None:
                return f"block {event.index}'s {problem}"
    return None


def _built(start: object, joined: str, signatures: list[str], stop: BlockStop) -> str | None:
    block = stop.block
    if isinstance(start, TextBlock) and isinstance(block, TextBlock):
        return _same("text", start.text + joined, block.text)
    if isinstance(start, ThinkingBlock) and isinstance(block, ThinkingBlock):
        signature = signatures[-1] if signatures else start.signature
        return _same("thinking", start.thinking + joined, block.thinking) or _same(
            "signature", signature, block.signature
        )
    if isinstance(start, ToolUseBlock) and isinstance(block, ToolUseBlock):
        if (start.id, start.name) != (block.id, block.name):
            return f"tool call is {block.name} {block.id}, started as {start.name} {start.id}"
        if stop.error is not None or not joined.strip():
            return None  # a cut input is stopped empty, with why; no delta keeps the start's
        try:
            built = json.loads(joined)
        except (json.JSONDecodeError, RecursionError):
            return f"input deltas are no JSON, yet it stopped without an error: {joined[:40]!r}"
        if built != block.input:
            return _same("input", json.dumps(built), json.dumps(block.input))
    elif type(start) is not type(block):
        return f"block is a {type(block).__name__}, started as a {type(start).__name__}"
    return None


def _same(field: str, built: str, stopped: str) -> str | None:
    if built == stopped:
        return None
    return f"{field} is not what its deltas build: {text_diff(built, stopped)}"
