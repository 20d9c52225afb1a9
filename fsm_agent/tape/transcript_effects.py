"""The door answered from one run of a Claude Code transcript.

Importing a transcript re-enacts each of its runs through the engine: the
model's responses are streamed as the transcript holds them, each tool call
gets the result Claude Code recorded, each Stop hook the outcome the
transcript shows, and the run is interrupted where the user interrupted it.
Recording that run gives a session log the engine replays; what the engine
asked for that the transcript does not hold is noted (`misses`), so the import
can say where fsm-agent's path parts from Claude Code's.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import NO_CHANGE, SessionChange
from fsm_agent.core.events import (
    BlockDelta,
    BlockStart,
    BlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelCallError,
    StreamEvent,
)
from fsm_agent.core.mcp import McpServerState
from fsm_agent.core.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.permission_types import (
    ALLOW_ONCE,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionsUpdated,
    PermissionUpdate,
)
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome
from fsm_agent.engine.ports import interrupted
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome
from fsm_agent.tape.claude_transcript import Response, Run, ToolResult

DELTA_CHARS = 64
TOOL_USE_ERROR = ("<tool_use_error>", "</tool_use_error>")


def _stop_reason(response: Response) -> str:
    if response.stop_reason is not None:
        return response.stop_reason
    calls = any(isinstance(b, ToolUseBlock) for b in response.content)
    return "tool_use" if calls else "end_turn"


UNPARSED = "the tool call's input could not be parsed as JSON"
"""The error of a call whose input was not JSON, when the transcript holds no result."""


def _block_events(
    index: int, block: ContentBlock, unparsed: dict[str, tuple[str, str]]
) -> list[StreamEvent]:
    if isinstance(block, TextBlock):
        pieces = [block.text[i : i + DELTA_CHARS] for i in range(0, len(block.text), DELTA_CHARS)]
        deltas = [BlockDelta(index, "text", p) for p in pieces]
        return [BlockStart(index, TextBlock("")), *deltas, BlockStop(index, block)]
    if isinstance(block, ThinkingBlock):
        start: ContentBlock = ThinkingBlock("")
        deltas = [BlockDelta(index, "thinking", block.thinking)]
        if block.signature:
            deltas.append(BlockDelta(index, "signature", block.signature))
        return [BlockStart(index, start), *deltas, BlockStop(index, block)]
    if isinstance(block, ToolUseBlock):
        raw, error = unparsed.get(block.id, (json.dumps(block.input), None))
        empty = ToolUseBlock(block.id, block.name, {})
        return [
            BlockStart(index, empty),
            BlockDelta(index, "input_json", raw),
            BlockStop(index, block, error),
        ]
    if isinstance(block, RedactedThinkingBlock):
        return [BlockStart(index, block), BlockStop(index, block)]
    return [BlockStart(index, block), BlockStop(index, block)]


def _unparsed(response: Response, results: Mapping[str, ToolResult]) -> dict[str, tuple[str, str]]:
    """Each call whose input was not JSON: its raw text, and the error the engine is to
    answer it with: the words of Claude Code's result (the engine wraps them in
    `<tool_use_error>` as Claude Code did), so the conversation is the transcript's."""
    found = {}
    for use_id, raw in response.unparsed:
        result = results.get(use_id)
        text = result.content if result is not None else None
        if isinstance(text, str) and text.startswith(TOOL_USE_ERROR[0]):
            error = text.removeprefix(TOOL_USE_ERROR[0]).removesuffix(TOOL_USE_ERROR[1])
        else:
            error = UNPARSED
        found[use_id] = (raw, error)
    return found


def response_events(
    response: Response, model: str, results: Mapping[str, ToolResult] | None = None
) -> list[StreamEvent]:
    """The stream a response was, rebuilt: its retries, then its message's events."""
    events: list[StreamEvent] = list(response.retries)
    if response.error is not None:
        return events
    usage = response.usage
    events.append(
        MessageStart(
            response.message_id or f"msg_imported_{response.line}",
            response.model or model,
            Usage(
                input_tokens=usage.input_tokens,
                cache_creation_input_tokens=usage.cache_creation_input_tokens,
                cache_read_input_tokens=usage.cache_read_input_tokens,
                output_tokens=1,
            ),
        )
    )
    unparsed = _unparsed(response, results or {})
    for index, block in enumerate(response.content):
        events.extend(_block_events(index, block, unparsed))
    events.append(MessageDelta(_stop_reason(response), Usage(output_tokens=usage.output_tokens)))
    events.append(MessageStop())
    return events


def _error_kind(status: int | None) -> Any:
    if status in (429,):
        return "rate_limit"
    if status in (529,):
        return "overloaded"
    if status is not None and status >= 500:
        return "server"
    return "api"


