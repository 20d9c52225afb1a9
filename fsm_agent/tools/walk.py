"""Walking a directory tree for Glob and Grep without leaving the workspace.

Version-control directories and fsm-agent's own (`.fsm-agent`) are skipped, unless
the search starts in one. Symlinked directories are not
followed (no cycles, no escape), not even one swapped in while the walk runs; a
symlinked file is listed only if its target lies inside the workspace, and read
only if it still leads there when it is opened. Grep also honours ignore files (`.gitignore`,
`.ignore`, `.rgignore`), as ripgrep does: those of the directories walked, and
those of the directories between the workspace root and the one searched.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

from attrs import frozen

from fsm_agent.core.globs import translate
from fsm_agent.tools.files import open_fd, opened_path
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
    def load(
        cls, root: str, name: str = ".gitignore", dirfd: int | None = None
    ) -> GitIgnore | None:
        """The file `name` in `root`; given `dirfd` (`root` open), opened relative to it
        and never through a link, so a walk reads the directory it is in."""
        try:
            if dirfd is None:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            else:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dirfd)
            with open(fd, encoding="utf-8", errors="replace") as f:
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


def _own(directory: str, names: Sequence[str], dirfd: int | None = None) -> Iterator[GitIgnore]:
    """The ignore files among `names` in `directory` (open as `dirfd`, if given) that
    hold rules, in precedence order."""
    for name in IGNORE_FILES:
        if name in names and (ignore := GitIgnore.load(directory, name, dirfd)) is not None:
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
    for path, _real, _status in walk_found(base, roots, ignore_from, hidden):
        yield path


def walk_found(
    base: str,
    roots: tuple[str, ...],
    ignore_from: str | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, str, os.stat_result]]:
    """`walk_files`' paths, each with where it really is (a symlink's target), for
    `open_found` to hold the listing's check at use, and its status as the walk found
    it (through the directory's descriptor: no link swapped in on the way).

    The walk holds at use too: `base` (already resolved) is opened with `O_NOFOLLOW`
    and verified where it was resolved, and each directory below is opened relative to
    its parent's descriptor, never through a symlink (`os.fwalk`), so a directory
    swapped for a link while the walk runs is not followed out of the workspace. A
    `base` swapped before it is opened is refused (`ToolInputError`)."""
    chains: dict[str, tuple[GitIgnore, ...]] = {}
    if ignore_from is not None:
        chains[os.path.dirname(base)] = _chain_above(base, ignore_from)
    top = open_fd(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk = os.fwalk(".", dir_fd=top, follow_symlinks=False)
        for rel, dirnames, filenames, dirfd in walk:
            dirpath = base if rel == "." else os.path.join(base, rel[2:])
            chain: tuple[GitIgnore, ...] = ()
            if ignore_from is not None:
                chain = chains[os.path.dirname(dirpath)]
                chain = (*chain, *_own(dirpath, filenames, dirfd))
                if dirnames:
                    chains[dirpath] = chain
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in VCS_DIRS
                and d != OWN_DIR
                and (st := _status(d, dirfd)) is not None
                and stat.S_ISDIR(st.st_mode)
                and not (chain and _ignored(chain, os.path.join(dirpath, d), is_dir=True))
            )
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if chain and _ignored(chain, path, is_dir=False):
                    continue
                status = _status(name, dirfd)
                real = path
                if status is not None and stat.S_ISLNK(status.st_mode):
                    real = os.path.realpath(path)
                    if not any(is_within(real, root) for root in roots):
                        continue
                    status = _status(name, dirfd, follow=True)
                if status is None or not stat.S_ISREG(status.st_mode):
                    continue
                if hidden is not None and hidden(path):
                    continue
                yield path, real, status
    finally:
        os.close(top)


def _status(name: str, dirfd: int, follow: bool = False) -> os.stat_result | None:
    """`name` in the directory open as `dirfd` (a link itself, unless `follow`), or None
    if it is gone."""
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=follow)
    except OSError:
        return None


def open_found(path: str, real: str) -> BinaryIO | None:
    """A file `walk_found` listed, opened for reading, if it still is where the listing
    found it; None (skip it) if it is gone or a link swapped in now leads elsewhere."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    if opened_path(fd) not in (real, None):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")
