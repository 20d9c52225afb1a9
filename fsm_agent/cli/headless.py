"""Machine-readable output shaped like `claude -p`: one result object, or JSON lines.

`--output-format json` prints `result_object` once; `--output-format
stream-json` prints a `StreamJson` line per event: `system/init` first, then
`assistant` and `user` (tool_result) messages, our `transition` lines,
`stream_event` lines with raw API events when partial messages are asked
for, and the `result` object last. Subtypes are in `SUBTYPES`.
"""

from __future__ import annotations

import codecs
import json
import re
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from attrs import evolve

from fsm_agent.cli.cost import CostMeter
from fsm_agent.core.codec import block_to_api, message_to_api
from fsm_agent.core.events import (
    DECIDED_BEFORE_ASKING,
    REACTIVE,
    AssistantMessage,
    BlockDelta,
    BlockStart,
    BlockStop,
    CallsDiscarded,
    ContextReport,
    DriverEvent,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelEvent,
    ModelRetry,
    Notice,
    PromptBlocked,
    ResponseUsage,
    StreamEvent,
    SyntheticPrompt,
    ToolFinished,
    ToolRefused,
    ToolUseComplete,
    Transition,
)
from fsm_agent.core.limits import context_window, output_limits
from fsm_agent.core.messages import Message, TextBlock, ToolResultBlock, Usage
from fsm_agent.core.pricing import cost_usd
from fsm_agent.core.validation import unparsable_summary
from fsm_agent.engine.driver import LoopResult
from fsm_agent.engine.machine import Phase
from fsm_agent.engine.ports import INTERRUPTED
from fsm_agent.engine.reasons import PROMPT_BLOCKED

SUBTYPES: dict[str, str] = {
    "completed": "success",
    "prompt_blocked": "success",  # as `claude -p`: the hook did what it is for
    "max_turns": "error_max_turns",
    # as `claude -p`: a run the API's failure ended answers with the error, is_error
    "model_error": "success",
    "prompt_too_long": "success",
    "image_error": "success",
    "blocking_limit": "success",
}
"""Terminal reason → `subtype`; every other reason is `error_during_execution`."""


def subtype_of(reason: str) -> str:
    return SUBTYPES.get(reason, "error_during_execution")


def result_subtype(result: LoopResult) -> str:
    """The `subtype` of `result`: its reason's, but `success` for a Stop hook's stop
    (`stop_hook_prevented` that no Ctrl-C caused), as `claude -p` reports it."""
    return "success" if result.stopped_by_hook else subtype_of(result.reason)


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def run_usage(usage: Usage) -> dict[str, Any]:
    """A run's summed usage with every field of Claude Code's (`NonNullableUsage`): no
    server tools run here, and no cache write asks for the one-hour `ttl`, so every
    write is the default five-minute one."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {
            "ephemeral_1h_input_tokens": 0,
            "ephemeral_5m_input_tokens": usage.cache_creation_input_tokens,
        },
    }


def api_message(message: Message) -> dict[str, Any]:
    """An assistant message as the Messages API returns it; one no API sent (an
    `API Error: …` answer) gets a fresh id, as Claude Code's synthetic messages do."""
    return {
        "id": message.id if message.id is not None else str(uuid.uuid4()),
        "type": "message",
        "role": message.role,
        "model": message.model,
        "content": message_to_api(message)["content"],
        "stop_reason": message.stop_reason,
        "stop_sequence": None,
        "usage": _usage(message.usage or Usage()),
    }


def _compacted(event: ContextReport) -> bool:
    """An autocompaction that replaced the history (a failed or blocked one leaves the
    count as it was), or a reactive compaction (reported only once made): where Claude
    Code's stream marks its `compact_boundary`."""
    if event.level == REACTIVE:
        return True
    return event.level == "autocompact" and event.after < event.before


