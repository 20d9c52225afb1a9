"""A Claude Code transcript given where a session log is taken: imported on the way.

`replay` (`--check`, `--path`, the debugger), `coverage` and `graph --highlight`
take a transcript as they take a log: it is imported into a temporary
directory first (`fsm_agent.app.importing`, loaded only then, so a command given
logs starts as fast as before) and its logs are used in its place. What the
import assumed and warned of is printed as `fsm-agent import` prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fsm_agent.cli.usage import fail, say
from fsm_agent.tape.log import is_claude_transcript


def session_logs(paths: Sequence[Path], *, one: bool = False) -> tuple[Path, ...]:
    """`paths` with each Claude Code transcript replaced by the logs its import wrote;
    `one`: a command that takes one log refuses a transcript of several runs."""
    logs: list[Path] = []
    for path in paths:
        logs.extend(_imported(path, one) if is_claude_transcript(path) else (path,))
    return tuple(logs)


def _imported(path: Path, one: bool) -> tuple[Path, ...]:
    import asyncio
    import atexit
    import shutil
    import tempfile

    from fsm_agent.app.importing import aimport_transcript
    from fsm_agent.tape.claude_transcript import TranscriptError

    folder = Path(tempfile.mkdtemp(prefix="fsm-agent-import-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    try:
        imported = asyncio.run(aimport_transcript(path, folder / f"{path.stem}.jsonl"))
    except TranscriptError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{path}: cannot read: {exc.strerror or exc}")
    if one and len(imported.runs) > 1:
        fail(
            f"{path}: a Claude Code transcript of {len(imported.runs)} runs: "
            f"`fsm-agent import {path} -o LOG` makes them logs, to give one"
        )
    for line in (*imported.transcript.assumptions, *imported.transcript.warnings):
        say(line)
    for run in imported.runs:
        for difference in run.differences:
            say(f"{path}:{run.line}: differs: {difference}")
    if imported.subagents:
        say(
            f"{path}: {len(imported.subagents)} subagent transcript(s) kept apart, not part "
            f"of the main runs: `fsm-agent import {path} -o LOG` makes them logs of their own"
        )
    return imported.logs
