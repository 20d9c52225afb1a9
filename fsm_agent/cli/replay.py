"""`fsm-agent replay`: its options checked, then one of its modes.

It prints the recorded path itself; `--check`, a fork and the debugger are each
loaded only when chosen (`fsm_agent.cli.lazy.REPLAY_MODES`), since `--path` must
not load the engine, nor `--check` rich or the live adapters.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from fsm_agent.cli.lazy import REPLAY_MODES, load
from fsm_agent.cli.recorded import recorded_path
from fsm_agent.cli.transcripts import session_logs
from fsm_agent.cli.usage import FilePath, fail
from fsm_agent.tape.log import edge_text


@click.command()
@click.argument("logs", nargs=-1, required=True, type=FilePath())
@click.option(
    "--check",
    is_flag=True,
    help="Re-run the engine against the log (or each of several); exit 1 on a divergence.",
)
@click.option(
    "--view",
    is_flag=True,
    help="With --check: open a log that diverged in the viewer, at the first differing step.",
)
@click.option("--path", "show_path", is_flag=True, help="Print the recorded transition path.")
@click.option(
    "--json", "as_json", is_flag=True,
    help="With --path: print it as JSON; with --check: each log's outcome, a line of JSON.",
)  # fmt: skip
@click.option(
    "--fork-at",
    type=int,
    metavar="N",
    help="Replay steps 1..N from the log, then go on live (needs --scripted or a model).",
)
@click.option(
    "--edit-effect",
    type=(int, FilePath()),
    metavar="K FILE",
    help="Replay up to effect record K (1-based, in log order), answer it with the JSON "
    "result in FILE, then go on live.",
)
@click.option(
    "--scripted",
    type=FilePath(),
    help="Fork: go on with this scenario's model turns and hooks.",
)
@click.option("--model", help="Fork: go on with this real model.")
@click.option("--base-url", envvar="ANTHROPIC_BASE_URL", help="Fork: a Messages API server.")
@click.option(
    "--cwd",
    default=".",
    type=click.Path(exists=True, file_okay=False),
    help="Fork: the workspace the live part's tools run in. Default: the current directory.",
)
@click.option(
    "--log",
    "fork_log",
    type=FilePath(),
    help="Fork: where to write the new log (a new file: an existing one is never "
    "overwritten). Default: .fsm-agent/sessions/ in the workspace.",
)
@click.option("-v", "--verbose", is_flag=True, help="Fork: show every transition.")
def replay(
    logs: tuple[Path, ...],
    check: bool,
    view: bool,
    show_path: bool,
    as_json: bool,
    fork_at: int | None,
    edit_effect: tuple[int, Path] | None,
    scripted: Path | None,
    model: str | None,
    base_url: str | None,
    cwd: str,
    fork_log: Path | None,
    verbose: bool,
) -> None:
    """Replay a recorded session: no network, no API key, no file touched.

    A Claude Code transcript is taken too: imported first (see `fsm-agent import`).
    In a terminal, with neither --check nor --path, this opens the step
    debugger (type help there); otherwise it prints the recorded path.
    """
    forking = fork_at is not None or edit_effect is not None
    typed = click.get_current_context().get_parameter_source
    given = {
        "--scripted": scripted is not None,
        "--model": model is not None,
        "--log": fork_log is not None,
        "--cwd": typed("cwd") == ParameterSource.COMMANDLINE,
        "--base-url": typed("base_url") == ParameterSource.COMMANDLINE,
        "--verbose": verbose,
    }
    for option, value in given.items():
        if value and not forking:
            fail(f"{option} is for a fork: give --fork-at N or --edit-effect K FILE")
    for option, value in {"--path": show_path, "--json": as_json and not check}.items():
        if value and (check or forking):
            what = "--check replays the log" if check else "a fork goes on live"
            fail(f"{option} prints the recorded path; {what}: give one or the other")
    if view and not check:
        fail("--view is for --check: it opens a log that diverged (fsm-agent view LOG for any)")
    if check:
        if forking:
            fail("--check replays a log to its end; a fork (--fork-at, --edit-effect) goes on live")
        load(REPLAY_MODES["check"])(session_logs(logs), view, as_json)
        return
    if len(logs) > 1:
        fail(f"got {len(logs)} logs: only --check takes several")
    logs = session_logs(logs, one=True)
    if len(logs) > 1:
        fail(f"got {len(logs)} logs: only --check takes several")
    (log,) = logs
    if forking:
        load(REPLAY_MODES["fork"])(
            log, fork_at, edit_effect, scripted, model, base_url, cwd, fork_log, verbose
        )
        return
    if not (show_path or as_json) and sys.stdin.isatty():
        load(REPLAY_MODES["debugger"])(log)
        return
    steps = recorded_path(log)
    if as_json:
        click.echo(
            json.dumps([{"from": s["from"], "to": s["to"], "edge": s["edge"]} for s in steps])
        )
        return
    for s in steps:
        click.echo(edge_text((s["from"], s["edge"], s["to"])))