class RunTally:
    """What the result reports beyond the loop's own result, gathered from driver events:
    the cost (in total and per model), the time spent in model calls (the `api_call`
    phase, entered to left), and the calls a permission denied."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.meter = CostMeter()
        self.clock = clock
        self.api_s = 0.0
        self._api_since: float | None = None
        self.denials: list[dict[str, Any]] = []
        self.path: list[dict[str, str]] = []
        """The edges taken so far: a run that breaks off has no `LoopResult` to tell them."""
        self.turns = 0
        self.user_messages = 0
        """What Claude Code counts in `num_turns` (measured on 2.1.332): the prompt, each
        tool result and each prompt the loop wrote itself (`SyntheticPrompt`)."""
        self._results: set[str] = set()
        self.turns_at_response = 1
        """`num_turns` as it stood when the latest response arrived: where `--max-budget-usd`
        is checked, and so what Claude Code reports of a run the budget stopped."""
        self.stop_reason: str | None = None
        """The last assistant message's of this run (a resumed conversation ends with the
        previous run's, which this run never received)."""

    def __call__(self, event: DriverEvent) -> None:
        self.meter(event)
        if isinstance(event, ResponseUsage):
            self.turns_at_response = 1 + self.user_messages
        if isinstance(event, AssistantMessage):
            self.stop_reason = event.message.stop_reason
        if isinstance(event, Transition):
            self.path.append({"from": event.source, "to": event.dest, "edge": event.edge})
            self.turns = event.turn
            now = self.clock()
            if self._api_since is not None and event.source == "api_call":
                self.api_s += now - self._api_since
                self._api_since = None
            if event.dest == "api_call":
                self._api_since = now
        elif (
            isinstance(event, ToolRefused)
            and event.denied_by is not None
            and event.denied_by not in DECIDED_BEFORE_ASKING
        ):
            block = event.block
            self.denials.append(
                {"tool_name": block.name, "tool_use_id": block.id, "tool_input": block.input}
            )
        elif isinstance(event, CallsDiscarded):
            gone = set(event.ids)
            self.denials = [d for d in self.denials if d["tool_use_id"] not in gone]
            self.user_messages -= len(self._results & gone)
            self._results -= gone
        if isinstance(event, ToolFinished | ToolRefused):
            self._results.add(event.result.tool_use_id)
            self.user_messages += 1
        elif isinstance(event, SyntheticPrompt):
            self.user_messages += 1

    def model_usage(self) -> dict[str, dict[str, Any]]:
        """`modelUsage`, keyed by model, in `claude -p`'s camelCase; `costUSD` null
        when the model has no price (as `total_cost_usd`); `maxOutputTokens` the most a
        request of the run asks of the model (the escalated `max_tokens`)."""
        return {
            model: {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "cacheReadInputTokens": usage.cache_read_input_tokens,
                "cacheCreationInputTokens": usage.cache_creation_input_tokens,
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": context_window(model),
                "maxOutputTokens": output_limits(model)[1],
            }
            for model, (usage, cost) in self.meter.by_model.items()
        }


BUDGET_REASON = "budget_exhausted"
"""The `terminal_reason` Claude Code gives a run `--max-budget-usd` ended: none of its
loop's, whose check it is not (see `Budget`)."""


