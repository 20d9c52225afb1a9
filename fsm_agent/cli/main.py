"""The `fsm-agent` command: the click group, and how the process starts and ends.

Each subcommand lives in its own module, loaded only when it runs (the table in
`fsm_agent.cli.lazy`), so `--help` and `graph` start fast.
"""

from __future__ import annotations

import errno
import gc
import io
import os
import signal
import sys
from typing import Any

import click

from fsm_agent.cli.lazy import LazyGroup, pause_collector, resume_collector
from fsm_agent.cli.usage import (
    EXIT_CODES,
    EXIT_DIVERGED,
    EXIT_ERROR_ANSWER,
    EXIT_USAGE,
    exit_code,
    fail,
    ignore_signal,
    say,
    silence,
)

__all__ = [
    "EXIT_CODES",
    "EXIT_DIVERGED",
    "EXIT_ERROR_ANSWER",
    "EXIT_USAGE",
    "cli",
    "exit_code",
    "main",
]

FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
"""Errors only a write raises. A command writes its own files under its own guard (a
run's log, a fork's), so one of these that reaches the group, naming no file, is the
standard output's."""


class _Group(LazyGroup):
    """Ends quietly (exit 0) when the reader goes away (`| head`): click would exit 1,
    which `replay` uses for a divergence. A standard output that cannot be written for
    another reason (a full disk) is one error line, exit 2, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            silence(sys.stdout)
            raise click.exceptions.Exit(0) from None
        except OSError as exc:
            if exc.errno not in FULL or exc.filename is not None:
                raise
            silence(sys.stdout)
            fail(f"cannot write to standard output ({exc.strerror or exc})")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fsm-agent")
def cli() -> None:
    """Claude Code's agent loop as an explicit state machine, with a replay debugger."""


def _escape_what_stdout_cannot_encode() -> None:
    """A lone surrogate (JSON's `"\\ud800"` in a model's answer) is no UTF-8: written as
    that escape, which keeps JSON output valid and exact, rather than raising. So is what
    an ASCII-only stream cannot hold (the JSON formats escape it themselves, `ascii_only`):
    an encoding error raised from an event callback would end the run mid-way."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _open_closed_streams() -> None:
    """A standard stream closed at start (`<&-`, `>&-`, a daemon's) is None in Python:
    stdin is then one with nothing on it, stdout and stderr a reader that is gone."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115


def main(command: click.Command = cli, prog_name: str = "fsm-agent") -> None:
    """Run `command` (the `fsm-agent` group, or `fsm-claude`'s), its errors as one line."""
    if isinstance(command, LazyGroup):
        pause_collector()  # resumed once the subcommand is loaded
    _open_closed_streams()
    _escape_what_stdout_cannot_encode()
    try:
        command.main(standalone_mode=False, prog_name=prog_name)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        say("fsm-agent: interrupted")
        sys.exit(130)
    finally:
        resume_collector()  # a command that was never resolved (a usage error, fsm-claude)
        # The command is over: a Ctrl-C now (the second of an interrupted run, say) would
        # only kill the exit half-way, with no message and the signal's exit status.
        signal.signal(signal.SIGINT, ignore_signal)
        # The interpreter's last collection would walk every object the SDK made (a
        # second or more on a busy machine after a run has printed all): the OS frees them.
        gc.freeze()


if __name__ == "__main__":
    main()
