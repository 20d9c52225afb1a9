"""`fsm-agent import TRANSCRIPT -o LOG`: a Claude Code transcript made session logs.

Each of the transcript's runs is re-enacted through the engine and recorded
(`fsm_agent.app.importing`); the logs then replay, step in the debugger, draw
on the graph and count in `coverage` as any other. What the transcript cannot
say is printed once as an assumption, each line it could not place as a
warning, and where the engine parted from Claude Code's path as a difference.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from fsm_agent.app.importing import aimport_transcript
from fsm_agent.cli.usage import EXIT_DIVERGED, FilePath, fail, say
from fsm_agent.tape.claude_transcript import TranscriptError
from fsm_agent.tape.log import LogError


@click.command(name="import")
@click.argument("transcript", type=FilePath())
@click.option(
    "-o",
    "--output",
    "output",
    type=FilePath(),
    default=None,
    help="The first run's log (later runs get -2, -3, … before .jsonl); "
    "default: <transcript name>.fsm.jsonl in the current directory.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the logs written.")
def import_transcript(transcript: Path, output: Path | None, quiet: bool) -> None:
    """Import a Claude Code transcript (~/.claude/projects/…/SESSION.jsonl) as session logs.

    Every run of the transcript (one per prompt) is re-enacted through the engine, its
    effects answered from the transcript, and recorded as a live run is: `replay
    --check` passes on the logs written. Each Task subagent's own transcript
    (SESSION/subagents/agent-ID.jsonl) gets logs of its own, LOG's stem then
    .agent-ID, kept apart from the main runs. The exit code is 1 when the engine's path
    parted from the transcript's (each difference is printed), 2 when the file is not
    a transcript."""
    log = output or Path(f"{transcript.stem}.fsm.jsonl")
    try:
        imported = asyncio.run(aimport_transcript(transcript, log))
    except (TranscriptError, LogError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{transcript}: cannot read: {exc.strerror or exc}")
    found = imported.transcript
    if not quiet:
        for line in (*found.assumptions, *found.warnings):
            say(line)
        for side in found.sidechains:
            say(
                f"{transcript}:{side.first_line}-{side.last_line}: a sidechain (a Task "
                f"subagent's {side.entries} entries), kept apart: not part of the main runs"
            )
    parted = False
    for run in imported.runs:
        click.echo(f"{run.log}  {run.reason}  (the run of line {run.line})")
        for difference in run.differences:
            parted = True
            say(f"{transcript}:{run.line}: differs: {difference}")
    said = set(found.assumptions)
    for sub in imported.subagents:
        if sub.problem is not None:
            say(f"{sub.problem}; the {sub.agent.title()} is left out")
            continue
        if not quiet and sub.transcript is not None:
            for line in (*sub.transcript.assumptions, *sub.transcript.warnings):
                if line not in said:
                    said.add(line)
                    say(line)
        for run in sub.runs:
            click.echo(
                f"{run.log}  {run.reason}  (the {sub.agent.title()}, the run of line "
                f"{run.line} of its transcript: kept apart from the main runs)"
            )
            for difference in run.differences:
                parted = True
                say(f"{sub.agent.path}:{run.line}: differs: {difference}")
    if parted:
        sys.exit(EXIT_DIVERGED)
