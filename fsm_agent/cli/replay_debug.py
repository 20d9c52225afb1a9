"""`fsm-agent replay LOG` in a terminal: the step debugger, with tab completion where
Python has readline (not every platform's does)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from fsm_agent.cli.debugger import Debugger
from fsm_agent.cli.recorded import note_if_subagent, note_if_unchained, warn_if_torn
from fsm_agent.cli.usage import fail
from fsm_agent.tape.log import LogError

try:
    import readline
except ImportError:  # Windows' Python has none
    HAS_READLINE = False
else:
    HAS_READLINE = True


def debug(path: Path) -> None:
    try:
        debugger = Debugger(path)
    except LogError as exc:
        fail(str(exc))
    warn_if_torn(path)
    note_if_unchained(path)
    note_if_subagent(path)
    if HAS_READLINE:
        readline.set_completer(debugger.complete)  # type: ignore[arg-type]  # typeshed: a list
        readline.set_completer_delims(" \t\n")
        readline.parse_and_bind("tab: complete")
    debugger.interact(Console())
