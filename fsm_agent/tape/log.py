"""The session log: JSON Lines, append-only, flushed after every record.

Line 1 is the header; then a `start` record (the initial messages), then
`effect` and `transition` records in the order they happened, and a final
`result` record. A session of several runs (the messages of one Agent SDK
process) goes on after a `result` with the next run's `start` (`"run": 2`, …),
its steps numbered on from the last. A torn last line (a killed process) is
tolerated on read; any other malformed line is a `LogError` naming it. See
docs/log-format.md.
"""

from __future__ import annotations

import binascii
import fcntl
import hashlib
import json
import os
import re
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from fsm_agent.core import jsontext
from fsm_agent.tape.blobs import BIG_LINE, PackError, blob_id, pack, unpack

FORMAT = "fsm-agent-session"
VERSION = 4
"""The version this writer writes: the one constant a format change bumps (everything that
depends on a version keys on `CHAINED` or `PACKED`)."""
READS = tuple(range(1, VERSION + 1))
"""Versions this reader takes: 2 added `ModelRetry` to a model result's events, and a
version 1 log is a version 2 log without any; 3 chained every line (`CHAINED`), and a
version 2 log is read as before, unchained; 4 stores each large text once (`PACKED`), and
a version 3 log is read as before, every text where it is used."""
CHAINED = 3
"""The first version whose every line ends in its chain digest `h` (docs/log-format.md#chain)."""
PACKED = 4
"""The first version whose large texts are `blob` records, referred to by their id
(docs/log-format.md#blobs)."""
BLOB_CACHE = 4
"""How many blobs a reader keeps at hand (the last read): a text is used by the few
records after its blob, so a long log's blobs are not all held."""
_MARK = b',"h":"'
_DIGEST = 16
_SEAL = len(_MARK) + _DIGEST + 2
"""`,"h":"` + 16 hex digits + `"}`: how a chained line ends (before its newline)."""
_BLOB_HEAD = b'{"t":"blob","id":"'
TAIL_CHUNK = 8192
"""How much of a log's end `last_line` reads at a time, backwards."""
REQUIRED: dict[str, tuple[str, ...]] = {
    "start": ("messages",),
    "transition": ("step", "from", "to", "edge", "turn", "state"),
    "effect": ("step", "name", "request", "result"),
    "context": ("step", "level", "before", "after", "text"),
    "result": ("reason", "turns", "steps"),
    "blob": ("id", "text"),
}
"""The fields each record type must have (the schema's `required`, less `t`)."""
RECORD_TYPES = frozenset(REQUIRED)
HEADER_REQUIRED = ("format", "version", "session_id", "fingerprint", "config")
"""The fields a header must have (the schema's header `required`), in every version read."""
HEADER_TYPES: dict[str, tuple[type, str]] = {
    "session_id": (str, "a string"),
    "fingerprint": (str, "a string"),
    "config": (dict, "an object"),
    "created": (str, "a string"),
    "tools": (list, "a list"),
    "parent": (dict, "an object"),
}
"""The JSON type of each header field the schema types, checked when the field is there."""
_REQUIRED_KEYS = {kind: frozenset(fields) for kind, fields in REQUIRED.items()}
_STRING, _INTEGER = (str, "a string"), (int, "an integer")
FIELD_TYPES: dict[str, dict[str, tuple[type, str]]] = {
    "transition": {
        "step": _INTEGER, "from": _STRING, "to": _STRING, "edge": _STRING,
        "turn": _INTEGER, "state": _STRING,
    },
    "effect": {"step": _INTEGER, "name": _STRING, "request": _STRING},
    "context": {
        "step": _INTEGER, "level": _STRING, "before": _INTEGER, "after": _INTEGER, "text": _STRING,
    },
    "result": {"reason": _STRING, "turns": _INTEGER, "steps": _INTEGER},
    "blob": {"id": _STRING, "text": _STRING},
}  # fmt: skip
"""The JSON type of each scalar field a reader keys, counts, compares or prints (the
schema's `type`, or a string `enum`; all required): a list as an effect's `name` is no
key, and `true` is no step."""


class LogError(Exception):
    """A session log that cannot be read: the message names the file and line."""


