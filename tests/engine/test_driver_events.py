"""The driver's events that output layers build on: whole messages and the raw stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fsm_agent.app.session import arun, replay
from fsm_agent.cli.cost import CostMeter
from fsm_agent.cli.launch import Plan
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    AssistantMessage,
    DriverEvent,
    MessageStop,
    ModelEvent,
    StreamEvent,
)
from fsm_agent.core.messages import Usage
from fsm_agent.engine.driver import Engine, LoopResult
from fsm_agent.tape.log import SessionLog
from tests.conftest import SCENARIOS


def test_each_assistant_message_and_stream_event_is_emitted(scenario, tmp_path: Path) -> None:
    seen: list[DriverEvent] = []
    result = scenario("tool_round", on_event=seen.append)
    messages = [e.message for e in seen if isinstance(e, AssistantMessage)]
    assert messages == [m for m in result.messages.items if m.role == "assistant"]
    recorded = [
        event
        for _, record in SessionLog(tmp_path / "tool_round.jsonl").records()
        if record["t"] == "effect" and record["name"] == "model"
        for event in record["result"]["events"]
    ]
    raw = [e.event for e in seen if isinstance(e, ModelEvent)]
    assert len(raw) == len(recorded) > 0
    assert [type(e).__name__ for e in raw] == [e["event"] for e in recorded]


def test_a_dropped_fallback_attempt_is_not_an_assistant_message(scenario) -> None:
    seen: list[DriverEvent] = []
    result = scenario("model_fallback", on_event=seen.append)
    messages = [e.message for e in seen if isinstance(e, AssistantMessage)]
    assert messages == [m for m in result.messages.items if m.role == "assistant"]


def test_chat_logs_follow_the_first_log_name(tmp_path: Path) -> None:
    plan = Plan(model=None, config=None, hooks=None, abort=None, log=tmp_path / "chat.jsonl")  # type: ignore[arg-type]
    assert plan.next_log() == tmp_path / "chat.jsonl"
    plan.runs = 2
    assert plan.next_log() == tmp_path / "chat.3.jsonl"
    assert Plan(model=None, config=None, hooks=None, abort=None, log=None).next_log() is None  # type: ignore[arg-type]


def test_a_conversation_s_later_runs_log_under_its_session_id(tmp_path: Path) -> None:
    """Without --log, a run that goes on a conversation keeps its id: `ID.N.jsonl`."""
    config = RunConfig(cwd=str(tmp_path))
    plan = Plan(model=None, config=config, hooks=None, abort=None, log=None,  # type: ignore[arg-type]
                parent_session_id="s1")  # fmt: skip
    folder = tmp_path / ".fsm-agent" / "sessions"
    assert plan.session_id == "s1"
    assert plan.next_log() == folder / "s1.jsonl"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").touch()
    (folder / "s1.2.jsonl").touch()
    assert plan.next_log() == folder / "s1.3.jsonl"


class StalledModel:
    """A model that never sends its first event."""

    name = "stalled"

    async def stream(self, request: object) -> AsyncIterator[StreamEvent]:
        await asyncio.Event().wait()
        yield MessageStop()

    async def count_tokens(self, request: object) -> int | None:
        return None


def test_ctrl_c_ends_a_wait_for_the_model(workspace: Path, tmp_path: Path) -> None:
    abort = AbortSignal()
    log = tmp_path / "stalled.jsonl"

    async def go() -> LoopResult:
        asyncio.get_running_loop().call_later(0.05, abort.set)
        run = arun(
            "hello",
            model=StalledModel(),
            config=RunConfig(model="stalled", cwd=str(workspace)),
            log=log,
            abort=abort,
        )
        return await asyncio.wait_for(run, 60)

    result = asyncio.run(go())
    assert result.reason == "aborted_streaming"
    assert replay(log).reason == "aborted_streaming"


def test_ctrl_c_stops_a_running_tool(workspace: Path, tmp_path: Path) -> None:
    from fsm_agent.app.session import arun_scenario
    from fsm_agent.engine.ports import INTERRUPTED
    from fsm_agent.live.scripted import Scenario

    scenario = Scenario.parse(
        {
            "config": {"permission_mode": "bypassPermissions"},
            "turns": [
                {
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_sleep",
                            "name": "Bash",
                            "input": {"command": "sleep 600"},
                        }
                    ]
                }
            ],
        }
    )
    abort = AbortSignal()
    seen: list[DriverEvent] = []
    log = tmp_path / "sleep.jsonl"

    def on_event(event: DriverEvent) -> None:
        seen.append(event)
        if type(event).__name__ == "ToolStarted":
            asyncio.get_running_loop().call_later(0.2, abort.set)

    async def go() -> LoopResult:
        run = arun_scenario(
            scenario, cwd=workspace, prompt="wait", log=log, abort=abort, on_event=on_event
        )
        return await asyncio.wait_for(run, 60)

    result = asyncio.run(go())
    assert result.reason == "aborted_tools"
    last = result.messages.items[-1]
    # Claude Code's error for a killed command (`Exit code 137`, the interrupt message,
    # no output here); the bare message if Ctrl-C came before the command had started
    assert last.content[0].content in (f"Exit code 137\n{INTERRUPTED}", INTERRUPTED)
    assert last.content[0].is_error
    assert replay(log).reason == "aborted_tools"


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.json")))
def test_the_cost_meter_counts_every_token_the_run_counts(scenario, name: str) -> None:
    """Usage is summed per response; so is the cost: every response the run counts
    (a failed try, a summary, a message kept) is one the meter prices."""
    meter = CostMeter()
    result = scenario(name, on_event=meter)
    counted = sum((usage for usage, _ in meter.by_model.values()), Usage())
    assert counted == result.usage


def test_an_event_callback_that_raises_ends_the_run_with_its_error_and_a_log_cut_short(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The caller's bug propagates; the model stream is closed and recorded while
    the log is open (no 'log is closed' error at shutdown), so the log replays as
    a run cut short."""
    from fsm_agent.app.session import replay, run_scenario
    from fsm_agent.core.events import TextDelta
    from fsm_agent.tape.divergence import LogEnded

    def broken(event: object) -> None:
        if isinstance(event, TextDelta):
            raise RuntimeError("callback bug")

    log = tmp_path / "broken.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pytest.raises(RuntimeError, match="callback bug"):
        run_scenario(SCENARIOS / "fix_bug.json", cwd=workspace, log=log, on_event=broken)
    assert "log is closed" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert '"name":"model"' in log.read_text()
    with pytest.raises(LogEnded):
        replay(log)


