"""Showing a run in the terminal as it happens."""

from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from fsm_agent.driver import LoopResult
from fsm_agent.events import (
    DriverEvent,
    Notice,
    TextDelta,
    ToolFinished,
    ToolStarted,
    Transition,
)

KEY_INPUTS = ("file_path", "command", "pattern", "path", "url")


def key_input(tool_input: dict) -> str:
    for key in KEY_INPUTS:
        if key in tool_input:
            return str(tool_input[key])
    return json.dumps(tool_input)[:60]


class LiveRenderer:
    """Streams text, shows each tool call and notice on a line of its own."""

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self._mid_text = False

    def _break_text(self) -> None:
        if self._mid_text:
            self.console.print()
            self._mid_text = False

    def __call__(self, event: DriverEvent) -> None:
        if isinstance(event, TextDelta):
            self.console.print(event.text, end="", markup=False, highlight=False, soft_wrap=True)
            self._mid_text = True
        elif isinstance(event, ToolStarted):
            self._break_text()
            line = Text("● ", style="cyan")
            line.append(event.block.name, style="bold")
            line.append(f"({key_input(event.block.input)[:80]})", style="dim")
            self.console.print(line)
        elif isinstance(event, ToolFinished):
            first = event.result.text.strip().splitlines()[:1]
            status = ("✗ " if event.result.is_error else "⎿ ") + (first[0][:100] if first else "")
            style = "red" if event.result.is_error else "dim"
            self.console.print(Text(f"  {status}  ({event.duration_s:.2f}s)", style=style))
        elif isinstance(event, Notice):
            self._break_text()
            self.console.print(Text(f"↻ {event.text}", style="yellow"))
        elif isinstance(event, Transition) and self.verbose:
            self._break_text()
            self.console.print(
                Text(f"  [{event.step}] {event.source} -[{event.edge}]-> {event.dest}", style="dim")
            )

    def summary(self, result: LoopResult) -> None:
        self._break_text()
        style = "green" if result.reason == "completed" else "red"
        line = Text(f"■ {result.reason}", style=f"bold {style}")
        line.append(
            f"  turns {result.turns} · tokens in {result.usage.input_tokens} "
            f"out {result.usage.output_tokens} · {len(result.path)} steps",
            style="dim",
        )
        self.console.print(line)
        if result.error:
            self.console.print(Text(f"  {result.error}", style="red"))
        if result.log_path:
            self.console.print(Text(f"  log: {result.log_path}", style="dim"))
