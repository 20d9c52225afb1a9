"""Recording effects into the session log, and answering them from it on replay.

Both sides count steps the same way: the effects a phase asks for belong to
the step of the transition that follows the phase. On replay, an effect is
matched by its name and request digest among the recorded effects of the
current step (concurrent tools finish in any order), and every transition is
compared with the recorded one; the first difference is a `Divergence`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Literal

from attrs import frozen

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.codec import CodecError, converter, dumps, structure, unstructure_hook
from fsm_agent.core.events import ModelCallError, StreamEvent
from fsm_agent.core.jsontext import canonical
from fsm_agent.core.messages import Message
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.permission_types import (
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionsUpdated,
    PermissionUpdate,
)
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome
from fsm_agent.engine.machine import TERMINAL_REASONS
from fsm_agent.engine.ports import Effects, Tape
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome
from fsm_agent.replay.log import LogError, LogWriter, MemoryWriter, SessionLog, no_start

Writer = LogWriter | MemoryWriter
TOOL_PIPELINE = frozenset(
    {"tool", "hooks", "permission", "ask_permission", "permission_update", "discarded"}
)
"""Effects of one tool call's pipeline. A call started while the model streams
may record them at any step up to that iteration's `tool_execution`
transition, so replay matches them anywhere in that window."""


LATER_EVENTS = frozenset({"PermissionRequest", "PostToolBatch"})
"""Hook events fsm-agent began to ask after its logs first recorded hooks: an older log
whose settings had such a hook holds no record of it, and replays as if it had no say."""


def _plain(value: Any) -> Any:
    """`unstructure(value)` through cattrs' hook for its class, looked up once per class."""
    return unstructure_hook(value.__class__)(value)


