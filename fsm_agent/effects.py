"""The one door: everything that is not a pure function of the log so far.

The engine reaches the model, tools, hooks, token counting, stored tool
results, the clock, new ids, the abort flag and queued user input only
through an `Effects`. Live
runs use `LiveEffects`; `fsm_agent.recording` wraps it to write each call and
its result to the session log, and answers each call from the log on replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from attrs import evolve

from fsm_agent.approvals import Approvals
from fsm_agent.events import StreamEvent
from fsm_agent.hooks import HookOutcome, Hooks, NoHooks
from fsm_agent.model import Model, ModelRequest
from fsm_agent.permissions import (
    NO_TERMINAL,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionSettings,
)
from fsm_agent.tools.base import Tool, ToolCall, ToolEnv, ToolInputError, ToolOutcome


class Effects(Protocol):
    def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def count_tokens(self, request: ModelRequest) -> int | None: ...

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome: ...

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome: ...

    async def check_permission(self, request: PermissionRequest) -> Decision: ...

    async def ask_permission(self, question: PermissionAsk) -> str: ...
    async def store_blob(self, name: str, text: str) -> str | None: ...

    def now(self) -> float: ...

    def new_id(self, prefix: str) -> str: ...

    def aborted(self, where: str) -> bool: ...

    def queued_input(self) -> tuple[str, ...]: ...


class AbortSignal:
    """Set by Ctrl-C (or a scripted scenario); read only through `Effects.aborted`."""

    def __init__(self) -> None:
        self._set = False
        self._armed: set[str] = set()
        self._event: asyncio.Event | None = None

    def set(self) -> None:
        self._set = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Return when `set` is called: running tools race against this."""
        if self._event is None:
            self._event = asyncio.Event()
            if self._set:
                self._event.set()
        await self._event.wait()

    def arm(self, where: str) -> None:
        """Be set from the moment the loop checks at `where` (scripted interrupts)."""
        self._armed.add(where)

    def clear(self) -> None:
        self._set = False
        self._armed.clear()
        if self._event is not None:
            self._event.clear()

    def is_set(self, where: str = "") -> bool:
        return self._set or where in self._armed


class Inbox:
    """User input typed while the loop runs, drained in the `attachments` phase."""

    def __init__(self) -> None:
        self._items: list[str] = []

    def put(self, text: str) -> None:
        self._items.append(text)

    def drain(self) -> tuple[str, ...]:
        items, self._items = tuple(self._items), []
        return items


INTERRUPTED = "[Request interrupted by user for tool use]"


def input_error(name: str, error: Any) -> str:
    """The model's view of a `jsonschema.ValidationError` on a tool's input."""
    where = "/".join(str(p) for p in error.absolute_path)
    at = f"the parameter `{where}`" if where else "the input"
    return (
        f"<tool_use_error>InputValidationError: {name} failed due to the following issue:\n"
        f"{at}: {error.message}</tool_use_error>"
    )


def tool_error(text: str) -> ToolOutcome:
    return ToolOutcome.error(f"<tool_use_error>{text}</tool_use_error>")


def interrupted() -> ToolOutcome:
    return ToolOutcome(INTERRUPTED, is_error=True, interrupted=True)


class LiveEffects:
    """The real world: a model, real tools on real files, hooks, the clock."""

    def __init__(
        self,
        model: Model,
        tools: Mapping[str, Tool],
        hooks: Hooks | None = None,
        abort: AbortSignal | None = None,
        inbox: Inbox | None = None,
        approvals: Approvals | None = None,
        blob_dir: Path | None = None,
    ) -> None:
        self.model = model
        self.blob_dir = blob_dir
        import jsonschema  # only live runs validate; replay and --help stay light

        self.tools = dict(tools)
        self._validators = {
            name: jsonschema.validators.validator_for(tool.input_schema)(tool.input_schema)
            for name, tool in self.tools.items()
        }
        self.hooks = hooks or NoHooks()
        self.abort = abort or AbortSignal()
        self.inbox = inbox or Inbox()
        self.approvals = approvals or Approvals(PermissionSettings(), ".")

    async def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The model's stream, cut short the moment the run is interrupted."""
        stream = self.model.stream(request)
        try:
            async for event in stream:
                yield event
                if self.abort.is_set("streaming"):
                    return
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return await self.model.count_tokens(request)

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        """Run one call, cancelled (Bash's process group killed) on Ctrl-C or `env.cancel`."""
        started = time.perf_counter()
        if self.abort.is_set() or (env.cancel is not None and env.cancel.is_set()):
            return interrupted()
        work = asyncio.ensure_future(self._run_tool(call, env))
        stops = [asyncio.ensure_future(self.abort.wait())]
        if env.cancel is not None:
            stops.append(asyncio.ensure_future(env.cancel.wait()))
        try:
            done, _ = await asyncio.wait([work, *stops], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for stop in stops:
                stop.cancel()
        if work in done:
            outcome = work.result()
        else:
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            outcome = interrupted()
        return evolve(outcome, duration_s=round(time.perf_counter() - started, 6))

    async def _run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if tool is None:
            return tool_error(f"Error: No such tool available: {call.name}")
        from jsonschema.exceptions import best_match

        error = best_match(self._validators[call.name].iter_errors(call.input))
        if error is not None:
            return ToolOutcome.error(input_error(call.name, error))
        try:
            return await tool.run(call.input, env)
        except ToolInputError as exc:
            return tool_error(str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return tool_error(f"{call.name} failed: {type(exc).__name__}: {exc}")

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        return await self.hooks.run(event, payload)

    async def check_permission(self, request: PermissionRequest) -> Decision:
        return self.approvals.check(request)

    async def ask_permission(self, question: PermissionAsk) -> str:
        if self.abort.is_set():
            return NO_TERMINAL
        return await self.approvals.ask(question)

    async def store_blob(self, name: str, text: str) -> str | None:
        """Write an oversized tool result next to the session log; None if that failed."""
        if self.blob_dir is None:
            return None
        path = self.blob_dir / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError:
            return None
        return str(path)

    def now(self) -> float:
        return time.time()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{uuid.uuid4().hex[:24]}"

    def aborted(self, where: str) -> bool:
        return self.abort.is_set(where)

    def queued_input(self) -> tuple[str, ...]:
        return self.inbox.drain()
