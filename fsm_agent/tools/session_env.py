"""`CLAUDE_ENV_FILE`: variables a SessionStart hook sets for the session's commands.

As in Claude Code (`sessionEnvironment.ts`), each SessionStart command hook
gets its own file, `sessionstart-hook-<n>.sh` (n: its place among the hooks
that matched), in a directory of the session's own, `~/.claude/session-env/
<session id>/`: created before the hooks run, the files not. Every later Bash
command sources the files there first, in order, chained with `&&` as Claude
Code chains them: a file that does not source (a syntax error, or its last
command failed) keeps the command from running, and the result says why.

The directory is the first run's of a conversation (`RunConfig.session_env`):
a chat's later runs, a `--resume` and a fork source what the session's hooks
wrote, and a SessionStart hook run again (`resume`, `compact`) appends to its
own file. Outside the workspace, or inside it under `.claude`, a protected
directory, the files are no path the model's tools write unasked: a Write to
one cannot smuggle code into the next read-only command.

The files are read only by Bash commands and written only by hooks, both
effects: a replay touches neither.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from typing import TYPE_CHECKING

from attrs import evolve

if TYPE_CHECKING:
    from fsm_agent.core.config import RunConfig

EVENT = "SessionStart"
_FILE = re.compile(r"sessionstart-hook-(\d+)\.sh")


def _root() -> str:
    """`~/.claude/session-env`, absolute: hooks and commands run in the workspace, not
    where the process started, so a relative `HOME` must not be read from there."""
    return os.path.join(os.path.abspath(os.path.expanduser("~")), ".claude", "session-env")


def directory_for(session_id: str) -> str:
    """Where a session's files go, Claude Code's place: per session, out of the workspace."""
    return os.path.join(_root(), session_id)


def _is_session_directory(path: str) -> bool:
    return os.path.dirname(path) == _root() and os.path.basename(path) not in ("", ".", "..")


def with_session_env(config: RunConfig, session_id: str) -> RunConfig:
    """`config` with the session's directory, if a SessionStart command hook may write
    there and no earlier run of the conversation chose one.

    One chosen earlier comes from the log when a session is resumed or forked, and the
    log lies in the workspace, where the model's Write reaches: only a directory of
    `~/.claude/session-env` is kept, or a forged header would have every command source
    files the model wrote."""
    chosen = config.session_env
    if chosen is not None and _is_session_directory(chosen):
        return config
    if not any(m.event == EVENT for m in config.hooks):
        return config if chosen is None else evolve(config, session_env=None)
    return evolve(config, session_env=directory_for(session_id))


def hook_file(directory: str, index: int) -> str:
    return os.path.join(directory, f"sessionstart-hook-{index}.sh")


def prepare(directory: str) -> list[str] | None:
    """Make the directory, so a hook's `>> "$CLAUDE_ENV_FILE"` finds it: the directories
    made, outermost first; None if it cannot be made (the hooks then run without it)."""
    made: list[str] = []
    here = os.path.abspath(directory)
    while not os.path.isdir(here) and os.path.dirname(here) != here:
        made.append(here)
        here = os.path.dirname(here)
    made.reverse()
    try:
        for path in made:
            os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        tidy(made)
        return None
    return made


def tidy(made: list[str]) -> None:
    """Remove what `prepare` made if no hook wrote into it, so sessions that set nothing
    leave nothing behind (a test's run no `~/.claude` in the home)."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(path)


def files(directory: str | None) -> list[str]:
    """The hooks' files, in the order of the hooks: read when a command starts (an effect)."""
    if directory is None:
        return []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = [(int(m.group(1)), name) for name in names if (m := _FILE.fullmatch(name))]
    paths = [os.path.join(directory, name) for _, name in sorted(found)]
    return [p for p in paths if os.path.isfile(p) and os.access(p, os.R_OK)]


def source_chain(directory: str | None) -> str | None:
    """The shell that sources the session's files, each if the one before sourced, and
    leaves the shell with the failure's status (the command then does not run), saying
    which file failed: the status alone would read as the command's own failure."""
    paths = files(directory)
    if not paths:
        return None
    return "; ".join(_source(p) for p in paths)


def _source(path: str) -> str:
    why = (
        "fsm-agent: the command did not run: sourcing %s (the CLAUDE_ENV_FILE of a "
        "SessionStart hook) returned %s\\n"
    )
    quoted = shlex.quote(path)
    return f'. {quoted} || {{ s=$?; printf {shlex.quote(why)} {quoted} "$s" >&2; exit "$s"; }}'