def _engine(tmp_path: Path, turns: list[dict[str, object]]) -> Engine:
    """An engine over a scripted model, its log kept in memory."""
    from fsm_agent.live.effects import LiveEffects
    from fsm_agent.live.scripted import Scenario, ScriptedModel
    from fsm_agent.tape.header import session_header
    from fsm_agent.tape.log import MemoryWriter
    from fsm_agent.tape.recording import RecordingTape

    config = RunConfig(model="scripted", cwd=str(tmp_path))
    model = ScriptedModel(Scenario.parse({"turns": turns}))
    tape = RecordingTape(MemoryWriter(session_header("s", config, ())))
    return Engine(config, tape, LiveEffects(model, {}), (), "s")


def test_engine_events_streams_a_run_and_ends_with_its_result(tmp_path: Path) -> None:
    """`Engine.events()` (README): the driver's events as an async iterator, then the
    result; the files an earlier run read are taken as `run` takes them."""
    from fsm_agent.core.events import Transition
    from fsm_agent.core.messages import user

    engine = _engine(tmp_path, [{"content": "hello"}])
    read = {str(tmp_path / "a.txt"): 1.0}

    async def go() -> list[object]:
        return [item async for item in engine.events([user("hi")], read)]

    items = asyncio.run(go())
    result = items[-1]
    assert isinstance(result, LoopResult) and result.reason == "completed"
    assert result.read_files == read
    edges = [i.edge for i in items if isinstance(i, Transition)]
    assert edges == [step.edge for step in result.path]
    assert any(isinstance(i, AssistantMessage) for i in items)


def test_engine_events_raises_when_its_run_is_cancelled_from_elsewhere(tmp_path: Path) -> None:
    """The run's task cancelled by someone else put nothing in the stream, which then
    waited for ever for the result."""
    from fsm_agent.core.messages import user

    engine = _engine(tmp_path, [{"delay": 30, "content": "too late"}])

    async def go() -> str:
        seen = 0
        try:
            async for _ in engine.events([user("hi")]):
                seen += 1
                if seen == 2:
                    tasks = asyncio.all_tasks()
                    (run,) = [t for t in tasks if t.get_coro().__qualname__ == "Engine.run"]
                    asyncio.get_running_loop().call_later(0.2, run.cancel)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # wait_for's: the stream never ended
                raise
            return "cancelled"
        return "ended"

    assert asyncio.run(asyncio.wait_for(go(), 20)) == "cancelled"
