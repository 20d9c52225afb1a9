"""`AbortGuard`: Ctrl-C cancels the guarded wait, and a guard leaves nothing behind."""

from __future__ import annotations

import asyncio
import gc

import pytest

from fsm_agent.effects import AbortGuard, AbortSignal


def test_setting_the_signal_turns_the_wait_into_timeout_error() -> None:
    async def main() -> None:
        abort = AbortSignal()
        asyncio.get_running_loop().call_later(0.01, abort.set)
        with pytest.raises(TimeoutError):
            async with AbortGuard(abort):
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
                async with AbortGuard(abort):
                    await asyncio.sleep(0)
            assert abort._listeners == []
            return gc.collect()
        finally:
            gc.enable()

    assert asyncio.run(main()) == 0