class Budget:
    """`--max-budget-usd`, checked where Claude Code checks it: outside its loop, in the
    message loop of `-p` and the SDKs, after each message the loop yields, against the
    cost of the whole process so far (every run of an SDK session). Once it is reached
    the run is stopped as an interrupt stops it (the abort flag, an effect, so its log
    replays as any interrupted run: the budget is no state of the machine), and its
    result says why, as Claude Code's: `error_max_budget_usd`, `budget_exhausted`."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.spent = 0.0
        """What the priced responses cost so far (a model without a price adds nothing)."""
        self.reached = False
        """This run was stopped by the budget (set again, if still over, by each run)."""

    def begin(self) -> None:
        self.reached = False

    def watch(self, event: DriverEvent, abort: Any) -> None:
        """After each response, the process's cost against the limit; over it, stop."""
        if not isinstance(event, ResponseUsage):
            return
        self.spent += cost_usd(event.model, event.usage) or 0.0
        if not self.reached and self.spent >= self.limit:
            self.reached = True
            abort.set()

    @property
    def shown(self) -> str:
        """The limit as Claude Code writes it (a JavaScript number: `0.5`, `2`)."""
        return str(int(self.limit)) if self.limit == int(self.limit) else repr(self.limit)

    def text(self) -> str:
        return f"Error: Exceeded USD budget ({self.shown})"

    def mark(self, line: dict[str, Any], tally: RunTally) -> dict[str, Any]:
        """The run's `result` line, as Claude Code's when the budget stopped the run."""
        if not self.reached:
            return line
        line.pop("result", None)
        line.update(
            num_turns=tally.turns_at_response,
            subtype="error_max_budget_usd",
            is_error=True,
            terminal_reason=BUDGET_REASON,
            errors=[f"Reached maximum budget (${self.shown})"],
        )
        return line


def result_object(result: LoopResult, *, duration_ms: int, tally: RunTally) -> dict[str, Any]:
    """The `result` object: `claude -p`'s fields plus our `log` and `path`."""
    subtype = result_subtype(result)
    if subtype == "success":  # an API error answer is what `claude -p` prints last
        outcome: dict[str, Any] = {"result": result.answer}
        outcome["api_error_status"] = result.api_error_status  # null unless one, as 2.1.x
    else:
        outcome = {"errors": [result.error or f"the run ended {result.reason}"]}
    if result.reason == "max_turns":  # as `max_turns_reached` counts: the refused turn
        turns = result.turns + 1
    else:  # the prompt and every user message after it, as Claude Code counts
        turns = 0 if result.reason == PROMPT_BLOCKED else 1 + tally.user_messages
    return _result(
        tally,
        duration_ms,
        subtype=subtype,
        is_error=result.is_error,
        num_turns=turns,
        outcome=outcome,
        stop_reason=tally.stop_reason,
        terminal_reason=result.reason,
        session_id=result.session_id,
        usage=result.usage,
        model=result.model,
        log=result.log_path,
        path=[{"from": s.source, "to": s.dest, "edge": s.edge} for s in result.path],
    )


def broken_off_object(
    error: str,
    *,
    session_id: str,
    model: str,
    log: str | None,
    duration_ms: int,
    tally: RunTally,
) -> dict[str, Any]:
    """The `result` of a run that broke off before a final state (its log could not be
    written): `error_during_execution`, no `terminal_reason`, what it did so far. A
    reader that got `system/init` gets its `result`, as `claude -p` ends a run it began."""
    return _result(
        tally,
        duration_ms,
        subtype="error_during_execution",
        is_error=True,
        num_turns=tally.turns,
        outcome={"errors": [error]},
        stop_reason=tally.stop_reason,
        terminal_reason=None,
        session_id=session_id,
        usage=sum((u for u, _ in tally.meter.by_model.values()), Usage()),
        model=model,
        log=log,
        path=tally.path,
    )


def _result(
    tally: RunTally,
    duration_ms: int,
    *,
    subtype: str,
    is_error: bool,
    num_turns: int,
    outcome: dict[str, Any],
    stop_reason: str | None,
    terminal_reason: str | None,
    session_id: str | None,
    usage: Usage,
    model: str | None,
    log: str | None,
    path: list[dict[str, str]],
) -> dict[str, Any]:
    """The fields of a `result` line, in `claude -p`'s order; `outcome` is the answer
    (`result`) or the `errors`."""
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": duration_ms,
        "duration_api_ms": round(tally.api_s * 1000),
        "num_turns": num_turns,
        **outcome,
        "stop_reason": stop_reason,
        "terminal_reason": terminal_reason,
        "session_id": session_id,
        "uuid": str(uuid.uuid4()),
        "total_cost_usd": tally.meter.total_for(model),
        "usage": run_usage(usage),
        "modelUsage": tally.model_usage(),
        "permission_denials": tally.denials,
        "model": model,
        "log": log,
        "path": path,
    }


