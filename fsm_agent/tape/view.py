"""A recorded session as the replay viewer's data: every step's edge, state and effects.

The page (`fsm-agent view`) shows what the debugger shows, so its data comes from the
same `Stepper`: the log's transitions and effect records, and the `LoopState` and model
requests the engine rebuilds by replaying it. It must stay within a few times the log's
size at 70,000 steps, so it is kept compact: the state is written whole once, then
only the fields a step changed; each message is written once, in a pool, and a
transcript is a list of pool numbers (runs `[first, count]`) referring to one shared,
append-only list, as `Transcript` itself shares its store; a model answer is its final
blocks, not its stream events.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from fsm_agent.core.codec import unstructure
from fsm_agent.core.messages import Message, Usage
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.pricing import cost_usd
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.driver import StepInfo
from fsm_agent.engine.machine import EDGES, FINAL_STATES, INITIAL, STATES
from fsm_agent.engine.state import LoopState
from fsm_agent.tape.divergence import Divergence, LogEnded
from fsm_agent.tape.log import LogError
from fsm_agent.tape.stepper import Stepper

FORMAT = 1

ERROR, INTERRUPT, COMPACTION, HOOK_BLOCK, REFUSAL = 1, 2, 4, 8, 16
"""A step's marks, as bits: what the timeline flags."""

_FIELDS = tuple(f.name for f in attrs.fields(LoopState))


class _Pool:
    """Messages written once each, and transcripts as runs of their numbers.

    A message is known by identity (the replay's transcripts share their message
    objects), so pooling a transcript costs only the messages new since the last one.
    """

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._number: dict[int, int] = {}
        self._kept: list[Message] = []  # keeps the ids above from being reused
        self._stores: dict[int, _Runs] = {}

    def number(self, message: Message) -> int:
        key = id(message)
        found = self._number.get(key)
        if found is None:
            found = self._number[key] = len(self.messages)
            self.messages.append(unstructure(message))
            self._kept.append(message)
        return found

    def runs(self, transcript: Transcript) -> list[list[int]]:
        runs = _runs([self.number(m) for m in transcript.prefix])
        store = transcript.store
        known = self._stores.get(id(store))
        if known is None:
            known = self._stores[id(store)] = _Runs()
            self._kept.append(store)  # type: ignore[arg-type]  # kept alive, like messages
        while known.length < transcript.length:
            known.add(self.number(store[known.length]))
        head = known.first(transcript.length)
        if runs and head and runs[-1][0] + runs[-1][1] == head[0][0]:
            runs[-1][1] += head.pop(0)[1]
        return runs + head


class _Runs:
    """A store's message numbers as runs `[first, count]`, grown as the store grows, so
    that the runs of its first `n` messages cost the number of runs, not of messages:
    a long session's history is one or two runs, and it is asked for at every turn."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []
        self.ends: list[int] = []
        self.length = 0

    def add(self, number: int) -> None:
        self.length += 1
        if self.runs and self.runs[-1][0] + self.runs[-1][1] == number:
            self.runs[-1][1] += 1
            self.ends[-1] += 1
        else:
            self.runs.append([number, 1])
            self.ends.append(self.length)

    def first(self, n: int) -> list[list[int]]:
        if n == 0:
            return []
        i = bisect_left(self.ends, n)
        head = [list(run) for run in self.runs[: i + 1]]
        head[-1][1] -= self.ends[i] - n
        return head


def _runs(numbers: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][0] + runs[-1][1] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return runs


def _field(pool: _Pool, state: LoopState, name: str) -> Any:
    value = getattr(state, name)
    if isinstance(value, Transcript):
        return pool.runs(value)
    return unstructure(value)


def _model(record: dict[str, Any], model: str) -> tuple[dict[str, Any], Usage | None]:
    """A model effect as its answer: the final blocks, the stop reason, the usage."""
    found = record.get("result")
    result: dict[str, Any] = found if isinstance(found, dict) else {}
    events = [e for e in result.get("events") or [] if isinstance(e, dict)]
    blocks = [e["block"] for e in events if e.get("event") == "BlockStop" and "block" in e]
    totals: dict[str, int] = {}
    stop = None
    for e in events:
        if e.get("event") in ("MessageStart", "MessageDelta"):
            for key, value in (e.get("usage") or {}).items():
                if isinstance(value, int):
                    totals[key] = max(totals.get(key, 0), value)
            stop = e.get("stop_reason", stop)
    retries = [e.get("status") for e in events if e.get("event") == "ModelRetry"]
    shown = {"n": "model", "a": record.get("args"), "blocks": blocks, "stop": stop}
    if result.get("error"):
        shown["error"] = result["error"]
    if retries:
        shown["retries"] = retries
    usage = None
    if totals:
        fields = {f.name for f in attrs.fields(Usage)}
        usage = Usage(**{k: v for k, v in totals.items() if k in fields})
        shown["usage"] = unstructure(usage)
    return shown, usage


def _marks(edge: str, effects: list[dict[str, Any]]) -> int:
    marks = 0
    if "error" in edge or edge in ("prompt_too_long", "blocking_limit"):
        marks |= ERROR
    if edge.startswith("aborted"):
        marks |= INTERRUPT
    if "compact" in edge or "collapse" in edge:
        marks |= COMPACTION
    for e in effects:
        name, result = e.get("n"), e.get("res")
        if name == "model" and e.get("error"):
            marks |= ERROR
        elif name == "model" and (e.get("a") or {}).get("purpose") not in (None, "query"):
            marks |= COMPACTION
        elif name == "tool" and isinstance(result, dict) and result.get("is_error"):
            marks |= ERROR
        elif name == "aborted" and result is True:
            marks |= INTERRUPT
        elif name == "hooks" and isinstance(result, dict):
            if result.get("prevent_continuation") or result.get("blocking_errors"):
                marks |= HOOK_BLOCK
            if result.get("permission_decision") == "deny":
                marks |= HOOK_BLOCK
            if result.get("interrupted") or result.get("interrupt"):
                marks |= INTERRUPT
        elif name == "permission" and isinstance(result, dict):
            marks |= REFUSAL if result.get("behavior") == "deny" else 0
        elif name == "ask_permission" and result == "deny":
            marks |= REFUSAL
    return marks


def _requests(
    pool: _Pool, systems: dict[tuple[str, ...], int], requests: list[ModelRequest]
) -> dict[str, Any]:
    """Each request by its digest (as its effect record names it): its messages as
    pool runs, its system prompt as a number in the list of the run's distinct ones."""
    return {
        r.digest(): {
            "system": systems.setdefault(r.system, len(systems)),
            "m": pool.runs(r.messages),
            "purpose": r.purpose,
        }
        for r in requests
    }


def _divergence(stopped: Exception | None) -> dict[str, Any] | None:
    if isinstance(stopped, LogEnded):
        return {"step": stopped.step, "ended": str(stopped)}
    if isinstance(stopped, Divergence):
        return {
            "step": stopped.step,
            "what": stopped.what,
            "log": stopped.expected,
            "code": stopped.got,
            "diff": stopped.diff,
        }
    if stopped is not None:
        return {"step": 0, "what": f"the replay stopped: {stopped}"}
    return None


def view_data(path: Path) -> dict[str, Any]:
    """The page's data for the log at `path`; a malformed log raises `LogError`."""
    stepper = Stepper(path)
    try:
        return _build(stepper, path)
    finally:
        stepper.close()


def _build(stepper: Stepper, path: Path) -> dict[str, Any]:
    index, config = stepper.index, stepper.config
    pool = _Pool()
    edges = [[e.source.value, e.name, e.dest, str(e.kind), e.when] for e in EDGES]
    number = {(e[0], e[1], e[2]): i for i, e in enumerate(edges)}
    initial = {name: _field(pool, stepper.initial, name) for name in _FIELDS}
    changes: dict[int, dict[str, Any]] = {}
    sent: dict[int, dict[str, Any]] = {}
    systems: dict[tuple[str, ...], int] = {}
    previous = [stepper.initial]

    def visit(info: StepInfo, requests: list[ModelRequest]) -> None:
        state, before = info.state, previous[0]
        if state is not before:
            changed = {
                name: _field(pool, state, name)
                for name in _FIELDS
                if getattr(state, name) != getattr(before, name)
            }
            if changed:
                changes[info.step] = changed
            previous[0] = state
        if requests:
            sent[info.step] = _requests(pool, systems, requests)

    stepper.visit_all(visit)
    steps: list[int] = []
    turns: list[int] = []
    marks: list[int] = []
    effects: dict[int, list[dict[str, Any]]] = {}
    usage: list[list[Any]] = []
    spent = 0.0
    for step in range(1, index.steps + 1):
        record = index.transition(step)
        key = (str(record.get("from")), str(record.get("edge")), str(record.get("to")))
        if key not in number:  # a log from another machine: its edge, kept by name
            number[key] = len(edges)
            edges.append([*key, "unknown", "not in this machine's table"])
        steps.append(number[key])
        turns.append(int(record.get("turn") or 0))
        shown = list(_effects(index.effects_of(step), config.model, usage, step))
        for item in shown:
            spent += item.pop("cost", 0.0)
        if shown:
            effects[step] = shown
        marks.append(_marks(key[1], shown))
    result = index.result()
    return {
        "format": FORMAT,
        "log": path.name,
        "session": stepper.session_id,
        "model": config.model,
        "machine": {
            "edges": edges,
            "states": list(STATES),
            "initial": INITIAL,
            "final": list(FINAL_STATES),
        },
        "fields": list(_FIELDS),
        "steps": steps,
        "turns": turns,
        "marks": marks,
        "initial": initial,
        "changes": changes,
        "messages": pool.messages,
        "requests": sent,
        "systems": [list(system) for system in systems],
        "effects": effects,
        "usage": usage,
        "cost": spent,
        "limits": {
            "window": config.context_window,
            "autocompact": config.autocompact_threshold,
            "microcompact": config.microcompact_threshold,
            "collapse": config.collapse_threshold,
            "hard": config.blocking_limit,
        },
        "result": result,
        "damage": None if index.damage is None else str(index.damage),
        "diverged": _divergence(stepper.stopped_by),
    }


def _effects(
    records: list[dict[str, Any]], model: str, usage: list[list[Any]], step: int
) -> Iterator[dict[str, Any]]:
    for record in records:
        if record.get("name") == "model":
            shown, used = _model(record, model)
            shown["r"] = record.get("request")
            if used is not None:
                called = str((record.get("args") or {}).get("model") or model)
                cost = cost_usd(called, used) or 0.0
                context = (
                    used.input_tokens
                    + used.cache_read_input_tokens
                    + used.cache_creation_input_tokens
                )
                usage.append([step, context, used.output_tokens, round(cost, 6)])
                shown["cost"] = cost
            yield shown
        else:
            yield {"n": record.get("name"), "r": record.get("request"),
                   "a": record.get("args"), "res": record.get("result")}  # fmt: skip


__all__ = ["LogError", "view_data"]
