"""Context injection: CLAUDE.md files, the date, the working directory, git status.

Read once before a run (`gather`): the result goes into `RunConfig.user_context`
(prepended to every request as a `<system-reminder>` meta message) and
`RunConfig.system_context` (appended to the system prompt), and so into the
session log's header, which is what a replay uses; rules scoped by `paths:`
go into `RunConfig.path_rules` the same way. During the loop, the pure
`nested_candidates` and `matching_rules` decide what a turn's file reads
bring in, and `read_nested` is the live side of the `memory` effect that
reads a subdirectory's CLAUDE.md.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from attrs import frozen

from fsm_agent.core.config import PathRule

MAX_IMPORT_HOPS = 4
GIT_STATUS_MAX_CHARS = 2_000
GIT_TIMEOUT_S = 3.0
MANAGED_PATH = Path("/etc/claude-code/CLAUDE.md")

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


def _resolve(target: str, importer: Path, home: Path) -> Path:
    if target.startswith("~/"):
        return Path(os.path.normpath(home / target[2:]))
    return Path(os.path.normpath(importer.parent / target))


def _read(path: Path) -> str | None:
    """A memory file's text, undecodable bytes replaced as Claude Code reads them (so a
    Windows-1252 CLAUDE.md is not lost); a binary file (a null byte) is not text."""
    try:
        if not path.is_file():
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return None if "\0" in text else text


def _load(
    path: Path,
    kind: str,
    home: Path,
    seen: set[Path],
    hops: int = 0,
    inside: Path | None = None,
) -> list[MemoryFile]:
    """A file, then the files it imports (each after its importer), at most 4 hops deep.

    With `inside` (the workspace, for project files), an import whose real path
    lies outside it is not loaded: Claude Code loads such "external" imports only
    after the user approved them, and `claude -p` never asks, so a cloned
    repository's CLAUDE.md cannot put `~/.ssh/id_rsa` in the model's context.
    """
    real = _real(path)
    if real in seen or _links_out(path, real, inside):
        return []
    text = _read(path)
    if text is None:
        return []
    seen.add(real)
    out = [MemoryFile(path, kind, strip_comments(text).strip())]
    if hops < MAX_IMPORT_HOPS:
        for target in imports(text):
            child = _resolve(target, path, home)
            if inside is not None and not _real(child).is_relative_to(inside):
                continue
            out += _load(child, kind, home, seen, hops + 1, inside)
    return out


def _real(path: Path) -> Path:
    """Where `path` leads; a symlink loop is left as it stands, where `Path.resolve`
    raises (and `_read` then finds no file there)."""
    return Path(os.path.realpath(path))


def _links_out(path: Path, real: Path, inside: Path | None) -> bool:
    """A file in the workspace that is a link to one outside it: external, as an import
    of its target would be (a cloned `CLAUDE.md -> ~/.ssh/id_rsa`)."""
    return (
        inside is not None
        and Path(os.path.normpath(path)).is_relative_to(inside)
        and not real.is_relative_to(inside)
    )


def memory_files(cwd: Path, home: Path, managed: Path | None = MANAGED_PATH) -> list[MemoryFile]:
    """The CLAUDE.md files Claude Code loads at start, in its order.

    Managed policy, then `~/.claude/CLAUDE.md` and the user's rules, then for
    each directory from the filesystem root down to `cwd`: `CLAUDE.md`,
    `.claude/CLAUDE.md` (followed, in `cwd`, by its `.claude/rules/*.md` that
    have no `paths:`), `CLAUDE.local.md`.
    """
    seen: set[Path] = set()
    out: list[MemoryFile] = []
    if managed is not None:
        out += _load(managed, "managed", home, seen)
    out += _load(home / ".claude" / "CLAUDE.md", "user", home, seen)
    out += [MemoryFile(f, "user", text) for f, globs, text in rules(home) if globs is None]
    cwd = cwd.resolve()
    for directory in (*reversed(cwd.parents), cwd):
        out += _load(directory / "CLAUDE.md", "project", home, seen, inside=cwd)
        out += _load(directory / ".claude" / "CLAUDE.md", "project", home, seen, inside=cwd)
        if directory == cwd:
            out += [MemoryFile(f, "project", t) for f, globs, t in rules(cwd, cwd) if globs is None]
        out += _load(directory / "CLAUDE.local.md", "local", home, seen, inside=cwd)
    return out


def rules(
    directory: Path, inside: Path | None = None
) -> list[tuple[Path, tuple[str, ...] | None, str]]:
    """`.claude/rules/**/*.md` under `directory`, sorted: each file's `paths:` globs
    (None when it has none: it always applies) and its text, comments stripped. With
    `inside` (the workspace), a link to a file outside it is left out."""
    root = directory / ".claude" / "rules"
    if not root.is_dir():
        return []
    out: list[tuple[Path, tuple[str, ...] | None, str]] = []
    for path in sorted(root.rglob("*.md")):
        if _links_out(path, _real(path), inside):
            continue
        text = _read(path)
        if text is None:
            continue
        globs, body = frontmatter_paths(text)
        body = strip_comments(body).strip()
        if body:
            out.append((path, globs, body))
    return out


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
    """The first of `roots` (workspaces) that holds `path`, and `path` relative to it."""
    for root in roots:
        root = os.path.realpath(root)
        rel = os.path.relpath(path, root)
        if rel != ".." and not rel.startswith(".." + os.sep):
            return root, rel
    return None


def matching_rules(
    roots: Sequence[str], rules: Sequence[PathRule], files: Iterable[str], shown: Sequence[str]
) -> list[PathRule]:
    """The rules not shown yet that one of `files` (absolute) matches, each file taken
    relative to the workspace of `roots` that holds it. Pure."""
    from fsm_agent.core.globs import compile_glob

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


def path_rules(cwd: Path) -> tuple[PathRule, ...]:
    """The workspace's rules scoped by `paths:`, for `RunConfig.path_rules`."""
    cwd = cwd.resolve()
    return tuple(
        PathRule(str(f), globs, f"Contents of {f} ({DESCRIPTIONS['project']}):\n\n{text}")
        for f, globs, text in rules(cwd, cwd)
        if globs is not None
    )


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


