"""Walking a directory tree for Glob and Grep without leaving the workspace.

Version-control directories are skipped. Symlinked directories are not
followed (no cycles, no escape); a symlinked file is listed only if its
target lies inside the workspace. Grep also passes a `GitIgnore` built from
the `.gitignore` at the top of the workspace root being searched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

from attrs import frozen

from fsm_agent.tools.globs import translate
from fsm_agent.tools.workspace import is_within

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", ".sl"})


@frozen
class IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


@frozen
class GitIgnore:
    """The common subset of gitignore: `#` comments, `!` negation, a trailing `/`
    for directories only, a leading or inner `/` to anchor at the file's
    directory, and the glob syntax of `fsm_agent.tools.globs`; the last
    matching rule wins. Nested `.gitignore` files and global excludes are not read.
    """

    root: str
    rules: tuple[IgnoreRule, ...]

    @classmethod
    def load(cls, root: str) -> GitIgnore | None:
        try:
            with open(os.path.join(root, ".gitignore"), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        rules = tuple(rule for line in lines if (rule := _parse(line)) is not None)
        return cls(root, rules) if rules else None

    def ignores(self, path: str, is_dir: bool) -> bool:
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel.startswith("../") or rel in ("..", "."):
            return False
        ignored = False
        for rule in self.rules:
            if (is_dir or not rule.dir_only) and rule.regex.fullmatch(rel):
                ignored = not rule.negated
        return ignored


def _parse(line: str) -> IgnoreRule | None:
    line = line.rstrip()
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    pattern = line if anchored else f"**/{line}"
    return IgnoreRule(re.compile(translate(pattern), re.DOTALL), negated, dir_only)


def walk_files(
    base: str,
    roots: tuple[str, ...],
    ignore: GitIgnore | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> Iterator[str]:
    """Absolute paths of the regular files under `base`, in sorted order per directory,
    less those `ignore` or `hidden` (a Read deny rule) leaves out."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in VCS_DIRS
            and not os.path.islink(os.path.join(dirpath, d))
            and not (ignore and ignore.ignores(os.path.join(dirpath, d), is_dir=True))
        )
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if ignore and ignore.ignores(path, is_dir=False):
                continue
            if os.path.islink(path) and not _target_inside(path, roots):
                continue
            if hidden is not None and hidden(path):
                continue
            if os.path.isfile(path):
                yield path


def _target_inside(path: str, roots: tuple[str, ...]) -> bool:
    target = os.path.realpath(path)
    return any(is_within(target, root) for root in roots)
