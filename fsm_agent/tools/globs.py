"""Glob patterns as regexes, so Glob, Grep and .gitignore share one set of rules.

Supported: `*` and `?` (never crossing `/`), `**` as a whole path segment
(any depth, including none), `[abc]`/`[!abc]` classes, `{a,b}` alternatives
(nestable) and `\\` escapes. Patterns match `/`-separated relative paths.
"""

from __future__ import annotations

import re


def translate(pattern: str) -> str:
    """Regex source (unanchored) for a glob pattern."""
    out: list[str] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i) and _whole_segment(pattern, i):
                if pattern.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^/' if negate else ''}{body}]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.append(")" * depth)
    return "".join(out)


def _whole_segment(pattern: str, i: int) -> bool:
    before_ok = i == 0 or pattern[i - 1] == "/"
    after = i + 2
    return before_ok and (after == len(pattern) or pattern[after] == "/")


def _class_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the class at `start`, or -1 if it is a literal `[`."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)


def compile_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern), re.DOTALL)


def matches(pattern: re.Pattern[str], rel_path: str) -> bool:
    return pattern.fullmatch(rel_path) is not None


def split_globs(spec: str) -> list[str]:
    """Grep's `glob` may list several patterns, separated by spaces or (outside braces) commas."""
    patterns: list[str] = []
    for word in spec.split():
        patterns += [word] if "{" in word else [p for p in word.split(",") if p]
    return patterns
