"""Long-lived child processes for jobs that may have to be killed (Grep's regex search).

A child answers jobs one at a time: a job is one JSON line on its stdin, the
answer one JSON line on its stdout. Starting a Python child costs tens of
milliseconds, so `Workers` keeps its children between calls and a later call
costs about a millisecond. A call that times out or is cancelled kills its
child, the one way to stop a regex stuck backtracking with the GIL held; the
next call starts a fresh one.

A child never outlives its parent: `Workers.close` (called when a run ends),
the pool's finalizer (at garbage collection and interpreter exit), the end of
its stdin (the parent died), or, while it is busy, a check every second that
its parent is still the one that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable
from typing import IO, Any

from attrs import define

KEEP_IDLE = 4
"""Idle children kept for later calls: more calls at once start more, which end after."""

ORPHAN_CHECK_S = 1.0


class WorkerDied(RuntimeError):
    """The child ended (a crash, a kill from outside) before it answered."""


@define(eq=False)
class _Child:
    """A child process, and the file holding what it wrote to stderr."""

    proc: subprocess.Popen[bytes]
    err: IO[bytes]


class Workers:
    """The children running `python -P -m MODULE` for one owner (a tool).

    A call takes an idle child or starts one, so concurrent calls never share
    a pipe, and search in parallel as they did when each call started its own
    process; a child goes back to the pool after a clean answer. `close` ends
    the idle children at once and each busy one when its call ends; a later
    call starts afresh.
    """

    def __init__(self, module: str) -> None:
        self.module = module
        self._idle: list[_Child] = []
        self._busy: set[_Child] = set()
        self._retired: set[_Child] = set()
        weakref.finalize(self, _stop_all, self._idle, self._busy)

    @property
    def pids(self) -> tuple[int, ...]:
        """The children alive now, idle or busy."""
        return tuple(c.proc.pid for c in (*self._idle, *self._busy))

    async def run(self, job: Any, timeout: float) -> Any:
        """The answer of a child to `job`; `TimeoutError` after `timeout` seconds,
        `WorkerDied` if the child ended first, `RuntimeError` if the job raised."""
        line = json.dumps(job).encode() + b"\n"
        child = self._take()
        self._busy.add(child)
        try:
            async with asyncio.timeout(timeout):
                reply = await _exchange(child.proc, line)
        except TimeoutError:
            _stop(child)
            raise
        except OSError:
            raise WorkerDied(_why(child)) from None
        except BaseException:
            _stop(child)
            raise
        finally:
            self._busy.discard(child)
            retired = child in self._retired
            self._retired.discard(child)
        try:
            answer = json.loads(reply)
        except ValueError:
            raise WorkerDied(_why(child)) from None
        if retired or len(self._idle) >= KEEP_IDLE:
            _stop(child)
        else:
            self._idle.append(child)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"]

    def close(self) -> None:
        """End the idle children now and the busy ones when their calls end."""
        _stop_all(self._idle, set())
        self._retired = set(self._busy)

    def _take(self) -> _Child:
        while self._idle:
            child = self._idle.pop()
            if child.proc.poll() is None:
                return child
            _stop(child)
        return self._start()

    def _start(self) -> _Child:
        """A child importing this very package: not one in the current directory (`-P`),
        which may be a workspace holding another fsm_agent; told who its parent is."""
        home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH")) if p)
        err = tempfile.TemporaryFile()  # noqa: SIM115 (kept as long as the child lives)
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", self.module, str(os.getpid())],
            bufsize=0,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, "PYTHONPATH": path},
        )
        for pipe in (proc.stdin, proc.stdout):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
        return _Child(proc, err)


async def _exchange(proc: subprocess.Popen[bytes], line: bytes) -> bytes:
    """One job out, one answer line back (b"" if the child ended), on non-blocking pipes
    the event loop watches: no thread waits on a child, and a cancellation is at once."""
    loop = asyncio.get_running_loop()
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin.fileno(), proc.stdout.fileno()
    rest = memoryview(line)
    while rest:
        try:
            rest = rest[os.write(stdin, rest) :]
        except BlockingIOError:
            await _ready(loop.add_writer, loop.remove_writer, stdin)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(stdout, 1 << 16)
        except BlockingIOError:
            await _ready(loop.add_reader, loop.remove_reader, stdout)
            continue
        if not chunk:
            return b""
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


async def _ready(watch: Callable[..., Any], unwatch: Callable[[int], Any], fd: int) -> None:
    """Wait until `fd` can be written (`loop.add_writer`) or read (`loop.add_reader`)."""
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    watch(fd, wake)
    try:
        await ready
    finally:
        unwatch(fd)


def _stop(child: _Child) -> list[str]:
    """Kill and reap `child`, close its pipes, and return the lines it wrote to stderr."""
    proc = child.proc
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()
    lines: list[str] = []
    with contextlib.suppress(OSError, ValueError):
        child.err.seek(0)
        lines = child.err.read().decode("utf-8", errors="replace").strip().splitlines()
    with contextlib.suppress(OSError):
        child.err.close()
    return lines


def _stop_all(idle: list[_Child], busy: set[_Child]) -> None:
    for child in [*idle, *busy]:
        _stop(child)
    idle.clear()


def _why(child: _Child) -> str:
    """What ended `child` before it answered: the last line of its stderr, or its exit status."""
    lines = _stop(child)
    code = child.proc.returncode
    status = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    last = f": {lines[-1]}" if lines else ""
    return f"the search process {status} before it answered{last}"


def serve(handle: Callable[[Any], Any]) -> None:
    """The child's side: answer each job line with `handle(job)` until stdin ends.

    The parent owns the child's life: Ctrl-C in the terminal is the parent's to
    handle (it kills a busy child), so the child ignores SIGINT. Whatever `handle`
    prints goes to stderr, not into the answers.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_when_orphaned()
    out: IO[bytes] = sys.stdout.buffer
    sys.stdout = sys.stderr
    for line in sys.stdin.buffer:
        try:
            answer = {"result": handle(json.loads(line))}
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


def _exit_when_orphaned() -> None:
    """Exit once the parent is gone (killed with SIGKILL, say) even in the middle of a
    search: `re` runs signal handlers while it backtracks, so a timer's handler can.
    The parent names itself on the command line: it may be gone before this runs."""
    parent = int(sys.argv[1])

    def check(signum: int, frame: Any) -> None:
        if os.getppid() != parent:
            os._exit(1)

    signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, ORPHAN_CHECK_S, ORPHAN_CHECK_S)
