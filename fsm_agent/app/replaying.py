"""Replaying a recorded session: its log, a replay tape, the engine, and nothing live.

Apart from `fsm_agent.app.session` (the live run) so that a replay loads no tool,
permission rule, settings file or model: `replay --check` starts in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsm_agent.core.codec import unstructure
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.validation import SchemaError
from fsm_agent.engine.driver import Engine, LoopResult
from fsm_agent.tape.divergence import Divergence
from fsm_agent.tape.header import config_of, header_tools_error, tools_of
from fsm_agent.tape.log import SessionLog, count_runs
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
    tape_type: Callable[..., ReplayTape] = ReplayTape,
    run: int = 1,
) -> LoopResult:
    """Re-run a recorded session from its log; raises `Divergence` at the first difference.
    `run`: which run of a log of several (an Agent SDK session's) to re-run; each starts
    from the conversation its `start` record holds, so it replays on its own."""
    log = SessionLog(Path(path))
    tape = tape_type(log) if run == 1 else tape_type(log, run=run)
    specs = tools_of(log, checked=False, header=tape.header)  # compiled as calls need them
    engine = Engine(
        config_of(log, tape.header),
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


async def areplay_runs(
    path: str | Path, *, on_event: Callable[[DriverEvent], None] | None = None
) -> list[LoopResult]:
    """Re-run every run of the log, one after another, each checked as `areplay` checks
    it, and each but the first also against the one before: it starts from the
    conversation that one ended with, plus the next message."""
    results: list[LoopResult] = []
    runs = count_runs(Path(path))
    for run in range(1, max(runs, 1) + 1):

        def tape(log: SessionLog, **kwargs: Any) -> ReplayTape:
            made = ReplayTape(log, **kwargs)
            if results:  # before it replays: its first state would differ first
                _continues(made, results[-1])
            return made

        results.append(await areplay(path, on_event=on_event, tape_type=tape, run=run))
    return results


def _continues(tape: ReplayTape, before: LoopResult) -> None:
    """A later run starts from the conversation the run before ended with: its start
    messages hold all of that first (the next message may be joined to its last)."""
    ended = [unstructure(m) for m in before.messages.items]
    began = [unstructure(m) for m in tape.messages()]
    if began[: len(ended) - 1] != ended[:-1] or len(began) < len(ended):
        raise Divergence(
            tape.first_step, f"run {tape.run}'s initial messages",
            f"the {len(ended)} messages run {tape.run - 1} ended with, then the next",
            f"{len(began)} messages that do not begin with them",
        )  # fmt: skip


def replay(path: str | Path, **kwargs: Any) -> LoopResult:
    own_loop("replay")
    return asyncio.run(areplay(path, **kwargs))
