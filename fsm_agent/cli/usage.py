"""What every subcommand shares: its exit codes, its error lines, its path type.

Kept free of the engine and of rich, so that `--help`, `graph` and `replay --path`,
which import it, start fast.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from fsm_agent.engine.driver import LoopResult

EXIT_USAGE = 2
EXIT_DIVERGED = 1
EXIT_CODES: dict[str, int] = {
    "completed": 0,
    "blocking_limit": 10,
    "prompt_too_long": 11,
    "image_error": 12,
    "model_error": 13,
    "aborted_streaming": 14,
    "aborted_tools": 15,
    "stop_hook_prevented": 16,
    "hook_stopped": 0,
    "max_turns": 18,
    "prompt_blocked": 0,
}
"""A prompt a UserPromptSubmit hook blocked exits 0, as `claude -p` does (a `success`:
the hook did its job); `terminal_reason` tells it from `completed`. So does a run a
tool hook stopped (`hook_stopped`), which exited 17 before Claude Code was measured;
17 is left unused rather than given to another reason."""
EXIT_ERROR_ANSWER = 20
"""`completed`, but the answer is an error (an API error such as a 401): the task
was not done, so a script must not read it as success."""


def exit_code(result: LoopResult) -> int:
    """Not 0 exactly when the result is an error (`is_error` in the JSON result)."""
    if result.reason == "completed" and result.is_error:
        return EXIT_ERROR_ANSWER
    if result.stopped_by_hook:
        return 0
    return EXIT_CODES.get(result.reason, 1)


def ignore_signal(signum: int, frame: object) -> None:
    """A signal caught and dropped. Not `SIG_IGN`: an ignored signal stays ignored in every
    process started afterwards (a command's Bash, a test's terminal child), and a Python
    started with SIGINT ignored never turns Ctrl-C into KeyboardInterrupt."""


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """A Ctrl-C held off until the block is done, then raised. Landing inside rich's
    `print` (between its buffer's enter and exit) it left the console buffering for good:
    the chat or the debugger lived on and printed nothing more."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[object] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and callable(previous):
        previous(signal.SIGINT, None)


def isatty(stream: IO[str]) -> bool:
    """Whether `stream` is a terminal; a closed, detached or file-less one is not."""
    try:
        return stream.isatty()
    except (AttributeError, OSError, ValueError):
        return False


def silence(stream: IO[str]) -> None:
    """Point `stream`'s descriptor at /dev/null, so what is still buffered for a reader
    that went away (flushed again at exit) and anything printed later goes nowhere,
    without another `BrokenPipeError`."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def say(text: str) -> None:
    """A line on stderr. A stderr whose reader went away (`2>&1 | head -1`) or that cannot
    be written loses the line, never the exit code: the exception would have ended the
    command 0 (a reader gone) or with a traceback, and exit-time flushes 120."""
    try:
        click.echo(text, err=True)
    except OSError:
        silence(sys.stderr)


def error_line(message: str) -> None:
    say(f"fsm-agent: error: {message}")


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    error_line(message)
    sys.exit(code)


def stdout_lost(lost: OSError, what_happened: str) -> NoReturn:
    """A stdout nobody chose to close (a full disk) lost output: one line, exit 2."""
    fail(
        f"cannot write to standard output ({lost.strerror or lost}), the output is "
        f"incomplete; {what_happened}"
    )


def is_utf8(text: str) -> bool:
    """Python hands bytes that are not UTF-8 over as lone surrogates, which no log (JSON
    in UTF-8) can hold: caught here, they are a usage error before anything runs."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def refuse_undecodable(options: dict[str, Any]) -> None:
    for name, value in options.items():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, (str, Path)) and not is_utf8(str(item)):
                fail(f"--{name.replace('_', '-')} is not UTF-8 text")


def workspace(cwd: str) -> str:
    return os.path.realpath(cwd)


class FilePath(click.Path):
    """A file's path. click would take an empty one (`--log ""`, an unset variable) as
    `.`, the current directory: it names no file, and is refused as such."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no file", param, ctx)
        return super().convert(value, param, ctx)
