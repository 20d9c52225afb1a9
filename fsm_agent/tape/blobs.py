"""Large texts stored once per log: the packing a version 4 log's records go through.

A large text (a Write's content, a file read, a model's long answer) reaches the log
in several records: the model stream that wrote it, in many small deltas and again in
the block they build; the permission request; the tool call. Packed, each text longer
than `LONG` is written once, in a `blob` record before the first line that needs it
(`{"t": "blob", "id": <16 hex of its SHA-256>, "text": …}`), and every string equal
to it becomes its id, the record's `blobs` listing where (`[id, key, key, …]`). A
model stream's consecutive deltas of one block become one `BlockDeltas` event (the
record says `joined`): their lengths, and their text, or where the block they build
holds it (`from`). Only a line longer than `BIG_LINE` is looked at, so an ordinary
step's records cost one comparison. See docs/log-format.md#blobs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fsm_agent.core import jsontext

LONG = 1024
"""A string longer than this (in characters) is written as a blob."""
BIG_LINE = LONG + 2
"""A line no longer than this (in bytes) holds no string longer than `LONG` (each character
takes a byte at least, and its quotes two more) and few deltas: written as it is. Any
longer is looked at, so each text longer than `LONG` is stored once, wherever it is."""
JOIN_LINE = 4096
"""A model effect's deltas are joined (`BlockDeltas`) when its line is longer than this,
or when it holds a text longer than `LONG` (whose deltas would hold it again)."""
EMPTY_DELTAS = 1000
"""How many empty deltas a run may hold beyond one per character (a stream opens a tool
call's JSON with an empty one): a bound, so a line's cuts cannot ask for endless ones."""
Blob = dict[str, Any]
Fetch = Callable[[str], str]


class PackError(ValueError):
    """A packed record that does not unpack: the message says what, its caller the line."""


def blob_id(text: str) -> str:
    """A text's id: the first 16 hex digits of its UTF-8's SHA-256 (a lone surrogate, which
    JSON escapes allow, hashed as Python keeps it), as a state delta's `$text` names it."""
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()[:16]


def pack(
    record: dict[str, Any], known: set[str], size: int = JOIN_LINE + 1
) -> tuple[list[Blob], dict[str, Any]] | None:
    """`record` (`size` bytes as a line) packed, and the blob records to write before it
    (their ids join `known`, the ids the log holds); None when packing changes nothing."""
    joined = False
    model = record.get("t") == "effect" and record.get("name") == "model"
    if model and (size > JOIN_LINE or _has_long(record)):  # many deltas, or a long text's
        result = record.get("result")
        events = result.get("events") if isinstance(result, dict) else None
        if isinstance(result, dict) and isinstance(events, list):
            packed_events = join_deltas(events)
            if packed_events is not None:
                record = {**record, "result": {**result, "events": packed_events}}
                joined = True
    refs: list[list[Any]] = []
    blobs: list[Blob] = []
    record = _swap(record, [], refs, blobs, known)
    if not refs and not joined:
        return None
    if refs:
        record["blobs"] = refs
    if joined:
        record["joined"] = True
    return blobs, record


def _has_long(value: Any) -> bool:
    """Whether `value` holds a string longer than `LONG`."""
    if isinstance(value, str):
        return len(value) > LONG
    if isinstance(value, dict):
        return any(_has_long(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_long(v) for v in value)
    return False


def _swap(
    value: Any, path: list[Any], refs: list[list[Any]], blobs: list[Blob], known: set[str]
) -> Any:
    """`value` with each long string put by its id (a copy along the paths that change)."""
    if isinstance(value, str):
        if len(value) <= LONG:
            return value
        key = blob_id(value)
        if key not in known:
            known.add(key)
            blobs.append({"t": "blob", "id": key, "text": value})
        refs.append([key, *path])
        return key
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for k, v in value.items():
            path.append(k)
            new = _swap(v, path, refs, blobs, known)
            path.pop()
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if isinstance(value, list):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            path.append(i)
            new = _swap(v, path, refs, blobs, known)
            path.pop()
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return value


_DELTA_KEYS = frozenset({"index", "kind", "delta", "event"})
_FROM_BLOCK = {"text": ("text",), "thinking": ("thinking",), "signature": ("signature",)}
INPUT_FORMS: dict[str, Callable[[Any], str]] = {
    "input:json": json.dumps,
    "input:json_utf8": lambda value: json.dumps(value, ensure_ascii=False),
    "input:compact": lambda value: jsontext.dumps(value).decode(errors="surrogatepass"),
}
"""How a tool call's streamed JSON may be its block's `input` written again: as Python's
`json.dumps` writes it (the scripted model's), the same with UTF-8, or compact."""


def _is_delta(event: Any) -> bool:
    return (
        isinstance(event, dict)
        and event.get("event") == "BlockDelta"
        and event.keys() == _DELTA_KEYS
        and type(event["index"]) is int
        and isinstance(event["kind"], str)
        and isinstance(event["delta"], str)
    )


def join_deltas(events: list[Any]) -> list[Any] | None:
    """The events with each run of two or more deltas of one block and kind as one
    `BlockDeltas`; None if there is no such run."""
    out: list[Any] = []
    i, n, joined = 0, len(events), False
    while i < n:
        event = events[i]
        if not _is_delta(event):
            out.append(event)
            i += 1
            continue
        j = i + 1
        while (
            j < n
            and _is_delta(events[j])
            and (events[j]["index"] == event["index"] and events[j]["kind"] == event["kind"])
        ):
            j += 1
        if j - i < 2:
            out.append(event)
            i = j
            continue
        pieces = [events[k]["delta"] for k in range(i, j)]
        text = "".join(pieces)
        run: dict[str, Any] = {
            "event": "BlockDeltas", "index": event["index"], "kind": event["kind"],
            "cuts": _lengths(pieces),
        }  # fmt: skip
        source = _source(text, event["kind"], _stop_after(events, j, event["index"]))
        if source is None:
            run["delta"] = text
        else:
            run["from"] = source
        out.append(run)
        joined = True
        i = j
    return out if joined else None


def _lengths(pieces: list[str]) -> list[list[int]]:
    """The pieces' lengths, run-length coded: `[[length, how many], …]`."""
    runs: list[list[int]] = []
    for piece in pieces:
        if runs and runs[-1][0] == len(piece):
            runs[-1][1] += 1
        else:
            runs.append([len(piece), 1])
    return runs


def _stop_after(events: list[Any], start: int, index: int) -> dict[str, Any] | None:
    """The block of the first `BlockStop` of `index` from `start` on."""
    for event in events[start:]:
        stop = isinstance(event, dict) and event.get("event") == "BlockStop"
        if stop and event.get("index") == index:
            block = event.get("block")
            return block if isinstance(block, dict) else None
    return None


def _derived(block: dict[str, Any] | None, source: str) -> str | None:
    """The text `source` names in the block (None: it holds none)."""
    if block is None:
        return None
    form = INPUT_FORMS.get(source)
    if form is not None:
        if "input" not in block:
            return None
        try:
            return form(block["input"])
        except (TypeError, ValueError):
            return None
    field = _FROM_BLOCK.get(source)
    text = block.get(field[0]) if field is not None else None
    return text if isinstance(text, str) else None


def _source(text: str, kind: str, block: dict[str, Any] | None) -> str | None:
    """Where in the block the deltas' text is, if it is there whole."""
    sources = tuple(INPUT_FORMS) if kind == "input_json" else (kind,)
    for source in sources:
        if _derived(block, source) == text:
            return source
    return None


def unpack(record: dict[str, Any], fetch: Fetch) -> dict[str, Any]:
    """A packed record (fresh from the line: changed in place) as it was written:
    each blob id put back by its text (`fetch`), each `BlockDeltas` by its deltas."""
    refs = record.pop("blobs", None)
    if refs is not None:
        _put_back(record, refs, fetch)
    if record.pop("joined", False) is True:
        result = record.get("result")
        events = result.get("events") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(events, list):
            raise PackError("a `joined` record without model events")
        result["events"] = split_deltas(events)
    return record


def _put_back(record: dict[str, Any], refs: Any, fetch: Fetch) -> None:
    if not isinstance(refs, list):
        raise PackError("its `blobs` is not a list")
    for ref in refs:
        if not (isinstance(ref, list) and len(ref) >= 2 and isinstance(ref[0], str)):
            raise PackError(f"a `blobs` entry that is not [id, key, …]: {_short(ref)}")
        key, *path = ref
        target: Any = record
        try:
            for step in path[:-1]:
                target = target[step]
            there = target[path[-1]]
        except (KeyError, IndexError, TypeError):
            raise PackError(f"blob {_short(key)}'s place {_short(path)} is not in it") from None
        if there != key or type(path[-1]) not in (str, int) or isinstance(path[-1], bool):
            raise PackError(f"blob {_short(key)}'s place {_short(path)} does not hold its id")
        target[path[-1]] = fetch(key)


def split_deltas(events: list[Any]) -> list[Any]:
    out: list[Any] = []
    for at, event in enumerate(events):
        if not (isinstance(event, dict) and event.get("event") == "BlockDeltas"):
            out.append(event)
            continue
        index, kind, cuts = event.get("index"), event.get("kind"), event.get("cuts")
        if type(index) is not int or not isinstance(kind, str):
            raise PackError(f"event {at}: a BlockDeltas without its index and kind")
        if "from" in event:
            text = _derived(_stop_after(events, at + 1, index), str(event["from"]))
            if text is None:
                raise PackError(f"event {at}: its block holds no {_short(event['from'])}")
        else:
            text = event.get("delta")
            if not isinstance(text, str):
                raise PackError(f"event {at}: a BlockDeltas without its text")
        runs = _runs(cuts, at)
        total = sum(length * count for length, count in runs)
        if total != len(text):
            raise PackError(
                f"event {at}: its cuts add up to {total} characters, its text has {len(text)}"
            )
        if sum(count for _, count in runs) > len(text) + EMPTY_DELTAS:
            raise PackError(f"event {at}: its cuts make more deltas than its text has characters")
        pos = 0
        for length in (length for length, count in runs for _ in range(count)):
            piece = text[pos : pos + length]
            pos += length
            out.append({"index": index, "kind": kind, "delta": piece, "event": "BlockDelta"})
    return out


def _runs(cuts: Any, at: int) -> list[tuple[int, int]]:
    if not isinstance(cuts, list) or not all(
        isinstance(c, list)
        and len(c) == 2
        and all(type(x) is int for x in c)
        and c[0] >= 0
        and c[1] >= 1
        for c in cuts
    ):
        raise PackError(f"event {at}: its cuts are not [[length, count], …]")
    return [(length, count) for length, count in cuts]


def _short(value: Any) -> str:
    text = jsontext.dumps(value).decode(errors="replace")
    return text if len(text) <= 40 else text[:39] + "…"