def edge_text(key: tuple[str, str, str]) -> str:
    """A recorded transition as `from -[edge]-> to`, a name that is not plain text (a
    newline…) as a JSON string. Here, not in `graph`: `replay --path` needs no machine."""
    source, edge, dest = (n if n.isprintable() else json.dumps(n) for n in key)
    return f"{source} -[{edge}]-> {dest}"


def no_start(path: Path) -> LogError:
    """A log with no `start` record holds no run: nothing to replay, list or mark."""
    return LogError(
        f"{path}: the log ends after its header, before the run started (no `start` record)"
    )


def is_claude_entry(value: Any) -> bool:
    """Whether a first line is a Claude Code transcript's (an entry with a `type` and
    a `sessionId`, or an old transcript's `summary` line)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and ("sessionId" in value or value["type"] == "summary")
    )


def is_claude_transcript(path: Path) -> bool:
    """Whether `path`'s first line is a Claude Code transcript's: read alone, so telling
    the two formats apart costs a command that takes logs nothing."""
    try:
        with path.open("rb") as fh:
            first = fh.readline()
        return is_claude_entry(jsontext.loads(first))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False


def header_problem(header: Any) -> str | None:
    """What makes `header` (line 1, parsed) not a header this reader takes, or None.

    The schema's rules for every version read: the format, a known integer
    version (not `true`, not `2.0`), the required fields, and the JSON type
    of each typed field, so no reader later trips over a wrong one.
    """
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return f"not a session log (no '{FORMAT}' header)"
    version = header.get("version")
    if type(version) is not int or version not in READS:
        return (
            f"unknown log format version {_shown(version)} "
            f"(this fsm-agent reads versions {', '.join(map(str, READS))})"
        )
    missing = [key for key in HEADER_REQUIRED if key not in header]
    if missing:
        return f"a header without {', '.join(repr(key) for key in missing)}"
    for key, (kind, name) in HEADER_TYPES.items():
        if key in header and not isinstance(header[key], kind):
            return f"the header's {key} is not {name}: {_shown(header[key])}"
    return None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _shown(value: Any) -> str:
    """A value as the file has it (JSON), cut short for an error line; one nested too
    deep to write back (orjson reads more levels than a writer takes) by its start."""
    try:
        text = jsontext.dumps(value).decode(errors="replace")
    except RecursionError:
        text = ("[" if isinstance(value, list) else "{") * 41
    return text if len(text) <= 40 else text[:39] + "…"


def refuse_existing(path: Path) -> None:
    """A `LogError` if something is at `path`: a new log never replaces a file, which
    may be the very log being resumed or forked."""
    if os.path.lexists(path):
        raise _already_there(path)


def _already_there(path: Path) -> LogError:
    return LogError(f"{path}: already exists; a session log never overwrites a file")


def _not_a_directory(path: Path) -> LogError:
    """`mkdir` names only the first part of the path that is a file, as "File exists"."""
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), path.parent)
    return LogError(f"{path}: cannot create the session log: {blocker} is not a directory")


_sha256 = hashlib.sha256
_hex = binascii.hexlify
_HALF = _DIGEST // 2
"""A digest's first 8 bytes, as `hexlify` writes them: the 16 hex digits of the
`hexdigest` prefix, made as bytes at once, without the other 48 digits or a str."""


def digest(before: bytes, body: bytes | memoryview) -> bytes:
    """A line's chain digest: SHA-256 over the digest of the line before (nothing for the
    header) and the line's JSON without its `h`, as 16 hex digits."""
    hasher = hashlib.sha256(before)
    hasher.update(body)
    return _hex(hasher.digest()[:_HALF])


def _body_digest(before: bytes, line: bytes) -> bytes:
    """The digest of a sealed line (no newline) as its writer made it: over its JSON
    without `h`; a long line hashed in pieces rather than copied into one."""
    if len(line) < BIG_LINE:
        return _hex(_sha256(before + line[:-_SEAL] + b"}").digest()[:_HALF])
    hasher = _sha256(before)
    hasher.update(memoryview(line)[:-_SEAL])
    hasher.update(b"}")
    return _hex(hasher.digest()[:_HALF])


def seal(data: bytes, before: bytes) -> tuple[bytes, bytes]:
    """`data` (one compact JSON object and its newline) with its chain digest as its last
    field `h`, and that digest, which the next line chains on."""
    sealed = _hex(_sha256(before + data[:-1]).digest()[:_HALF])
    return data[:-2] + _MARK + sealed + b'"}\n', sealed


