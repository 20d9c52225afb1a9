"""An interactive session: one run of the loop per user message, over the conversation so far.

Standard input is read on a thread the whole time, so a line typed while
the loop runs is not lost: it is queued in the run's `Inbox` and reaches
the model in the `attachments` phase (or, if the run ends first, becomes the
next prompt). Ctrl-C sets the abort flag, so the run ends `aborted_*` and
the session goes on; at the prompt, a second Ctrl-C or Ctrl-D leaves.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

import click
from rich.console import Console
from rich.text import Text

from fsm_agent.app.history import follow_up
from fsm_agent.cli.keys import Keyboard
from fsm_agent.cli.launch import Plan
from fsm_agent.cli.options import run_options
from fsm_agent.cli.plan import plan_of, tolerant_stdin, trust_question
from fsm_agent.cli.questions import QuestionScreen
from fsm_agent.cli.render import LiveRenderer, QuietRenderer
from fsm_agent.cli.run_console import RunConsole
from fsm_agent.cli.usage import fail, interrupts_deferred, refuse_undecodable, stdout_lost
from fsm_agent.core.messages import Message
from fsm_agent.engine.driver import LoopResult
from fsm_agent.live.approvals import withdrawn
from fsm_agent.live.effects import Inbox
from fsm_agent.tape.log import LogError

PROMPT = "› "
POLL_S = 0.1
COMMANDS = {
    "/help": "this list",
    "/clear": "forget the conversation: the next message starts a new one",
    "/exit": "leave (also /quit, Ctrl-D)",
}
"""Read at the prompt, as Claude Code's slash commands are; any other line,
one starting with `/` included (a path), goes to the model. One typed while a
run goes is carried out at the prompt after it, never sent to the model."""


LEAVE = ("/exit", "/quit")


def is_command(line: str) -> bool:
    return line.strip() in (*COMMANDS, *LEAVE)


class LineReader:
    """Lines of a stream, read on a daemon thread; `None` marks the end (Ctrl-D).

    On a terminal the keys are read as they come (`Keyboard`), so that a run can
    hold them off its spinner's line and show the line being typed itself."""

    def __init__(self, stream: TextIO, on_line: Callable[[str], None] | None = None) -> None:
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        """A SimpleQueue: its wait takes no Python-level lock, which a Ctrl-C landing in
        `queue.Queue`'s could leave released (a RuntimeError that ended the chat)."""
        self.eof = False
        self.busy = threading.Event()
        self.on_line = on_line
        self._stream = stream
        self.keyboard = Keyboard.of(stream)
        pump = self._pump if self.keyboard is None else self._pump_keys
        threading.Thread(target=pump, name="fsm-agent-stdin", daemon=True).start()

    def _pump(self) -> None:
        for line in iter(self._stream.readline, ""):
            self._typed(line.rstrip("\r\n"))
        self._lines.put(None)

    def _pump_keys(self) -> None:
        assert self.keyboard is not None
        ended = False
        while not ended:
            try:
                # Each read starts once there is something to read, in the terminal's mode
                # of then: one begun while a run held the keys waited on past the Ctrl-D
                # typed at the next prompt (for a key, where the end of file gives none).
                if not select.select([self.keyboard.fd], [], [], POLL_S)[0]:
                    continue
                data = os.read(self.keyboard.fd, 4096)
            except OSError:  # EIO: the terminal hung up
                data = b""
            lines, ended = self.keyboard.feed(data)
            for line in lines:
                self._typed(line)
        self._lines.put(None)

    def _typed(self, text: str) -> None:
        self._lines.put(text)
        if self.busy.is_set() and self.on_line is not None:
            self.on_line(text)

    def draft(self) -> str:
        """The line being typed, held while a run goes; empty when not on a terminal."""
        return "" if self.keyboard is None else self.keyboard.draft()

    def hold(self) -> None:
        """A run starts: keys typed are no longer echoed by the terminal (onto the spinner)."""
        if self.keyboard is not None:
            self.keyboard.hold()

    @contextlib.contextmanager
    def released(self, *, aside: bool = False) -> Iterator[str]:
        """At a prompt: the terminal echoes again; yields the draft to draw after it
        (`aside`: none, the draft waits for the run to hold the keys again)."""
        if self.keyboard is None:
            yield ""
            return
        with self.keyboard.released(aside=aside) as draft:
            yield draft

    def restore(self) -> None:
        if self.keyboard is not None:
            self.keyboard.restore()

    def pending(self) -> bool:
        """Whether a line is already waiting (typed during the last run)."""
        return not self._lines.empty()

    def get(
        self,
        until: Callable[[], bool] | None = None,
        idle: tuple[float, Callable[[], None]] | None = None,
    ) -> str | None:
        """The next line, waiting for it; Ctrl-C still raises KeyboardInterrupt meanwhile.
        None as soon as `until()` is true (the run a question was for was interrupted).
        `idle` is (seconds, callback): called once if the wait lasts that long."""
        if self.eof:
            return None
        start = time.monotonic()
        while True:
            try:
                line = self._lines.get(timeout=POLL_S)
            except queue.Empty:
                if until is not None and until():
                    return None
                if idle is not None and time.monotonic() - start >= idle[0]:
                    idle[1]()
                    idle = None
                continue
            if line is None:
                self.eof = True
            return line

    def drain(self) -> tuple[str, ...]:
        out: list[str] = []
        while not self.eof:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self.eof = True
            elif line.strip():
                out.append(line)
        return tuple(out)


