"""Random access to the steps of a recorded session, for the replay debugger.

Two pieces, both lazy so that a 10,000-step log opens at once:

- `LogIndex` scans the log once for where each line starts, its record kind
  and its step (read from the line's first bytes, not by parsing it), so a
  step's transition and effect records are read from disk only when shown.
- `Stepper` gives the `LoopState` and `Iteration` after any step. States are
  not in the log (it holds only their digests), so they are rebuilt by
  replaying the engine with every effect answered from the log. The replay
  runs on the stepper's own event loop and pauses after the step asked for
  (`Engine.on_step` returns a future the stepper resolves to go on): moving
  forward costs only the steps in between. The last `CACHE` steps are kept,
  so stepping back is free; going back further replays again from the start
  up to the step asked for, which at replay speed (tens of thousands of
  steps a second) is quicker than keeping periodic checkpoints would be
  worth. Memory stays bounded by the cache, whatever the log's length.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from fsm_agent.core import jsontext
from fsm_agent.core.model import ModelRequest
from fsm_agent.engine.driver import Engine, LoopResult, StepInfo, initial_state
from fsm_agent.engine.ports import Effects
from fsm_agent.tape.effects import Effect
from fsm_agent.tape.header import config_of, tools_of
from fsm_agent.tape.log import RECORD_TYPES, LogError, RecordOrder, SessionLog
from fsm_agent.tape.matcher import ReplayEffects, ReplayTape
from fsm_agent.tools.replacements import BUILTIN_OUTPUTS

_HEAD = re.compile(rb'^\{\s*"t"\s*:\s*"(\w+)"\s*(?:,\s*"step"\s*:\s*(\d{1,18})\s*[,}])?')
"""A record's kind and step, read without parsing it; a longer number is parsed whole, so
one Python will not convert is the reader's corrupt record."""
CACHE = 256


class LogIndex:
    """Where each record of a log is, by kind and step; records are read on demand."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.transitions: list[int] = []
        self.effects: dict[int, list[int]] = {}
        self.result_offset: int | None = None
        self.started = False
        """Whether the log has its `start` record: one without holds no run."""
        self.runs: list[tuple[int, int]] = []
        """Each run's `start` record (a session log may hold several): its offset, and
        the step it begins with."""
        self.results: list[int] = []
        """Each run's `result` record, by offset."""
        self.damage: LogError | None = None
        """The first line that is not a record in its place. It is left out of the index
        (or indexed by the step it says), so the debugger still shows the steps before it;
        the replay stops there with this error."""
        self._unverified: dict[int, LogError] = {}
        """Records whose line fails the chain, by offset: reading one raises its error."""
        self._scan()

    def _read(self, offset: int) -> dict[str, Any]:
        if offset in self._unverified:
            raise self._unverified[offset]
        return self.log.read_at(offset)

    def _scan(self) -> None:
        order = RecordOrder(self.log.path)
        chain = self.log.chain()
        with self.log.path.open("rb") as fh:
            pos = len(fh.readline())
            for lineno, raw in enumerate(self.log.lines(fh), start=2):
                offset, pos = pos, pos + len(raw)
                if not raw.endswith(b"\n") and not _whole(raw):
                    if chain.whole_then_more(raw):
                        self.damage = self.damage or chain.changed(lineno, "bytes after its end")
                    break  # a torn last line (a killed run): read up to it, as replay does
                head = _HEAD.match(raw)
                kind, number = (head.group(1).decode(), head.group(2)) if head else ("", None)
                run = None
                try:
                    if kind == "result" or (kind in RECORD_TYPES and number is not None):
                        step = int(number or 0)
                    else:  # read whole, so a record of the wrong shape is named as replay does
                        record = self.log.parse(raw, lineno)
                        kind, step, run = record["t"], record.get("step", 0), record.get("run")
                except LogError as exc:
                    self.damage = self.damage or exc
                    continue
                try:
                    chain.check(raw, lineno)
                except LogError as exc:  # kept in its place, so later steps keep their numbers,
                    self.damage = self.damage or exc  # but never shown: reading it raises this
                    self._unverified[offset] = exc
                try:
                    order(
                        {"t": kind, "step": step, **({} if run is None else {"run": run})}, lineno
                    )
                except LogError as exc:
                    self.damage = self.damage or exc
                if kind == "transition":
                    self.transitions.append(offset)
                elif kind == "effect":
                    self.effects.setdefault(step, []).append(offset)
                elif kind == "result":
                    self.result_offset = offset
                    self.results.append(offset)
                elif kind == "start":
                    self.started = True
                    self.runs.append((offset, len(self.transitions) + 1))
                elif kind == "blob":
                    self.log.blob_line(raw, offset, lineno)

    @property
    def steps(self) -> int:
        return len(self.transitions)

    def transition(self, step: int) -> dict[str, Any]:
        return self._read(self.transitions[step - 1])

    def effects_of(self, step: int) -> list[dict[str, Any]]:
        return [self._read(offset) for offset in self.effects.get(step, [])]

    def first_effect(self, step: int) -> int:
        """The number (1-based, in log order: `--edit-effect K`) of the step's first effect.

        Effects are written in step order, so those of earlier steps come first.
        """
        return 1 + sum(len(offsets) for n, offsets in self.effects.items() if n < step)

    def result(self) -> dict[str, Any] | None:
        return None if self.result_offset is None else self._read(self.result_offset)

    def run_of(self, step: int) -> int:
        """The run (1, 2, …) step `step` belongs to; step 0, the start, is run 1's."""
        return max(1, sum(1 for _, first in self.runs if first <= max(step, 1)))

    def run_end(self, step: int) -> dict[str, Any] | None:
        """The result of the run that ends at `step`, when a later run follows it."""
        run = self.run_of(step)
        if run >= len(self.runs) or self.runs[run][1] != step + 1 or run > len(self.results):
            return None
        return self._read(self.results[run - 1])


