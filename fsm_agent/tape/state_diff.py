"""What differs between two loop states, named: the field, and for messages the message
index, the block and a short diff of its text.

A log records at each step only the digest of the state; at each edge that
changes the state (a continue edge) a chained log also records what changed
(`state_delta`: the messages from the first one that changed, and each other
field that changed), so a replay whose state digest differs can rebuild the
state the log had (`recorded_state`) and say where the code's differs
(`state_changes`). The debugger's `diff` names the changes between two steps
the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any

from attrs import frozen

from fsm_agent.core.codec import dumps, unstructure_hook
from fsm_agent.core.messages import Message
from fsm_agent.core.transcript import Transcript, message_data
from fsm_agent.engine.state import LoopState, digested_fields
from fsm_agent.tape.blobs import blob_id
from fsm_agent.tape.divergence import short, text_diff
from fsm_agent.tape.log import SessionLog

LONG_TEXT = 2048
"""Logs written before 2026-12-03 put a text longer than this in a state delta as its
digest and length (`{"$text": id, "chars": n}`), a placeholder a report resolves from the
log's blobs when one holds the text. A delta now holds every text whole, and the log
stores one longer than `blobs.LONG` once, as a blob, as everywhere else."""
_plain_message = unstructure_hook(Message)


@frozen
class Change:
    """One difference: `where` (`messages[4].content[0].content`, `turn_count`), what the
    first side has and what the second has, and `diff`, where two texts part."""

    where: str
    log: Any
    code: Any
    diff: str | None = None

    def line(self) -> str:
        if self.diff is not None:
            return f"{self.where}: {self.diff}"
        return f"{self.where}: {short(self.log)} → {short(self.code)}"

    def as_data(self) -> dict[str, Any]:
        data = {"where": self.where, "log": self.log, "code": self.code}
        return data if self.diff is None else {**data, "diff": self.diff}


@frozen
class StateParts:
    """A state as plain data: its messages and every other field."""

    messages: list[Any]
    fields: dict[str, Any]


def parts_of(state: LoopState) -> StateParts:
    return StateParts([_plain_message(m) for m in state.messages], digested_fields(state))


class StateDeltas:
    """What each state a run reaches changed of the one before, for its transition
    records: `messages` as `[k, [the messages from index k]]` (k, the first that
    differs), and `fields`, each other field that changed, whole. The last state's
    fields are kept, so each state is turned into data once."""

    def __init__(self) -> None:
        self.state: LoopState | None = None
        self.fields: dict[str, Any] = {}
        self._names: tuple[tuple[str, ...], Callable[[LoopState], tuple[Any, ...]]] = (
            (),
            lambda _: (),
        )
        """The fields' names and a getter of their values, set by the first state."""

    def __call__(self, after: LoopState) -> dict[str, Any] | None:
        """None for the first state (the start record's) and one that changed nothing."""
        before, self.state = self.state, after
        if before is None:
            self.fields = digested_fields(after, with_permissions=False)
            self._names = tuple(self.fields), attrgetter(*self.fields)
            return None
        if before is after:
            return None
        delta: dict[str, Any] = {}
        old, new = before.messages, after.messages
        if old is not new and old.digest != new.digest:
            at = _common_prefix(old, new)
            delta["messages"] = [at, [_written(m) for m in new.since(at)]]
        was, now = self.fields, digested_fields(after, with_permissions=False)
        self.fields = now
        names, values = self._names  # every state has the same fields
        changed = {  # a field `evolve` carried over is the same object: nothing to compare
            k: now[k]
            for k, a, b in zip(names, values(before), values(after), strict=True)
            if a is not b and was.get(k) != now[k]
        }
        if after.permissions is not before.permissions and after.permissions != before.permissions:
            changed["permissions"] = digested_fields(after)["permissions"]
        if changed:
            delta["fields"] = changed
        return delta or None


def _written(message: Message) -> Any:
    """A message as a state delta writes it: the data its digest was made from, not made
    again (its long texts become blobs as the line is written, stored once per log)."""
    return message_data(message)[1]


def _common_prefix(old: Transcript, new: Transcript) -> int:
    """How many first messages two transcripts share: most often all of `old`, which the
    chained digests tell at once; after a compaction, found from the end of what both have."""
    if new.store is old.store and not (new.prefix or old.prefix):
        return min(old.length, new.length)  # one store's entries are never replaced
    n = len(old)
    if len(new) >= n and (n == 0 or _link(new, n) == _link(old, n)):
        return n
    at = min(len(old), len(new))
    while at and _link(new, at) != _link(old, at):
        at -= 1
    return at


def _link(transcript: Transcript, n: int) -> str | None:
    """The digest of the first `n` messages, if the transcript keeps one."""
    chain = transcript.chain
    if chain is not None and not transcript.prefix and n <= len(chain):
        return chain[n - 1]
    return hashlib.sha256(
        dumps([_plain_message(m) for m in transcript.items[:n]]).encode()
    ).hexdigest()


