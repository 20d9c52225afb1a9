"""Hook outcomes, and the in-process hook interface the engine calls through effects."""

from __future__ import annotations

from typing import Any, Protocol

from attrs import frozen


@frozen
class HookOutcome:
    """What the hooks for one event decided, merged.

    `blocking_errors` feed back to the model (Stop: `stop_hook_blocking`);
    `prevent_continuation` ends the run (`stop_hook_prevented`, or
    `hook_stopped` during tools).
    """

    blocking_errors: tuple[str, ...] = ()
    prevent_continuation: bool = False
    stop_reason: str | None = None
    additional_context: tuple[str, ...] = ()


NO_OPINION = HookOutcome()


class Hooks(Protocol):
    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome: ...


class NoHooks:
    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        return NO_OPINION
