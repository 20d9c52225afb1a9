"""The Agent SDK's control protocol, our side of it: requests to the SDK, answers awaited.

A run asks the SDK (its `can_use_tool` callback, its hook callbacks) by writing a
`control_request` line to stdout and waiting for the `control_response` line with
the same `request_id` on stdin, as the Claude Agent SDKs define it
(`claude_agent_sdk/_internal/query.py`). The line reader runs on a thread of its
own, so an answer is handed to the waiting run's event loop thread-safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Callable
from typing import Any

Send = Callable[[dict[str, Any]], None]
"""Writes one JSON line to the SDK (stdout), whole and flushed, from any thread."""


class ControlError(Exception):
    """The SDK answered a request with an error, or can no longer answer (stdin closed)."""


class ControlChannel:
    """Requests this process makes of the SDK, each waiting for its `control_response`."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed: str | None = None
        """Why no answer can come any more (stdin ended): every later request fails."""

    async def request(
        self, request: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        """The SDK's `response` to `request`; `ControlError` if it answers with an error,
        cannot answer, or takes longer than `timeout` seconds (then told to give up with a
        `control_cancel_request`, as Claude Code does)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        request_id = f"fsm_{next(self._ids)}"
        with self._lock:
            if self.closed is not None:
                raise ControlError(self.closed)
            self._waiting[request_id] = future
        self.send({"type": "control_request", "request_id": request_id, "request": request})
        try:
            return await asyncio.wait_for(future, timeout)
        except (TimeoutError, asyncio.CancelledError):
            self.send({"type": "control_cancel_request", "request_id": request_id})
            raise
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)

    def answer(self, response: Any) -> bool:
        """A `control_response`'s `response` from stdin, handed to the request it answers;
        False when it answers none waiting (unknown, late, or without a `request_id`)."""
        if not isinstance(response, dict):
            return False
        with self._lock:
            future = self._waiting.get(str(response.get("request_id")))
        if future is None:
            return False
        if response.get("subtype") == "error":
            error = ControlError(str(response.get("error") or "the SDK answered with an error"))
            _settle(future, lambda: future.set_exception(error))
        else:
            body = response.get("response")
            result = body if isinstance(body, dict) else {}
            _settle(future, lambda: future.set_result(result))
        return True

    def close(self, why: str) -> None:
        """No answer can come any more: every waiting request fails with `why`."""
        with self._lock:
            self.closed = why
            waiting = list(self._waiting.values())
        for future in waiting:
            _settle(future, lambda f=future: f.set_exception(ControlError(why)))  # type: ignore[misc]


def _settle(future: asyncio.Future[Any], settle: Callable[[], None]) -> None:
    """`settle` the future on its own loop's thread, unless it is done already."""

    def settled() -> None:
        if not future.done():
            settle()

    with contextlib.suppress(RuntimeError):  # its loop has closed: its run is over
        future.get_loop().call_soon_threadsafe(settled)