def read_nested(paths: Sequence[str], home: Path, cwd: Path) -> dict[str, str]:
    """Each of `paths` that exists, and what it imports from inside `cwd`, as the
    model is shown it."""
    seen: set[Path] = set()
    out: dict[str, str] = {}
    inside = cwd.resolve()
    for path in paths:
        kind = next((k for name, k in MEMORY_NAMES if path.endswith(os.sep + name)), "project")
        for f in _load(Path(path), kind, home, seen, inside=inside):
            if f.content:
                out[str(f.path)] = f"Contents of {f.path} ({DESCRIPTIONS[f.kind]}):\n\n{f.content}"
    return out


def claude_md_text(files: list[MemoryFile]) -> str | None:
    """The `claudeMd` context value, as Claude Code formats it; None without files."""
    parts = [
        f"Contents of {f.path} ({DESCRIPTIONS[f.kind]}):\n\n{f.content}" for f in files if f.content
    ]
    if not parts:
        return None
    return "\n\n".join((CLAUDE_MD_HEADER, *parts))


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_status(cwd: Path) -> str | None:
    """A short snapshot: branch, main branch, `status --short` (bounded), five commits."""
    if _git(cwd, "rev-parse", "--is-inside-work-tree") != "true":
        return None
    branch = _git(cwd, "branch", "--show-current") or "(detached)"
    main = next(
        (b for b in ("main", "master") if _git(cwd, "rev-parse", "--verify", "-q", b) is not None),
        branch,
    )
    status = _git(cwd, "status", "--short") or "(clean)"
    if len(status) > GIT_STATUS_MAX_CHARS:
        status = (
            status[:GIT_STATUS_MAX_CHARS] + "\n... (truncated because it exceeds 2k characters. "
            'If you need more information, run "git status" using BashTool)'
        )
    log = _git(cwd, "log", "--oneline", "-n", "5") or "(no commits)"
    return (
        "This is the git status at the start of the conversation. Note that this status is a "
        "snapshot in time, and will not update during the conversation.\n"
        f"Current branch: {branch}\n\nMain branch (you will usually use this for PRs): {main}\n\n"
        f"Status:\n{status}\n\nRecent commits:\n{log}"
    )


def gather(
    cwd: Path,
    home: Path,
    today: str,
    *,
    managed: Path | None = MANAGED_PATH,
    git: bool = True,
) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """`(user_context, system_context, memory_paths)` for a run in `cwd`: the last,
    every memory file `claudeMd` holds, so a nested import of one is not shown again."""
    user: dict[str, str] = {}
    files = [f for f in memory_files(cwd, home, managed) if f.content]
    text = claude_md_text(files)
    if text:
        user["claudeMd"] = text
    user["currentDate"] = f"Today's date is {today}."
    system = {"workingDirectory": str(cwd)}
    status = git_status(cwd) if git else None
    if status:
        system["gitStatus"] = status
    return user, system, tuple(str(f.path) for f in files)
