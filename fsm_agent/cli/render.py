"""Showing a run in the terminal as it happens.

In a terminal, a live region at the bottom streams the text being written
and a spinner naming the phase the machine is in, with turns, tokens and
cost; finished text is printed above it as Markdown, tool calls and notices
as one line each. Piped, the same events come out as plain lines and raw
text, with no cursor movement. `QuietRenderer` prints only the final answer.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from fsm_agent.cli.cost import CostMeter
from fsm_agent.cli.usage import isatty
from fsm_agent.core.events import (
    AssistantMessage,
    CallsDiscarded,
    DriverEvent,
    ModelEvent,
    ModelRetry,
    Notice,
    PromptBlocked,
    ResponseUsage,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolRefused,
    ToolStarted,
    Transition,
)
from fsm_agent.core.messages import ToolUseBlock, Usage
from fsm_agent.engine.driver import LoopResult
from fsm_agent.engine.reasons import PROMPT_BLOCKED

if TYPE_CHECKING:
    from rich.console import Console, ConsoleDimensions, RenderableType
    from rich.live import Live
    from rich.spinner import Spinner

    from fsm_agent.cli.run_console import RunConsole

KEY_INPUTS = ("file_path", "command", "pattern", "path", "url")
CONTROLS = dict.fromkeys([*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)])
"""Control characters but tab and newline: ESC starts the sequences that move the cursor,
clear the screen or set the clipboard, and 0x9B is ESC [ on some terminals."""

PHASE_LABELS: dict[str, str] = {
    "preprocess": "Preparing the context",
    "blocking_limit_check": "Checking the context size",
    "api_call": "Waiting for the model",
    "abort_check": "Reading the answer",
    "recovery": "Checking the answer",
    "stop_hooks": "Running stop hooks",
    "tool_execution": "Running tools",
    "attachments": "Collecting queued messages",
    "continuation": "Starting the next turn",
}


class LazyConsole:
    """A run's console (`RunConsole`), built the first time the run shows something.

    rich's console and renderables are about 17 ms of imports: built up front, a piped
    run paid them before its first request, and `--output-format json`, which prints
    nothing through a console, paid them for nothing.
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: RunConsole | None = None

    def get(self) -> RunConsole:
        """The real console, built now if it is not yet."""
        if self._console is None:
            # Deferred (listed in docs/architecture.md): rich, on the run's first print.
            from fsm_agent.cli.run_console import RunConsole

            self._console = RunConsole(**self._options)
        return self._console

    def print(self, *objects: Any, **options: Any) -> None:
        self.get().print(*objects, **options)

    @property
    def is_interactive(self) -> bool:
        """A pipe is never interactive (`RunConsole` makes it so), which needs no rich."""
        if self._console is None and not isatty(self._stream()):
            return False
        return self.get().is_interactive

    @property
    def width(self) -> int:
        return self.get().width

    @property
    def size(self) -> ConsoleDimensions:
        return self.get().size

    @property
    def write_error(self) -> OSError | None:
        """Why stdout could not be written; a console never built wrote nothing."""
        return None if self._console is None else self._console.write_error

    @property
    def reader_gone(self) -> bool:
        return self._console is not None and self._console.reader_gone

    def _stream(self) -> Any:
        if self._options.get("file") is not None:
            return self._options["file"]
        return sys.stderr if self._options.get("stderr") else sys.stdout


def real_console(console: Console | LazyConsole) -> Console:
    """The rich console itself, for what draws on it directly (the live region)."""
    return console.get() if isinstance(console, LazyConsole) else console


def printable(text: str) -> str:
    """What the model or a tool wrote, as text to show: its escapes are shown, not obeyed."""
    return text.translate(CONTROLS)


def key_input(tool_input: dict[str, Any]) -> str:
    for key in KEY_INPUTS:
        if key in tool_input:
            return printable(str(tool_input[key]))
    return json.dumps(tool_input)[:60]


def tool_label(name: str, tool_input: dict[str, Any]) -> str:
    """`Name(key input)`; the model names the tool, so the name is shown, not obeyed."""
    return f"{printable(name)}({key_input(tool_input)[:80]})"


def tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


def money(meter: CostMeter) -> str | None:
    """The cost so far, or nothing when no response has been priced."""
    usd = meter.total
    return None if usd is None or not meter.responses else f"${usd:.4f}"


class LiveRenderer:
    """The run as it happens; `live=True` for a terminal, `False` for plain lines."""

    def __init__(
        self,
        console: Console | LazyConsole,
        *,
        verbose: bool = False,
        live: bool | None = None,
    ) -> None:
        self.console = console
        self.verbose = verbose
        self.live = console.is_interactive if live is None else live
        self.cost = CostMeter()
        self._text = ""
        self._mid_text = False
        self._label = PHASE_LABELS["preprocess"]
        self._turn = 1
        self._usage = Usage()
        self._spinner: Spinner | None = None
        self._region: Live | None = None
        self._running: dict[str, ToolUseBlock] = {}
        self._last_call: str | None = None
        """The call whose `●` line is the last line printed: its result needs no header."""
        self.typed: Callable[[], str] = str
        """The line the user is typing while the run goes (a chat's), shown under the spinner."""

    # --- the live region -------------------------------------------------

    def start(self) -> None:
        """Begin a run: counters from zero, and the live region open (unless piped)."""
        self._turn, self._usage, self.cost = 1, Usage(), CostMeter()
        self._label = PHASE_LABELS["preprocess"]
        if self.live and self._region is None:
            # Deferred (listed in docs/architecture.md): rich, only where it prints.
            from rich.live import Live

            self._region = Live(
                self,
                console=real_console(self.console),
                transient=True,
                refresh_per_second=10,
                vertical_overflow="crop",
            )
            self._region.start()

    def stop(self) -> None:
        self._flush_text()
        if self._region is not None:
            self._region.stop()
            self._region = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The live region put away while the user is asked something (it would be
        redrawn over the question), and back as it was after the answer."""
        region = self._region
        if region is None:
            yield
            return
        region.stop()
        try:
            yield
        finally:
            region.start()

    def refresh(self) -> None:
        """Redraw the live region now (a key was typed), not at its next tick."""
        region = self._region
        if region is not None:
            region.refresh()

    def footer(self) -> str:
        parts = [f"turn {self._turn}", f"↑{tokens(self._usage.input_tokens)}"]
        parts.append(f"↓{tokens(self._usage.output_tokens)} tokens")
        cost = money(self.cost)
        if cost:
            parts.append(cost)
        return " · ".join(parts)

    def __rich__(self) -> RenderableType:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        if self._spinner is None:
            self._spinner = Spinner("dots", style="cyan")
        status = Text.assemble((f"{self._label}… ", "bold"), (self.footer(), "dim"))
        self._spinner.update(text=status)
        typed = self.typed()
        below: list[RenderableType] = []
        if typed:  # its end, on one line: the cursor is where the user types
            tail = printable(typed)[-max(10, self.console.width - 3) :]
            below.append(Text.assemble(("› ", "bold cyan"), tail))
        if not self._text:
            return Group(self._spinner, *below) if below else self._spinner
        height = max(3, self.console.size.height - 3 - len(below))
        shown = "\n".join(self._text.splitlines()[-height:])
        return Group(Text(shown), self._spinner, *below)

    # --- events ----------------------------------------------------------

    def _flush_text(self) -> None:
        if self._text:
            # Deferred (listed in fsm_agent/cli/lazy.py): markdown-it and Pygments.
            from rich.markdown import Markdown

            self.console.print(Markdown(self._text.strip()))
            self._text = ""
            self._last_call = None
        if self._mid_text:
            self.console.print()
            self._mid_text = False
            self._last_call = None

    def __call__(self, event: DriverEvent) -> None:
        if isinstance(event, TextDelta):
            if self.live:
                self._text += printable(event.text)
            else:
                self.console.print(
                    printable(event.text), end="", markup=False, highlight=False, soft_wrap=True
                )
                self._mid_text = True
        elif isinstance(event, ThinkingDelta):
            self._label = "Thinking"
        elif isinstance(event, ResponseUsage):
            self.cost(event)
            self._usage = self._usage + event.usage
        elif isinstance(event, AssistantMessage):
            self._flush_text()
        elif isinstance(event, ToolStarted):
            self._running[event.block.id] = event.block
            self._tool_call(event.block)
            self._label = f"Running {tool_label(event.block.name, event.block.input)}"
        elif isinstance(event, ToolFinished):
            self._tool_finished(event)
        elif isinstance(event, ToolRefused):
            from rich.text import Text

            self._tool_call(event.block)
            first = printable(event.result.text).strip().splitlines()[:1]
            line = Text(f"  ✗ {first[0] if first else 'refused'}", style="red")
            self.console.print(line, no_wrap=True, overflow="ellipsis")
            self._last_call = None
        elif isinstance(event, CallsDiscarded):
            self._running = {i: b for i, b in self._running.items() if i not in event.ids}
        elif isinstance(event, PromptBlocked):
            pass  # the summary says it, in the model's place
        elif isinstance(event, Notice):
            self._notice("⚠" if event.kind in ("hook", "mcp") else "↻", event.text)
        elif isinstance(event, ModelEvent) and isinstance(event.event, ModelRetry):
            self._notice("↻", event.event.text)
        elif isinstance(event, Transition):
            self._transition(event)

    def _tool_call(self, block: ToolUseBlock) -> None:
        from rich.text import Text

        self._flush_text()
        line = Text("● ", style="cyan")
        line.append(printable(block.name), style="bold")
        line.append(f"({key_input(block.input)[:80]})", style="dim")
        self.console.print(line, no_wrap=True, overflow="ellipsis")
        self._last_call = block.id

    def _notice(self, mark: str, text: str) -> None:
        from rich.text import Text

        self._flush_text()
        self.console.print(Text(f"{mark} {printable(text)}", style="yellow"))
        self._last_call = None

    def _tool_finished(self, event: ToolFinished) -> None:
        """The result under its call's line: calls that ran together finish in any
        order, so a result that does not follow its own `●` line repeats it."""
        from rich.text import Text

        block = self._running.pop(event.result.tool_use_id, None)
        if block is not None and self._last_call != block.id:
            self._tool_call(block)
        self._last_call = None
        first = printable(event.result.text).strip().splitlines()[:1]
        mark = "✗" if event.result.is_error else "⎿"
        status = f"  {mark} {first[0] if first else '(no output)'}"
        style = "red" if event.result.is_error else "dim"
        suffix = f"  ({event.duration_s:.2f}s)"
        line = Text(status, style=style)
        line.truncate(max(10, self.console.width - len(suffix)), overflow="ellipsis")
        line.append(suffix, style="dim")
        self.console.print(line, no_wrap=True, overflow="ellipsis")

    def _transition(self, event: Transition) -> None:
        self._turn = event.turn
        self._label = PHASE_LABELS.get(event.dest, "Finishing")
        if self.verbose:
            from rich.text import Text

            # A step line is a note between lines, not output: the result of the call
            # printed before it still follows its own `●` line, which is not repeated.
            self._flush_text()
            self.console.print(
                Text(f"  [{event.step}] {event.source} -[{event.edge}]-> {event.dest}", style="dim")
            )

    def summary(self, result: LoopResult) -> None:
        from rich.text import Text

        self.stop()
        style = "red" if result.is_error else "green"
        # The loop ends `completed` on an API error's answer (as Claude Code's does), but
        # the exit code says it failed (20): the headline must not say otherwise.
        failed = result.reason == "completed" and result.is_error
        ended = "completed with an error" if failed else result.reason
        line = Text(f"■ {ended}", style=f"bold {style}")
        details = [
            f"turns {result.turns}",
            f"tokens in {result.usage.input_tokens} out {result.usage.output_tokens}",
        ]
        cost = money(self.cost)
        if cost:
            details.append(cost)
        details.append(f"{len(result.path)} steps")
        line.append("  " + " · ".join(details), style="dim")
        self.console.print(line)
        if result.error:
            said = "yellow" if result.reason == PROMPT_BLOCKED or result.stopped_by_hook else "red"
            self.console.print(Text(f"  {printable(result.error)}", style=said))
        if result.log_path:
            self.console.print(Text(f"  log: {result.log_path}", style="dim"), soft_wrap=True)


class QuietRenderer:
    """`--quiet`: nothing while the run goes, then only the final answer."""

    def __init__(self, console: Console | LazyConsole) -> None:
        self.console = console
        self.cost = CostMeter()
        self._text = ""
        """The last text this run's model wrote: a resumed conversation ends with the
        previous run's answer, which is no answer of this run."""

    def start(self) -> None:
        self._text = ""

    def stop(self) -> None:
        pass

    def paused(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def __call__(self, event: DriverEvent) -> None:
        self.cost(event)
        if isinstance(event, AssistantMessage):
            self._text = event.message.text

    def summary(self, result: LoopResult) -> None:
        answer = result.answer if result.reason in ("completed", PROMPT_BLOCKED) else self._text
        if answer:
            self.console.print(answer, markup=False, highlight=False, soft_wrap=True)
