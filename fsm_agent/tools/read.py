"""Read: show a text file with line numbers, or an image as an image block."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO

from fsm_agent.core.messages import ImageBlock, ImageSource, ToolResultContent
from fsm_agent.core.tool import ToolEnv, ToolInputError, ToolOutcome, integer
from fsm_agent.tools.files import (
    BOM,
    MAX_LINE_CHARS,
    SNIFF_BYTES,
    clip_line,
    encoding_of,
    looks_binary,
    missing_file,
    mtime,
    open_fd,
    read_text,
    require_text_path,
)
from fsm_agent.tools.read_state import digest
from fsm_agent.tools.workspace import check_path

DEFAULT_LIMIT = 2000
MAX_TEXT_BYTES = 256 * 1024
MAX_TOKENS = 25_000
"""Claude Code's `maxTokens`: the most text one Read sends, estimated as it estimates."""
DIGEST_BYTES = 4 * MAX_TEXT_BYTES
"""The largest file a whole Read remembers the text of (a few long lines shown cut)."""
MAX_IMAGE_BYTES = 3_750_000  # base64 grows it to the API's 5 MB per-image limit
LINE_BYTES = 4 * MAX_LINE_CHARS + 4
"""What is read of a line: more than `MAX_LINE_CHARS` characters, however they are encoded."""

DESCRIPTION = """\
Read a file from the workspace. `file_path` should be an absolute path.
Text comes back with each line numbered (`     1→first line`); the numbers and \
the arrow are not part of the file, so leave them out of Edit strings. A file \
that ends in a newline shows a last, empty line.
By default up to 2000 lines from the start are shown; pass `offset` (1-based \
first line) and `limit` to page through longer files. Files over 256 KB must \
be read with offset/limit. Lines longer than 2000 characters are cut.
PNG, JPEG, GIF and WebP images are returned as images. Other binary files and \
directories cannot be read (use Bash or Glob for directories).
Read a file before you Edit or overwrite it."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Absolute path of the file to read"},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "1-based line number to start from",
        },
        "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read"},
    },
    "required": ["file_path"],
    "additionalProperties": False,
}

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_media_type(head: bytes) -> str | None:
    """Media type from the file's magic bytes: what the API will check too."""
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def number_lines(lines: list[str], first: int) -> str:
    """Claude Code's numbering: the line number right-aligned in 6 columns, then `→`."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, start=first))


def shown_lines(lines: list[str], first: int, total: int, more: bool) -> str:
    """What the model reads of `lines` of a file of `total` lines, shown from line `first`,
    with a paging note if there are `more`: the tool's one text, and a PostToolUse hook's
    replacement's (`fsm_agent.tools.output`)."""
    if total == 0:
        return (
            "<system-reminder>Warning: the file exists but the contents are empty."
            "</system-reminder>"
        )
    if not lines:
        return (
            f"<system-reminder>Warning: the file exists but is shorter than the provided "
            f"offset ({first}). The file has {total} lines.</system-reminder>"
        )
    text = number_lines(lines, first)
    if more:
        last = first + len(lines) - 1
        text += (
            f"\n\n(Showing lines {first}-{last}; the file continues. "
            f"Use offset={last + 1} to read more.)"
        )
    return text


def shown_image(media_type: str, data: str) -> ToolResultContent:
    """What the model reads of an image file (`data` its base64): the image itself."""
    return (ImageBlock(ImageSource(media_type=media_type, data=data)),)


def content_lines(content: str, count: int) -> list[str]:
    """The lines a response's `content` holds, the `count` lines shown each followed by
    its line ending, split again. A last line shown may be the empty one after a final
    newline, so `count` says whether the piece after the last newline is a line."""
    lines = [line.removesuffix("\r") for line in content.split("\n")]
    return lines[:-1] if len(lines) == count + 1 and not lines[-1] else lines


