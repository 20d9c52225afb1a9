"""The session log: JSON Lines, append-only, flushed after every record.

Line 1 is the header; then a `start` record (the initial messages), then
`effect` and `transition` records in the order they happened, and a final
`result` record. A torn last line (a killed process) is tolerated on read;
any other malformed line is a `LogError` naming it. See docs/log-format.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import IO, Any

FORMAT = "fsm-agent-session"
VERSION = 1
RECORD_TYPES = frozenset({"start", "effect", "transition", "context", "result"})


class LogError(Exception):
    """A session log that cannot be read: the message names the file and line."""


def machine_fingerprint() -> str:
    """A digest of the edge table, so a replay can tell when the machine changed."""
    from fsm_agent.machine import EDGES

    rows = "\n".join(f"{e.source}|{e.name}|{e.dest}|{e.when}" for e in EDGES)
    return hashlib.sha256(rows.encode()).hexdigest()[:16]


def compact_encoder(*, sort_keys: bool) -> Callable[[Any], str]:
    """`json.dumps(…, separators=(",", ":"), ensure_ascii=False)`, built once.

    `JSONEncoder.encode` makes a new C encoder on every call; a log writes
    about sixteen records per iteration, so the C encoder is made here once
    (the pure-Python encoder where CPython's C one is missing). Same bytes.
    """
    encoder = json.JSONEncoder(
        separators=(",", ":"), ensure_ascii=False, check_circular=False, sort_keys=sort_keys
    )
    if c_make_encoder is None:
        return encoder.encode
    chunks = c_make_encoder(
        None, encoder.default, encode_basestring, None, ":", ",", sort_keys, False, True
    )
    return lambda value: "".join(chunks(value, 0))


_encode = compact_encoder(sort_keys=False)


def _line(record: dict[str, Any]) -> str:
    return _encode(record) + "\n"


_scan = json.JSONDecoder().scan_once


def _loads(text: str) -> Any:
    """`json.loads`, calling the C scanner directly for a line that is one JSON value.

    A replay parses every line; `json.loads` adds two regex matches and a
    few calls per line. Anything unusual (leading space, a syntax error)
    goes through `json.loads`, which accepts or reports it as it always did.
    """
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    if text[end:].strip(" \t\n\r"):
        return json.loads(text)
    return value


class LogWriter:
    """Appends records to a session log, one line each, written through at once.

    The file is unbuffered: each record is one `write` system call, so a
    killed process leaves at most a torn last line and nothing waits in a buffer.
    """

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] | None = path.open("wb", buffering=0)
        self.write({"format": FORMAT, "version": VERSION, **header})

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            raise LogError(f"{self.path}: log is closed")
        data = _line(record).encode()
        written = self._file.write(data)
        while written < len(data):
            written += self._file.write(data[written:])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class MemoryWriter:
    """A log kept in memory: for tests and for runs that asked for no file."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.path: Path | None = None
        self.lines: list[str] = [_line({"format": FORMAT, "version": VERSION, **header})]

    def write(self, record: dict[str, Any]) -> None:
        self.lines.append(_line(record))

    def close(self) -> None:
        pass


class SessionLog:
    """Reads a session log lazily: the header at once, records as they are asked for.

    `offsets` indexes where each line starts, so a debugger can seek to any
    record of a long log without holding the others in memory.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.torn = False
        if not self.path.is_file():
            raise LogError(f"{self.path}: no such log file")
        with self.path.open("rb") as fh:
            first = fh.readline()
        self.header = self._parse_header(first)

    def _parse_header(self, raw: bytes) -> dict[str, Any]:
        try:
            header = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise LogError(
                f"{self.path}:1: not a session log (the first line is not JSON)"
            ) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise LogError(f"{self.path}:1: not a session log (no '{FORMAT}' header)")
        if header.get("version") != VERSION:
            raise LogError(
                f"{self.path}:1: unknown log format version {header.get('version')!r} "
                f"(this fsm-agent reads version {VERSION})"
            )
        return header

    def records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield `(line number, record)` after the header, streaming from disk."""
        with self.path.open("rb") as fh:
            fh.readline()
            lineno = 1
            pending: bytes | None = None
            for raw in fh:
                lineno += 1
                if pending is not None:
                    yield lineno - 1, self._parse(pending, lineno - 1, last=False)
                pending = raw
            if pending is not None:
                torn = not pending.endswith(b"\n")
                try:
                    yield lineno, self._parse(pending, lineno, last=True)
                except LogError:
                    if not torn:
                        raise
                    self.torn = True

    def _parse(self, raw: bytes, lineno: int, *, last: bool) -> dict[str, Any]:
        try:
            record = _loads(raw.decode())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LogError(f"{self.path}:{lineno}: corrupt record ({exc})") from None
        if not isinstance(record, dict) or record.get("t") not in RECORD_TYPES:
            raise LogError(f"{self.path}:{lineno}: not a session record")
        return record

    def offsets(self) -> list[int]:
        """Byte offset of every record line after the header."""
        out: list[int] = []
        with self.path.open("rb") as fh:
            pos = len(fh.readline())
            for raw in fh:
                out.append(pos)
                pos += len(raw)
        return out

    def read_at(self, offset: int) -> dict[str, Any]:
        with self.path.open("rb") as fh:
            fh.seek(offset)
            return self._parse(fh.readline(), -1, last=False)


def default_log_path(cwd: str, session_id: str) -> Path:
    return Path(cwd) / ".fsm-agent" / "sessions" / f"{session_id}.jsonl"


def is_torn(path: Path) -> bool:
    size = os.path.getsize(path)
    if size == 0:
        return False
    with path.open("rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) != b"\n"
