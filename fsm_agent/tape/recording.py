"""Recording a live run into its session log: every transition, and every effect's
call and result, as `EFFECTS` declares it.

The effects a phase asks for belong to the step of the transition that follows
the phase; a replay (`fsm_agent.tape.matcher`) counts steps the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

from fsm_agent.core.events import ModelCallError, StreamEvent
from fsm_agent.engine.ports import Effects, Tape
from fsm_agent.tape.effects import EFFECTS, Effect, Polls, model_record, same
from fsm_agent.tape.log import RUN_FIELDS, LogError, LogWriter, MemoryWriter
from fsm_agent.tape.state_diff import StateDeltas

Writer = LogWriter | MemoryWriter


class RecordingTape(Tape):
    def __init__(
        self,
        writer: Writer,
        *,
        first_step: int = 1,
        start_extra: dict[str, Any] | None = None,
        on_result: Callable[[RecordingTape], None] | None = None,
    ) -> None:
        self.writer = writer
        self.path = writer.path
        self.step = first_step
        self._deltas = StateDeltas()
        self.chained = getattr(writer, "chained", True)
        self.start_extra = start_extra or {}
        """A later run of a session log: its number, and its config and tools if new."""
        self.on_result = on_result
        """Set by a `SessionRecorder`, which keeps the log open for the session's next run."""

    def start(self, messages: list[Any], read_files: dict[str, float] | None = None) -> None:
        record: dict[str, Any] = {"t": "start", **self.start_extra, "messages": messages}
        if read_files:
            record["read_files"] = read_files
        self.writer.write(record)

    def transition(self, record: dict[str, Any], state: Any = None) -> None:
        """The transition, and in a chained log what the edge changed of the state (only
        a continue edge does): a replay whose state differs rebuilds the recorded one."""
        line = {"t": "transition", "step": self.step, **record}
        if state is not None and self.chained and state is not self._deltas.state:
            delta = self._deltas(state)  # a phase edge keeps its state: nothing to ask
            if delta is not None:
                line["delta"] = delta
        self.writer.write(line)
        self.step += 1

    def context(self, record: dict[str, Any]) -> None:
        self.writer.write({"t": "context", "step": self.step, **record})

    def effect(self, name: str, request: str, result: Any, args: Any = None) -> None:
        record = {"t": "effect", "step": self.step, "name": name, "request": request}
        if args is not None:
            record["args"] = args
        record["result"] = result
        self.writer.write(record)

    def result(self, record: dict[str, Any]) -> None:
        self.writer.write({"t": "result", **record})
        if self.on_result is not None:
            self.on_result(self)
        else:
            self.writer.close()

    def wrap(self, effects: Effects | None) -> Effects:
        if effects is None:
            raise ValueError("a recording needs live effects to record")
        return recording(effects, self)


class SessionRecorder:
    """One log for the runs of a session (the messages an Agent SDK process is sent):
    the first run writes the header, each later run a `start` with its number (and its
    config and tools when they are not the header's), its steps numbered on from the
    last run's. The log stays open, and locked, until the session `close`s it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: LogWriter | None = None
        self.runs = 0
        self.steps = 0
        self._header: dict[str, Any] = {}
        self.ended = True
        """The last run wrote its result: a next run may follow it in the log."""

    def tape(self, header: dict[str, Any]) -> RecordingTape:
        """The next run's tape; the first creates the log (a `LogError` if it cannot)."""
        if not self.ended:
            raise LogError(f"{self.path}: the session's last run did not end; no run follows")
        extra: dict[str, Any] = {}
        if self.writer is None:
            self.writer = LogWriter(self.path, header)
            self._header = header
        else:
            extra["run"] = self.runs + 1
            extra.update(
                (key, header[key])
                for key in RUN_FIELDS
                if key in header and header[key] != self._header.get(key)
            )
        self.runs += 1
        self.ended = False
        return RecordingTape(
            self.writer, first_step=self.steps + 1, start_extra=extra, on_result=self._ended
        )

    def _ended(self, tape: RecordingTape) -> None:
        self.steps = tape.step - 1
        self.ended = True

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class RecordingEffects:
    """Passes every call to the live effects and writes the call and its result; its
    methods are made from `EFFECTS` below."""

    def __init__(self, inner: Effects, tape: RecordingTape) -> None:
        self.inner = inner
        self.tape = tape
        self._polls = Polls()


def recording(inner: Effects, tape: RecordingTape) -> Effects:
    return cast(Effects, RecordingEffects(inner, tape))


def _writer(
    effect: Effect,
) -> Callable[[RecordingEffects, tuple[Any, ...], dict[str, Any], Any], None]:
    """What writes one call of `effect` and its result, with what the declaration says
    bound once: the recorder runs for every effect of every step."""
    key, name, usual = effect.key, effect.name, effect.usual
    encode = None if effect.encode is same else effect.encode
    polled, sometimes = effect.polled, effect.sometimes

    def write(
        self: RecordingEffects, args: tuple[Any, ...], kwargs: dict[str, Any], value: Any
    ) -> None:
        request, logged = key(*args, **kwargs)
        if polled:  # every poll counts, written or not
            request = self._polls.key(self.tape.step, request)
        if sometimes and value == usual:
            return
        self.tape.effect(name, request, value if encode is None else encode(value), logged)

    return write


def _recorder(effect: Effect) -> Any:
    method = effect.method
    write = _writer(effect)
    if effect.kind == "stream":

        async def stream(self: RecordingEffects, request: Any) -> AsyncIterator[StreamEvent]:
            events: list[StreamEvent] = []
            error: ModelCallError | None = None
            try:
                async for event in getattr(self.inner, method)(request):
                    events.append(event)
                    yield event
            except ModelCallError as exc:
                error = exc
                raise
            finally:
                write(self, (request,), {}, model_record(events, error))

        return stream
    if effect.kind == "sync":

        def call(self: RecordingEffects, *args: Any, **kwargs: Any) -> Any:
            value = getattr(self.inner, method)(*args, **kwargs)
            write(self, args, kwargs, value)
            return value

        return call

    async def acall(self: RecordingEffects, *args: Any, **kwargs: Any) -> Any:
        value = await getattr(self.inner, method)(*args, **kwargs)
        write(self, args, kwargs, value)
        return value

    return acall


for _effect in EFFECTS:
    setattr(RecordingEffects, _effect.method, _recorder(_effect))