class ReaderInbox(Inbox):
    """The run's inbox fed by what was typed since the run began."""

    def __init__(self, reader: LineReader) -> None:
        super().__init__()
        self.reader = reader

    def drain(self) -> tuple[str, ...]:
        """What was typed for the model; slash commands stay, in order, for the prompt."""
        self.keep_typed()
        lines = super().drain()
        for line in lines:
            if is_command(line):
                self.put(line)
        return tuple(line for line in lines if not is_command(line))

    def keep_typed(self) -> None:
        """Lines typed so far are the run's, taken out of the reader before a question,
        whose answer must be typed after it."""
        for line in self.reader.drain():
            self.put(line)

    def left(self) -> tuple[str, ...]:
        """What the run never took (kept lines, slash commands): the user's next prompts."""
        return super().drain()


class ChatSession:
    """The prompt loop. `ask` is the seam for questions asked mid-run (permissions)."""

    def __init__(
        self,
        plan: Plan,
        console: Console,
        reader: LineReader,
        *,
        messages: Sequence[Message] = (),
        verbose: bool = False,
        quiet: bool = False,
    ) -> None:
        self.plan = plan
        self.console = console
        self.reader = reader
        self.messages: list[Message] = list(messages)
        self.renderer: LiveRenderer | QuietRenderer = (
            QuietRenderer(console) if quiet else LiveRenderer(console, verbose=verbose)
        )
        self.results: list[LoopResult] = []
        self._typed_ahead: list[str] = []
        """Lines typed during a run that it never took, in order: the next prompts."""
        self._inbox: ReaderInbox | None = None
        """The inbox of the run under way: where lines typed before a question go."""
        self.screen = QuestionScreen(self.renderer, self.renderer.paused)
        reader.on_line = self._queued
        plan.ask = self.ask
        self._holds_keys = isinstance(self.renderer, LiveRenderer) and self.renderer.live
        """Whether a run holds the keys typed (a live region shows them, under its spinner)."""
        if self._holds_keys and reader.keyboard is not None:
            assert isinstance(self.renderer, LiveRenderer)
            self.renderer.typed = reader.draft
            reader.keyboard.changed = self.renderer.refresh

    def _queued(self, text: str) -> None:
        if is_command(text):
            self.console.print(Text(f"  ⧗ after this run: {text}", style="yellow"))
        elif text.strip():
            self.console.print(Text(f"  ⧗ queued: {text}", style="yellow"))

    def ask(self, question: str) -> str | None:
        """Ask the user something while a run waits (a permission prompt); `None` on Ctrl-D,
        once Ctrl-C interrupted the run, or once the question is withdrawn (the stream
        that started its call failed).

        The live region is paused so the question and the typed answer stay
        readable. The answer is a line typed after the question: lines typed
        before it were queued for the model (`⧗ queued`) and stay its messages.
        """
        if self._inbox is not None:
            self._inbox.keep_typed()
        with self.screen.asking():
            with self.reader.released(aside=True):  # a line begun is no start of the answer
                self.console.print(Text(question, style="bold yellow"), end=" ")
            self.reader.busy.clear()
            try:
                answer = self.reader.get(until=lambda: self.plan.abort.is_set() or withdrawn())
            finally:
                self.reader.busy.set()
                if self._holds_keys:
                    self.reader.hold()
            if answer is None:
                self.console.print()  # nothing typed ended the question's line
            return answer

    def _read_prompt(self) -> str | None:
        """The next non-empty line; `None` when the user leaves (Ctrl-D, or Ctrl-C twice)."""
        armed = False
        while True:
            try:  # drawing the prompt included: a Ctrl-C may land at any point of it
                with interrupts_deferred(), self.reader.released() as draft:
                    self.console.print(Text(PROMPT, style="bold cyan"), end="")
                    self.console.print(draft, end="", markup=False, highlight=False)
                typed_ahead = bool(self._typed_ahead) or self.reader.pending()
                idle = (self.plan.idle_notify_s, self.plan.notify_idle) if self.results else None
                line = self._typed_ahead.pop(0) if self._typed_ahead else self.reader.get(idle=idle)
            except KeyboardInterrupt:
                if armed:
                    self.console.print()
                    return None
                armed = True
                self.console.print(Text("\n(Ctrl-C again or Ctrl-D to leave)", style="dim"))
                continue
            if line is None:
                self.console.print()
                return None
            if typed_ahead and line.strip():
                self.console.print(line, markup=False, highlight=False)
            if line.strip():
                return line

    def turn(self, prompt: str) -> LoopResult:
        """One user message: a whole run of the loop over the conversation so far."""
        self.plan.abort.clear()
        self.renderer.start()
        if self._holds_keys:
            self.reader.hold()
        self.reader.busy.set()
        self._inbox = ReaderInbox(self.reader)
        try:
            result = self.plan.run_interruptibly(
                follow_up(self.messages, prompt), self.screen, inbox=self._inbox
            )
        finally:
            self._typed_ahead.extend(self._inbox.left())
            self._inbox = None
            self.reader.busy.clear()
            self.renderer.stop()
        self.renderer.summary(result)
        self.messages = list(result.messages.items)
        self.results.append(result)
        return result

    def command(self, line: str) -> bool | None:
        """Carry out a slash command: True to go on, False to leave; None when
        the line is not one (it goes to the model)."""
        name = line.strip()
        if name in LEAVE:
            return False
        if name == "/clear":
            self.messages = []
            self.plan.clear()
            self.console.print(Text("conversation cleared", style="dim"))
            return True
        if name == "/help":
            for command, what in COMMANDS.items():
                self.console.print(Text.assemble((f"{command:<8}", "bold"), f" {what}"))
            note = "Anything else is a message to the model. Ctrl-C interrupts a run."
            self.console.print(Text(note, style="dim"))
            return True
        return None

    def loop(self) -> None:
        self.console.print(
            Text("fsm-agent chat · /help · Ctrl-C interrupts a run · Ctrl-D leaves", style="dim")
        )
        while not (isinstance(self.console, RunConsole) and self.console.reader_gone):
            prompt = self._read_prompt()
            if prompt is None:
                return
            handled = self.command(prompt)
            if handled is False:
                return
            if handled is None:
                self.turn(prompt)