class TranscriptEffects:
    """Every port of `fsm_agent.engine.ports.Effects`, answered from one run.

    The run's last response is followed by the interrupt when the user
    interrupted it: streaming, if a response was cut off (its text then ends
    the stream), or during tools, if a result says so.
    """

    def __init__(self, run: Run, model: str, started: float = 0.0) -> None:
        self.run = run
        self.model = model
        self.abort = AbortSignal()
        self.responses = list(run.responses)
        self.calls = 0
        self.stop_hooks = list(run.stop_hooks)
        self.compactions = list(run.compactions)
        self.misses: list[str] = []
        self.used_results: set[str] = set()
        self.started = started
        self._ids = itertools.count(1)

    async def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose == "compact":
            for event in self._compaction(request):
                yield event
            return
        index = self.calls
        self.calls += 1
        if index >= len(self.responses):
            self.misses.append(
                f"the engine made API call {index + 1}; the transcript's run of line "
                f"{self.run.line} has {len(self.responses)}"
            )
            raise ModelCallError(
                "invalid_response",
                f"the transcript has no response {index + 1} (it has {len(self.responses)})",
            )
        response = self.responses[index]
        last = index == len(self.responses) - 1
        calls = [b for b in response.content if isinstance(b, ToolUseBlock)]
        results = [self.run.results.get(b.id) for b in calls]
        if last and self.run.interrupted_while == "streaming":
            self.abort.arm("streaming")
        elif last and self.run.interrupted:
            if not calls or all(r is None for r in results):
                self.abort.arm("streaming")
            elif any(r is None or r.interrupted for r in results):
                self.abort.arm("tools")
        for event in response_events(response, self.model, self.run.results):
            yield event
        if response.error is not None:
            raise ModelCallError(
                _error_kind(response.error_status), response.error, response.error_status
            )

    def _compaction(self, request: ModelRequest) -> list[StreamEvent]:
        """The engine compacts: answered with the summary of Claude Code's compaction
        at this point, if it compacted here."""
        if not self.compactions:
            self.misses.append(
                f"the engine compacted the conversation where the transcript's run of line "
                f"{self.run.line} does not"
            )
            raise ModelCallError("invalid_response", "the transcript has no compaction here")
        summary = self.compactions.pop(0)
        text = TextBlock(f"<summary>{summary}</summary>")
        number = len(self.run.compactions) - len(self.compactions)
        answer = Response(self.run.line, (text,), f"msg_imported_compact_{number}", request.model)
        return response_events(answer, self.model)

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return None

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        result = self.run.results.get(call.id)
        if result is None:
            if self.abort.is_set("tools") or self.abort.is_set("streaming"):
                return interrupted()
            self.misses.append(f"no result for the call {call.id} ({call.name}) in the transcript")
            return ToolOutcome.error(
                f"<tool_use_error>no result in the transcript for {call.id}</tool_use_error>"
            )
        self.used_results.add(call.id)
        if result.interrupted:
            return interrupted()
        response = result.response if env.wants_response and not result.is_error else None
        return ToolOutcome(result.content, is_error=result.is_error, response=response)

    def discarded(self, key: str, cancel: AbortSignal) -> bool:
        return cancel.is_set()

    async def store_blob(self, name: str, text: str) -> str | None:
        return None  # sent whole, as the transcript holds it

    async def mcp_servers(self) -> tuple[McpServerState, ...]:
        """None: a transcript does not record the servers its run had (their tools'
        calls are tool calls like any other, answered from the transcript)."""
        return ()

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        if event == "Stop" and self.stop_hooks:
            return self.stop_hooks.pop(0)
        if event == "UserPromptSubmit" and self.run.prompt_hook is not None:
            return self.run.prompt_hook
        stopped = self.run.tool_hook_stops.get((event, str(payload.get("tool_use_id"))))
        if stopped is not None:
            return HookOutcome(prevent_continuation=True, stop_reason=stopped)
        return NO_OPINION

    async def check_permission(self, request: PermissionRequest) -> Decision:
        return Decision("allow", reason="the transcript shows the call ran")

    async def ask_permission(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        return ALLOW_ONCE

    async def update_permissions(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        return PermissionsUpdated()

    async def nested_memory(self, paths: tuple[str, ...]) -> dict[str, str]:
        return {}

    def now(self) -> float:
        return self.started

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_imported_{next(self._ids):08d}"

    def aborted(self, where: str) -> bool:
        return self.abort.is_set(where)

    def queued_input(self) -> tuple[str, ...]:
        return ()

    def session_change(self) -> SessionChange:
        return NO_CHANGE  # a transcript records no mid-run change of mode or model


def iso_seconds(timestamp: str) -> float:
    """An ISO 8601 timestamp (`…Z`) as seconds since the epoch; 0.0 if it is not one."""
    try:
        return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
