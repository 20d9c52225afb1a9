"""`fsm-agent replay --check`: the engine re-run against each log, every effect
answered from it; the exit code says whether all matched."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from fsm_agent.app.replaying import areplay
from fsm_agent.cli.lazy import REPLAY_MODES, load
from fsm_agent.cli.recorded import warn_if_torn
from fsm_agent.cli.usage import EXIT_DIVERGED, EXIT_USAGE, error_line, say
from fsm_agent.tape.divergence import Divergence, LogEnded, divergence_report
from fsm_agent.tape.header import other_machine_note
from fsm_agent.tape.log import LogError, SessionLog


def check_all(logs: tuple[Path, ...], view: bool = False) -> None:
    """Each log checked in turn; the exit code is the worst: 2 if one could not be
    read, else 1 if one diverged. With several, each line names its log. `view`
    opens each log that diverged in the viewer, at its first differing step."""
    codes = [_check(path, f"{path}: " if len(logs) > 1 else "", view) for path in logs]
    if len(logs) > 1:
        counts = [
            f"{codes.count(0)} match",
            f"{codes.count(EXIT_DIVERGED)} diverged",
            f"{codes.count(EXIT_USAGE)} unreadable",
        ]
        click.echo(f"{len(logs)} logs: {', '.join(counts)}")
    worst = max(codes)
    if worst:
        sys.exit(worst)


def _check(path: Path, name: str, view: bool = False) -> int:
    try:
        result = asyncio.run(areplay(path))
    except LogError as exc:
        error_line(str(exc))
        return EXIT_USAGE
    except LogEnded as exc:
        warn_if_torn(path)
        click.echo(
            f"✓ {name}{exc.matched} steps match the log; it ends there, without a result: {exc.WHY}"
        )
        return 0
    except Divergence as exc:
        warn_if_torn(path)
        say(divergence_report(exc, name))
        if (note := _other_machine(path)) is not None:
            say(note)
        if view:
            load(REPLAY_MODES["view"])(path, exc.step)
        return EXIT_DIVERGED
    warn_if_torn(path)
    click.echo(f"✓ {name}{len(result.path)} steps match the log; ends {result.reason}")
    return 0


def _other_machine(path: Path) -> str | None:
    try:
        return other_machine_note(SessionLog(path))
    except LogError:  # gone since it was replayed
        return None
