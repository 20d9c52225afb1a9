"""Glob: find files by name pattern, least recently modified first, as Claude Code lists them."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from fsm_agent.core.globs import compile_glob, matches, split_literal
from fsm_agent.core.tool import ToolEnv, ToolInputError, ToolOutcome
from fsm_agent.tools.files import CWD_NOTE, printable
from fsm_agent.tools.walk import walk_found
from fsm_agent.tools.workspace import check_path

MAX_RESULTS = 100

DESCRIPTION = """\
Find files whose path matches a glob pattern, e.g. `**/*.py` or `src/**/*.{ts,tsx}`. \
The pattern is matched against paths relative to `path` (default: the working \
directory): `*` stays within one directory, `**/` spans any number of them. \
As in .gitignore, a pattern with no `/` (`*.py`, `package.json`) matches file \
names in every directory.
Returns absolute paths, least recently modified first, at most 100. \
Hidden files are included, .gitignore is not consulted, and .git is skipped. \
Use Grep to search file contents."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Glob pattern to match file paths against"},
        "path": {
            "type": "string",
            "description": "Directory to search in; defaults to the working directory",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


class GlobTool:
    """File discovery by name, so the model need not shell out to `find`."""

    name = "Glob"
    description = DESCRIPTION
    input_schema = SCHEMA

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        started = time.perf_counter() if env.wants_response else None
        prefix, pattern = split_literal(input["pattern"])
        anywhere = "/" not in (pattern if os.path.isabs(prefix) else input["pattern"])
        where = input.get("path") or env.cwd
        check = check_path(where, env)
        if not os.path.isabs(prefix):
            if not check.inside:
                return check.refusal()
            if not os.path.exists(check.resolved):
                raise ToolInputError(f"Directory does not exist: {where}. {CWD_NOTE} {env.cwd}.")
            if not os.path.isdir(check.resolved):
                raise ToolInputError(f"Path is not a directory: {where}")
        if prefix:
            check = check_path(os.path.join(check.resolved, prefix), env)
            if not check.inside:
                return check.refusal()
            if not os.path.isdir(check.resolved):
                return _found([], 0, started)
        return await asyncio.to_thread(
            _glob, check.resolved, pattern, check.roots, env.hidden, started, anywhere
        )


def _glob(
    base: str,
    pattern: str,
    roots: tuple[str, ...],
    hidden: Callable[[str], bool] | None = None,
    started: float | None = None,
    anywhere: bool = False,
) -> ToolOutcome:
    """The files under `base` matching `pattern`: their names, if `anywhere` (ripgrep's
    `--glob` reads a pattern with no `/` as .gitignore does), else their paths from `base`."""
    regex = compile_glob(pattern)
    found: list[tuple[float, str]] = []
    for path, _real, status in walk_found(base, roots, hidden=hidden):
        rel = os.path.basename(path) if anywhere else os.path.relpath(path, base)
        if matches(regex, rel.replace(os.sep, "/")):
            found.append((status.st_mtime, path))
    found.sort()
    return _found([printable(path) for _, path in found[:MAX_RESULTS]], len(found), started)


def _found(names: list[str], total: int, started: float | None) -> ToolOutcome:
    """The result listing `names`, the first of `total` matches; with the time the
    search `started`, Claude Code's `{filenames, durationMs, numFiles, truncated}` too."""
    response = None
    if started is not None:
        response = {
            "filenames": names,
            "durationMs": round((time.perf_counter() - started) * 1000),
            "numFiles": len(names),
            "truncated": total > len(names),
        }
    return ToolOutcome(listing(names, total > len(names), total), response=response)


def listing(names: Sequence[str], truncated: bool, total: int | None = None) -> str:
    """What the model reads of a search that found `names`, the first of `total` matches
    (when known) if `truncated`: the tool's one text, and a PostToolUse hook's
    replacement's (`fsm_agent.tools.output`), whose shape holds no total."""
    if not names:
        return "No files found"
    lines = list(names)
    if truncated:
        shown = "" if total is None else f": showing {len(names)} of {total} files"
        lines.append(f"(Results are truncated{shown}. Use a more specific path or pattern.)")
    return "\n".join(lines)
