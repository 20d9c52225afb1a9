"""A recorded session's transition path, read without the engine: `graph --highlight`,
`replay --path` and `coverage` need no more, and must start fast."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fsm_agent.cli.usage import fail, say
from fsm_agent.tape.log import LogError, SessionLog, is_torn, no_start


def recorded_path(path: Path) -> list[dict[str, Any]]:
    try:
        return read_path(path)
    except LogError as exc:
        fail(str(exc))


def read_path(path: Path) -> list[dict[str, Any]]:
    """The log's transitions; a log without a `start` record (only a header) holds no run
    and is an error (`LogError`), as for `--check`, not an empty path."""
    steps: list[dict[str, Any]] = []
    started = False
    for _, record in SessionLog(path).records():
        started = started or record["t"] == "start"
        if record["t"] == "transition":
            steps.append(record)
    if not started:
        raise no_start(path)
    warn_if_torn(path)
    return steps


def warn_if_torn(path: Path) -> None:
    """A killed run leaves a torn last line: it is read up to it, and the user is told."""
    if path.is_file() and is_torn(path):
        say(f"fsm-agent: warning: {path}: the last line is torn; read up to it")


def note_if_unchained(path: Path) -> None:
    """A log from before the chain is read as before, and the user told once that a change
    to it would go unnoticed (docs/log-format.md#chain)."""
    try:
        log = SessionLog(path)
    except LogError:  # reported by whoever read it
        return
    if not log.chained:
        say(
            f"fsm-agent: note: {path}: unchained (a version {log.version} log, from before "
            "every line carried a digest): a change to it since it was written may go unnoticed"
        )


def note_if_subagent(path: Path) -> None:
    """A log `fsm-agent import` made of a Task subagent's transcript says so once: its
    run is the subagent's, apart from the session's main runs."""
    try:
        imported = SessionLog(path).header.get("imported")
    except LogError:  # reported by whoever read it
        return
    if not isinstance(imported, dict) or not isinstance(agent := imported.get("subagent"), dict):
        return
    what = ": ".join(str(agent[k]) for k in ("agent_type", "description") if agent.get(k))
    call = f" of the call {agent['tool_use_id']}" if agent.get("tool_use_id") else ""
    say(
        f"fsm-agent: note: {path}: the run of subagent {agent.get('agent_id', '?')}"
        f"{f' ({what})' if what else ''}{call}, imported from {imported.get('transcript')}: "
        "a sidechain, apart from the session's main runs"
    )
