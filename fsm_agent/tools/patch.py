"""Claude Code's `structuredPatch`: a change to a file as unified-diff hunks.

Write and Edit report it to PostToolUse hooks. Each hunk is
`{oldStart, oldLines, newStart, newLines, lines}`, with 3 lines of context,
each line prefixed ` `, `-` or `+` and without its newline; a last line with
no newline is followed by `\\ No newline at end of file`, as in `diff -u`.
"""

from __future__ import annotations

import difflib
from typing import Any

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"


def _lines(text: str) -> list[str]:
    """The lines of `text`, each with its `\\n` (the last may have none)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _start(first: int, count: int) -> int:
    """A range's 1-based start; an empty range names the line before it, as `diff -u` does."""
    return first + 1 if count else first


def _marked(sign: str, chunk: list[str]) -> list[str]:
    out: list[str] = []
    for line in chunk:
        out.append(sign + line.removesuffix("\n"))
        if not line.endswith("\n"):
            out.append(NO_NEWLINE)
    return out


def structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    a, b = _lines(old), _lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    hunks: list[dict[str, Any]] = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += _marked(" ", a[a1:a2])
            else:
                lines += _marked("-", a[a1:a2]) + _marked("+", b[b1:b2])
        hunks.append(
            {
                "oldStart": _start(i1, i2 - i1),
                "oldLines": i2 - i1,
                "newStart": _start(j1, j2 - j1),
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    return hunks