def chat_in_terminal(plan: Plan, history: list[Message], *, quiet: bool, verbose: bool) -> None:
    """A chat on this terminal, its errors as one line; also `run` with no prompt."""
    tolerant_stdin()
    console = RunConsole()
    session = ChatSession(
        plan, console, LineReader(sys.stdin), messages=history, quiet=quiet, verbose=verbose
    )
    if history and plan.parent is not None:
        resuming = f"resuming {plan.parent} ({len(history)} messages)"
        session.console.print(resuming, style="dim", markup=False, highlight=False)
    try:
        session.loop()
    except LogError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the session log: {exc}")
    finally:
        session.reader.restore()
    plan.end("prompt_input_exit")
    if console.write_error is not None:
        stdout_lost(
            console.write_error,
            "the chat stopped there (a run under way was finished first, its log whole)",
        )


@click.command()
@run_options
def chat(quiet: bool, verbose: bool, **options: Any) -> None:
    """An interactive session: each message you type runs the loop over the conversation so far.

    Type while a run goes to queue a message for it; Ctrl-C interrupts the
    run; Ctrl-C twice at the prompt, or Ctrl-D, leaves. With --scripted, each
    message takes the scenario's next turns.
    """
    refuse_undecodable(options)
    asks = trust_question if sys.stdin.isatty() else None
    plan, resumed, _ = plan_of(asks, **options)
    history = list(resumed.messages) if resumed is not None else []
    chat_in_terminal(plan, history, quiet=quiet, verbose=verbose)