class Chain:
    """Checks each line of a chained log against the digest it ends in, so a byte changed
    anywhere after it was written is named by its line.

    A line is checked against the digest the line before it holds (not the one its text
    gives), so a changed line is named alone; one whose digest was made again to fit is
    named by the line after it. Lines of a log from before the chain must not have one:
    a digest there says its version was changed.
    """

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.chained = version >= CHAINED
        self.version = version
        self.last = b""

    def check(self, raw: bytes, lineno: int) -> None:
        """`raw` (a whole line, with or without its newline) is the line written there."""
        if not self.chained:
            return
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if len(line) <= _SEAL or line[-_SEAL : -_SEAL + len(_MARK)] != _MARK or line[-2:] != b'"}':
            raise self.changed(lineno, "it does not end in its chain digest `h`")
        recorded = line[-_DIGEST - 2 : -2]
        computed = _body_digest(self.last, line)
        if recorded != computed:
            raise self.changed(
                lineno,
                f"its digest {recorded.decode(errors='replace')} is not {computed.decode()}, "
                "that of its text and the line before",
            )
        self.last = recorded

    def check_unchained(self, record: dict[str, Any], lineno: int) -> None:
        """A record of a log from before the chain has no `h`: one that has came from a
        chained log whose version was changed."""
        if not self.chained and "h" in record:
            raise LogError(
                f"{self.path}:{lineno}: changed after it was written (a chain digest in a "
                f"version {self.version} log, which has none: its version was changed?)"
            )

    def whole_then_more(self, raw: bytes) -> bool:
        """Whether a last line cut short (no newline) is a whole chained line with bytes
        after it: a line changed, not torn by a killed run."""
        if not self.chained:
            return False
        end = raw.rfind(b'"}')
        return end != -1 and end + 2 < len(raw) and _verifies(self.last, raw[: end + 2])

    def changed(self, lineno: int, why: str) -> LogError:
        return LogError(f"{self.path}:{lineno}: changed after it was written ({why})")


def _verifies(before: bytes, line: bytes) -> bool:
    if len(line) <= _SEAL or line[-_SEAL : -_SEAL + len(_MARK)] != _MARK:
        return False
    return line[-_DIGEST - 2 : -2] == _body_digest(before, line)


def new_header(fields: dict[str, Any], chained: bool, packed: bool = True) -> dict[str, Any]:
    version = (VERSION if packed else PACKED - 1) if chained else CHAINED - 1
    return {"format": FORMAT, "version": version, **fields}


class Packer:
    """Makes a record's line, and before it the lines of the blobs it is the first to
    need: the ids a log holds are kept, never the texts."""

    def __init__(self) -> None:
        self.known: set[str] = set()

    def lines(self, record: dict[str, Any], data: bytes) -> list[bytes]:
        """The lines for `record`, whose line as it is is `data` (longer than `BIG_LINE`:
        a shorter one is written as it is, unlooked at)."""
        packed = pack(record, self.known, len(data))
        if packed is None:
            return [data]
        blobs, record = packed
        return [*(jsontext.line(blob) for blob in blobs), jsontext.line(record)]


class LogWriter:
    """Appends records to a session log, one line each, written through at once.

    The file is unbuffered: each record is one `write` system call, so a
    killed process leaves at most a torn last line and nothing waits in a buffer.
    It is created exclusively: a file already at `path` is a `LogError`, never
    overwritten (it may be a log someone still needs). While open it holds a lock
    on the file, which the kernel drops when the process dies however it dies, so
    a log without its `result` tells a run still going from one cut short
    (`being_written`).
    """

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise _not_a_directory(path) from None
        try:
            self._file: IO[bytes] | None = path.open("xb", buffering=0)
        except FileExistsError:
            raise _already_there(path) from None
        fcntl.flock(self._file, fcntl.LOCK_EX)  # waits out a reader's brief look only
        self._last = b""
        self._packer = Packer() if self.chained and self.packed else None
        self._put([jsontext.line(new_header(header, self.chained, self.packed))])

    chained = True
    """Whether lines are chained (`CHAINED`); False writes version 2, as before the chain,
    for the benchmarks that measure what the chain costs (tools/bench_*.py)."""
    packed = True
    """Whether large texts are stored once (`PACKED`); False writes version 3, every text
    where it is used, for the benchmark that measures what that saves (tools/bench_log_size.py)."""

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            raise LogError(f"{self.path}: log is closed")
        data = jsontext.line(record)
        if len(data) > BIG_LINE and self._packer is not None:
            self._put(self._packer.lines(record, data))
            return
        if self.chained:  # `seal`, written out: every record of a run comes this way
            last = self._last = _hex(_sha256(self._last + data[:-1]).digest()[:_HALF])
            data = data[:-2] + _MARK + last + b'"}\n'
        self._out(data)

    def _put(self, lines: list[bytes]) -> None:
        """`lines` sealed and written in one `write`: a record and the blobs it needs
        come whole or torn together."""
        if self.chained:
            sealed = []
            for line in lines:
                line, self._last = seal(line, self._last)
                sealed.append(line)
            lines = sealed
        self._out(b"".join(lines))

    def _out(self, data: bytes) -> None:
        assert self._file is not None
        written = self._file.write(data)
        while written < len(data):
            written += self._file.write(data[written:])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def being_written(path: Path) -> bool:
    """Whether a live `LogWriter` holds the log: a run still writes it."""
    with path.open("rb") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


