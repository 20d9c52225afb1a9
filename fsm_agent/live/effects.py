"""The live side of the door: a model, real tools on real files, hooks, the clock.

`LiveEffects` implements every port of `fsm_agent.engine.ports.Effects`; a
recording wraps it to write each call and its result to the session log.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import evolve

from fsm_agent.core.abort import AbortGuard, AbortSignal
from fsm_agent.core.config import NO_CHANGE, SessionChange
from fsm_agent.core.events import StreamEvent
from fsm_agent.core.mcp import McpServerState, is_mcp, tool_name
from fsm_agent.core.messages import ImageBlock, TextBlock
from fsm_agent.core.model import Model, ModelRequest
from fsm_agent.core.permission_types import (
    CANCELLED,
    NO_TERMINAL,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionSettings,
    PermissionsUpdated,
    PermissionUpdate,
)
from fsm_agent.core.tool import (
    Tool,
    ToolCall,
    ToolEnv,
    ToolInputError,
    ToolInterrupted,
    ToolOutcome,
)
from fsm_agent.core.validation import input_problem
from fsm_agent.engine.ports import interrupted
from fsm_agent.hooks.outcomes import INTERRUPTED_HOOKS, HookOutcome, Hooks, NoHooks
from fsm_agent.live.approvals import Approvals
from fsm_agent.live.memory_files import read_nested
from fsm_agent.policy.permissions import tool_removed

if TYPE_CHECKING:  # the mcp SDK under it takes seconds to import: only MCP runs load it
    from fsm_agent.live.mcp_servers import McpServers


class Inbox:
    """User input typed while the loop runs, drained in the `attachments` phase."""

    def __init__(self) -> None:
        self._items: list[str] = []
        self._change = NO_CHANGE

    def put(self, text: str) -> None:
        self._items.append(text)

    def drain(self) -> tuple[str, ...]:
        items, self._items = tuple(self._items), []
        return items

    def change(self, **changed: str) -> None:
        """A mode or model set while the run goes, for its next request (the latest wins)."""
        self._change = evolve(self._change, **changed)

    def take_change(self) -> SessionChange:
        change, self._change = self._change, NO_CHANGE
        return change


def _wrong_outcome(outcome: object) -> str | None:
    """What is wrong with a tool's answer (a caller's own tool, say), which the log
    could not hold: a tool that answers wrongly fails its call, as one that raises."""
    if not isinstance(outcome, ToolOutcome):
        return f"it returned {type(outcome).__name__}, not a ToolOutcome"
    content = outcome.content
    if isinstance(content, str) or (
        isinstance(content, tuple) and all(isinstance(b, TextBlock | ImageBlock) for b in content)
    ):
        return None
    return (
        f"its ToolOutcome's content is {type(content).__name__}, "
        "not a str or a tuple of TextBlock and ImageBlock"
    )


def tool_error(text: str) -> ToolOutcome:
    return ToolOutcome.error(f"<tool_use_error>{text}</tool_use_error>")


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
        mcp: McpServers | None = None,
    ) -> None:
        self.mcp = mcp
        self.model = model
        self.blob_dir = blob_dir
        self.tools = dict(tools)
        self.hooks = hooks or NoHooks()
        self.abort = abort or AbortSignal()
        self.inbox = inbox or Inbox()
        self.approvals = Approvals(PermissionSettings(), ".") if approvals is None else approvals

    async def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The model's stream, cut short the moment the run is interrupted.

        Each wait for the next event is guarded, so Ctrl-C ends a wait for
        the model (a slow first token, a stalled stream) at once. One guard
        serves the whole stream, armed only while waiting: an interrupt that
        comes while the caller handles an event leaves the caller alone, and
        the stream stops before the next wait.
        """
        stream = self.model.stream(request)
        guard = AbortGuard(self.abort, armed=False)
        try:
            with guard:
                while not self.abort.is_set("streaming"):
                    guard.armed = True
                    try:
                        event = await anext(stream)
                    except StopAsyncIteration:
                        return
                    finally:
                        guard.armed = False
                    yield event
        except TimeoutError:
            if not self.abort.is_set("streaming"):
                raise
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return await self.model.count_tokens(request)

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        """Run one call; Ctrl-C or `env.cancel` (a failed stream) cancels it.

        A cancelled Bash command's process group is killed; the outcome is an
        `interrupted` error result, recorded like any other: after Ctrl-C, what the
        command printed until then (`ToolInterrupted`), as Claude Code keeps it.
        """
        started = time.perf_counter()
        cancel = env.cancel
        if self.abort.is_set() or (cancel is not None and cancel.is_set()):
            return interrupted()
        hidden = self.approvals.hidden
        if hidden is not None:
            env = evolve(env, hidden=hidden)
        if call.name in ("Edit", "Write"):
            env = evolve(env, readable=self.approvals.readable(env.permission_mode))
        try:
            with AbortGuard(self.abort, cancel):
                outcome = await self._run_tool(call, env)
        except (TimeoutError, ToolInterrupted) as exc:
            if not (self.abort.is_set("tools") or (cancel is not None and cancel.is_set())):
                raise
            outcome = interrupted()
            if isinstance(exc, ToolInterrupted) and self.abort.is_set("tools"):
                outcome = exc.outcome
        return evolve(outcome, duration_s=round(time.perf_counter() - started, 6))

    async def _run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if tool is None:
            return tool_error(f"Error: No such tool available: {call.name}")
        # An MCP tool's input is its server's to check, as Claude Code leaves it.
        problem = None if is_mcp(call.name) else input_problem(call.name, tool.input_schema,
                                                                call.input)  # fmt: skip
        if problem is not None:
            return ToolOutcome.error(problem)
        try:
            outcome = await tool.run(call.input, env)
        except ToolInputError as exc:
            return tool_error(str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return tool_error(f"{call.name} failed: {type(exc).__name__}: {exc}")
        wrong = _wrong_outcome(outcome)
        return outcome if wrong is None else tool_error(f"{call.name} failed: {wrong}")

    async def mcp_servers(self) -> tuple[McpServerState, ...]:
        """Wait for the servers started with the run; their tools join the run's, but for
        those a bare deny rule takes out (`mcp__git`, `mcp__git__git_commit`), as Claude
        Code never offers them."""
        if self.mcp is None:
            return ()
        settings = self.approvals.settings
        states = tuple(
            evolve(s, tools=tuple(
                t for t in s.tools if not tool_removed(settings, tool_name(s.name, t.name))
            ))
            for s in await self.mcp.states()
        )  # fmt: skip
        for tool in self.mcp.tools():
            if not tool_removed(settings, tool.name):
                self.tools[tool.name] = tool
        return states

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        """Run the hooks of `event`; Ctrl-C cancels them at once.

        A cancelled command's process group is killed (as a Bash call's is),
        and the outcome says `interrupted`. Once the run is interrupted no
        hook starts: a slow hook would make Ctrl-C wait again.
        """
        if self.abort.is_set():
            return INTERRUPTED_HOOKS
        written = _written_file(event, payload)
        before = _mtime(written)
        try:
            with AbortGuard(self.abort):
                outcome = await self.hooks.run(event, payload)
        except TimeoutError:
            if not self.abort.is_set():
                raise
            return INTERRUPTED_HOOKS
        after = _mtime(written)
        if written is not None and before is not None and after is not None and after != before:
            outcome = evolve(outcome, files_changed=((written, after),))
        return outcome

    async def check_permission(self, request: PermissionRequest) -> Decision:
        return self.approvals.check(request)

    async def ask_permission(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        """The user's answer. A question whose call is cancelled (its stream failed) is
        withdrawn at once, waiting or not: the answer `CANCELLED`, and the prompter is
        told (`approvals.withdrawn`) so it can take its question off the screen."""
        if self.abort.is_set():
            return NO_TERMINAL
        if cancel is None:
            return await self.approvals.ask(question, recheck=recheck)
        if cancel.is_set():
            return CANCELLED
        try:
            with AbortGuard(cancel):
                return await self.approvals.ask(question, cancel, recheck)
        except TimeoutError:
            if not cancel.is_set():
                raise
            return CANCELLED

    async def update_permissions(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        return self.approvals.update(updates)

    def discarded(self, key: str, cancel: AbortSignal) -> bool:
        return cancel.is_set()

    async def store_blob(self, name: str, text: str) -> str | None:
        """Write an oversized tool result next to the session log; None if that failed.

        A file already there is another result's (a tool_use id used twice): the
        new one gets a name of its own (`-2`, `-3`, …), so no result is lost."""
        if self.blob_dir is None:
            return None
        stem, suffix = Path(name).stem, Path(name).suffix
        n = 1
        try:
            self.blob_dir.mkdir(parents=True, exist_ok=True)
            while True:
                path = self.blob_dir / (name if n == 1 else f"{stem}-{n}{suffix}")
                try:
                    with path.open("x", encoding="utf-8") as file:
                        file.write(text)
                    return str(path)
                except FileExistsError:
                    n += 1
        except OSError:
            return None

    async def nested_memory(self, paths: tuple[str, ...]) -> dict[str, str]:
        return read_nested(paths, Path(self.approvals.home), Path(self.approvals.cwd))

    def now(self) -> float:
        return time.time()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{uuid.uuid4().hex[:24]}"

    def aborted(self, where: str) -> bool:
        return self.abort.is_set(where)

    def queued_input(self) -> tuple[str, ...]:
        return self.inbox.drain()

    def session_change(self) -> SessionChange:
        return self.inbox.take_change()


def _written_file(event: str, payload: Mapping[str, Any]) -> str | None:
    """The file a PostToolUse payload's tool wrote (Edit's and Write's `filePath`), whose
    rewriting by the hooks (a formatter) the outcome reports."""
    response = payload.get("tool_response")
    if event != "PostToolUse" or not isinstance(response, Mapping):
        return None
    path = response.get("filePath")
    return path if isinstance(path, str) and payload.get("tool_name") in ("Edit", "Write") else None


def _mtime(path: str | None) -> float | None:
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
