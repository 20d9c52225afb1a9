"""Glob patterns as regexes, so Glob, Grep and .gitignore share one set of rules.

Supported: `*` and `?` (never crossing `/`), `**` as a whole path segment
(any depth, including none), `[abc]`/`[!abc]` classes, `{a,b}` alternatives
(nestable) and `\\` escapes. A class with a reversed range (`[z-a]`) matches
nothing. Patterns match `/`-separated relative paths.
"""

from __future__ import annotations

import os
import re

STAR = "[^/]*"


def translate(pattern: str) -> str:
    """Regex source (unanchored) for a glob pattern.

    A `*` with fixed text after it and another `*` after that (`*a*`) takes
    that text's first occurrence, in an atomic group: Python's `re`
    backtracks, and `*a*a*a*a*a*a*a*a*b` tried against a long name would
    otherwise take minutes, holding the GIL. The first occurrence is as good
    as any other, since the next `*` takes up whatever lies between.
    """
    tokens = _tokens(pattern)
    out: list[str] = []
    k = 0
    while k < len(tokens):
        kind, source = tokens[k]
        if kind == "star":
            j = k + 1
            while j < len(tokens) and tokens[j][0] == "fixed":
                j += 1
            if j > k + 1 and j < len(tokens) and tokens[j][0] == "star":
                out.append(f"(?>{STAR}?{''.join(t[1] for t in tokens[k + 1 : j])})")
                k = j
                continue
        out.append(source)
        k += 1
    return "".join(out)


def _tokens(pattern: str) -> list[tuple[str, str]]:
    """The pattern as regex pieces: a `*` ("star"), a piece that matches one fixed
    stretch of a name ("fixed": a literal, `?`, a class without `/`), or any other."""
    out: list[tuple[str, str]] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i) and _whole_segment(pattern, i):
                if pattern.startswith("**/", i):
                    out.append(("other", "(?:.*/)?"))
                    i += 3
                else:
                    out.append(("other", ".*"))
                    i += 2
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append(("star", STAR))
            continue
        if c == "?":
            out.append(("fixed", "[^/]"))
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(("fixed", re.escape(c)))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                kind = "other" if "/" in body and not negate else "fixed"
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append((kind, _class(f"[{'^/' if negate else ''}{body}]")))
                i = end
        elif c == "{":
            depth += 1
            out.append(("other", "(?:"))
        elif c == "}" and depth:
            depth -= 1
            out.append(("other", ")"))
        elif c == "," and depth:
            out.append(("other", "|"))
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(("fixed" if pattern[i] != "/" else "other", re.escape(pattern[i])))
        elif c == "/":
            out.append(("other", "/"))
        else:
            out.append(("fixed", re.escape(c)))
        i += 1
    out.append(("other", ")" * depth))
    return out


def _class(source: str) -> str:
    """A class as regex source; one `re` refuses (a range such as `z-a`) matches nothing,
    as git's wildmatch has it."""
    try:
        re.compile(source)
    except re.error:
        return "(?!)"
    return source


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


def split_literal(pattern: str) -> tuple[str, str]:
    """`src/**/*.py` -> (`src`, `**/*.py`): the leading directories free of glob syntax,
    and the rest.

    The directories are searched from, so `./`, `..` and an absolute start (models
    often put the directory in the pattern) lead where they say, and out of the
    workspace only to be refused. Claude Code splits an absolute pattern so too
    (`extractGlobBaseDirectory`), handing ripgrep the rest.
    """
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if any(c in part for c in "*?[{\\"):
            if i == 0:
                return "", pattern
            return "/".join(parts[:i]) or "/", "/".join(parts[i:])
    return os.path.dirname(pattern), os.path.basename(pattern)