class MemoryWriter:
    """A log kept in memory: for tests and for runs that asked for no file."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.path: Path | None = None
        self.lines: list[bytes] = []
        self._last = b""
        self._packer = Packer()
        self._put(jsontext.line(new_header(header, True)))

    def write(self, record: dict[str, Any]) -> None:
        data = jsontext.line(record)
        if len(data) <= BIG_LINE:
            self._put(data)
            return
        for line in self._packer.lines(record, data):
            self._put(line)

    def _put(self, data: bytes) -> None:
        line, self._last = seal(data, self._last)
        self.lines.append(line)

    def close(self) -> None:
        pass


class SessionLog:
    """Reads a session log lazily: the header at once, records as they are asked for.

    `offsets` indexes where each line starts, so a debugger can seek to any
    record of a long log without holding the others in memory.
    """

    def __init__(self, path: Path, *, as_now: bool = False) -> None:
        self.path = Path(path)
        self.torn = False
        if not self.path.is_file():
            what = "not a file" if self.path.exists() else "no such log file"
            raise LogError(f"{self.path}: {what}")
        self.end = self.path.stat().st_size if as_now else None
        """With `as_now`, the log is read as it is now: the lines a run still writing it
        adds later are not, so an index of it and a replay of it see the same records."""
        with self._open() as fh:
            first = fh.readline()
        self.header = self._parse_header(first)
        self.version: int = self.header["version"]
        self.chained = self.version >= CHAINED
        """Whether every line carries its chain digest; an older log is read unchained."""
        head = Chain(self.path, self.version)
        head.check(first, 1)
        head.check_unchained(self.header, 1)
        self._head_digest = head.last
        self._header_size = len(first)
        self.packed = self.version >= PACKED
        """Whether large texts are `blob` records the others refer to."""
        self._blob_at: dict[str, tuple[int, int]] | None = None
        """Where each blob's line is (offset, line number), once known."""
        self._blob_cache: OrderedDict[str, str] = OrderedDict()

    def chain(self) -> Chain:
        """A check of the lines after the header, in order, from the header's digest."""
        chain = Chain(self.path, self.version)
        chain.last = self._head_digest
        return chain

    def _open(self) -> IO[bytes]:
        """The file for reading; one it cannot open (no permission) is a `LogError`, so
        every command says so in one line."""
        try:
            return self.path.open("rb")
        except OSError as exc:
            raise LogError(f"{self.path}: cannot read the log: {exc.strerror or exc}") from None

    def _parse_header(self, raw: bytes) -> dict[str, Any]:
        if not raw:
            raise LogError(f"{self.path}: empty, not a session log")
        try:
            header = jsontext.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            what = "JSON" if _is_utf8(raw) else "UTF-8 text (a compressed or binary file?)"
            raise LogError(
                f"{self.path}:1: not a session log (the first line is not {what})"
            ) from None
        problem = header_problem(header)
        if problem is not None and is_claude_entry(header):
            raise LogError(
                f"{self.path}: a Claude Code transcript, not a session log: "
                f"`fsm-agent import {self.path} -o LOG` makes it session logs"
            )
        if problem is not None:
            raise LogError(f"{self.path}:1: {problem}")
        return header

    def lines(self, fh: IO[bytes]) -> Iterator[bytes]:
        """The lines after the header (`fh` is just past it), up to `end`: a line
        written past it is cut there, so it reads as torn."""
        pos = fh.tell()
        for raw in fh:
            if self.end is not None:
                if pos >= self.end:
                    return
                raw = raw[: self.end - pos]
            pos += len(raw)
            yield raw

    def records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield `(line number, record)` after the header, streaming from disk; a `blob`
        record is not yielded: the records that refer to it are given its text."""
        order = RecordOrder(self.path)
        chain = self.chain()
        if self.packed and self._blob_at is None:
            self._blob_at = {}
        with self._open() as fh:
            fh.readline()
            lineno = 1
            pos = at = self._header_size
            pending: bytes | None = None
            for raw in self.lines(fh):
                lineno += 1
                if pending is not None:
                    record = order(self.checked(pending, lineno - 1, chain), lineno - 1)
                    given = (
                        self.unpacked(record, lineno - 1, at)
                        if self.packed
                        and ("blobs" in record or "joined" in record or record["t"] == "blob")
                        else record
                    )
                    if given is not None:
                        yield lineno - 1, given
                pending, at, pos = raw, pos, pos + len(raw)
            if pending is not None:
                torn = not pending.endswith(b"\n")
                try:
                    record = self.parse(pending, lineno)
                except LogError:
                    if not torn:
                        raise
                    if chain.whole_then_more(pending):
                        raise chain.changed(lineno, "bytes after its end") from None
                    self.torn = True
                else:
                    chain.check(pending, lineno)
                    chain.check_unchained(record, lineno)
                    record = order(record, lineno)
                    given = self.unpacked(record, lineno, at) if self.packed else record
                    if given is not None:
                        yield lineno, given

    def unpacked(self, record: dict[str, Any], lineno: int, offset: int) -> dict[str, Any] | None:
        """A packed log's record as it was written (None for a blob, which is noted)."""
        if record["t"] == "blob":
            self._note_blob(record, lineno, offset)
            return None
        return self._resolved(record, lineno)

    def _resolved(self, record: dict[str, Any], lineno: int) -> dict[str, Any]:
        """A record of a packed log with its blobs' texts and its deltas put back."""
        if not self.packed or ("blobs" not in record and "joined" not in record):
            return record
        try:
            return unpack(record, lambda key: self._blob(key, lineno))
        except PackError as exc:
            raise LogError(
                f"{self.path}:{lineno}: a packed record that does not unpack: {exc}"
            ) from None

    def _note_blob(self, record: dict[str, Any], lineno: int, offset: int) -> None:
        """A blob line read in order: its text is checked against its id and kept at hand."""
        key, text = record["id"], record["text"]
        if blob_id(text) != key:
            raise self.chain().changed(
                lineno, f"blob {_shown(key)}'s text is not the text its id names"
            )
        if self._blob_at is None:
            self._blob_at = {}
        self._blob_at.setdefault(key, (offset, lineno))
        self._keep(key, text)

    def blob_text(self, key: str) -> str | None:
        """The text of blob `key` if the log holds one (its line checked against its id),
        else None: for a report that finds a text's id where the text is not."""
        try:
            return self._blob(key, 0)
        except LogError:
            return None

    def blob_line(self, raw: bytes, offset: int, lineno: int) -> None:
        """A blob line an index came by (`fsm_agent.tape.stepper.LogIndex`): where it is,
        so reading a record that refers to it finds it without looking."""
        if self._blob_at is None:
            self._blob_at = {}
        self._blob_at.setdefault(_blob_key(raw), (offset, lineno))

    def _keep(self, key: str, text: str) -> None:
        self._blob_cache[key] = text
        self._blob_cache.move_to_end(key)
        while len(self._blob_cache) > BLOB_CACHE:
            self._blob_cache.popitem(last=False)

    def _blob(self, key: str, lineno: int) -> str:
        """The text of blob `key`, which a record at `lineno` refers to: at hand, or read
        again from its line (which a reader in order has checked)."""
        text = self._blob_cache.get(key)
        if text is not None:
            self._blob_cache.move_to_end(key)
            return text
        if self._blob_at is None:
            self._blob_at = self._blob_lines()
        where = self._blob_at.get(key)
        if where is None or (lineno and where[1] >= lineno):
            raise LogError(
                f"{self.path}:{lineno}: refers to blob {_shown(key)}, which no line before it holds"
            )
        offset, at = where
        with self._open() as fh:
            fh.seek(offset)
            record = self.parse(fh.readline(), at)
        if record["t"] != "blob" or record["id"] != key:
            raise LogError(f"{self.path}:{at}: not the blob {_shown(key)} it was")
        if blob_id(record["text"]) != key:
            raise self.chain().changed(
                at, f"blob {_shown(key)}'s text is not the text its id names"
            )
        self._keep(key, record["text"])
        return str(record["text"])

    def _blob_lines(self) -> dict[str, tuple[int, int]]:
        """Where each blob line is, found by its first bytes (`{"t":"blob","id":"…"`)."""
        found: dict[str, tuple[int, int]] = {}
        with self._open() as fh:
            pos = len(fh.readline())
            for lineno, raw in enumerate(self.lines(fh), start=2):
                if raw.startswith(_BLOB_HEAD):
                    found.setdefault(_blob_key(raw), (pos, lineno))
                pos += len(raw)
        return found

    def checked(self, raw: bytes, lineno: int, chain: Chain) -> dict[str, Any]:
        """A whole line parsed, then checked against the chain: a line that is no record
        is named as such, one changed otherwise as changed."""
        record = self.parse(raw, lineno)
        chain.check(raw, lineno)
        chain.check_unchained(record, lineno)
        return record

    def parse(self, raw: bytes, lineno: int) -> dict[str, Any]:
        try:
            record = jsontext.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LogError(f"{self.path}:{lineno}: corrupt record ({exc})") from None
        kind = record.get("t") if isinstance(record, dict) else None
        if not isinstance(kind, str) or kind not in RECORD_TYPES:
            raise LogError(f"{self.path}:{lineno}: not a session record")
        if kind == "blob" and self.version < PACKED:
            raise LogError(
                f"{self.path}:{lineno}: not a session record (a blob in a version "
                f"{self.version} log, which has none)"
            )
        if not record.keys() >= _REQUIRED_KEYS[kind]:
            missing = ", ".join(repr(k) for k in REQUIRED[kind] if k not in record)
            raise LogError(f"{self.path}:{lineno}: a {kind} record without {missing}")
        for key, (cls, name) in FIELD_TYPES.get(kind, {}).items():
            value = record[key]
            if not isinstance(value, cls) or isinstance(value, bool):
                shown = _shown(value)
                raise LogError(f"{self.path}:{lineno}: {_a(kind)}'s {key} is not {name}: {shown}")
        return record

    def offsets(self) -> list[int]:
        """Byte offset of every record line after the header."""
        out: list[int] = []
        with self._open() as fh:
            pos = len(fh.readline())
            for raw in fh:
                out.append(pos)
                pos += len(raw)
        return out

    def read_at(self, offset: int) -> dict[str, Any]:
        """The record at a byte offset (from `offsets` or an index).

        Line numbers are not kept per offset; a damaged record's error counts
        them then, so it names the real line.
        """
        with self._open() as fh:
            fh.seek(offset)
            raw = fh.readline()
            try:
                return self._resolved(self.parse(raw, 0), 0)
            except LogError:
                fh.seek(0)
                lineno = fh.read(offset).count(b"\n") + 1
        return self._resolved(self.parse(raw, lineno), lineno)


