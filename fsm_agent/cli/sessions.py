"""`fsm-agent sessions`: the workspace's recorded sessions, as a table or as JSON."""

from __future__ import annotations

import json
from typing import Any

import click
from attrs import asdict
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fsm_agent.app.history import SessionInfo, list_claude_sessions, list_sessions
from fsm_agent.cli.render import printable
from fsm_agent.cli.usage import workspace


@click.command()
@click.option(
    "--cwd",
    default=".",
    type=click.Path(exists=True, file_okay=False),
    help="The workspace whose sessions to list. Default: the current directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.option(
    "--claude/--no-claude",
    default=True,
    help="Also list the workspace's Claude Code sessions (~/.claude/projects/…). Default: yes.",
)
def sessions(cwd: str, as_json: bool, claude: bool) -> None:
    """List the workspace's recorded sessions, newest first (.fsm-agent/sessions/).

    The workspace's Claude Code sessions follow, `ended` saying `claude code`:
    `fsm-agent import` makes one session logs."""
    infos = list_sessions(workspace(cwd))
    if claude:
        infos += list_claude_sessions(workspace(cwd))
    if as_json:
        click.echo(json.dumps([_info_json(i) for i in infos], indent=2))
        return
    if not infos:
        click.echo(f"no sessions recorded in {workspace(cwd)}")
        return
    _sessions_table(infos)


def _info_json(info: SessionInfo) -> dict[str, Any]:
    return {**asdict(info), "path": str(info.path)}


def _sessions_table(infos: list[SessionInfo]) -> None:
    """The listing, one line a log. Every column but the prompt has a fixed width and
    the prompt gets what is left, cut with an ellipsis: left to rich, a long prompt
    on 80 columns would squeeze the session and turns columns out entirely."""
    rows = []
    for info in infos:
        when = printable((info.created or "?").replace("T", " ").split("+")[0])
        prompt = printable(" ".join((info.prompt or "").split()))
        if info.parent:
            prompt = "↳ " + prompt
        if info.status == "claude_code":
            ended, style = "claude code", "blue"
        elif info.status == "complete":
            ended = printable(info.reason or "?")
            style = "green" if info.reason == "completed" else "red"
        else:
            problem = f" ({printable(info.problem)})" if info.problem else ""
            ended = info.status.replace("_", " ") + problem
            style = "yellow"
        turns = "" if info.turns is None else str(info.turns)
        session = printable(info.session_id or info.path.stem)[:8]
        rows.append((Text(session), Text(when[:16]), turns, Text(ended, style=style), Text(prompt)))
    console = Console()
    widths = [8, 16, 5, min(24, max(cell_len("ended"), *(r[3].cell_len for r in rows)))]
    gutter = 2 * len(widths)  # a space either side of each inner edge
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("session", no_wrap=True, style="cyan", width=widths[0])
    table.add_column("when (UTC)", no_wrap=True, width=widths[1])
    table.add_column("turns", no_wrap=True, justify="right", width=widths[2])
    table.add_column("ended", no_wrap=True, width=widths[3], overflow="ellipsis")
    prompt_width = max(12, console.width - sum(widths) - gutter)
    table.add_column("prompt", no_wrap=True, overflow="ellipsis", max_width=prompt_width)
    for row in rows:
        table.add_row(*row)
    needed = sum(widths) + gutter + prompt_width
    if console.width < needed:  # the terminal wraps the lines rather than rich squeeze columns
        console = Console(width=needed)
    console.print(table)
