"""Walking a directory tree for Glob and Grep without leaving the workspace.

Version-control directories and fsm-agent's own (`.fsm-agent`) are skipped, unless
the search starts in one. Symlinked directories are not
followed (no cycles, no escape); a symlinked file is listed only if its
target lies inside the workspace. Grep also honours ignore files (`.gitignore`,
`.ignore`, `.rgignore`), as ripgrep does: those of the directories walked, and
those of the directories between the workspace root and the one searched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence

from attrs import frozen

from fsm_agent.core.globs import translate
from fsm_agent.tools.workspace import is_within

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", ".sl"})
OWN_DIR = ".fsm-agent"
"""fsm-agent's session logs and saved tool output. Claude Code keeps its transcripts
outside the workspace, where its searches never see them; here a search for a word of
the prompt would find it in the log of the very run asking."""
IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
"""The ignore files ripgrep reads in each directory, each over those before it."""


@frozen
class IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


@frozen
class GitIgnore:
    """One `.gitignore`, in the common subset of gitignore: `#` comments, `!`
    negation, a trailing `/` for directories only, a leading or inner `/` to
    anchor at the file's directory, and the glob syntax of
    `fsm_agent.core.globs`; the last matching rule wins. `.git/info/exclude`
    and global excludes are not read.
    """

    root: str
    rules: tuple[IgnoreRule, ...]

    @classmethod
    def load(cls, root: str, name: str = ".gitignore") -> GitIgnore | None:
        try:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        rules = tuple(rule for line in lines if (rule := _parse(line)) is not None)
        return cls(root, rules) if rules else None

    def ignores(self, path: str, is_dir: bool) -> bool:
        return self.verdict(path, is_dir) is True

    def verdict(self, path: str, is_dir: bool) -> bool | None:
        """Whether the last rule matching `path` ignores it; None if none matches."""
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel.startswith("../") or rel in ("..", "."):
            return None
        ignored = None
        for rule in self.rules:
            if (is_dir or not rule.dir_only) and rule.regex.fullmatch(rel):
                ignored = not rule.negated
        return ignored


def _ignored(chain: tuple[GitIgnore, ...], path: str, is_dir: bool) -> bool:
    """`path` as the `.gitignore` files of its directories judge it, the deepest last:
    a rule of a deeper file overrides one above, as in git."""
    ignored = False
    for ignore in chain:
        verdict = ignore.verdict(path, is_dir)
        if verdict is not None:
            ignored = verdict
    return ignored


def _chain_above(base: str, root: str) -> tuple[GitIgnore, ...]:
    """The ignore files of `root` and the directories down to `base`'s parent."""
    if not is_within(base, root) or base == root:
        return ()
    here, chain = root, list(_own(root, IGNORE_FILES))
    for part in os.path.relpath(os.path.dirname(base), root).split(os.sep):
        if part != ".":
            here = os.path.join(here, part)
            chain += _own(here, IGNORE_FILES)
    return tuple(chain)


def _own(directory: str, names: Sequence[str]) -> Iterator[GitIgnore]:
    """The ignore files among `names` in `directory` that hold rules, in precedence order."""
    for name in IGNORE_FILES:
        if name in names and (ignore := GitIgnore.load(directory, name)) is not None:
            yield ignore


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
    ignore_from: str | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> Iterator[str]:
    """Absolute paths of the regular files under `base`, in sorted order per directory,
    less those `hidden` (a Read deny rule) leaves out and, given `ignore_from` (the
    workspace root), those the `.gitignore` files from there down ignore."""
    chains: dict[str, tuple[GitIgnore, ...]] = {}
    if ignore_from is not None:
        chains[os.path.dirname(base)] = _chain_above(base, ignore_from)
    for dirpath, dirnames, filenames in os.walk(base):
        chain: tuple[GitIgnore, ...] = ()
        if ignore_from is not None:
            chain = chains[os.path.dirname(dirpath)]
            chain = (*chain, *_own(dirpath, filenames))
            if dirnames:
                chains[dirpath] = chain
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in VCS_DIRS
            and d != OWN_DIR
            and not os.path.islink(os.path.join(dirpath, d))
            and not (chain and _ignored(chain, os.path.join(dirpath, d), is_dir=True))
        )
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if chain and _ignored(chain, path, is_dir=False):
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
