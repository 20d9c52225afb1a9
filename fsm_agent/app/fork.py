"""Forking a recorded session: replay its first steps, then go on live.

`afork` re-runs the start of a parent log with every effect answered from it
(nothing is executed), then switches to live effects — a model, real tools
in a workspace, hooks — and writes a new log whose header names the parent
and the fork point. The switch happens after transition N (`--fork-at N`),
or right after the engine takes an edited effect result (`--edit-effect K`:
what-if runs). The new log holds every effect the run saw, replayed or live,
so it replays with `--check` on its own.

The replayed part is matched leniently (`ReplayTape(strict=False)`): a fork
usually runs in another workspace and session, which changes hook payloads
and state digests but not the path. The fork's own log is exact.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, cast

from attrs import evolve, frozen

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.codec import CodecError
from fsm_agent.core.events import DriverEvent, StreamEvent
from fsm_agent.core.model import Model
from fsm_agent.core.permission_types import (
    PermissionAsk,
    PermissionRequest,
    PermissionsUpdated,
    PermissionUpdate,
)
from fsm_agent.core.tool import Tool, close_tools
from fsm_agent.engine.driver import Engine, LoopResult
from fsm_agent.engine.machine import FINAL_STATES
from fsm_agent.engine.ports import Effects, Tape
from fsm_agent.hooks.outcomes import Hooks, events_of, hooked_events, joined
from fsm_agent.live.approvals import ALLOW_ALWAYS, Approvals
from fsm_agent.live.command_hooks import CommandHooks
from fsm_agent.live.effects import LiveEffects
from fsm_agent.tape.effects import EFFECTS, Effect, read_result
from fsm_agent.tape.header import config_of, session_header, tools_of
from fsm_agent.tape.log import LogWriter, SessionLog, default_log_path, no_start
from fsm_agent.tape.matcher import ReplayTape, answering
from fsm_agent.tape.recording import RecordingTape, recording
from fsm_agent.tape.stepper import LogIndex
from fsm_agent.tools import default_tools
from fsm_agent.tools.replacements import BUILTIN_OUTPUTS
from fsm_agent.tools.session_env import with_session_env


class ForkError(ValueError):
    """A fork point or an edited result that cannot be used; the message says why."""


@frozen
class ForkPoint:
    """Where a fork goes live: after transition `step`, or after effect number `effect`."""

    step: int | None = None
    effect: int | None = None
    result: Any = None

    def describe(self) -> dict[str, Any]:
        if self.effect is not None:
            return {"effect": self.effect}
        return {"step": self.step}


def check_point(log: SessionLog, point: ForkPoint) -> None:
    """Refuse a parent that holds no run or a damaged header, a fork point the parent log
    does not have, or an edit of the wrong shape."""
    config_of(log)
    tools_of(log)
    index = LogIndex(log)
    if not index.started:
        raise no_start(log.path)
    if index.damage is not None:  # effects are numbered and found by their steps
        raise index.damage
    if point.effect is not None:
        total = sum(len(v) for v in index.effects.values())
        if not 1 <= point.effect <= total:
            raise ForkError(f"no effect {point.effect}: the log has effects 1..{total}")
        name = _effect_record(index, point.effect)["name"]
        _check_result(name, point.result)
        return
    step = point.step if point.step is not None else 0
    if not 0 <= step <= index.steps:
        raise ForkError(f"no step {step}: the log has steps 0..{index.steps}")
    if step and index.transition(step)["to"] in FINAL_STATES:
        end = index.transition(step)["to"]
        raise ForkError(f"step {step} ends the run ({end}): fork at an earlier step")


def replayed_steps(log: SessionLog, point: ForkPoint) -> int:
    """How many whole steps come from the parent log before the fork goes live (of the
    run the point is in, in a log of several runs: the fork's log holds that run alone)."""
    check_point(log, point)
    _, before = run_at(log, point)
    if point.effect is not None:
        return int(_effect_record(LogIndex(log), point.effect)["step"]) - 1 - before
    return (point.step or 0) - before


def run_at(log: SessionLog, point: ForkPoint) -> tuple[int, int]:
    """The run of the log the fork point is in (a session log may hold several, their
    steps numbered on), and how many steps the runs before it hold."""
    index = LogIndex(log)
    if len(index.runs) <= 1:
        return 1, 0
    if point.effect is not None:
        step = int(_effect_record(index, point.effect)["step"])
    else:
        step = point.step or 0
    run = index.run_of(step)
    return run, index.runs[run - 1][1] - 1


def _effect_record(index: LogIndex, number: int) -> dict[str, Any]:
    seen = 0
    for step in sorted(index.effects):
        offsets = index.effects[step]
        if seen + len(offsets) >= number:
            return index.log.read_at(offsets[number - seen - 1])
        seen += len(offsets)
    raise ForkError(f"no effect {number}")


def _check_result(name: str, result: Any) -> None:
    try:
        read_result(name, result)
    except CodecError as exc:
        raise ForkError(f"the edited {name} result does not fit: {exc}") from None


class ForkTape(Tape):
    """Checks the parent log until the fork point, and records everything to the new log."""

    def __init__(self, replay: ReplayTape, writer: LogWriter, point: ForkPoint) -> None:
        self.replay = replay
        self.recording = RecordingTape(writer)
        self.point = point
        self._live = point.effect is None and not point.step

    @property
    def live(self) -> bool:
        """Live once past the fork point: from the moment the edited result is handed out,
        so what the edited effect sets going (a tool call started while an edited model
        stream is read) is live too, not asked of the parent."""
        return self._live or self.replay.edited is not None

    @property
    def step(self) -> int:  # type: ignore[override]  # read-only here: the recording counts
        return self.recording.step

    @property
    def path(self) -> Path | None:  # type: ignore[override]
        return self.recording.writer.path

    def start(self, messages: list[Any], read_files: dict[str, float] | None = None) -> None:
        self.recording.start(messages, read_files)

    def transition(self, record: dict[str, Any], state: Any = None) -> None:
        if not self.live:
            self.replay.transition(record, state)
            if self.point.step is not None and self.recording.step >= self.point.step:
                self._live = True
        self.recording.transition(record, state)

    def context(self, record: dict[str, Any]) -> None:
        self.recording.context(record)

    def result(self, record: dict[str, Any]) -> None:
        self.recording.result(record)

    def wrap(self, effects: Effects | None) -> Effects:
        if effects is None:
            raise ValueError("a fork needs live effects to go on with")
        return recording(switch(answering(self.replay), effects, self), self.recording)


class SwitchEffects:
    """The log's answers before the fork point, the live world's after; its methods
    are made from `EFFECTS` below, but for the two that carry permissions forward."""

    def __init__(self, replayed: Effects, live: Effects, tape: ForkTape) -> None:
        self.replayed = replayed
        self.live_effects = live
        self.tape = tape

    def _source(self) -> Effects:
        return self.live_effects if self.tape.live else self.replayed

    async def ask_permission(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        answer = await self._source().ask_permission(question, cancel, recheck)
        if (
            answer == ALLOW_ALWAYS
            and not self.tape.live
            and isinstance(self.live_effects, LiveEffects)
        ):
            self.live_effects.approvals.grant(question)  # the run goes on with its rules
        return answer

    async def update_permissions(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        result = await self._source().update_permissions(updates)
        if not self.tape.live and isinstance(self.live_effects, LiveEffects):
            self.live_effects.approvals.update(updates, write=False)  # the parent wrote them
        return result


def switch(replayed: Effects, live: Effects, tape: ForkTape) -> Effects:
    return cast(Effects, SwitchEffects(replayed, live, tape))


def _switched(effect: Effect) -> Any:
    method = effect.method
    if effect.kind == "stream":

        async def stream(self: SwitchEffects, request: Any) -> AsyncIterator[StreamEvent]:
            async for event in getattr(self._source(), method)(request):
                yield event

        return stream
    if effect.kind == "sync":

        def call(self: SwitchEffects, *args: Any, **kwargs: Any) -> Any:
            return getattr(self._source(), method)(*args, **kwargs)

        return call

    async def acall(self: SwitchEffects, *args: Any, **kwargs: Any) -> Any:
        return await getattr(self._source(), method)(*args, **kwargs)

    return acall


for _effect in EFFECTS:
    if _effect.method not in vars(SwitchEffects):
        setattr(SwitchEffects, _effect.method, _switched(_effect))


async def afork(
    parent: str | Path,
    point: ForkPoint,
    *,
    model: Model,
    tools: Mapping[str, Tool] | None = None,
    hooks: Hooks | None = None,
    config_changes: Mapping[str, Any] | None = None,
    log: str | Path | None = None,
    on_event: Callable[[DriverEvent], None] | None = None,
    abort: AbortSignal | None = None,
) -> LoopResult:
    """Replay `parent` up to `point`, then run live; the new log's header names both."""
    parent_log = SessionLog(Path(parent))
    check_point(parent_log, point)
    run, before = run_at(parent_log, point)
    edits = {point.effect: point.result} if point.effect is not None else None
    replay = ReplayTape(parent_log, strict=False, edits=edits, run=run)
    parent_config = config_of(parent_log, replay.header)
    config = evolve(parent_config, **dict(config_changes or {}))
    if parent_config.cwd not in config.workspaces:
        config = evolve(config, parent_workspaces=(*config.parent_workspaces, parent_config.cwd))
    config = evolve(config, hooked_events=hooked_events(config.hooked_events, events_of(hooks)))
    specs = tools_of(parent_log, header=replay.header)
    session_id = str(uuid.uuid4())
    config = with_session_env(config, session_id)
    header = session_header(
        session_id, config, specs, parent={"log": str(Path(parent).resolve()), **point.describe()}
    )
    messages = replay.messages()  # a parent that cannot start is refused before a log is made
    path = Path(log) if log else default_log_path(config.cwd, session_id)
    writer = LogWriter(path, header)
    local = point if point.step is None else evolve(point, step=point.step - before)
    tape = ForkTape(replay, writer, local)  # the fork's log numbers the run's steps from 1
    blobs = path.parent / path.stem / "tool-results"
    if config.hooks:
        hooks = joined(CommandHooks.for_run(config, str(path.resolve())), hooks)
    tools = default_tools() if tools is None else tools
    live = LiveEffects(
        model,
        tools,
        hooks,
        abort,
        blob_dir=blobs,
        approvals=Approvals(config.permissions, config.cwd, mode=config.permission_mode),
    )
    engine = Engine(config, tape, live, specs, session_id, on_event, outputs=BUILTIN_OUTPUTS)
    try:
        return await engine.run(messages, tape.replay.start_read_files)
    finally:
        close_tools(tools.values())
        writer.close()