def _is_placeholder(value: Any) -> bool:
    """An older log's stand-in for a long text: `{"$text": id, "chars": n}`."""
    return isinstance(value, dict) and isinstance(value.get("$text"), str) and len(value) == 2


def _resolved(value: Any, text: Callable[[str], str | None]) -> Any:
    """`value` with each placeholder put back by the text `text` finds for its id (the
    log's blob of it), or left as it is; a copy along the paths that change."""
    if isinstance(value, dict):
        if _is_placeholder(value):
            found = text(value["$text"])
            return value if found is None else found
        out = {k: _resolved(v, text) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, list):
        items = [_resolved(v, text) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _has_placeholder(value: Any) -> bool:
    if isinstance(value, dict):
        return _is_placeholder(value) or any(_has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_placeholder(v) for v in value)
    return False


def recorded_state(
    log: SessionLog, step: int, first: LoopState, since: int = 1
) -> StateParts | None:
    """The state the log had after `step`, rebuilt from `first` (the state the run began
    with, which the replay checked) and the deltas of its transitions from step `since`
    (the run's first, in a log of several); None for a log that records none (one from
    before the chain)."""
    if not log.chained:
        return None
    parts = parts_of(first)
    messages = parts.messages
    fields = parts.fields
    for _, record in log.records():
        if record["t"] != "transition":
            continue
        if record["step"] > step:
            break
        if record["step"] < since:
            continue
        delta = record.get("delta")
        if isinstance(delta, dict):
            if isinstance(delta.get("messages"), list) and len(delta["messages"]) == 2:
                at, tail = delta["messages"]
                messages = [*messages[:at], *tail]
            if isinstance(delta.get("fields"), dict):
                fields = {**fields, **delta["fields"]}
    if any(_has_placeholder(m) for m in messages):  # an older log's: its blobs hold most
        messages = [_resolved(m, log.blob_text) for m in messages]
    return StateParts(messages, fields)


def state_changes(log: StateParts, code: StateParts, limit: int = 8) -> list[Change]:
    """Where `code` differs from `log`: each other field by name, the messages by index,
    block and field, texts by where they part."""
    changes = list(_message_changes(log.messages, code.messages))
    for key in [*log.fields, *(k for k in code.fields if k not in log.fields)]:
        a, b = log.fields.get(key, "<absent>"), code.fields.get(key, "<absent>")
        if a != b:
            changes.extend(_leaf_changes(key, a, b))
    return changes[:limit]


def _message_changes(log: Sequence[Any], code: Sequence[Any]) -> Iterator[Change]:
    if len(log) != len(code):
        yield Change("messages", f"{len(log)} messages", f"{len(code)} messages")
    for i, (a, b) in enumerate(zip(log, code, strict=False)):
        if a != b:
            yield from _leaf_changes(f"messages[{i}]{_role(a, b)}", a, b)


def _role(a: Any, b: Any) -> str:
    role = a.get("role") if isinstance(a, dict) else None
    return f" ({role})" if role and isinstance(b, dict) and b.get("role") == role else ""


def _leaf_changes(where: str, a: Any, b: Any) -> Iterator[Change]:
    if _is_placeholder(a) or _is_placeholder(b):  # an older log's text no blob holds
        if _text_id(a) != _text_id(b):
            yield Change(where, _shown(a), _shown(b))
    elif isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            x, y = a.get(key, "<absent>"), b.get(key, "<absent>")
            if x != y:
                yield from _leaf_changes(f"{where}.{key}", x, y)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                yield from _leaf_changes(f"{where}[{n}]{_block(x, y)}", x, y)
    elif isinstance(a, str) and isinstance(b, str):
        yield Change(where, a, b, text_diff(a, b))
    else:
        yield Change(where, _shown(a), _shown(b))


def _block(a: Any, b: Any) -> str:
    """A content block named by its type and, for a tool's, its call id."""
    if not (isinstance(a, dict) and isinstance(b, dict) and a.get("type") == b.get("type")):
        return ""
    kind, call = a.get("type"), a.get("tool_use_id") or a.get("id")
    if not isinstance(kind, str):
        return ""
    return (
        f" ({kind} {call})"
        if isinstance(call, str) and call == (b.get("tool_use_id") or b.get("id"))
        else f" ({kind})"
    )


def _text_id(value: Any) -> Any:
    """What a text is compared by where one side has only a placeholder: its id."""
    if isinstance(value, str):
        return blob_id(value)
    return value["$text"] if _is_placeholder(value) else value


def _shown(value: Any) -> Any:
    if _is_placeholder(value):
        return f"a text of {value.get('chars')} characters (sha256 {value['$text']}…)"
    return value