def digest_of(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()[:16]


def model_summary(request: ModelRequest) -> dict[str, Any]:
    """A short, readable account of a model request, for divergence reports."""
    last = request.messages[-1] if len(request.messages) else None
    return {
        "model": request.model,
        "purpose": request.purpose,
        "max_tokens": request.max_tokens,
        "messages": len(request.messages),
        "last": None if last is None else f"{last.role}: {last.text[:80] or '[blocks]'}",
    }


@frozen
class Divergence(Exception):
    """Replay asked for something the log does not have at this step.

    `expected` is what the log recorded, `got` what the code asked for; `diff`
    is a few lines saying where the two differ, for the `--check` report.
    """

    step: int
    what: str
    expected: Any
    got: Any

    def __str__(self) -> str:
        return f"step {self.step}: {self.what}: expected {self.expected!r}, got {self.got!r}"

    @property
    def diff(self) -> list[str]:
        return short_diff(self.expected, self.got)


@frozen
class LogEnded(Divergence):
    """The log stops before the run did: it has no `result` record (the recorded
    run was killed, or is still running). Every step it holds was matched; the
    replay cannot go past its end, so it stops at `step`, the first one missing.
    (A call started while the model streamed may find its effect missing
    before the steps recorded after it are replayed; they are matched before
    its failure surfaces, at `tool_execution`.)
    """

    WHY = "the recorded run was killed, or is still running"

    @property
    def matched(self) -> int:
        """The steps the log holds, every one replayed."""
        return self.step - 1

    def __str__(self) -> str:
        return f"the log ends after step {self.matched} without a result: {self.WHY}"


def _short(value: Any, limit: int = 60) -> str:
    plain = isinstance(value, str) and value.isprintable()
    text = value if plain else dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_diff(expected: Any, got: Any, prefix: str = "", limit: int = 12) -> list[str]:
    """`key: expected → got` for each differing leaf, dicts walked by key."""
    lines: list[str] = []
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in [*expected, *(k for k in got if k not in expected)]:
            a, b = expected.get(key, "<absent>"), got.get(key, "<absent>")
            if a != b:
                lines.extend(short_diff(a, b, f"{prefix}{key}.", limit))
    elif isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (a, b) in enumerate(zip(expected, got, strict=True)):
            if a != b:
                lines.extend(short_diff(a, b, f"{prefix}{i}.", limit))
    elif expected != got:
        lines.append(f"{prefix.rstrip('.') or 'value'}: {_short(expected)} → {_short(got)}")
    return lines[:limit]


def divergence_report(exc: Divergence, name: str = "") -> str:
    """The step, what the log recorded, what the code asked for, and where they differ;
    `name` (the log's, when several are checked) goes before it. One report for
    `replay --check`, a fork and the debugger (docs/replay.md#divergence-reports)."""

    def show(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    lines = [
        f"✗ {name}diverged at step {exc.step}: {exc.what}",
        f"  log:  {show(exc.expected)}",
        f"  code: {show(exc.got)}",
    ]
    diff = exc.diff
    if diff and not isinstance(exc.expected, str) and not isinstance(exc.got, str):
        lines.append("  diff (log → code):")
        lines.extend(f"    {line}" for line in diff)
    return "\n".join(lines)


class RecordingTape(Tape):
    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.path = writer.path
        self.step = 1

    def start(self, messages: list[Any], read_files: dict[str, float] | None = None) -> None:
        record: dict[str, Any] = {"t": "start", "messages": messages}
        if read_files:
            record["read_files"] = read_files
        self.writer.write(record)

    def transition(self, record: dict[str, Any]) -> None:
        self.writer.write({"t": "transition", "step": self.step, **record})
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
        return RecordingEffects(effects, self)


class Polls:
    """Tells apart the polls of one `where` within a step: the second is `where#2`.

    A poll's usual answer (not aborted) is not recorded, so a step that polled
    twice, false then true, holds only the true answer. Keyed by its place,
    the replay gives it to the second poll, not to the first.
    """

    def __init__(self) -> None:
        self._step = 0
        self._counts: dict[str, int] = {}

    def key(self, step: int, where: str) -> str:
        if step != self._step:
            self._step, self._counts = step, {}
        n = self._counts[where] = self._counts.get(where, 0) + 1
        return where if n == 1 else f"{where}#{n}"


class RecordingEffects:
    """Passes every call to the live effects and writes the call and its result."""

    def __init__(self, inner: Effects, tape: RecordingTape) -> None:
        self.inner = inner
        self.tape = tape
        self._polls = Polls()

    async def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        events: list[StreamEvent] = []
        error: dict[str, Any] | None = None
        try:
            async for event in self.inner.model_stream(request):
                events.append(event)
                yield event
        except ModelCallError as exc:
            error = {"kind": exc.kind, "message": exc.message, "status": exc.status}
            raise
        finally:
            self.tape.effect(
                "model",
                request.digest(),
                {"events": unstructure_hook(list[StreamEvent])(events), "error": error},
                model_summary(request),
            )

    async def count_tokens(self, request: ModelRequest) -> int | None:
        result = await self.inner.count_tokens(request)
        self.tape.effect("count_tokens", request.digest(), result)
        return result

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        outcome = await self.inner.run_tool(call, env)
        self.tape.effect("tool", digest_of(args := _plain(call)), _plain(outcome), args)
        return outcome

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        outcome = await self.inner.run_hooks(event, payload)
        self.tape.effect("hooks", digest_of([event, payload]), _plain(outcome), event)
        return outcome

    async def check_permission(self, request: PermissionRequest) -> Decision:
        decision = await self.inner.check_permission(request)
        data = _plain(request)
        self.tape.effect("permission", digest_of(data), _plain(decision), data)
        return decision

    async def ask_permission(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        answer = await self.inner.ask_permission(question, cancel, recheck)
        data = _plain(question)
        self.tape.effect("ask_permission", digest_of(data), answer, data)
        return answer

    async def update_permissions(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        result = await self.inner.update_permissions(updates)
        data = [_plain(u) for u in updates]
        self.tape.effect("permission_update", digest_of(data), _plain(result), data)
        return result

    def discarded(self, key: str, cancel: AbortSignal) -> bool:
        value = self.inner.discarded(key, cancel)
        if value:
            self.tape.effect("discarded", key, value)
        return value

    async def store_blob(self, name: str, text: str) -> str | None:
        path = await self.inner.store_blob(name, text)
        self.tape.effect("store_blob", name, path, {"name": name, "chars": len(text)})
        return path

    async def nested_memory(self, paths: tuple[str, ...]) -> dict[str, str]:
        found = await self.inner.nested_memory(paths)
        self.tape.effect("memory", digest_of(list(paths)), found, list(paths))
        return found

    def now(self) -> float:
        value = self.inner.now()
        self.tape.effect("now", "", value)
        return value

    def new_id(self, prefix: str) -> str:
        value = self.inner.new_id(prefix)
        self.tape.effect("new_id", prefix, value)
        return value

    def aborted(self, where: str) -> bool:
        value = self.inner.aborted(where)
        key = self._polls.key(self.tape.step, where)
        if value:
            self.tape.effect("aborted", key, value)
        return value

    def queued_input(self) -> tuple[str, ...]:
        value = self.inner.queued_input()
        if value:
            self.tape.effect("queued_input", "", list(value))
        return value


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
    ) -> None:
        self.log = log
        self.path = log.path
        self.step = 1
        self.upto = upto
        self.strict = strict
        self.edits = dict(edits or {})
        self.edited: int | None = None
        from fsm_agent.app.session import config_of  # session imports this module

        hooked = config_of(log).hooked_events  # a damaged config is a LogError, not a crash
        self.hooked: frozenset[str] | None = None if hooked is None else frozenset(hooked)
        """The events the recording asked hooks about; for any other, the hooks had no say
        (a fork whose live part has more hooks replays its start against this log)."""
        self._effect_no = 0
        self._has_result = False
        self._result: dict[str, Any] = {}
        self._recorded_steps = 0
        self.cut_short = False
        """The file ran out with no `result` record: the recorded run was cut short."""
        self._records: Iterator[tuple[int, dict[str, Any]]] = log.records()
        self._damage: LogError | None = None
        self._ahead: deque[dict[str, Any]] = deque()
        self._pending: dict[tuple[str, str], deque[dict[str, Any]]] = defaultdict(deque)
        self._taken: list[dict[str, Any]] = []
        """The effects of this step already answered, for a report of what it recorded."""
        self._expected: dict[str, Any] | None = None
        self.start_messages: list[Any] = []
        self.start_line = 0
        self.line: int | None = None
        """The line of the effect `take` handed out last (None for an edited result)."""
        self.start_read_files: dict[str, float] = {}
        self._read_start()
        self._load_step()

    def _read_start(self) -> None:
        for lineno, record in self._records:
            if record["t"] == "start":
                self.start_line = lineno
                self.start_messages = record["messages"]
                self.start_read_files = record.get("read_files", {})
                return
            raise Divergence(0, "first record", "start", record["t"])
        raise no_start(self.log.path)

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
        for lineno, record in self._records:
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
        recorded = [_plain(m) for m in self.messages()]  # as read: unknown fields left out
        if messages != recorded:
            raise Divergence(0, "initial messages", recorded, messages)
        if (read_files or {}) != self.start_read_files:
            raise Divergence(0, "initial read files", self.start_read_files, read_files)

    def transition(self, record: dict[str, Any]) -> None:
        expected = self._expected
        carry = record.get("from") != "tool_execution" and record.get("to") not in TERMINAL_REASONS
        leftover = [
            r
            for (name, _), queue in self._pending.items()
            for r in queue
            if not (carry and name in TOOL_PIPELINE)
        ]
        if expected is None:
            view = _transition_view(record)
            if self.cut_short and not leftover:
                raise LogEnded(self._recorded_steps + 1, "transition", "end of log", view)
            raise Divergence(self.step, "transition", "end of log", view)
        key = _transition_key if self.strict else _path_key
        if key(expected) != key(record):
            raise Divergence(
                self.step, "transition", _transition_view(expected), _transition_view(record)
            )
        if leftover:
            raise _not_asked(self.step, leftover[0], f"the code went on to {_edge_text(record)}")
        self.step += 1
        self._load_step(carry)

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
        number = record.get("_n")
        if number in self.edits:
            self.edited = number
            self.line = None
            return self.edits[number]
        self.line = record["_line"]
        return record["result"]

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
        shown = "; ".join(f"{r['name']} {_short(r.get('args', r['request']), 40)}" for r in had)
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
        self._read()  # to the file's end: a line after the result is a LogError
        recorded = {key: self._result.get(key) for key in ours}
        if recorded != ours:
            raise Divergence(self.step, "result", recorded, ours)

    def wrap(self, effects: Effects | None) -> Effects:
        return ReplayEffects(self)


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
        raise CodecError(f"not a list: {_short(value)}")
    return value


_HOOKS: dict[Any, Any] = {}

RESULTS: dict[str, Any] = {
    "count_tokens": int | None,
    "tool": ToolOutcome,
    "hooks": HookOutcome,
    "store_blob": str | None,
    "permission": Decision,
    "ask_permission": Literal["allow_once", "allow_always", "deny", "no_terminal", "cancelled"],
    "permission_update": PermissionsUpdated,
    "discarded": bool,
    "memory": dict[str, str],
    "now": float,
    "new_id": str,
    "aborted": bool,
    "queued_input": tuple[str, ...],
}
"""What each effect's recorded result is read back as; `model` is `model_result`'s."""


def _structured(value: Any, cls: Any) -> Any:
    """cattrs' hook for `cls` called directly: replay structures every recorded result.

    Only on failure does it go through `codec.structure`, for a readable `CodecError`.
    """
    hook = _HOOKS.get(cls)
    if hook is None:
        hook = _HOOKS[cls] = converter.get_structure_hook(cls)
    try:
        return hook(value, cls)
    except Exception:
        return structure(value, cls)


def model_result(recorded: Any) -> tuple[list[StreamEvent], ModelCallError | None]:
    """A recorded model stream: its events, and the error it ended with, if any."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("events"), list):
        raise CodecError('a model result is {"events": [...], "error": null}')
    events = _structured(recorded["events"], list[StreamEvent])
    error = recorded.get("error")
    if error is None:
        return events, None
    if not (isinstance(error, dict) and isinstance(error.get("kind"), str)):
        raise CodecError('its error is not {"kind", "message", "status"}')
    return events, ModelCallError(error["kind"], str(error.get("message")), error.get("status"))


def read_result(name: str, recorded: Any) -> Any:
    """A recorded effect result as the code gets it; `CodecError` if it does not fit."""
    if name == "model":
        return model_result(recorded)
    if name not in RESULTS:
        raise CodecError(f"no effect is called {name!r}")
    value = _structured(recorded, RESULTS[name])
    if name == "tool":
        relative = next((p for p in value.read_files if not os.path.isabs(p)), None)
        if relative is not None:  # every reader of read_files takes the path's directory
            raise CodecError(f"read_files: not an absolute path: {json.dumps(relative)}")
    return value


class ReplayEffects:
    """Answers every effect from the log; touches no network, file or clock."""

    def __init__(self, tape: ReplayTape) -> None:
        self.tape = tape
        self._polls = Polls()

    def _take(self, name: str, request: str, args: Any = None) -> Any:
        recorded = self.tape.take(name, request, args)
        try:
            return read_result(name, recorded)
        except CodecError as exc:
            raise self.tape.bad_record(name, exc) from None

    async def model_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        events, error = self._take("model", request.digest(), model_summary(request))
        for event in events:
            yield event
        if error is not None:
            raise error

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return self._take("count_tokens", request.digest())

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        data = _plain(call)
        return self._take("tool", digest_of(data), data)

    async def run_hooks(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        if self.tape.hooked is not None and event not in self.tape.hooked:
            return NO_OPINION
        request = digest_of([event, payload])
        if event in LATER_EVENTS and not self.tape.in_window("hooks", request, event):
            # Written before the event was asked: its writer recorded every event it asked,
            # but `hooked_events` came from the settings, which may have had the hook.
            return NO_OPINION
        return self._take("hooks", request, event)

    async def store_blob(self, name: str, text: str) -> str | None:
        return self._take("store_blob", name, {"name": name, "chars": len(text)})

    async def check_permission(self, request: PermissionRequest) -> Decision:
        data = _plain(request)
        return self._take("permission", digest_of(data), data)

    async def ask_permission(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        data = _plain(question)
        return self._take("ask_permission", digest_of(data), data)

    async def update_permissions(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        data = [_plain(u) for u in updates]
        return self._take("permission_update", digest_of(data), data)

    def discarded(self, key: str, cancel: AbortSignal) -> bool:
        if not self.tape.in_window("discarded", key):
            return False
        return self._take("discarded", key)

    async def nested_memory(self, paths: tuple[str, ...]) -> dict[str, str]:
        return self._take("memory", digest_of(list(paths)), list(paths))

    def now(self) -> float:
        return self._take("now", "")

    def new_id(self, prefix: str) -> str:
        return self._take("new_id", prefix)

    def aborted(self, where: str) -> bool:
        key = self._polls.key(self.tape.step, where)
        for recorded in (key, where):  # older logs recorded every poll, each as `where`
            if self.tape.polled("aborted", recorded):
                return self._take("aborted", recorded)
        return False

    def queued_input(self) -> tuple[str, ...]:
        if not self.tape.polled("queued_input", ""):
            return ()
        return self._take("queued_input", "")