def _blob_key(raw: bytes) -> str:
    return raw[len(_BLOB_HEAD) : len(_BLOB_HEAD) + _DIGEST].decode(errors="replace")


class RecordOrder:
    """Checks that records come in the order a run writes them: `start` first, each
    transition numbered one past the last, each effect and context record numbered
    with the step it belongs to (one past the last transition), nothing after `result`
    but the next run's `start` (numbered `run` one past the last's), whose steps go on.

    Replay matches records by position; a step number out of place (a line moved,
    repeated or lost, or edited) would otherwise pass unnoticed, and the debugger and
    `--edit-effect`, which go by the numbers, would show and edit other records.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = 0
        self.steps = 0
        self.ended = False
        self.runs = 0

    def __call__(self, record: dict[str, Any], lineno: int) -> dict[str, Any]:
        kind = record["t"]
        where = f"{self.path}:{lineno}"
        if kind == "blob":  # before the first record that needs it, wherever that is
            return record
        if kind == "start" and self.ended:
            number = record.get("run", 1)
            if number != self.runs + 1 or isinstance(number, bool):
                raise LogError(
                    f"{where}: a start record after a run's result is run {self.runs + 1} of "
                    f"the session, not {_shown(number)}"
                )
            self.runs = number
            self.ended = False
            return record
        if self.ended:
            raise LogError(f"{where}: {_a(kind)} record after the run's result")
        if kind == "start" and self.seen:
            raise LogError(f"{where}: a second start record")
        if kind == "start" and record.get("run", 1) != 1:
            raise LogError(
                f"{where}: the log's first start record is run 1, not {_shown(record.get('run'))}"
            )
        if kind == "start":
            self.runs = 1
        if kind != "start" and not self.seen:
            raise LogError(f"{where}: {_a(kind)} record before the run's start record")
        self.seen += 1
        self.ended = kind == "result"
        if kind in ("start", "result"):
            return record
        step = self.steps + 1
        if record["step"] != step:
            raise LogError(
                f"{where}: {_a(kind)} record of step {record['step']} where step {step} comes "
                "(a record moved, repeated or lost)"
            )
        if kind == "transition":
            self.steps = step
        return record


RUN_FIELDS = ("config", "tools")
"""What a later run's `start` holds of its own when it is not the header's."""
_START = re.compile(rb'^\{\s*"t"\s*:\s*"start"\s*[,}]')


def run_header(header: dict[str, Any], start: dict[str, Any]) -> dict[str, Any]:
    """The header as a run of the log has it: its `start`'s `config` and `tools`, if
    it holds them (a later run of a session), in place of the header's."""
    if not any(key in start for key in RUN_FIELDS):
        return header
    return {**header, **{key: start[key] for key in RUN_FIELDS if key in start}}


