"""`fsm-agent coverage`: which of the machine's edges a set of logs takes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from fsm_agent.cli.recorded import read_path
from fsm_agent.cli.transcripts import session_logs
from fsm_agent.cli.usage import EXIT_USAGE, FilePath, error_line
from fsm_agent.tape.coverage import REASONS, Coverage
from fsm_agent.tape.log import LogError, edge_text


@click.command()
@click.argument("logs", nargs=-1, required=True, type=FilePath())
def coverage(logs: tuple[Path, ...]) -> None:
    """Which edges of the machine the LOGS take (with counts), and which none does.

    A log that cannot be read is named on stderr and left out, as `replay --check` does
    with several; the others are counted, and the exit code is then 2. A log named twice
    (by two globs that overlap) is counted once."""
    named: dict[Path, Path] = {}
    for log in logs:
        named.setdefault(log.resolve(), log)
    logs = session_logs(tuple(named.values()))
    paths: list[list[dict[str, Any]]] = []
    for log in logs:
        try:
            paths.append(read_path(log))
        except LogError as exc:
            error_line(str(exc))
    unreadable = len(logs) - len(paths)
    if not paths:
        sys.exit(EXIT_USAGE)
    cov = Coverage.of((s["from"], s["edge"], s["to"]) for path in paths for s in path)
    width = max(len(f"{a} -[{e}]-> {b}") for (a, e, b), _ in cov.rows())
    click.echo(f"{'edge':<{width}}  taken")
    for (source, edge, dest), count in cov.rows():
        click.echo(f"{f'{source} -[{edge}]-> {dest}':<{width}}  {count if count else '-'}")
    taken = len(cov.rows()) - len(cov.untaken)
    skipped = f" ({unreadable} unreadable)" if unreadable else ""
    click.echo(
        f"\n{taken} of {len(cov.rows())} edges taken by {len(paths)} log(s); "
        f"{len(cov.reasons_taken)} of {len(REASONS)} reasons{skipped}"
    )
    if cov.untaken:
        click.echo("not taken by any log:")
        for source, edge, dest in cov.untaken:
            click.echo(f"  {source} -[{edge}]-> {dest}")
    for key in cov.unknown:
        click.echo(f"not in this machine's table: {edge_text(key)}")
    if unreadable:
        sys.exit(EXIT_USAGE)
