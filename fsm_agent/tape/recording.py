"""Recording a live run into its session log: every transition, and every effect's
call and result, as `EFFECTS` declares it.

The effects a phase asks for belong to the step of the transition that follows
the phase; a replay (`fsm_agent.tape.matcher`) counts steps the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from fsm_agent.core.events import ModelCallError, StreamEvent
from fsm_agent.engine.ports import Effects, Tape
from fsm_agent.tape.effects import EFFECTS, Effect, Polls, model_record, same
from fsm_agent.tape.log import LogWriter, MemoryWriter
from fsm_agent.tape.state_diff import StateDeltas

Writer = LogWriter | MemoryWriter


class RecordingTape(Tape):
    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.path = writer.path
        self.step = 1
        self._deltas = StateDeltas()
        self.chained = getattr(writer, "chained", True)

    def start(self, messages: list[Any], read_files: dict[str, float] | None = None) -> None:
        record: dict[str, Any] = {"t": "start", "messages": messages}
        if read_files:
            record["read_files"] = read_files
        self.writer.write(record)

    def transition(self, record: dict[str, Any], state: Any = None) -> None:
        """The transition, and in a chained log what the edge changed of the state (only
        a continue edge does): a replay whose state differs rebuilds the recorded one."""
        line = {"t": "transition", "step": self.step, **record}
        if state is not None and self.chained:
            delta = self._deltas(state)
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
        self.writer.close()

    def wrap(self, effects: Effects | None) -> Effects:
        if effects is None:
            raise ValueError("a recording needs live effects to record")
        return recording(effects, self)


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