def _whole(raw: bytes) -> bool:
    """Whether a line is a whole JSON value: a torn one parses only as far as it goes."""
    try:
        jsontext.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return True


StopWhen = Callable[[StepInfo], bool]


class _WatchedTape(ReplayTape):
    """A replay tape that keeps each model request with its step: the log holds only
    a request's digest and summary, and a compaction request's messages are in no state."""

    def __init__(self, log: SessionLog, run: int = 1) -> None:
        super().__init__(log, run=run)
        self.requests: list[tuple[int, ModelRequest]] = []

    def wrap(self, effects: Effects | None) -> Effects:
        return cast(Effects, _WatchedEffects(self))


class _WatchedEffects(ReplayEffects):
    tape: _WatchedTape

    def _answer(self, effect: Effect, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if effect.kind == "stream":
            self.tape.requests.append((self.tape.step, args[0]))
        return super()._answer(effect, args, kwargs)


class Stepper:
    """Replays a log lazily, pausing after the step asked for; see the module docstring."""

    def __init__(self, path: Path) -> None:
        self.log = SessionLog(path, as_now=True)  # a run may still be writing it
        self.index = LogIndex(self.log)
        self.config = config_of(self.log)
        self.specs = tools_of(self.log)
        self.session_id = str(self.log.header.get("session_id", ""))
        self._loop = asyncio.new_event_loop()
        self._cache: OrderedDict[int, StepInfo] = OrderedDict()
        self._requests: dict[int, list[ModelRequest]] = {}
        self._tape: _WatchedTape | None = None
        self._task: asyncio.Task[None] | None = None
        self._gate: asyncio.Future[None] | None = None
        self._arrived: asyncio.Future[StepInfo | None] | None = None
        self._target = 0
        self._stop_when: StopWhen | None = None
        self.reached = 0
        self.result: LoopResult | None = None
        self.stopped_by: Exception | None = None
        tape = ReplayTape(self.log)
        self.start_messages = tape.messages()
        self.read_files = dict(tape.start_read_files)
        self.initial = initial_state(self.start_messages, self.config, self.read_files)

    def close(self) -> None:
        if not self._loop.is_closed():
            self._cancel()
            self._loop.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def at(self, step: int) -> StepInfo | None:
        """The step's info, or None past where the replay can go (end or divergence)."""
        if step in self._cache:
            self._cache.move_to_end(step)
            return self._cache[step]
        if step <= self.reached:
            self._restart()
        return self._advance(step, None)

    def requests(self, step: int) -> list[ModelRequest]:
        """The model requests the code made at the step (kept as long as its state is)."""
        if self.at(step) is None:
            return []
        return self._requests.get(step, [])

    def run_until(self, after: int, stop_when: StopWhen) -> StepInfo | None:
        """The first step past `after` for which `stop_when` holds; None at the end."""
        if after < self.reached:
            self._restart()
        if after > self.reached:
            self._advance(after, None)
        return self._advance(10**12, stop_when)

    def visit_all(self, visit: Callable[[StepInfo, list[ModelRequest]], None]) -> None:
        """Replay from the start to the end (or the divergence), handing each step and
        the requests made at it to `visit` without pausing: the viewer reads every step
        once, and a pause per step would double the replay's time."""

        def each(info: StepInfo) -> bool:
            visit(info, self._requests.get(info.step, []))
            return False

        self.run_until(0, each)

    def reset(self) -> None:
        """Forget the replay in flight and its cache: Ctrl-C stopped it midway (inside
        the engine, or in the loop between steps), and it starts again when needed."""
        if self._task is not None and self._task.done() and not self._task.cancelled():
            self._task.exception()
        self._restart()

    def _restart(self) -> None:
        self._cancel()
        self._cache.clear()
        self._requests.clear()
        self.reached = 0
        self.result = None
        self.stopped_by = None

    def _cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._loop.run_until_complete(asyncio.wait([self._task]))
        self._task = None
        self._gate = None

    def _advance(self, target: int, stop_when: StopWhen | None) -> StepInfo | None:
        if self._task is not None and self._task.done():
            return None
        self._target, self._stop_when = target, stop_when
        self._arrived = self._loop.create_future()
        if self._task is None:
            self._task = self._loop.create_task(self._main())
        elif self._gate is not None:
            self._gate.set_result(None)
            self._gate = None
        either: list[asyncio.Future[Any]] = [self._arrived, self._task]
        self._loop.run_until_complete(asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED))
        return self._arrived.result() if self._arrived.done() else None

    async def _main(self) -> None:
        """Each run of the log in turn (a session log may hold several), its steps
        numbered on from the last run's, as the log numbers them."""
        try:
            for run in range(1, max(1, len(self.index.runs)) + 1):
                tape = self._tape = _WatchedTape(self.log, run)
                config, specs = self.config, self.specs
                messages, read_files = self.start_messages, self.read_files  # `initial`'s
                if run > 1:
                    config = config_of(self.log, tape.header)
                    specs = tools_of(self.log, header=tape.header)
                    messages, read_files = tape.messages(), tape.start_read_files
                engine = Engine(
                    config, tape, None, specs, self.session_id,
                    on_step=self._seen, outputs=BUILTIN_OUTPUTS,
                )  # fmt: skip
                self.result = await engine.run(messages, read_files)
        except Exception as exc:
            self.stopped_by = exc

    async def _seen(self, info: StepInfo) -> None:
        self.reached = info.step
        self._cache[info.step] = info
        if self._tape is not None:
            made = self._tape.requests
            self._requests[info.step] = [r for step, r in made if step == info.step]
            made.clear()
        if len(self._cache) > CACHE:
            gone, _ = self._cache.popitem(last=False)
            self._requests.pop(gone, None)
        stop = info.step >= self._target or (self._stop_when is not None and self._stop_when(info))
        if stop and self._arrived is not None and not self._arrived.done():
            self._gate = self._loop.create_future()
            self._arrived.set_result(info)
            await self._gate
