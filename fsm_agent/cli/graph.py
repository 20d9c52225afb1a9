"""`fsm-agent graph`: the machine's edge table drawn, a recorded path marked on it."""

from __future__ import annotations

from pathlib import Path

import click

from fsm_agent.cli.recorded import recorded_path
from fsm_agent.cli.transcripts import session_logs
from fsm_agent.cli.usage import FilePath, say
from fsm_agent.engine.graph import RENDERERS, count_path, unknown
from fsm_agent.tape.log import edge_text


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot"]),
    default="mermaid",
    show_default=True,
)
@click.option(
    "--highlight",
    type=FilePath(),
    help="Mark the path a recorded session took.",
)
def graph(fmt: str, highlight: Path | None) -> None:
    """Print the state machine, every edge labelled with its name."""
    taken = None
    if highlight is not None:
        (highlight,) = session_logs((highlight,), one=True)
        taken = count_path((s["from"], s["edge"], s["to"]) for s in recorded_path(highlight))
        if odd := unknown(taken):
            say(
                f"fsm-agent: warning: {highlight}: not in this machine's table, not marked: "
                + ", ".join(map(edge_text, odd))
            )
    click.echo(RENDERERS[fmt](taken), nl=False)
