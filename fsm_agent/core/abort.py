"""Ctrl-C as a flag the loop reads at named points, and a guard that cancels the work
it waits for the moment the flag (or a call's own signal) is set.

A core shape because the engine, the tools and the live side all hold one; only the
engine decides what a set flag means (through `Effects.aborted`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class AbortSignal:
    """Set by Ctrl-C (or a scripted scenario); read only through `Effects.aborted`."""

    def __init__(self) -> None:
        self._set = False
        self._armed: set[str] = set()
        self._listeners: list[Callable[[], None]] = []

    def set(self) -> None:
        self._set = True
        for listener in list(self._listeners):
            listener()

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener` when the flag is set, until `unsubscribe(listener)`."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.remove(listener)

    def arm(self, where: str) -> None:
        """Be set from the moment the loop checks at `where` (scripted interrupts)."""
        self._armed.add(where)

    def clear(self) -> None:
        self._set = False
        self._armed.clear()

    def is_set(self, where: str = "") -> bool:
        return self._set or where in self._armed


class AbortGuard:
    """`with AbortGuard(abort, cancel)`: the awaited work is cancelled the moment
    either signal is set, and the block raises `TimeoutError`.

    It does what an `asyncio.timeout` that the flag expires does (cancel the
    task, then turn that cancellation into `TimeoutError` unless someone
    else also cancelled it) without the timer. Entering and leaving never
    wait, so it is a plain context manager, used inside the awaiting task.
    `cancel` is a call's own signal (its stream failed), watched by the same
    guard: a second task per call to race it would cost more than the rest of
    a trivial call's pipeline. A guard that is not `armed` lets its task be:
    a stream holds one guard and arms it only while it waits for the next event.
    """

    __slots__ = ("_cancelling", "_expired", "_loop", "_task", "abort", "armed", "cancel")

    def __init__(
        self, abort: AbortSignal, cancel: AbortSignal | None = None, *, armed: bool = True
    ) -> None:
        self.abort = abort
        self.cancel = cancel
        self.armed = armed
        self._task: asyncio.Task[Any] | None = None
        self._expired = False

    def _expire(self) -> None:
        task = self._task
        if task is not None and self.armed and not self._expired:
            self._expired = True
            task.cancel()

    def _notify(self) -> None:
        self._loop.call_soon_threadsafe(self._expire)

    def __enter__(self) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._cancelling = task.cancelling()
        self.abort.subscribe(self._notify)
        if self.cancel is not None:
            self.cancel.subscribe(self._notify)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.abort.unsubscribe(self._notify)
        if self.cancel is not None:
            self.cancel.unsubscribe(self._notify)
        task, self._task = self._task, None
        assert task is not None
        if (
            self._expired
            and task.uncancel() <= self._cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc
