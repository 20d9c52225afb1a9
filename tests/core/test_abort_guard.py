"""`AbortGuard`: Ctrl-C (or a call's own cancel signal) cancels the guarded wait, and a
guard leaves nothing behind."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

from fsm_agent.core.abort import AbortGuard, AbortSignal
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome
from fsm_agent.live.effects import LiveEffects
from tests.support.tools import NoModel


def test_setting_the_signal_turns_the_wait_into_timeout_error() -> None:
    async def main() -> None:
        abort = AbortSignal()
        asyncio.get_running_loop().call_later(0.01, abort.set)
        with pytest.raises(TimeoutError), AbortGuard(abort):
            await asyncio.sleep(5)
        assert abort._listeners == []

    asyncio.run(main())


def test_a_guard_that_was_not_triggered_leaves_no_listener_and_no_cycle() -> None:
    """A model stream enters a guard per event: a reference cycle each would be
    garbage for the cyclic collector on every event."""

    async def main() -> int:
        abort = AbortSignal()
        gc.collect()
        gc.disable()
        try:
            for _ in range(50):
                with AbortGuard(abort):
                    await asyncio.sleep(0)
            assert abort._listeners == []
            return gc.collect()
        finally:
            gc.enable()

    assert asyncio.run(main()) == 0


class Sleeper:
    name = "Sleeper"
    description = "sleeps"
    input_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    def __init__(self) -> None:
        self.cancelled = False

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolOutcome("slept")


def test_a_calls_cancel_signal_stops_it_with_an_interrupted_outcome() -> None:
    """A failed stream cancels the calls it started: the call's own signal, not Ctrl-C."""

    async def main() -> tuple[ToolOutcome, Sleeper, AbortSignal, AbortSignal]:
        sleeper = Sleeper()
        abort, cancel = AbortSignal(), AbortSignal()
        effects = LiveEffects(NoModel(), {"Sleeper": sleeper}, abort=abort)
        asyncio.get_running_loop().call_later(0.01, cancel.set)
        env = ToolEnv(cwd=".", cancel=cancel)
        outcome = await asyncio.wait_for(effects.run_tool(ToolCall("t", "Sleeper"), env), 2)
        return outcome, sleeper, abort, cancel

    outcome, sleeper, abort, cancel = asyncio.run(main())
    assert outcome.interrupted and outcome.is_error
    assert sleeper.cancelled
    assert abort._listeners == [] and cancel._listeners == []
    assert not abort.is_set()


def test_a_call_whose_signal_is_already_set_does_not_start() -> None:
    async def main() -> tuple[ToolOutcome, Sleeper]:
        sleeper = Sleeper()
        cancel = AbortSignal()
        cancel.set()
        effects = LiveEffects(NoModel(), {"Sleeper": sleeper})
        outcome = await effects.run_tool(ToolCall("t", "Sleeper"), ToolEnv(cwd=".", cancel=cancel))
        return outcome, sleeper

    outcome, sleeper = asyncio.run(main())
    assert outcome.interrupted and not sleeper.cancelled


class Ticker:
    """A model whose events are ready at once, and one that stalls after its first."""

    def __init__(self, stall: bool = False) -> None:
        self.stall = stall
        self.closed = False

    async def stream(self, request: Any) -> AsyncIterator[str]:
        try:
            for n in range(5):
                if self.stall and n == 1:
                    await asyncio.sleep(5)
                yield f"e{n}"
        finally:
            self.closed = True


def test_an_interrupt_while_the_caller_handles_an_event_ends_the_stream_not_the_caller() -> None:
    """The stream's guard is armed only while it waits: the caller's own awaits are left alone."""

    async def main() -> tuple[list[str], bool, AbortSignal]:
        abort = AbortSignal()
        effects = LiveEffects(Ticker(), {}, abort=abort)
        seen, slept = [], False
        async for event in effects.model_stream(None):  # type: ignore[arg-type]
            seen.append(event)
            if event == "e1":
                abort.set()
                await asyncio.sleep(0.01)
                slept = True
        return seen, slept, abort

    seen, slept, abort = asyncio.run(main())
    assert seen == ["e0", "e1"] and slept
    assert abort._listeners == []


def test_an_interrupt_while_the_stream_waits_ends_the_wait_at_once() -> None:
    """Had the stall run its course, the stream would have gone on to e1..e4."""

    async def main() -> tuple[list[str], Ticker, AbortSignal]:
        abort = AbortSignal()
        model = Ticker(stall=True)
        effects = LiveEffects(model, {}, abort=abort)
        asyncio.get_running_loop().call_later(0.02, abort.set)
        seen = [e async for e in effects.model_stream(None)]  # type: ignore[arg-type]
        return seen, model, abort

    seen, model, abort = asyncio.run(main())
    assert seen == ["e0"]
    assert model.closed and abort._listeners == []
