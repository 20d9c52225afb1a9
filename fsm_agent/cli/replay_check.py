"""`fsm-agent replay --check`: the engine re-run against each log, every effect
answered from it; the exit code says whether all matched."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from fsm_agent.app.replaying import areplay_runs
from fsm_agent.cli.lazy import REPLAY_MODES, load
from fsm_agent.cli.recorded import note_if_subagent, note_if_unchained, warn_if_torn
from fsm_agent.cli.usage import EXIT_DIVERGED, EXIT_USAGE, error_line, say
from fsm_agent.tape.divergence import Divergence, LogEnded, divergence_data, divergence_report
from fsm_agent.tape.header import other_machine_note
from fsm_agent.tape.log import LogError, SessionLog


def check_all(logs: tuple[Path, ...], view: bool = False, as_json: bool = False) -> None:
    """Each log checked in turn; the exit code is the worst: 2 if one could not be
    read, else 1 if one diverged. With several, each line names its log. `view`
    opens each log that diverged in the viewer, at its first differing step;
    `as_json`: a line of JSON per log, what the report says as data."""
    if as_json:
        codes = [_check_json(path) for path in logs]
    else:
        codes = [_check(path, f"{path}: " if len(logs) > 1 else "", view) for path in logs]
    if len(logs) > 1 and not as_json:
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
    note_if_unchained(path)
    note_if_subagent(path)
    try:
        results = asyncio.run(areplay_runs(path))
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
    click.echo(f"✓ {name}{_steps(results)} match the log; ends {results[-1].reason}")
    return 0


def _steps(results: list[Any]) -> str:
    """`N steps`, and in a log of several runs (an Agent SDK session's) how many."""
    steps = f"{sum(len(r.path) for r in results)} steps"
    return steps if len(results) == 1 else f"{steps} of {len(results)} runs"


def _check_json(path: Path) -> int:
    """One log's outcome as a JSON object: `match` and its steps, or `diverged` (the
    report as data: step, what, both sides, and what differs), or `error`."""
    out: dict[str, Any] = {"log": str(path)}
    code = 0
    try:
        log = SessionLog(path)
        out["chained"] = log.chained
        results = asyncio.run(areplay_runs(path))
    except LogError as exc:
        out["error"], code = str(exc), EXIT_USAGE
    except LogEnded as exc:
        out.update(match=True, steps=exc.matched, ends="without a result")
    except Divergence as exc:
        out["match"], out["diverged"], code = False, divergence_data(exc), EXIT_DIVERGED
        if (note := _other_machine(path)) is not None:
            out["note"] = note.strip()
    else:
        steps = sum(len(r.path) for r in results)
        out.update(match=True, steps=steps, ends=str(results[-1].reason))
        if len(results) > 1:
            out["runs"] = len(results)
    click.echo(json.dumps(out, ensure_ascii=False, default=str))
    return code


def _other_machine(path: Path) -> str | None:
    try:
        return other_machine_note(SessionLog(path))
    except LogError:  # gone since it was replayed
        return None
