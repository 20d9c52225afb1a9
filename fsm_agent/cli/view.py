"""`fsm-agent view`: a recorded session as one self-contained HTML page, and opening it.

The page's data is built by `fsm_agent.tape.view` (from the debugger's stepper) and the
page by `fsm_agent.cli.view_page`; this module writes the file and opens a browser on
it. `replay --check --view` comes here too, for a log that diverged.
"""

from __future__ import annotations

import tempfile
import webbrowser
from pathlib import Path

import click

from fsm_agent.cli.recorded import warn_if_torn
from fsm_agent.cli.usage import FilePath, fail, say
from fsm_agent.cli.view_page import page
from fsm_agent.tape.log import LogError
from fsm_agent.tape.view import view_data


@click.command()
@click.argument("log", type=FilePath())
@click.option(
    "-o",
    "--output",
    type=FilePath(),
    help="Where to write the page. Default: the log's path with .html for .jsonl.",
)
@click.option("--open", "open_it", is_flag=True, help="Open the page in a web browser.")
def view(log: Path, output: Path | None, open_it: bool) -> None:
    """Write a recorded session as one HTML page that opens offline in any browser.

    The page shows the machine with the path the run took, a timeline of the steps by
    turn, each step's state, messages and effects, and tokens and cost over the run;
    the step is in the URL's fragment (#step=N), so a link opens the same step.
    """
    out = output if output is not None else log.with_suffix(".html")
    if out.resolve() == log.resolve():
        fail(f"{out} is the log itself: give -o another file")
    written = write_page(log, out)
    click.echo(str(written))
    if open_it:
        show(written, None)


def write_page(log: Path, out: Path) -> Path:
    """The page for `log`, written to `out`; a log that cannot be read is one error line."""
    try:
        text = page(view_data(log))
    except LogError as exc:
        fail(str(exc))
    warn_if_torn(log)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    return out


def show(path: Path, step: int | None) -> None:
    """Open the page in the user's browser (`BROWSER` chooses one), at `step` if given."""
    url = path.resolve().as_uri() + ("" if step is None else f"#step={step}")
    if not webbrowser.open(url):
        say(f"fsm-agent: no browser to open; open {url}")


def open_divergence(log: Path, step: int) -> None:
    """`replay --check --view`: the page of a log that diverged, in a fresh temporary
    directory (a report, not a file to keep next to the log), opened at `step`."""
    out = Path(tempfile.mkdtemp(prefix="fsm-agent-view-")) / log.with_suffix(".html").name
    write_page(log, out)
    say(f"the viewer, at step {step}: {out}")
    show(out, step)
