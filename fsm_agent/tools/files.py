"""File facts the file tools share: binary sniffing, encodings, mtimes, safe opening and
writing (the read-before-write rule is `fsm_agent.tools.read_state`)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from typing import BinaryIO

from fsm_agent.core.tool import ToolInputError

SNIFF_BYTES = 8192
MAX_LINE_CHARS = 2000
"""What Read shows of a line; the rest is cut, with a note."""

CWD_NOTE = "Note: your current working directory is"
"""Claude Code's `FILE_NOT_FOUND_CWD_NOTE`, after a path that is not there."""

UTF16LE_BOM = b"\xff\xfe"
BOM = "\ufeff"
"""The byte order mark as a character: what a UTF-8 or UTF-16LE file's mark decodes to."""


def looks_binary(sample: bytes) -> bool:
    return b"\0" in sample[:SNIFF_BYTES]


def encoding_of(head: bytes) -> str:
    """Claude Code's `detectEncodingForResolvedPath`: UTF-16LE for a file that starts
    with its byte order mark, else UTF-8."""
    return "utf-16-le" if head.startswith(UTF16LE_BOM) else "utf-8"


def encoding_name(encoding: str) -> str:
    """An `encoding_of` result as the model is told it."""
    return "UTF-16LE" if encoding == "utf-16-le" else "UTF-8"


def file_encoding(path: str) -> str:
    with open_verified(path) as f:
        return encoding_of(f.read(len(UTF16LE_BOM)))


SWAPPED = (
    "{path} changed while it was being opened (a directory or link on its way now leads "
    "elsewhere); nothing was read or written. Check the path and try again."
)


def opened_path(fd: int) -> str | None:
    """Where an open descriptor really is (Linux's /proc/self/fd), or None where the
    system cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def verify_opened(fd: int, path: str) -> None:
    """Refuse (closing `fd`) a file or directory that is not where the check found
    `path`: a symlink swapped in between the check and the open redirected it."""
    real = opened_path(fd)
    if real is not None and real != path:
        os.close(fd)
        raise ToolInputError(SWAPPED.format(path=path))


def open_fd(path: str, flags: int) -> int:
    """`path` (already resolved: no link on it) opened with `O_NOFOLLOW`, and checked
    to be where it was resolved, so the check holds at use."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and os.path.islink(path)):
            raise ToolInputError(SWAPPED.format(path=path)) from None
        raise
    verify_opened(fd, path)
    return fd


def open_verified(path: str) -> BinaryIO:
    """`path` opened for reading by `open_fd`."""
    return os.fdopen(open_fd(path, os.O_RDONLY), "rb")


def clip_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    if len(line) <= limit:
        return line
    return line[:limit] + "… [line truncated]"


def printable(path: str) -> str:
    """`path` as text for a result: the bytes of a name that are not UTF-8 (which Python
    keeps as lone surrogates) as `\\xNN`, since a result must be valid Unicode to be
    logged and sent."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def require_text_path(requested: str, path: str) -> None:
    """Refuse a path that is not valid text (a name with bytes that are not UTF-8,
    reached through a symlink): a read or write of it is recorded by path, and the
    log and the API take only text."""
    if printable(path) != path:
        raise ToolInputError(
            f"{requested} leads to {printable(path)}, a name that is not UTF-8: "
            "rename it (with Bash) to use it here."
        )


def missing_file(path: str, cwd: str) -> ToolInputError:
    """Claude Code's error for a file that is not there: where relative paths start,
    and a file of the same name with another extension, if its directory has one."""
    message = f"File does not exist. {CWD_NOTE} {cwd}."
    similar = _similar_file(path)
    if similar is not None:
        message += f" Did you mean {similar}?"
    return ToolInputError(message)


def _similar_file(path: str) -> str | None:
    directory, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    similar = (n for n in names if n != name and os.path.splitext(n)[0] == stem)
    return next((printable(n) for n in similar), None)


def mtime(path: str) -> float:
    return os.stat(path).st_mtime


def require_file_path(requested: str) -> None:
    """A path ending in `/` names a directory; the OS would not open it as a file, but
    resolving it drops the slash, so it is refused before it is written as one."""
    if requested.endswith("/"):
        raise ToolInputError(
            f"{requested} ends in /, so it names a directory; give the path of a file."
        )


def read_text(path: str) -> str:
    """A file's text as a tool reports it, in its encoding (`encoding_of`); bytes that
    do not decode become U+FFFD, since a report must be valid Unicode to be logged and
    sent."""
    with open_verified(path) as f:
        raw = f.read()
    return raw.decode(encoding_of(raw), errors="replace")


def write_text(path: str, text: str, encoding: str = "utf-8") -> float:
    """Write `text` in `encoding` (UTF-8, or UTF-16LE for a file that was so) without
    newline translation; returns the new mtime.

    Missing parent directories are created; a file where one should be is named.
    The text is encoded before anything is written, so text the encoding cannot hold
    (a lone surrogate) leaves the file as it was; the write itself is atomic
    (`replace_atomically`).
    """
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end].encode("unicode_escape").decode()
        raise ToolInputError(
            f"The text holds {bad} (at character {exc.start}), a lone surrogate that "
            f"{encoding_name(encoding)} cannot store; {path} was left as it was."
        ) from None
    parent = os.path.dirname(path)
    existing = parent
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ToolInputError(f"Cannot create {path}: {existing} is a file, not a directory.")
    os.makedirs(parent, exist_ok=True)
    replace_atomically(path, data)
    return mtime(path)


def replace_atomically(path: str, data: bytes) -> None:
    """Write `data` to a new file beside `path`, flush it to disk and rename it over
    `path`, so a kill leaves the old content or the new, never part of either; the file
    keeps its mode (and owner, where allowed). A hard link to `path` from elsewhere
    (outside the workspace) keeps the old content: the name is given a new file, the
    file behind the other name is never written through. A file the user may not write
    stays refused, as opening it would be. All of it relative to the directory opened
    and verified once (`open_fd`), so a directory swapped for a link since the check
    cannot redirect the write."""
    parent, name = os.path.split(path)
    directory = open_fd(parent or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        _replace_in(directory, path, name, data)
        os.fsync(directory)
    finally:
        os.close(directory)


def _replace_in(directory: int, path: str, name: str, data: bytes) -> None:
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise ToolInputError(SWAPPED.format(path=path))
    if st is not None and not os.access(name, os.W_OK, dir_fd=directory):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    temp = f".{name}.{secrets.token_hex(4)}.fsm-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temp, flags, 0o666, dir_fd=directory)
    try:
        if st is not None:
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            with contextlib.suppress(PermissionError):
                os.fchown(fd, st.st_uid, st.st_gid)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp, dir_fd=directory)
        raise
    os.close(fd)
    try:
        os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        os.unlink(temp, dir_fd=directory)
        raise
