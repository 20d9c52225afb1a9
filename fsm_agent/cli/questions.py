"""Putting a permission question to the user: on the terminal, or through a chat's
line reader. Each builds a `Prompter`, the callback `Approvals` asks through.

The call is shown as the model wrote it, its escapes shown, never obeyed.
"""

from __future__ import annotations

import contextlib
import select
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from fsm_agent.cli.render import key_input, printable
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.permission_types import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    DENY,
    PermissionAsk,
)
from fsm_agent.live.approvals import Prompter, withdrawn

if TYPE_CHECKING:
    from rich.console import Console


def _shown(question: PermissionAsk) -> tuple[str, str, str, str | None]:
    """The question's tool, call, reason and suggested rule as text to show: they quote
    what the model wrote, whose escapes are shown, never obeyed."""
    suggestion = None if question.suggestion is None else printable(question.suggestion)
    call = f"({key_input(question.input)[:120]})"
    return printable(question.tool), call, printable(question.reason), suggestion


def _question(question: PermissionAsk) -> tuple[str, str]:
    tool, call, reason, suggestion = _shown(question)
    always = f"always ({suggestion})" if suggestion else "always"
    return f"? {tool}{call}: {reason}", f"Allow? [y] once  [a] {always}  [n] deny"


def _choice(answer: str | None) -> str:
    key = (answer or "").strip().lower()[:1]
    return {"y": ALLOW_ONCE, "a": ALLOW_ALWAYS}.get(key, DENY)


class QuestionScreen:
    """A run's events and its questions on one screen. The calls running beside the one
    asked about (reads at once) go on: their events are held while the question waits
    and shown after the answer, where printed meanwhile they land on its line."""

    def __init__(
        self,
        show: Callable[[DriverEvent], None],
        pause: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self._show = show
        self._pause = pause
        self._held: list[DriverEvent] | None = None
        self._lock = threading.Lock()

    def __call__(self, event: DriverEvent) -> None:
        with self._lock:
            if self._held is not None:
                self._held.append(event)
            else:
                self._show(event)

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """The live status put away and events held while a question is on screen."""
        with self._lock:
            self._held = []
        try:
            with self._pause():
                yield
        finally:
            with self._lock:
                held, self._held = self._held, None
                for event in held or ():
                    self._show(event)


def line_prompter(ask: Callable[[str], str | None]) -> Prompter:
    """Ask through an interactive session's line reader (`Plan.ask`); no answer denies."""

    def prompt(question: PermissionAsk) -> str:
        head, options = _question(question)
        return _choice(ask(f"{head}\n  {options}"))

    return prompt


POLL_S = 0.1


def _read_line(abort: AbortSignal | None) -> str | None:
    """A line typed on standard input; None at its end, once `abort` is set, or once
    the question is `withdrawn`.

    Ctrl-C reaches the event loop, which sets `abort`, never this thread: a
    blocking `input()` would keep the run waiting for an answer it no longer wants.
    """
    while not ((abort is not None and abort.is_set()) or withdrawn()):
        ready, _, _ = select.select([sys.stdin], [], [], POLL_S)
        if ready:
            return sys.stdin.readline() or None
    return None


def _discard_typed_ahead() -> None:
    """Keys typed before the question (an Enter pressed while the model was slow) wait
    in the terminal's buffer; they are no answer to a question not yet asked."""
    try:
        import termios
    except ImportError:
        return
    with contextlib.suppress(termios.error, OSError, ValueError):
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)


def terminal_prompter(
    abort: AbortSignal | None = None,
    pause: Callable[[], AbstractContextManager[None]] | None = None,
) -> Prompter:
    """Ask on the terminal: allow once, always (adds the suggested rule), or deny.

    `pause` puts the run's live status away while the question is on screen;
    Ctrl-C (`abort`) denies at once, and the run ends interrupted.
    """
    answers = {"y": ALLOW_ONCE, "a": ALLOW_ALWAYS, "n": DENY}
    consoles: list[Console] = []  # made at the first question: one that asks none loads no rich

    def ask(question: PermissionAsk) -> str:
        """The call as the model wrote it: its text is escaped, never read as markup."""
        # Deferred (listed in docs/architecture.md): rich, when a question is put.
        from rich.console import Console
        from rich.markup import escape

        if not consoles:
            consoles.append(Console(stderr=True))
        console = consoles[0]
        tool, call, reason, suggestion = _shown(question)
        _discard_typed_ahead()
        with pause() if pause is not None else contextlib.nullcontext():
            console.print(f"\n[bold yellow]? {escape(tool)}[/]{escape(call)}")
            console.print(f"  [dim]{escape(reason)}[/]")
            always = f"always ({escape(suggestion)})" if suggestion else "always"
            options = escape("  Allow? [y] once  [a] ") + always + escape("  [n] deny")
            while True:
                console.print(f"{options} [bold magenta]\\[y/a/n][/] [bold cyan](n)[/]: ", end="")
                line = _read_line(abort)
                if line is None:
                    console.print()
                    return DENY
                key = line.strip().lower() or "n"
                if key in answers:
                    return answers[key]
                console.print("[red]Please select one of the available options[/]")

    return ask
