"""The door: everything that is not a pure function of the log so far, as ports.

The engine reaches the model, tools, hooks, permissions, memory files, the
clock and ids, and the user's input only through these small protocols;
`Effects` is all of them, what a run is given. The live side implements them
(`fsm_agent.live.effects`); `fsm_agent.tape` records each call and its
result to the session log, and answers each call from the log on replay. How
each effect is written to the log is declared once, in `fsm_agent.tape.effects`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import SessionChange
from fsm_agent.core.events import StreamEvent
from fsm_agent.core.mcp import McpServerState
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.permission_types import (
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionsUpdated,
    PermissionUpdate,
)
from fsm_agent.core.tool import INTERRUPTED, ToolCall, ToolEnv, ToolOutcome
from fsm_agent.hooks.outcomes import HookOutcome


class ModelPort(Protocol):
    def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def count_tokens(self, request: ModelRequest) -> int | None: ...


class ToolPort(Protocol):
    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome: ...

    def discarded(self, key: str, cancel: AbortSignal) -> bool:
        """Whether a call started early goes no further: its stream failed (`cancel`)
        before it got its slot, or while its PreToolUse hooks ran. `key` names that
        point of that call within the run."""
        ...

    async def store_blob(self, name: str, text: str) -> str | None: ...


class McpPort(Protocol):
    async def mcp_servers(self) -> tuple[McpServerState, ...]:
        """The run's MCP servers once each has started or failed: their states and
        tools. Their calls are tool calls (`run_tool`), so a replay starts no server."""
        ...


class HookPort(Protocol):
    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome: ...


class PermissionPort(Protocol):
    async def check_permission(self, request: PermissionRequest) -> Decision: ...

    async def ask_permission(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        """The user's answer; `CANCELLED` if `cancel` (the call's own signal) is set first.

        `recheck` is the call as the rules judged it: a question that waits for another
        to be answered is judged again once its turn comes if "always" answers added
        rules meanwhile, and not put when they allow the call (`ALLOW_ONCE`, recorded as
        any answer). None when the question is not the rules' (a PreToolUse hook's ask)."""
        ...

    async def update_permissions(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        """A PermissionRequest hook's `updatedPermissions`, applied to the run's permissions
        (and written to the settings files they name): the mode and directories they leave."""
        ...


class MemoryPort(Protocol):
    async def nested_memory(self, paths: tuple[str, ...]) -> dict[str, str]:
        """Those of `paths` that are CLAUDE.md files (and what they import), by path,
        as the model is shown them."""
        ...


class ClockPort(Protocol):
    def now(self) -> float: ...

    def new_id(self, prefix: str) -> str: ...


class UserInputPort(Protocol):
    def aborted(self, where: str) -> bool: ...

    def queued_input(self) -> tuple[str, ...]: ...

    def session_change(self) -> SessionChange:
        """The mode or model the user set since the last request (`NO_CHANGE` mostly)."""
        ...


class Effects(
    ModelPort,
    ToolPort,
    McpPort,
    HookPort,
    PermissionPort,
    MemoryPort,
    ClockPort,
    UserInputPort,
    Protocol,
):
    """Every port: what a run is given, live, recorded or replayed."""


class Tape:
    """Where transitions and effects go: a log being written, or one being replayed."""

    step: int = 1
    path: Path | None = None

    def transition(self, record: dict[str, Any], state: Any = None) -> None:
        """A transition taken; `state` (the `LoopState` after it) lets a log record what
        changed, and a replay say where its state differs from the recorded one."""
        raise NotImplementedError

    def start(self, messages: list[Any], read_files: dict[str, float] | None = None) -> None:
        raise NotImplementedError

    def result(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def context(self, record: dict[str, Any]) -> None:
        """What a context level did: written to a log, not compared on replay."""

    def wrap(self, effects: Effects | None) -> Effects:
        raise NotImplementedError


def model_failed(error: str) -> str:
    """The result of a call its model call's failure left unanswered (Claude Code fills
    such calls in with the error): not a user interrupt."""
    return f"Tool not run: the model call failed ({error})"


def interrupted() -> ToolOutcome:
    return ToolOutcome(INTERRUPTED, is_error=True, interrupted=True)