def api_event(event: StreamEvent) -> dict[str, Any]:
    """A normalised stream event back in the Messages API's SSE shape."""
    if isinstance(event, MessageStart):
        message: dict[str, Any] = {
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
            "usage": _usage(event.usage),
        }
    assert isinstance(event, MessageStop)
    return {"type": "message_stop"}


_WRAPPED = re.compile(r"\A<tool_use_error>(.*)</tool_use_error>\Z", re.S)
_SAID_AS_IS = ("Error", "InputValidationError:", INTERRUPTED)


def error_result(result: ToolResultBlock) -> str:
    """Claude Code's `toolUseResult` for a call that failed or never ran: the error the
    model got, without its `<tool_use_error>` wrapper, as `Error: …` (a schema failure's
    `InputValidationError: …` and the interrupt's message are said as they are; an input
    that was not JSON by its length alone, as Claude Code 2.1.x says it)."""
    wrapped = _WRAPPED.match(result.text)
    text = wrapped.group(1) if wrapped else result.text
    unparsable = unparsable_summary(text)
    if unparsable is not None:
        return unparsable
    return text if text.startswith(_SAID_AS_IS) else f"Error: {text}"


def error_category(status: int | None) -> str:
    """The `error` of Claude Code's synthetic assistant message for an API error, by
    the response's status (measured: 401 `authentication_failed`, 429 `rate_limit`,
    400 `invalid_request`, 500 and 529 `server_error`)."""
    if status in (401, 403):
        return "authentication_failed"
    if status == 429:
        return "rate_limit"
    if status is not None and status >= 500:
        return "server_error"
    if status is not None and status >= 400:
        return "invalid_request"
    return "unknown"


def retry_category(retry: ModelRetry) -> str:
    """Claude Code's `SDKAssistantMessageError` for a retried request
    (`categorizeRetryableAPIError`): what a reader of `api_retry` switches on."""
    if retry.status == 529 or "overloaded_error" in retry.error or retry.status == 429:
        return "rate_limit"
    if retry.status in (401, 403):
        return "authentication_failed"
    if retry.status >= 408:
        return "server_error"
    return "unknown"


def ascii_only(stream: TextIO) -> bool:
    """Whether `stream` cannot take all of Unicode (a legacy locale, PYTHONIOENCODING=ascii):
    JSON written to it then escapes what it cannot hold, and stays whole and valid."""
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name != "utf-8"
    except LookupError:
        return True


def init_object(
    session_id: str,
    cwd: str,
    tools: Sequence[str],
    model: str,
    permission_mode: str,
    *,
    api_key_source: str = "none",
    mcp_servers: Sequence[dict[str, str]] = (),
    claude_code_version: str | None = None,
    additional_directories: Sequence[str] = (),
) -> dict[str, Any]:
    """`system/init` with every field Claude Code's `SDKSystemMessage` requires, in its
    order: there are no slash commands, agents, skills or plugins here, so those lists
    are empty; `mcp_servers` are the run's (`{name, status, source}`, as Claude Code
    lists them); `claude_code_version` is fsm-agent's own version unless the caller
    names the Claude Code release it stands in for (`fsm-claude`). Of Claude Code
    2.1.x's later fields, those that are true here too: the directories the rules add,
    the cwd it started in, no sandbox; `capabilities` (protocol extensions fsm-agent
    does not speak) and `memory_paths` (an auto-memory it does not have) are left out."""
    return {
        "type": "system",
        "subtype": "init",
        "cwd": cwd,
        "session_id": session_id,
        "tools": list(tools),
        "mcp_servers": list(mcp_servers),
        "model": model,
        "permissionMode": permission_mode,
        "slash_commands": [],
        "apiKeySource": api_key_source,
        "claude_code_version": claude_code_version or version(),
        "output_style": "default",
        "agents": [],
        "skills": [],
        "plugins": [],
        "additional_directories": list(additional_directories),
        "original_cwd": cwd,
        "sandbox_enabled": False,
        "uuid": str(uuid.uuid4()),
    }


