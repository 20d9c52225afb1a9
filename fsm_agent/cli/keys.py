"""The keys typed on a chat's terminal, edited into lines here rather than by the terminal.

While a run goes, the terminal would echo each key where the cursor is, which
is the end of the spinner's line (`…↓0 tokensalso check`). So during a run the
terminal neither echoes nor edits (`-echo -icanon`): the keys are edited here
into a draft that the live region shows under the spinner, as Claude Code's
input box shows what is typed under its status. At a prompt the terminal's own
echo and line editing are back, unless a draft begun during the run is still
unfinished: that line is then echoed here (the terminal never saw its start, so
its erase key could not reach it), and the terminal takes over after it.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import os
import sys
import termios
import threading
from collections.abc import Callable, Iterator
from typing import Literal, TextIO

from rich.cells import cell_len

Mode = Literal["terminal", "held", "echoed"]
"""`terminal`: the terminal echoes and edits; `held`: keys edited here, shown by the
live region; `echoed`: keys edited and echoed here, until the line ends."""

ERASE = ("\x7f", "\b")
KILL_LINE = "\x15"  # Ctrl-U
KILL_WORD = "\x17"  # Ctrl-W
END = "\x04"  # Ctrl-D
ESC = "\x1b"


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class Keyboard:
    """A terminal's keys as lines. `feed` takes what a read of its fd returned."""

    def __init__(self, fd: int, encoding: str, echo: Callable[[str], None] = _write) -> None:
        self._fd = fd
        self._own = termios.tcgetattr(fd)
        """The terminal's settings as found, put back at each prompt and at exit."""
        self._decode = codecs.getincrementaldecoder(encoding)(errors="replace").decode
        self._echo = echo
        self._lock = threading.RLock()
        self._mode: Mode = "terminal"
        self._draft = ""
        """A str, replaced whole, so the live region reads it without the lock."""
        self._aside = ""
        """A draft set aside while a question is answered."""
        self._escape = 0
        """0, or 1 after ESC, or 2 inside the sequence it began (an arrow key's)."""
        self.changed: Callable[[], None] = lambda: None
        """Called after a key changed the draft while held (to redraw it at once)."""
        atexit.register(self.restore)

    @classmethod
    def of(cls, stream: TextIO) -> Keyboard | None:
        """The keyboard behind `stream`, or None when it is no terminal (a pipe, a file)."""
        try:
            fd = stream.fileno()
            if not os.isatty(fd):
                return None
            return cls(fd, getattr(stream, "encoding", None) or "utf-8")
        except (AttributeError, OSError, ValueError, termios.error):
            return None

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def held(self) -> bool:
        return self._mode == "held"

    def draft(self) -> str:
        """The line being typed and not yet ended."""
        return self._draft

    def hold(self) -> None:
        """Keys from now on are edited here, not echoed: a run goes (again, after a
        question: the draft set aside for it is back)."""
        with self._lock:
            self._mode = "held"
            self._set(echo=False)
            self._draft, self._aside = self._aside + self._draft, ""

    @contextlib.contextmanager
    def released(self, *, aside: bool = False) -> Iterator[str]:
        """The keys back to the terminal at a prompt; yields the unfinished draft, which the
        caller draws after the prompt before any key typed meanwhile is echoed after it.
        `aside`: the draft is no start of what is typed next (a question's answer) and
        waits for the next `hold`."""
        with self._lock:
            if aside:
                self._aside, self._draft = self._draft, ""
            if self._draft:
                self._mode = "echoed"
            else:
                self._mode = "terminal"
                self._set(echo=True)
            yield self._draft

    def restore(self) -> None:
        """The terminal's own settings back (the chat ends)."""
        with self._lock:
            self._mode = "terminal"
            self._set(echo=True)

    def _set(self, *, echo: bool) -> None:
        attrs = list(self._own)
        if not echo:
            attrs[3] &= ~(termios.ECHO | termios.ICANON)
            attrs[6] = list(attrs[6])
            attrs[6][termios.VMIN] = 1
            attrs[6][termios.VTIME] = 0
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(self._fd, termios.TCSANOW, attrs)

    def feed(self, data: bytes) -> tuple[list[str], bool]:
        """The lines that `data` ended, and whether the input ended (Ctrl-D, or no data:
        the terminal's end of file or its hang-up)."""
        if not data:
            return [], True
        lines: list[str] = []
        ended = False
        with self._lock:
            before = self._draft
            for ch in self._decode(data):
                if self._key(ch, lines):
                    ended = True
                    break
            redraw = self._mode == "held" and self._draft != before
        if redraw:
            self.changed()
        return lines, ended

    def _key(self, ch: str, lines: list[str]) -> bool:
        """One character typed; True when it ends the input."""
        if self._escape:  # a key's escape sequence (arrows, Home…): no text of the line
            if self._escape == 1 and ch in "[O":
                self._escape = 2
            elif self._escape == 1 or 0x40 <= ord(ch) <= 0x7E:
                self._escape = 0
            return False
        if ch in "\r\n":
            lines.append(self._draft)
            self._draft = ""
            if self._mode == "echoed":
                self._echo("\n")
                self._mode = "terminal"
                self._set(echo=True)
            return False
        if ch in ERASE:
            self._erase(self._draft[-1:])
        elif ch == KILL_LINE:
            self._erase(self._draft)
        elif ch == KILL_WORD:
            word = self._draft.rstrip()
            self._erase(self._draft[len(word.rpartition(" ")[0]) + (" " in word) :])
        elif ch == END:
            return not self._draft
        elif ch == ESC:
            self._escape = 1
        elif ch == "\t" or ch.isprintable():
            self._draft += ch
            if self._mode == "echoed":
                self._echo(ch)
        return False

    def _erase(self, tail: str) -> None:
        if not tail:
            return
        self._draft = self._draft[: len(self._draft) - len(tail)]
        if self._mode == "echoed":
            width = cell_len(tail)
            self._echo("\b" * width + " " * width + "\b" * width)
