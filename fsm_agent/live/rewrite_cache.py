"""Keep `lazy_sdk`'s rewrites of the SDK's modules compiled between runs.

Python caches a module's bytecode in `__pycache__`, but a module `lazy_sdk` rewrites
is parsed, changed and compiled from its AST at each import: some 70 ms of a run's
start for the SDK's `__init__.py`, its streaming package and its tracing modules,
and the parse of every re-export table. The result depends only on the module's
source and on `lazy_sdk` itself, so it is kept, as `marshal` data, in one file per
module and install under the cache directory (named by both files' paths, so two
checkouts or environments sharing it keep their own entries instead of replacing each
other's at every run), checked against both files' size and modification time as
`__pycache__` is checked; a stale or unreadable entry is rebuilt and written
again, and a directory that cannot be written only costs the rebuild.

The directory is `$FSM_AGENT_CACHE_DIR`, else `$XDG_CACHE_HOME/fsm-agent`, else
`~/.cache/fsm-agent`; `FSM_AGENT_CACHE_DIR=` (empty) turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT = 1
"""Bumped when what an entry holds changes shape."""


def cache_dir() -> Path | None:
    """Where the rewrites are kept; None when the cache is turned off."""
    configured = os.environ.get("FSM_AGENT_CACHE_DIR")
    if configured is not None:
        return Path(configured).expanduser() if configured.strip() else None
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "fsm-agent"


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def cached_rewrite(
    kind: str, fullname: str, origin: str, build: Callable[[str], Any], rewriter: str
) -> Any:
    """`build(source of origin)`, or what an earlier run's call returned for the same
    source and the same `rewriter` file (the code that rewrites). `build` returns
    `marshal` data: code objects, tuples, lists, dicts, strings, None."""
    source_stamp, rewriter_stamp = _stamp(origin), _stamp(rewriter)
    directory = cache_dir()
    if directory is None or source_stamp is None or rewriter_stamp is None:
        return _build(origin, build)
    key = (FORMAT, origin, source_stamp, rewriter_stamp)
    where = hashlib.blake2b(f"{origin}\0{rewriter}".encode(), digest_size=6).hexdigest()
    entry = directory / f"{fullname}.{kind}.{sys.implementation.cache_tag}.{where}.bin"
    with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
        stored_key, payload = marshal.loads(entry.read_bytes())
        if stored_key == key:
            return payload
    payload = _build(origin, build)
    _write(entry, marshal.dumps((key, payload)))
    return payload


def _build(origin: str, build: Callable[[str], Any]) -> Any:
    with open(origin, encoding="utf-8") as file:
        return build(file.read())


def _write(entry: Path, data: bytes) -> None:
    """Written beside and renamed over, so a reader never sees half an entry."""
    with contextlib.suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        try:
            temporary.write_bytes(data)
            os.replace(temporary, entry)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
