"""The rich console a run prints to, built when the run first prints.

Importing rich's console and its renderables costs a run about 17 ms before its
first request; `fsm_agent.cli.render.LazyConsole` builds this class only when
something is shown, so a piped run asks the model first, and `--output-format
json` never loads rich at all.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console

from fsm_agent.cli.usage import isatty, silence

PIPE_WIDTH = 10_000
"""The width of a pipe: wide enough that no line of a run is cut or wrapped."""


class RunConsole(Console):
    """The console a run prints to: when its reader goes away (`| head`), output stops
    and the run goes on.

    Rich's default answer to a broken pipe raises `SystemExit(1)` from inside
    whatever printed, which is an event callback in the middle of the loop:
    the run died there and its session log was left without an end.
    `reader_gone` tells a chat to end after the run it is in.
    """

    reader_gone = False
    write_error: OSError | None = None
    """Why stdout could not be written (a full disk), where no reader chose to stop."""

    def __init__(self, **options: Any) -> None:
        """FORCE_COLOR makes rich take a pipe for a terminal: the colour it asks for is
        kept, but only a real terminal gets the live area's cursor movement. A pipe has
        no width: rich's default 80 columns cut each result line and wrapped each error
        there, so lines go out whole unless COLUMNS asks for a width."""
        super().__init__(**options)
        if not isatty(self.file):
            self.is_interactive = False
            if "width" not in options and not os.environ.get("COLUMNS", "").strip():
                self.width = PIPE_WIDTH

    def on_broken_pipe(self) -> None:
        self.quiet = True
        self.reader_gone = True
        silence(self.file)

    def _check_buffer(self) -> None:
        """Rich handles only a broken pipe; any other failed write (ENOSPC, EIO) raised
        from the event callback too, and broke the run off mid-way."""
        try:
            super()._check_buffer()
        except OSError as exc:
            self.write_error = exc
            self.on_broken_pipe()
