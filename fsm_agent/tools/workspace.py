"""Where file tools may go: the workspace is `env.cwd` plus `env.additional_dirs`.

Every path is resolved through symlinks before it is judged, so `../..`, an
absolute path elsewhere and a symlink that points out of the workspace are
all caught by the same test. `check_path` is the single decision point; a
later permission layer can call it and choose to allow more.
"""

from __future__ import annotations

import os

from attrs import frozen

from fsm_agent.core.tool import ToolEnv, ToolInputError, ToolOutcome


@frozen
class PathCheck:
    """The verdict on one path: where it really leads, and whether that is allowed."""

    requested: str
    resolved: str
    roots: tuple[str, ...]
    inside: bool

    def refusal(self) -> ToolOutcome:
        where = ", ".join(self.roots)
        shown = self.requested
        if self.resolved != os.path.normpath(self.requested):
            shown = f"{self.requested} (resolves to {self.resolved})"
        return ToolOutcome.error(
            f"Path {shown} is outside the workspace. Only files under {where} can be accessed."
        )


def resolve(path: str, cwd: str) -> str:
    """Absolute, symlink-free form of `path`; relative paths start at `cwd`.

    `os.path.realpath` (non-strict) resolves every existing component,
    including a dangling final symlink, and keeps the missing tail as is, so
    a file that does not exist yet is judged by its deepest existing parent.
    """
    expanded = os.path.expanduser(path)
    return os.path.realpath(os.path.join(os.path.realpath(cwd), expanded))


def workspace_roots(env: ToolEnv) -> tuple[str, ...]:
    roots = [os.path.realpath(env.cwd)]
    roots += [resolve(d, env.cwd) for d in env.additional_dirs]
    return tuple(dict.fromkeys(roots))


def is_within(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def check_path(path: str, env: ToolEnv) -> PathCheck:
    """The verdict on `path`. A path no file name can be (a lone surrogate, from a JSON
    escape in the model's input) is the model's input error, in words."""
    roots = workspace_roots(env)
    try:
        resolved = resolve(path, env.cwd)
    except ValueError as exc:
        shown = path.encode("utf-8", "backslashreplace").decode()
        raise ToolInputError(f"The path {shown} cannot be resolved ({exc}).") from None
    inside = any(is_within(resolved, root) for root in roots)
    return PathCheck(path, resolved, roots, inside)
