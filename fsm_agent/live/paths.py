"""Where paths really lead on this machine, for the permission check of a live run.

`fsm_agent.policy.permissions` judges resolved paths; these functions resolve them:
symlinks followed (`realpath`), `~` expanded, a Bash glob word expanded as the shell
would, the links under a directory a recursive command follows listed. The searches
are bounded, since they run in the event loop before the call is allowed.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Callable, Iterator

from fsm_agent.core.permission_types import PermissionSettings
from fsm_agent.policy.permissions import Expand, Links, Resolve, Workspace, denied_reads


def default_resolve(cwd: str) -> Resolve:
    """A path as written in `cwd` to where it really leads: `~` expanded, links followed."""

    def resolve(path: str) -> str:
        return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))

    return resolve


MAX_LINK_HOPS = 40


def command_resolve(cwd: str) -> Resolve:
    """`default_resolve` for the paths a command names. A path that leads through
    /proc (`/proc/self/cwd/..`, `/dev/fd/..`, a link to them) names the command's own
    process there, which `realpath` in this process cannot resolve for it: such a path
    is given as it leads into /proc, outside any workspace."""
    resolve = default_resolve(cwd)

    def resolve_command(path: str) -> str:
        full = os.path.join(cwd, os.path.expanduser(path))
        real = resolve(path)
        if real == os.path.normpath(full) and not real.startswith("/proc"):
            return real  # no link on the way: nothing led through /proc
        return _into_proc(full) or real

    return resolve_command


def _into_proc(path: str) -> str | None:
    """The path as it enters /proc, following links one at a time, or None if it does not."""
    todo = list(reversed(path.split("/")))
    resolved, hops = "/", 0
    while todo:
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        if candidate == "/proc":
            return "/".join([candidate, *reversed(todo)])
        if hops < MAX_LINK_HOPS and os.path.islink(candidate):
            hops += 1
            target = os.readlink(candidate)
            resolved = "/" if target.startswith("/") else resolved
            todo += reversed(target.split("/"))
        else:
            resolved = candidate
    return None


MAX_GLOB_MATCHES = 1000
MAX_GLOB_SCAN = 50_000
"""Directory entries one glob word may look at: `/*/*/*/*/*/*/*/*/zz` matches
nothing but would walk the whole file system, in the event loop, past Ctrl-C."""


class _TooWide(Exception):
    """A glob that would look at more than `MAX_GLOB_SCAN` entries."""


def default_expand(cwd: str) -> Expand:
    """What the shell would expand a glob word to (dotfiles only when the word asks).

    Past `MAX_GLOB_MATCHES` matches, or `MAX_GLOB_SCAN` entries looked at, the
    answer includes `/`, which lies outside any workspace, so such a command is
    asked about, not assumed safe.
    """

    def expand(word: str) -> list[str]:
        pattern = os.path.join(cwd, os.path.expanduser(word))
        found: list[str] = []
        try:
            for path in _glob(pattern, [MAX_GLOB_SCAN]):
                found.append(path)
                if len(found) > MAX_GLOB_MATCHES:
                    raise _TooWide
        except _TooWide:
            return [*found, "/"]
        return found

    return expand


def default_links(cwd: str) -> Links:
    """The real targets of the symlinks under a directory (None for what is not one),
    the directories they lead to searched in turn, as a command following them would.

    Past `MAX_GLOB_SCAN` entries looked at, the answer includes `/`, outside any
    workspace: such a command is asked about, not assumed to stay inside.
    """

    def links(top: str) -> list[str] | None:
        start = os.path.realpath(os.path.join(cwd, os.path.expanduser(top)))
        if not os.path.isdir(start):
            return None
        found: list[str] = []
        budget = MAX_GLOB_SCAN
        todo, seen = [start], set()
        while todo:
            directory = todo.pop()
            if directory in seen:
                continue
            seen.add(directory)
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget < 0:
                            return [*found, "/"]
                        if entry.is_symlink():
                            real = os.path.realpath(entry.path)
                            found.append(real)
                            if os.path.isdir(real):
                                todo.append(real)
                        elif entry.is_dir(follow_symlinks=False):
                            todo.append(entry.path)
            except OSError:
                continue
        return found

    return links


def _glob(pattern: str, budget: list[int]) -> Iterator[str]:
    """`glob.iglob(pattern)`, counting each directory entry it looks at against
    `budget` (raising `_TooWide` past it)."""
    if not glob.has_magic(pattern):
        if os.path.lexists(pattern):
            yield pattern
        return
    dirname, base = os.path.split(pattern)
    parents = _glob(dirname, budget) if glob.has_magic(dirname) else iter([dirname])
    for parent in parents:
        if not glob.has_magic(base):
            path = os.path.join(parent, base)
            if os.path.isdir(parent) if not base else os.path.lexists(path):
                yield path
            continue
        try:
            with os.scandir(parent) as entries:
                names = []
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        raise _TooWide
                    names.append(entry.name)
        except OSError:
            continue
        for name in sorted(names):
            if (base.startswith(".") or not name.startswith(".")) and fnmatch.fnmatchcase(
                name, base
            ):
                yield os.path.join(parent, name)


def read_denied(settings: PermissionSettings, ws: Workspace) -> Callable[[str], bool] | None:
    """`denied_reads` judging each file by where it really leads (a link by its target)."""
    return denied_reads(settings, ws, os.path.realpath)
