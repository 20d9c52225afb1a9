"""Replaying a recorded session: its log, a replay tape, the engine, and nothing live.

Apart from `fsm_agent.app.session` (the live run) so that a replay loads no tool,
permission rule, settings file or model: `replay --check` starts in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsm_agent.core.events import DriverEvent
from fsm_agent.core.validation import SchemaError
from fsm_agent.engine.driver import Engine, LoopResult
from fsm_agent.tape.header import config_of, header_tools_error, tools_of
from fsm_agent.tape.log import SessionLog
from fsm_agent.tape.matcher import ReplayTape
from fsm_agent.tools.replacements import BUILTIN_OUTPUTS


def own_loop(name: str) -> None:
    """The sync wrappers run their own event loop, which asyncio forbids inside a
    running one (an async test, a notebook): say which coroutine to await instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"fsm_agent.{name}() runs its own event loop, and one is already running "
        f"here: use `await fsm_agent.a{name}(...)` instead"
    )


async def areplay(
    path: str | Path,
    *,
    on_event: Callable[[DriverEvent], None] | None = None,
    tape_type: Callable[[SessionLog], ReplayTape] = ReplayTape,
) -> LoopResult:
    """Re-run a recorded session from its log; raises `Divergence` at the first difference."""
    log = SessionLog(Path(path))
    tape = tape_type(log)
    specs = tools_of(log, checked=False)  # compiled as calls need them: a quicker start
    engine = Engine(
        config_of(log),
        tape,
        None,
        specs,
        log.header.get("session_id", ""),
        on_event,
        outputs=BUILTIN_OUTPUTS,
    )
    try:
        return await engine.run(tape.messages(), tape.start_read_files)
    except SchemaError as exc:
        raise header_tools_error(log, exc) from None


def replay(path: str | Path, **kwargs: Any) -> LoopResult:
    own_loop("replay")
    return asyncio.run(areplay(path, **kwargs))