def _open_regular(path: str) -> BinaryIO:
    """`path` opened for reading if it is still a regular file. Opened without waiting,
    so that a FIFO put in its place since it was checked (by a command still running)
    is refused, not waited on for ever by a read that cannot be cancelled; and only
    where the check resolved it (`open_fd`), so a link swapped in since is refused."""
    fd = open_fd(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise ToolInputError(f"{path} is not a regular file.")
    return os.fdopen(fd, "rb")


class ReadTool:
    """The model's way to look at files; every read is reported so edits can follow."""

    name = "Read"
    description = DESCRIPTION
    input_schema = SCHEMA

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        check = check_path(input["file_path"], env)
        if not check.inside:
            return check.refusal()
        require_text_path(input["file_path"], check.resolved)
        return await asyncio.to_thread(
            self._read,
            check.resolved,
            integer(input, "offset"),
            integer(input, "limit"),
            env.cwd,
            env.wants_response,
        )

    def _read(
        self, path: str, offset: int | None, limit: int | None, cwd: str, respond: bool = False
    ) -> ToolOutcome:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise missing_file(path, cwd) from None
        if stat.S_ISDIR(info.st_mode):
            raise ToolInputError(
                f"{path} is a directory, not a file. Use Glob or Bash `ls` to list it."
            )
        if not stat.S_ISREG(info.st_mode):
            raise ToolInputError(f"{path} is not a regular file.")
        with _open_regular(path) as f:
            head = f.read(SNIFF_BYTES)
        media_type = image_media_type(head)
        if media_type is not None:
            return self._image(path, media_type, info.st_size, respond)
        encoding = encoding_of(head)
        if encoding == "utf-8" and looks_binary(head):
            raise ToolInputError(
                f"{path} looks like a binary file (it contains NUL bytes) and cannot be "
                "shown as text. Use Bash with a suitable tool to inspect it."
            )
        if offset is None and limit is None and info.st_size > MAX_TEXT_BYTES:
            raise ToolInputError(
                f"File content ({info.st_size // 1024} KB) exceeds the maximum size that can "
                f"be read at once ({MAX_TEXT_BYTES // 1024} KB). Use offset and limit to read "
                "a part of the file, or Grep to find the lines you need."
            )
        first, limit = max(offset or 1, 1), limit or DEFAULT_LIMIT
        return self._text(path, first, limit, respond, encoding)

    def _image(self, path: str, media_type: str, size: int, respond: bool) -> ToolOutcome:
        if size > MAX_IMAGE_BYTES:
            raise ToolInputError(
                f"Image is too large to send ({size} bytes; at most {MAX_IMAGE_BYTES})."
            )
        with _open_regular(path) as f:
            data = base64.b64encode(f.read()).decode("ascii")
        response = None
        if respond:
            response = {
                "type": "image",
                "file": {"base64": data, "type": media_type, "originalSize": size},
            }
        return ToolOutcome(
            shown_image(media_type, data), read_files={path: mtime(path)}, response=response
        )

    def _text(
        self, path: str, first: int, limit: int, respond: bool = False, encoding: str = "utf-8"
    ) -> ToolOutcome:
        """The lines are the text split on newlines, as Claude Code splits it: a final
        newline is followed by one more, empty line. A byte order mark is no part of
        line 1 (Claude Code strips it)."""
        lines: list[str] = []
        endings: list[str] = []
        total = 0
        more = False
        raw = b""
        with _open_regular(path) as f:
            source = _lines(f) if encoding == "utf-8" else _utf16_lines(f)
            for total, raw in enumerate(source, start=1):
                if total < first:
                    continue
                if len(lines) == limit:
                    more = True
                    break
                decoded = raw.decode("utf-8", errors="replace")
                if total == 1:
                    decoded = decoded.removeprefix(BOM)
                line = decoded.removesuffix("\n").removesuffix("\r")
                lines.append(clip_line(line))
                if respond:
                    endings.append(decoded[len(line) :])
            if more:
                if respond and raw.endswith(b"\n") and encoding == "utf-8":
                    total += _count_lines(f)
                elif respond and raw.endswith(b"\n"):
                    total += 1 + sum(rest.endswith(b"\n") for rest in source)
            elif raw.endswith(b"\n"):
                total += 1
                if total >= first and len(lines) < limit:
                    lines.append("")
                    endings.append("")
        _require_few_tokens(lines, path)
        read_files = {path: mtime(path)}
        whole = _digest_of(path) if first == 1 and not more else ""
        response = None
        if respond:
            content = "".join(map(str.__add__, lines, endings))
            response = {
                "type": "text",
                "file": {
                    "filePath": path,
                    "content": content,
                    "numLines": len(lines),
                    "startLine": first,
                    "totalLines": total,
                },
            }
        return ToolOutcome(
            shown_lines(lines, first, total, more),
            read_files=read_files,
            seen={path: whole} if whole else {},
            response=response,
        )


def _digest_of(path: str) -> str:
    """The digest of a file the model was shown whole (`read_state.digest`), so that a
    later change of its mtime alone is no change; "" for one too large to hash here."""
    if os.path.getsize(path) > DIGEST_BYTES:
        return ""
    return digest(read_text(path))


def _require_few_tokens(lines: list[str], path: str) -> None:
    """Claude Code's `validateContentTokens` with its estimate (the model's count is
    not asked for): a character a token for every 4, for every 2 in JSON."""
    per_token = 2 if os.path.splitext(path)[1].lower() in (".json", ".jsonl", ".jsonc") else 4
    tokens = int((sum(map(len, lines)) + max(len(lines) - 1, 0)) / per_token + 0.5)
    if tokens > MAX_TOKENS:
        raise ToolInputError(
            f"File content ({tokens} tokens) exceeds maximum allowed tokens ({MAX_TOKENS}). "
            "Use offset and limit parameters to read specific portions of the file, or "
            "search for specific content instead of reading the whole file."
        )


def _lines(f: BinaryIO) -> Iterator[bytes]:
    """The lines of `f` as iterating over it gives them, each cut to its first
    `LINE_BYTES` bytes and its line ending: the rest of a longer line is read past in
    blocks, so a line of gigabytes (a minified file, a log without newlines) is not
    held in memory to show its first 2,000 characters."""
    while raw := f.readline(LINE_BYTES):
        if len(raw) == LINE_BYTES and not raw.endswith(b"\n"):
            end = raw[-1:]
            while rest := f.readline(1 << 20):
                end = (end + rest)[-2:]
                if rest.endswith(b"\n"):
                    break
            raw += b"\r\n" if end == b"\r\n" else b"\n" if end.endswith(b"\n") else b""
        yield raw


def _utf16_lines(f: BinaryIO) -> Iterator[bytes]:
    """The lines of a UTF-16LE file as `_lines` gives a UTF-8 file's: in UTF-8, each
    cut to its first `LINE_BYTES` characters and its line ending."""
    text = io.TextIOWrapper(f, encoding="utf-16-le", errors="replace", newline="\n")
    while line := text.readline(LINE_BYTES):
        if len(line) == LINE_BYTES and not line.endswith("\n"):
            end = line[-1:]
            while rest := text.readline(1 << 20):
                end = (end + rest)[-2:]
                if rest.endswith("\n"):
                    break
            line += "\r\n" if end == "\r\n" else "\n" if end.endswith("\n") else ""
        yield line.encode("utf-8")


def _count_lines(f: BinaryIO) -> int:
    """The lines left in `f`, which follows a newline: one more than the newlines in it
    (the last, after its final newline, may be empty), read in blocks."""
    count = 1
    while block := f.read(1 << 20):
        count += block.count(b"\n")
    return count
