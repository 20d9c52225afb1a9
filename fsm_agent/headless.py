"""Machine-readable output shaped like `claude -p`: one result object, or JSON lines.

`--output-format json` prints `result_object` once; `--output-format
stream-json` prints a `StreamJson` line per event: `system/init` first, then
`assistant` and `user` (tool_result) messages, our `transition` lines,
`stream_event` lines with raw API events when partial messages are asked
for, and the `result` object last. Subtypes are in `SUBTYPES`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any, TextIO

from fsm_agent.codec import block_to_api, message_to_api
from fsm_agent.driver import LoopResult
from fsm_agent.events import (
    AssistantMessage,
    BlockDelta,
    BlockStart,
    BlockStop,
    DriverEvent,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelEvent,
    Notice,
    StreamEvent,
    ToolFinished,
    Transition,
)
from fsm_agent.messages import Message, Usage

PERMISSION_MODE = "default"

SUBTYPES: dict[str, str] = {
    "completed": "success",
    "max_turns": "error_max_turns",
}
"""Terminal reason → `subtype`; every other reason is `error_during_execution`."""


def subtype_of(reason: str) -> str:
    return SUBTYPES.get(reason, "error_during_execution")


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def api_message(message: Message) -> dict[str, Any]:
    """An assistant message as the Messages API returns it."""
    return {
        "id": message.id,
        "type": "message",
        "role": message.role,
        "model": message.model,
        "content": message_to_api(message)["content"],
        "stop_reason": message.stop_reason,
        "stop_sequence": None,
        "usage": _usage(message.usage or Usage()),
    }


def _last_stop_reason(result: LoopResult) -> str | None:
    for message in reversed(result.messages.items):
        if message.role == "assistant":
            return message.stop_reason
    return None


def result_object(
    result: LoopResult, *, duration_ms: int, cost_usd: float | None
) -> dict[str, Any]:
    """The `result` object: `claude -p`'s fields plus our `log` and `path`."""
    subtype = subtype_of(result.reason)
    is_error = result.reason != "completed" or result.error is not None
    obj: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": duration_ms,
        "num_turns": result.turns,
    }
    if subtype == "success":
        obj["result"] = result.text
    else:
        obj["errors"] = [result.error or f"the run ended {result.reason}"]
    obj.update(
        {
            "stop_reason": _last_stop_reason(result),
            "terminal_reason": result.reason,
            "session_id": result.session_id,
            "total_cost_usd": cost_usd,
            "usage": _usage(result.usage),
            "model": result.model,
            "log": result.log_path,
            "path": [{"from": s.source, "to": s.dest, "edge": s.edge} for s in result.path],
        }
    )
    return obj


def api_event(event: StreamEvent) -> dict[str, Any]:
    """A normalised stream event back in the Messages API's SSE shape."""
    if isinstance(event, MessageStart):
        message = {
            "id": event.id,
            "type": "message",
            "role": "assistant",
            "model": event.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(event.usage),
        }
        return {"type": "message_start", "message": message}
    if isinstance(event, BlockStart):
        return {
            "type": "content_block_start",
            "index": event.index,
            "content_block": block_to_api(event.block),
        }
    if isinstance(event, BlockDelta):
        field = {
            "text": "text",
            "thinking": "thinking",
            "signature": "signature",
            "input_json": "partial_json",
        }[event.kind]
        delta = {"type": f"{event.kind}_delta", field: event.delta}
        return {"type": "content_block_delta", "index": event.index, "delta": delta}
    if isinstance(event, BlockStop):
        return {"type": "content_block_stop", "index": event.index}
    if isinstance(event, MessageDelta):
        return {
            "type": "message_delta",
            "delta": {"stop_reason": event.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": event.usage.output_tokens},
        }
    assert isinstance(event, MessageStop)
    return {"type": "message_stop"}


def init_object(session_id: str, cwd: str, tools: Sequence[str], model: str) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "cwd": cwd,
        "tools": list(tools),
        "mcp_servers": [],
        "model": model,
        "permissionMode": PERMISSION_MODE,
        "uuid": str(uuid.uuid4()),
    }


class StreamJson:
    """Writes one JSON line per event, flushed, so a reader sees each as it happens."""

    def __init__(
        self,
        out: TextIO,
        session_id: str,
        *,
        partial: bool = False,
    ) -> None:
        self.out = out
        self.session_id = session_id
        self.partial = partial
        self.closed = False

    def write(self, obj: dict[str, Any]) -> None:
        """One line, flushed. A reader that went away stops the output, never the run."""
        if self.closed:
            return
        try:
            self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.closed = True

    def _line(self, kind: str, **fields: Any) -> None:
        self.write(
            {"type": kind, **fields, "session_id": self.session_id, "uuid": str(uuid.uuid4())}
        )

    def __call__(self, event: DriverEvent) -> None:
        if isinstance(event, AssistantMessage):
            self._line("assistant", message=api_message(event.message), parent_tool_use_id=None)
        elif isinstance(event, ToolFinished):
            block = {**block_to_api(event.result), "is_error": event.result.is_error}
            self._line(
                "user",
                message={"role": "user", "content": [block]},
                parent_tool_use_id=None,
                tool_use_result={"tool": event.name, "duration_s": event.duration_s},
            )
        elif isinstance(event, ModelEvent) and self.partial:
            self._line("stream_event", event=api_event(event.event), parent_tool_use_id=None)
        elif isinstance(event, Transition):
            self._line(
                "transition",
                step=event.step,
                **{"from": event.source, "to": event.dest},
                edge=event.edge,
                turn=event.turn,
            )
        elif isinstance(event, Notice):
            self._line("system", subtype=event.kind, text=event.text)