def version() -> str:
    """fsm-agent's installed version ("unknown" when run from a tree not installed)."""
    import importlib.metadata as metadata  # about 10 ms (zipfile, email, csv): init lines only

    try:
        return metadata.version("fsm-agent")
    except metadata.PackageNotFoundError:
        return "unknown"


class StreamJson:
    """Writes one JSON line per event, flushed, so a reader sees each as it happens.

    A call started while the model still streams (a concurrency-safe tool)
    can finish before the message that asked for it is whole. Its result
    waits until that `assistant` line is written, so a reader never meets a
    `tool_result` before its `tool_use`; if the message never comes (the
    stream failed), the result is written when the loop leaves `api_call`,
    unless the message was discarded for a fallback model (`CallsDiscarded`):
    then it is never written.
    """

    def __init__(
        self,
        out: TextIO,
        session_id: str,
        *,
        partial: bool = False,
        collect: list[dict[str, Any]] | None = None,
    ) -> None:
        self.out = out
        self.collect = collect
        """Where the lines go instead of `out`, kept for one JSON array at the end."""
        self.session_id = session_id
        self.partial = partial
        self.closed = False
        self.write_error: OSError | None = None
        """Why a write failed other than by the reader going away (a full disk)."""
        self.ascii = ascii_only(out)
        self._unannounced: set[str] = set()
        self._held: list[tuple[str, dict[str, Any]]] = []
        self._started: Usage | None = None
        """The usage of the message being streamed, as its `message_start` gave it: what
        its `message_delta` and each of its blocks' lines report."""

    def write(self, obj: dict[str, Any]) -> None:
        """One line, flushed. A reader that went away stops the output, never the run."""
        if self.collect is not None:
            self.collect.append(obj)
            return
        if self.closed:
            return
        self.guarded(lambda: self.out.write(self.text(obj) + "\n"))

    def text(self, value: Any) -> str:
        """`value` as `claude -p` writes JSON (`JSON.stringify`: no spaces), so a script
        that greps for `"type":"result"` finds it; escaped where `out` cannot encode."""
        return json.dumps(value, ensure_ascii=self.ascii, separators=(",", ":"))

    def guarded(self, write: Callable[[], object]) -> None:
        """`write`, then a flush; a failure closes the output (`write_error` says why,
        unless the reader went away) and never reaches the run."""
        try:
            write()
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
        except OSError as exc:
            self.closed = True
            self.write_error = exc

    def _cumulative(self, event: StreamEvent) -> StreamEvent:
        """A `message_delta` with the whole message's counts, as the API sends them
        (the prompt's input and cache counts repeated beside the output's): a model
        that gives only the output there (older API versions, the scripted model)
        has its `message_start`'s counts filled in, the same the message's usage has."""
        if isinstance(event, MessageDelta):
            started = self._started if self._started is not None else Usage()
            return evolve(event, usage=started.updated_by(event.usage))
        return event

    def _line(self, kind: str, **fields: Any) -> None:
        self.write(self._object(kind, **fields))

    def _object(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, **fields, "session_id": self.session_id, "uuid": str(uuid.uuid4())}

    def _result(self, result: Any, about: dict[str, Any] | str) -> None:
        block = {**block_to_api(result), "is_error": result.is_error}
        line = self._object(
            "user",
            message={"role": "user", "content": [block]},
            parent_tool_use_id=None,
            tool_use_result=about,
        )
        if result.tool_use_id in self._unannounced:
            self._held.append((result.tool_use_id, line))
        else:
            self.write(line)

    def _release(self) -> None:
        held, self._held = self._held, []
        self._unannounced.clear()
        for _, line in held:
            self.write(line)

    def _discard(self, ids: Sequence[str]) -> None:
        gone = set(ids)
        self._held = [(i, line) for i, line in self._held if i not in gone]
        self._unannounced -= gone

    def ended(self, result: LoopResult) -> None:
        """Before the `result`: a run the API's failure ended has its error as an
        assistant message, as Claude Code's synthetic one (model `<synthetic>`)."""
        if not result.ended_on_api_error:
            return
        text = Message("assistant", (TextBlock(result.answer),), stop_reason="stop_sequence")
        message = {**api_message(text), "model": "<synthetic>"}
        self._line(
            "assistant",
            message=message,
            parent_tool_use_id=None,
            error=error_category(result.api_error_status),
        )

    def _per_block(self, message: Message) -> list[dict[str, Any]]:
        """`message` as Claude Code 2.1.x writes it (measured): one `assistant` line per
        content block, each as the block stopped, so with the message's id, no
        `stop_reason` yet and the usage `message_start` gave."""
        whole = api_message(message)
        if not whole["content"] or message.id is None:
            return [whole]
        usage = _usage(self._started) if self._started is not None else whole["usage"]
        return [
            {**whole, "content": [block], "stop_reason": None, "usage": usage}
            for block in whole["content"]
        ]

    def __call__(self, event: DriverEvent) -> None:
        if isinstance(event, ModelEvent) and isinstance(event.event, MessageStart):
            self._started = event.event.usage
        if isinstance(event, ToolUseComplete):
            self._unannounced.add(event.block.id)
        elif isinstance(event, AssistantMessage):
            for message in self._per_block(event.message):
                self._line("assistant", message=message, parent_tool_use_id=None)
            self._release()
        elif isinstance(event, ToolFinished):
            about: dict[str, Any] | str | None = event.response
            if about is None and event.result.is_error:
                about = error_result(event.result)
            elif about is None:
                about = {"tool": event.name, "duration_s": event.duration_s}
            self._result(event.result, about)
        elif isinstance(event, ToolRefused):
            self._result(event.result, error_result(event.result))
        elif isinstance(event, CallsDiscarded):
            self._discard(event.ids)
        elif isinstance(event, SyntheticPrompt):
            line = self._object(
                "user",
                message={"role": "user", "content": [{"type": "text", "text": event.text}]},
                parent_tool_use_id=None,
            )
            self.write({**line, "isSynthetic": True})
        elif isinstance(event, ModelEvent) and isinstance(event.event, ModelRetry):
            retry = event.event
            delay = None if retry.delay_s is None else round(retry.delay_s * 1000)
            self._line(
                "system",
                subtype="api_retry",
                attempt=retry.attempt,
                max_retries=retry.max_retries,
                retry_delay_ms=delay,
                error_status=retry.status or None,
                error=retry_category(retry),
                error_message=retry.error,
            )
        elif isinstance(event, ModelEvent) and self.partial:
            self._line("stream_event", event=api_event(self._cumulative(event.event)),
                       parent_tool_use_id=None)  # fmt: skip
        elif isinstance(event, Transition):
            if event.source == Phase.API_CALL:
                self._release()
            self._line(
                "transition",
                step=event.step,
                **{"from": event.source, "to": event.dest},
                edge=event.edge,
                turn=event.turn,
            )
        elif isinstance(event, PromptBlocked):
            self._line(
                "system",
                subtype=event.kind,
                content=event.text,
                level="warning",
                prevent_continuation=True,
                prompt_submit_outcome={
                    "kind": event.outcome,
                    "prompt_kept": event.prompt_kept,
                    "reason": event.reason,
                },
            )
        elif isinstance(event, Notice):
            self._line("system", subtype=event.kind, text=event.text)
            if isinstance(event, ContextReport) and _compacted(event):
                self._line(
                    "system",
                    subtype="compact_boundary",
                    compact_metadata={"trigger": "auto", "pre_tokens": event.before},
                )
