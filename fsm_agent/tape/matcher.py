"""The replay matcher: a recorded log read step by step, each effect the code asks for
matched to its record, each transition compared with the recorded one.

An effect is matched by its name and request digest among the recorded effects of
the current step (concurrent tools finish in any order); a tool call's pipeline
effects, anywhere in its iteration's window (the call may have started while the
model streamed). The first difference is a `Divergence`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, cast

from fsm_agent.core.codec import CodecError, structure
from fsm_agent.core.events import StreamEvent
from fsm_agent.core.messages import Message
from fsm_agent.engine.machine import TERMINAL_REASONS
from fsm_agent.engine.ports import Effects, Tape
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome
from fsm_agent.tape.divergence import Divergence, LogEnded, short, short_diff
from fsm_agent.tape.effects import BY_NAME, EFFECTS, TOOL_PIPELINE, Effect, Polls, plain
from fsm_agent.tape.header import config_of
from fsm_agent.tape.log import LogError, SessionLog, no_start, run_header
from fsm_agent.tape.old_logs import (
    LATER_EVENTS,
    blocked_outside_the_machine,
    hooks_had_no_say,
    poll_keys,
)
from fsm_agent.tape.state_diff import Change, parts_of, recorded_state, state_changes


class ReplayTape(Tape):
    """Reads a recorded log step by step and answers effects from it.

    `strict=False` is for the replayed part of a fork, which may run in
    another workspace or session: effects are matched by name (and `args`
    when they agree) rather than request digest, and transitions by edge and
    turn rather than state digest. `edits` maps effect numbers (1-based, in
    log order) to results that replace the recorded ones; `edited` is then
    the number of the last edited effect handed out.
    """

    def __init__(
        self,
        log: SessionLog,
        upto: int | None = None,
        *,
        strict: bool = True,
        edits: Mapping[int, Any] | None = None,
        run: int = 1,
    ) -> None:
        self.log = log
        self.path = log.path
        self.run = run
        """Which run of the log this tape replays (a session of several runs has them one
        after another, their steps numbered on: `first_step` is this run's first)."""
        self.upto = upto
        self.strict = strict
        self.edits = dict(edits or {})
        self.edited: int | None = None
        self.header: dict[str, Any] = log.header
        """The header as this run has it: a later run's `start` holds its own `config` and
        `tools` when they are not the header's."""
        self.next_run = False
        """The log goes on after this run's result with the next run of the session."""
        self._effect_no = 0
        self._has_result = False
        self._result: dict[str, Any] = {}
        self._recorded_steps = 0
        self._unrecorded_steps = 0
        """Steps an older log ends before, with no record (`old_logs`)."""
        self.cut_short = False
        """The file ran out with no `result` record: the recorded run was cut short."""
        self._records: Iterator[tuple[int, dict[str, Any]]] = log.records()
        self._damage: LogError | None = None
        self._ahead: deque[dict[str, Any]] = deque()
        self._pending: dict[tuple[str, str], deque[dict[str, Any]]] = defaultdict(deque)
        self._taken: list[dict[str, Any]] = []
        """The effects of this step already answered, for a report of what it recorded."""
        self._expected: dict[str, Any] | None = None
        self._first: Any = None
        self.start_messages: list[Any] = []
        self.start_line = 0
        self.line: int | None = None
        """The line of the effect `take` handed out last (None for an edited result)."""
        self.start_read_files: dict[str, float] = {}
        self.first_step = 1
        self._read_start()
        self.step = self.first_step
        self._recorded_steps = self.first_step - 1
        hooked = config_of(log, self.header).hooked_events  # damaged: a LogError, no crash
        self.hooked: frozenset[str] | None = None if hooked is None else frozenset(hooked)
        """The events the recording asked hooks about; for any other, the hooks had no say
        (a fork whose live part has more hooks replays its start against this log)."""
        self._load_step()

    def _read_start(self) -> None:
        runs = 0
        for lineno, record in self._records:
            kind = record["t"]
            if kind == "start":
                runs += 1
                if runs < self.run:
                    continue
                self.start_line = lineno
                self.start_messages = record["messages"]
                self.start_read_files = record.get("read_files", {})
                self.header = run_header(self.log.header, record)
                return
            if runs == 0:
                raise Divergence(0, "first record", "start", kind)
            if kind == "transition":
                self.first_step = record["step"] + 1
            elif kind == "effect":
                self._effect_no += 1  # numbered in the whole log's order, as `edits` are
        if runs == 0:
            raise no_start(self.log.path)
        raise LogError(f"{self.log.path}: the log holds {runs} runs, not {self.run}")

    def _read(self) -> dict[str, Any] | None:
        """The next record of the file; effects numbered in log order (for `edits`).

        A damaged line ends the file's generator; the error is kept and raised to every
        later read, or a call started early that met it (its task's error surfaces only
        when collected) would leave the others an end of file: a log cut short, ✓.
        """
        if self._damage is not None:
            raise self._damage
        try:
            return self._read_record()
        except LogError as exc:
            self._damage = exc
            raise

    def _read_record(self) -> dict[str, Any] | None:
        if self.next_run:
            return None
        for lineno, record in self._records:
            if record["t"] == "start":  # the session's next run: this one's records end
                self.next_run = True
                return None
            if record["t"] == "effect":
                record["_line"] = lineno
                self._effect_no += 1
                if self.edits:
                    record["_n"] = self._effect_no
            elif record["t"] == "transition":
                self._recorded_steps += 1
            elif record["t"] == "result":
                self._has_result = True
                self._result = record
            return record
        self.cut_short = not self._has_result
        return None

    def _next(self) -> dict[str, Any] | None:
        return self._ahead.popleft() if self._ahead else self._read()

    def _load_step(self, carry: bool = False) -> None:
        kept = (
            {k: q for k, q in self._pending.items() if k[0] in TOOL_PIPELINE and q} if carry else {}
        )
        self._pending.clear()
        self._pending.update(kept)
        self._taken = []
        self._expected = None
        while (record := self._next()) is not None:
            kind = record["t"]
            if kind == "effect":
                self._pending[(record["name"], record["request"])].append(record)
            elif kind == "transition":
                self._expected = record
                return
            elif kind == "result":
                return

    def start(self, messages: list[Any], read_files: dict[str, float] | None = None) -> None:
        recorded = [plain(m) for m in self.messages()]  # as read: unknown fields left out
        if messages != recorded:
            raise Divergence(0, "initial messages", recorded, messages)
        if (read_files or {}) != self.start_read_files:
            raise Divergence(0, "initial read files", self.start_read_files, read_files)

    def transition(self, record: dict[str, Any], state: Any = None) -> None:
        if self._first is None:
            self._first = state  # the run's first state: the start record's, checked
        expected = self._expected
        carry = record.get("from") != "tool_execution" and record.get("to") not in TERMINAL_REASONS
        leftover = [
            r
            for (name, _), queue in self._pending.items()
            for r in queue
            if not (carry and name in TOOL_PIPELINE)
        ]
        if (
            expected is None
            and self._has_result
            and not leftover
            and blocked_outside_the_machine(self._result, str(record.get("edge")))
        ):
            self._unrecorded_steps += 1
            self.step += 1
            return
        if expected is None:
            view = _transition_view(record)
            if self.cut_short and not leftover:
                raise LogEnded(self._recorded_steps + 1, "transition", "end of log", view)
            raise Divergence(self.step, "transition", "end of log", view)
        key = _transition_key if self.strict else _path_key
        if key(expected) != key(record):
            raise Divergence(
                self.step, "transition", _transition_view(expected), _transition_view(record),
                self._state_changes(expected, record, state),
            )  # fmt: skip
        if leftover:
            raise _not_asked(self.step, leftover[0], f"the code went on to {_edge_text(record)}")
        self.step += 1
        self._load_step(carry)

    def _state_changes(
        self, expected: dict[str, Any], record: dict[str, Any], state: Any
    ) -> tuple[Change, ...]:
        """Where the code's state differs from the one the log had, when only the state
        digests differ: the log is read again up to here, so replay holds nothing more."""
        if state is None or self._first is None or _path_key(expected) != _path_key(record):
            return ()
        again = SessionLog(self.log.path)
        recorded = recorded_state(again, self.step, self._first, since=self.first_step)
        if recorded is None:
            return ()
        return tuple(state_changes(recorded, parts_of(state)))

    def _look_ahead(self, fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """A tool-pipeline effect recorded later in this iteration (the call started early)."""
        for held in self._ahead:
            if held["t"] == "effect" and fits(held):
                self._ahead.remove(held)
                return held
        while True:
            record = self._read()
            if record is None:
                return None
            if record["t"] == "effect" and fits(record):
                return record
            self._ahead.append(record)
            if _closes_window(record):
                return None

    def _queue(self, name: str, request: str, args: Any) -> deque[dict[str, Any]] | None:
        """The recorded effects that answer this one: by request digest; leniently, a
        same-name effect with the same `args` here or later in a tool call's window, and
        only failing both, any same-name effect of the step."""
        queue = self._pending.get((name, request))
        if queue:
            return queue
        same = [q for (n, _), q in self._pending.items() if n == name and q]
        if not self.strict:
            alike = next((q for q in same if q[0].get("args") == args), None)
            if alike is not None:
                return alike
        if name in TOOL_PIPELINE:

            def fits(record: dict[str, Any]) -> bool:
                if record["name"] != name:
                    return False
                return record["request"] == request or (
                    not self.strict and record.get("args") == args
                )

            found = self._look_ahead(fits)
            if found is not None:
                return deque([found])
        if self.strict:
            return queue
        return same[0] if same else None

    def take(self, name: str, request: str, args: Any = None) -> Any:
        queue = self._queue(name, request, args)
        if not queue and self._at_end(name):
            got = {"request": request, **({"args": args} if args is not None else {})}
            raise LogEnded(self._recorded_steps + 1, f"effect {name}", "end of log", got)
        if not queue:
            got = {"request": request, **({"args": args} if args is not None else {})}
            raise Divergence(self.step, f"effect {name}", self._recorded_here(name), got)
        record = queue.popleft()
        self._taken.append(record)
        if self.strict and record.get("args") != args and record["request"] == request:
            self._args_changed(record, args)
        number = record.get("_n")
        if number in self.edits:
            self.edited = number
            self.line = None
            return self.edits[number]
        self.line = record["_line"]
        return record["result"]

    def _args_changed(self, record: dict[str, Any], args: Any) -> None:
        """The call is the recorded one (its request digest), yet its `args` (what the
        debugger and reports show of it) are not: the record was changed, not the code."""
        diff = "; ".join(short_diff(record.get("args", "<absent>"), args, limit=3))
        raise LogError(
            f"{self.path}:{record['_line']}: changed after it was written (the {record['name']} "
            f"effect's args are not the call's, whose request digest it has: {diff})"
        )

    def _recorded_here(self, name: str) -> Any:
        """What the log has instead of the effect asked for: a `name` effect with
        another request (here, or later in a tool call's window, found by looking
        ahead), compared in the report; else the step's effects, all of them."""
        waiting = [r for q in self._pending.values() for r in q]
        ahead: list[dict[str, Any]] = []
        if self._expected is not None and not _closes_window(self._expected):
            for r in itertools.takewhile(lambda r: not _closes_window(r), self._ahead):
                ahead += [r] if r["t"] == "effect" else []
        same_name = [r for r in (*waiting, *ahead) if r["name"] == name]
        if same_name:
            return _effect_view(same_name[0])
        had = sorted([*self._taken, *waiting], key=lambda r: r.get("_line", 0))
        if not had:
            return f"no effect at step {self.step}"
        shown = "; ".join(f"{r['name']} {short(r.get('args', r['request']), 40)}" for r in had)
        return f"no {name} effect; at step {self.step}: {shown}"

    def bad_record(self, what: str, problem: object) -> LogError:
        """A recorded value the code cannot use: the log is damaged, not the code changed."""
        where = f"{self.path}:{self.line}" if self.line is not None else f"{self.path}"
        edited = "" if self.line is not None else f" (the edited result of effect {self.edited})"
        return LogError(f"{where}: the recorded {what}{edited} is not valid: {problem}")

    def messages(self) -> list[Message]:
        """The start record's messages, as the run began with them."""
        try:
            return [structure(m, Message) for m in _list(self.start_messages)]
        except CodecError as exc:
            raise LogError(f"{self.path}:{self.start_line}: the start messages: {exc}") from None

    def _at_end(self, name: str) -> bool:
        """The log stops before it records `name` where the code asks for it: cut short.

        A tool-pipeline effect may be recorded up to its iteration's
        `tool_execution` transition (the call started while the model
        streamed), so it is missing for want of log only if the log stops
        before that window closes.
        """
        if not self.cut_short:
            return False
        if name in TOOL_PIPELINE:
            return not any(
                r is not None and _closes_window(r) for r in (self._expected, *self._ahead)
            )
        return (
            self._expected is None
            and not self._ahead
            and not any(q for (n, _), q in self._pending.items() if n not in TOOL_PIPELINE)
        )

    def in_window(self, name: str, request: str, args: Any = None) -> bool:
        """Whether a tool-pipeline effect written only when it happened is recorded in
        this call's window: in this step, or ahead of it up to the window's end
        (leniently, as `take` matches: one with the same `args`)."""
        lenient = not self.strict and args is not None

        def fits(record: dict[str, Any]) -> bool:
            return record["name"] == name and (
                record["request"] == request or (lenient and record.get("args") == args)
            )

        if any(q and fits(q[0]) for q in self._pending.values()):
            return True
        if self._expected is None or _closes_window(self._expected):
            return False
        found = self._look_ahead(fits)
        if found is None:
            return False
        self._pending[(name, request)].append(found)
        return True

    def polled(self, name: str, request: str) -> bool:
        """Whether a polled effect is recorded here: its usual answer is not recorded."""
        return bool(self._pending.get((name, request)))

    def result(self, record: dict[str, Any]) -> None:
        """The run ended: the log must end here too, with the result the run has.

        A log that goes on (more transitions, effects nobody asked for) or
        records another result has diverged; one that stops with no `result`
        record was cut short after its last step.
        """
        ours = {key: record.get(key) for key in ("reason", "turns", "steps", "usage")}
        if self._expected is not None:
            raise Divergence(
                self.step, "transition", _transition_view(self._expected),
                f"the run ended {record.get('reason')}",
            )  # fmt: skip
        leftover = [r for queue in self._pending.values() for r in queue]
        if leftover:
            raise _not_asked(self.step, leftover[0], f"the run ended {record.get('reason')}")
        if not self._has_result:  # the step's records were read to the file's end
            raise LogEnded(self._recorded_steps + 1, "result", "end of log", ours)
        self._read()  # to the file's end (or the next run): a line after it is a LogError
        recorded = {key: self._result.get(key) for key in ours}
        if self._unrecorded_steps:
            recorded["steps"] = self._unrecorded_steps
        if recorded != ours:
            raise Divergence(self.step, "result", recorded, ours)

    def wrap(self, effects: Effects | None) -> Effects:
        return answering(self)


def _not_asked(step: int, effect: dict[str, Any], instead: str) -> Divergence:
    """A recorded effect the code never asked for; `instead` says what it did."""
    name = effect["name"]
    return Divergence(step, f"effect {name} not asked for", _effect_view(effect),
                      f"no {name} effect: {instead}")  # fmt: skip


def _closes_window(record: dict[str, Any]) -> bool:
    """The last record a tool-pipeline effect of the iteration may come before."""
    return record["t"] == "result" or (
        record["t"] == "transition" and record.get("from") == "tool_execution"
    )


def _edge_text(record: dict[str, Any]) -> str:
    return f"{record.get('from')} -[{record.get('edge')}]-> {record.get('to')}"


def _transition_key(record: dict[str, Any]) -> tuple[Any, ...]:
    get = record.get
    return get("from"), get("edge"), get("to"), get("turn"), get("state")


def _path_key(record: dict[str, Any]) -> tuple[Any, ...]:
    get = record.get
    return get("from"), get("edge"), get("to"), get("turn")


def _transition_view(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "edge": _edge_text(record),
        "turn": record.get("turn"),
        "state": record.get("state"),
    }


def _effect_view(record: dict[str, Any]) -> dict[str, Any]:
    view = {"request": record["request"]}
    if "args" in record:
        view["args"] = record["args"]
    return view


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise CodecError(f"not a list: {short(value)}")
    return value


class ReplayEffects:
    """Answers every effect from the log; touches no network, file or clock. Its
    methods are made from `EFFECTS` below."""

    def __init__(self, tape: ReplayTape) -> None:
        self.tape = tape
        self._polls = Polls()

    def _take(self, effect: Effect, request: str, args: Any = None) -> Any:
        recorded = self.tape.take(effect.name, request, args)
        try:
            return effect.decode(recorded)
        except CodecError as exc:
            raise self.tape.bad_record(effect.name, exc) from None

    def _answer(self, effect: Effect, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request, logged = effect.key(*args, **kwargs)
        if not effect.sometimes:
            return self._take(effect, request, logged)
        if effect.polled:
            for recorded in poll_keys(self._polls.key(self.tape.step, request), request):
                if self.tape.polled(effect.name, recorded):
                    return self._take(effect, recorded, logged)
            return effect.usual
        recorded_here = (
            self.tape.in_window(effect.name, request, logged)
            if effect.pipeline
            else self.tape.polled(effect.name, request)
        )
        return self._take(effect, request, logged) if recorded_here else effect.usual

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        if hooks_had_no_say(event, self.tape.hooked):
            return NO_OPINION
        request, logged = HOOKS.key(event, payload)
        if event in LATER_EVENTS and not self.tape.in_window(HOOKS.name, request, logged):
            # Written before the event was asked: its writer recorded every event it asked,
            # but `hooked_events` came from the settings, which may have had the hook.
            return NO_OPINION
        return self._take(HOOKS, request, logged)


def answering(tape: ReplayTape) -> Effects:
    return cast(Effects, ReplayEffects(tape))


def _answerer(effect: Effect) -> Any:
    if effect.kind == "stream":

        async def stream(self: ReplayEffects, request: Any) -> AsyncIterator[StreamEvent]:
            events, error = self._answer(effect, (request,), {})
            for event in events:
                yield event
            if error is not None:
                raise error

        return stream
    if effect.kind == "sync":

        def call(self: ReplayEffects, *args: Any, **kwargs: Any) -> Any:
            return self._answer(effect, args, kwargs)

        return call

    async def acall(self: ReplayEffects, *args: Any, **kwargs: Any) -> Any:
        return self._answer(effect, args, kwargs)

    return acall


HOOKS = BY_NAME["hooks"]
for _effect in EFFECTS:
    if _effect is not HOOKS:
        setattr(ReplayEffects, _effect.method, _answerer(_effect))