def count_runs(path: Path) -> int:
    """How many runs the log holds (its `start` records), by each line's first bytes: a
    session of several runs (an Agent SDK process's messages) has one after another."""
    with path.open("rb") as fh:
        return sum(1 for raw in fh if _START.match(raw))


def default_log_path(cwd: str, session_id: str) -> Path:
    return Path(cwd) / ".fsm-agent" / "sessions" / f"{session_id}.jsonl"


def next_run_log_path(cwd: str, session_id: str) -> Path:
    """Where the next run of session `session_id` logs by default: `ID.jsonl`, or once
    that is taken `ID.2.jsonl`, `ID.3.jsonl`, … (the first free). A conversation keeps
    one session id over its runs, as Claude Code keeps it over `--resume`, and each run
    still has a log of its own, which never overwrites another."""
    first = default_log_path(cwd, session_id)
    number = 1
    path = first
    while os.path.lexists(path):
        number += 1
        path = first.with_name(f"{session_id}.{number}.jsonl")
    return path


def run_number(stem: str, session_id: str) -> int | None:
    """Which run of `session_id` a log named `stem` is (`ID` 1, `ID.N` N), else None."""
    if stem == session_id:
        return 1
    head, dot, tail = stem.rpartition(".")
    return int(tail) if dot and head == session_id and tail.isdigit() else None


def last_line(path: Path) -> tuple[bytes, bool]:
    """The last line of a file, read backwards from its end, and whether it is whole."""
    size = os.path.getsize(path)
    if size == 0:
        return b"", True
    with path.open("rb") as fh:
        fh.seek(size - 1)
        whole = fh.read(1) == b"\n"
        pos = size - 1 if whole else size
        pieces: list[bytes] = []
        while pos > 0:
            step = min(TAIL_CHUNK, pos)
            pos -= step
            fh.seek(pos)
            piece = fh.read(step)
            cut = piece.rfind(b"\n")
            if cut != -1:
                pieces.append(piece[cut + 1 :])
                break
            pieces.append(piece)
        return b"".join(reversed(pieces)), whole


def is_torn(path: Path) -> bool:
    """Whether the log ends in a torn line as its reader takes it: a record line cut
    before its newline that is not a whole record (one lacking only its newline is read)."""
    tail, whole = last_line(path)  # read backwards: a long log costs nothing
    if whole or len(tail) == os.path.getsize(path):  # no line cut, or the header alone
        return False
    try:
        SessionLog(path).parse(tail, 0)
    except LogError:
        return True
    return False
