"""File facts the file tools share: binary sniffing, mtimes, the read-before-write rule."""

from __future__ import annotations

import os

from fsm_agent.tools.base import ToolEnv, ToolInputError

SNIFF_BYTES = 8192

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)


def looks_binary(sample: bytes) -> bool:
    return b"\0" in sample[:SNIFF_BYTES]


def mtime(path: str) -> float:
    return os.stat(path).st_mtime


def require_fresh_read(path: str, env: ToolEnv) -> None:
    """Refuse to change an existing file the model has not seen as it is now.

    The engine remembers each read's mtime; a different mtime on disk means
    someone else changed the file, so the model's picture of it is stale.
    """
    seen = env.read_files.get(path)
    if seen is None:
        raise ToolInputError(NOT_READ)
    if mtime(path) != seen:
        raise ToolInputError(MODIFIED)


def write_text(path: str, text: str) -> float:
    """Write `text` as UTF-8 without newline translation; returns the new mtime."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return mtime(path)
