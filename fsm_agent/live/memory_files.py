"""CLAUDE.md files on disk: the memory files, rules and git status read before a run,
and the live side of the `memory` effect that reads a subdirectory's CLAUDE.md.

What the files say is parsed by the pure `fsm_agent.context.claude_md`; this module
only finds and reads them, resolving links to keep a workspace's files in it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from fsm_agent.context.claude_md import (
    MEMORY_NAMES,
    MemoryFile,
    claude_md_text,
    frontmatter_paths,
    import_target,
    imports,
    memory_note,
    strip_comments,
)
from fsm_agent.core.config import PathRule

MAX_IMPORT_HOPS = 4
GIT_STATUS_MAX_CHARS = 2_000
GIT_TIMEOUT_S = 3.0
MANAGED_PATH = Path("/etc/claude-code/CLAUDE.md")


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
            child = import_target(target, path, home)
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


def path_rules(cwd: Path) -> tuple[PathRule, ...]:
    """The workspace's rules scoped by `paths:`, for `RunConfig.path_rules`."""
    cwd = cwd.resolve()
    return tuple(
        PathRule(str(f), globs, memory_note(f, "project", text))
        for f, globs, text in rules(cwd, cwd)
        if globs is not None
    )


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
                out[str(f.path)] = memory_note(f.path, f.kind, f.content)
    return out


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
