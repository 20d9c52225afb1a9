"""CLAUDE.md rules, as pure functions: what a memory file imports, which rules a read
file matches, where a nested CLAUDE.md would sit, and how the model is shown them.

The files themselves are read on the live side (`fsm_agent.live.memory_files`):
once before a run, into `RunConfig.user_context`, `system_context` and
`path_rules` (and so into the session log's header, which is what a replay
uses), and during the loop through the `memory` effect. Nothing here opens a
file or resolves a link: the functions take the paths as the run names them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from attrs import frozen

from fsm_agent.core.config import PathRule
from fsm_agent.core.globs import compile_glob

CLAUDE_MD_HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these "
    "instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you "
    "MUST follow them exactly as written."
)
DESCRIPTIONS = {
    "managed": "managed policy instructions",
    "user": "user's private global instructions for all projects",
    "project": "project instructions, checked into the codebase",
    "local": "user's private project instructions, not checked in",
}

# Patterns, not compiled ones: `re` compiles each on first use (and caches it), so
# a command that never reads a CLAUDE.md (a replay) does not pay for them.
_FENCE = r"(?ms)^(```|~~~).*?^\1[^\n]*$"
_COMMENT = r"(?s)<!--.*?-->"
_CODE_SPAN = r"`[^`\n]*`"
_IMPORT = r"(?:^|(?<=\s))@((?:[^\s\\]|\\ )+)"


@frozen
class MemoryFile:
    path: Path
    kind: str
    content: str


def _outside_code(text: str) -> Iterator[tuple[bool, str]]:
    """The text in pieces, each marked whether it lies outside fenced code blocks."""
    pos = 0
    for match in re.finditer(_FENCE, text):
        yield True, text[pos : match.start()]
        yield False, match.group(0)
        pos = match.end()
    yield True, text[pos:]


def strip_comments(text: str) -> str:
    """Drop block HTML comments, except inside fenced code."""
    return "".join(
        re.sub(_COMMENT, "", piece) if prose else piece for prose, piece in _outside_code(text)
    )


def imports(text: str) -> list[str]:
    """The `@path` imports of a file, in order, ignoring code blocks and code spans."""
    found: list[str] = []
    for prose, piece in _outside_code(text):
        if prose:
            found += [
                m.replace("\\ ", " ") for m in re.findall(_IMPORT, re.sub(_CODE_SPAN, "", piece))
            ]
    return found


def import_target(target: str, importer: Path, home: Path) -> Path:
    """Where an `@target` import of `importer` points, `~/` taken from `home`."""
    if target.startswith("~/"):
        return Path(os.path.normpath(home / target[2:]))
    return Path(os.path.normpath(importer.parent / target))


def frontmatter_paths(text: str) -> tuple[tuple[str, ...] | None, str]:
    """The `paths:` of a rule file's YAML frontmatter, and the text after it.

    Takes the two forms rule files use: `paths: src/**/*.{ts,tsx}` (or an
    inline `[a, b]` list), and a block list of `- "glob"` lines.
    """
    if not text.startswith("---"):
        return None, text
    lines = text.splitlines()
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return None, text
    head, body = lines[1:end], "\n".join(lines[end + 1 :])
    for n, line in enumerate(head):
        key, _, value = line.partition(":")
        if key.strip() != "paths":
            continue
        value = value.strip()
        if value.startswith("["):
            items = _split_outside_braces(value.strip("[]"))
        elif value:
            items = [value]
        else:
            items = []
            for item in head[n + 1 :]:
                if not item.strip().startswith("-"):
                    break
                items.append(item.strip()[1:])
        globs = tuple(g for g in (i.strip().strip("'\"") for i in items) if g)
        return (globs or None), body
    return None, body


def _split_outside_braces(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for c in text:
        depth += (c == "{") - (c == "}")
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    return [*parts, current]


def _inside(roots: Sequence[str], path: str) -> tuple[str, str] | None:
    """The first of `roots` (the workspaces, as the run names them) that holds `path`,
    and `path` relative to it."""
    for root in roots:
        rel = os.path.relpath(path, root)
        if rel != ".." and not rel.startswith(".." + os.sep):
            return root, rel
    return None


def matching_rules(
    roots: Sequence[str], rules: Sequence[PathRule], files: Iterable[str], shown: Sequence[str]
) -> list[PathRule]:
    """The rules not shown yet that one of `files` (absolute) matches, each file taken
    relative to the workspace of `roots` that holds it. Pure."""
    pending = [r for r in rules if r.path not in shown]
    if not pending:
        return []
    relative = [found[1].replace(os.sep, "/") for f in files if (found := _inside(roots, f))]

    def hit(glob: str, path: str) -> bool:
        """A glob that is no regex (a class `[z-a]`) matches nothing, as picomatch's
        regex that does not compile does in Claude Code: a rule file is no reason to
        end the run."""
        try:
            return compile_glob(glob).fullmatch(path) is not None
        except re.error:
            return False

    return [r for r in pending if any(hit(g, f) for g in r.globs for f in relative)]


MEMORY_NAMES: tuple[tuple[str, str], ...] = (
    ("CLAUDE.md", "project"),
    (".claude/CLAUDE.md", "project"),
    ("CLAUDE.local.md", "local"),
)


def nested_candidates(roots: Sequence[str], files: Iterable[str]) -> list[str]:
    """Where a CLAUDE.md would sit for files read below a workspace of `roots`: each
    directory from the one under it down to the file's own, outer first. Pure: no
    file is opened."""
    out: dict[str, None] = {}
    for file in files:
        found = _inside(roots, os.path.dirname(file))
        if found is None or found[1] == ".":
            continue
        directory, rel = found
        for part in rel.split(os.sep):
            directory = os.path.join(directory, part)
            out.update({os.path.join(directory, name): None for name, _ in MEMORY_NAMES})
    return list(out)


def memory_note(path: Path | str, kind: str, content: str) -> str:
    """A memory file as the model is shown it."""
    return f"Contents of {path} ({DESCRIPTIONS[kind]}):\n\n{content}"


def claude_md_text(files: list[MemoryFile]) -> str | None:
    """The `claudeMd` context value, as Claude Code formats it; None without files."""
    parts = [memory_note(f.path, f.kind, f.content) for f in files if f.content]
    if not parts:
        return None
    return "\n\n".join((CLAUDE_MD_HEADER, *parts))
