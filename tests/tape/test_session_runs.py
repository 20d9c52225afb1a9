"""A session log of several runs (an Agent SDK session's messages, one process): the runs
one after another in one file, replayed, resumed and stepped through run by run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from attrs import asdict

from fsm_agent.app.fork import ForkPoint, afork, replayed_steps
from fsm_agent.app.history import aresume, follow_up
from fsm_agent.app.replaying import areplay_runs
from fsm_agent.cli.debugger import Debugger
from fsm_agent.cli.launch import Plan
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import Message
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tape.divergence import Divergence
from fsm_agent.tape.log import LogError, SessionLog, count_runs
from fsm_agent.tape.recording import SessionRecorder
from fsm_agent.tape.stepper import Stepper
from fsm_agent.tape.view import view_data
from tests.support.cli import fsm
from tests.support.logs import reseal

TURNS: list[dict[str, Any]] = [
    {"content": "one"},
    {
        "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo hi"}}
        ]
    },
    {"content": "two"},
    {"content": "three"},
]


def session(tmp_path: Path, prompts: tuple[str, ...] = ("first", "second", "third")) -> Path:
    """Three messages over one plan, as an SDK session sends them: one log."""
    log = tmp_path / "session.jsonl"
    plan = Plan(
        model=ScriptedModel(Scenario.parse({"turns": TURNS})),
        config=RunConfig(model="scripted", cwd=str(tmp_path), permission_mode="bypassPermissions"),
        hooks=None, abort=AbortSignal(), log=log,
    )  # fmt: skip
    plan.recorder = SessionRecorder(log)
    messages: list[Message] = []
    for prompt in prompts:
        if prompt == "third":
            plan.config = RunConfig(**{**_fields(plan.config), "permission_mode": "acceptEdits"})
        result = asyncio.run(plan.arun(follow_up(messages, prompt), None, session_id="s-1"))
        assert result.log_path == str(log)
        messages = list(result.messages.items)
    plan.recorder.close()
    return log


def _fields(config: RunConfig) -> dict[str, Any]:
    return asdict(config, recurse=False)


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_runs_follow_one_another_in_one_log(tmp_path: Path) -> None:
    log = session(tmp_path)
    records = lines(log)
    starts = [r for r in records if r.get("t") == "start"]
    assert [s.get("run", 1) for s in starts] == [1, 2, 3]
    assert "tools" not in starts[1]  # the header's
    assert records[0]["config"].get("session_source", "startup") == "startup"
    assert "session_source" in starts[1]["config"]  # null: the session had started
    assert starts[2]["config"]["permission_mode"] == "acceptEdits"  # changed: recorded
    steps = [r["step"] for r in records if r.get("t") == "transition"]
    assert steps == list(range(1, len(steps) + 1))
    assert [r.get("t") for r in records].count("result") == 3
    assert count_runs(log) == 3
    results = asyncio.run(areplay_runs(log))
    assert [r.reason for r in results] == ["completed"] * 3
    assert sum(len(r.path) for r in results) == len(steps)
    proc = fsm("replay", "--check", str(log))
    assert proc.returncode == 0, proc.stderr
    assert f"{len(steps)} steps of 3 runs match the log; ends completed" in proc.stdout
    assert '"runs": 3' in fsm("replay", "--check", "--json", str(log)).stdout


def test_resume_goes_on_from_the_last_run(tmp_path: Path) -> None:
    log = session(tmp_path)
    resumed = asyncio.run(aresume(log))
    said = [b.text for m in resumed.messages for b in m.content if hasattr(b, "text")]
    assert said[-2:] == ["third", "three"]
    assert resumed.config.permission_mode == "acceptEdits"


def test_the_debugger_steps_through_every_run(tmp_path: Path) -> None:
    log = session(tmp_path)
    stepper = Stepper(log)
    try:
        index = stepper.index
        assert [first for _, first in index.runs[:1]] == [1] and len(index.runs) == 3
        last = stepper.at(index.steps)
        assert last is not None and last.dest == "completed"
        second = index.runs[1][1]
        info = stepper.at(second)
        assert info is not None and info.source == "preprocess"
        assert index.run_of(second) == 2 and index.run_of(second - 1) == 1
        first_result = next(r for r in lines(log) if r.get("t") == "result")
        assert index.run_end(second - 1) == first_result
    finally:
        stepper.close()
    dbg = Debugger(log)
    try:
        assert "run 1/3  (run 1 ends: completed)" in dbg.text(f"g {second - 1}")
        assert "run 2/3" in dbg.text("n")
        assert dbg.text(f"g {index.steps}").rstrip().endswith("(end: completed)")
    finally:
        dbg.stepper.close()


def test_the_viewer_shows_every_run(tmp_path: Path) -> None:
    log = session(tmp_path)
    data = view_data(log)
    assert data["diverged"] is None and data["result"]["reason"] == "completed"
    assert len(data["steps"]) == sum(1 for r in lines(log) if r.get("t") == "transition")


def test_a_run_out_of_place_is_named(tmp_path: Path) -> None:
    log = session(tmp_path)
    text = log.read_text().replace('"t":"start","run":3', '"t":"start","run":4')
    log.write_text(text)
    reseal(log)
    with pytest.raises(LogError, match="is run 3 of the session, not 4"):
        list(SessionLog(log).records())
    proc = fsm("replay", "--check", str(log))
    assert proc.returncode == 2 and "not 4" in proc.stderr


def test_a_later_run_that_does_not_continue_the_last_diverges(tmp_path: Path) -> None:
    log = session(tmp_path)
    records = lines(log)
    second = next(r for r in records if r.get("run") == 2)
    second["messages"] = second["messages"][2:]  # the first exchange dropped
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    reseal(log)
    with pytest.raises(Divergence, match="run 2's initial messages"):
        asyncio.run(areplay_runs(log))


def test_a_fork_in_a_later_run_replays_that_run(tmp_path: Path) -> None:
    log = session(tmp_path)
    third = next(i for i, r in enumerate(lines(log)) if r.get("run") == 3)
    first_step = 1 + sum(1 for r in lines(log)[:third] if r.get("t") == "transition")
    model = ScriptedModel(Scenario.parse({"turns": [{"content": "forked"}]}))
    point = ForkPoint(step=first_step + 1)
    assert replayed_steps(SessionLog(log), point) == 2
    result = asyncio.run(afork(log, point, model=model, log=tmp_path / "fork.jsonl"))
    said = [b.text for m in result.messages.items for b in m.content if hasattr(b, "text")]
    assert said[-2:] == ["third", "forked"]
    forked = lines(tmp_path / "fork.jsonl")
    assert forked[0]["parent"]["step"] == first_step + 1
    assert forked[0]["config"]["permission_mode"] == "acceptEdits"  # the third run's
    assert fsm("replay", "--check", str(tmp_path / "fork.jsonl")).returncode == 0


def test_every_line_of_a_session_log_matches_the_documented_schema(tmp_path: Path) -> None:
    import jsonschema

    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    for record in lines(session(tmp_path)):
        jsonschema.validate(record, schema)


def test_a_change_set_while_a_run_goes_is_an_effect_the_replay_takes(tmp_path: Path) -> None:
    """The mode and model the SDK sets mid-run hold from the next request, recorded."""
    from fsm_agent.live.effects import Inbox

    inbox = Inbox()
    inbox.change(model="claude-other", permission_mode="plan")
    log = tmp_path / "changed.jsonl"
    plan = Plan(
        model=ScriptedModel(Scenario.parse({"turns": TURNS[1:3]})),
        config=RunConfig(model="scripted", cwd=str(tmp_path), permission_mode="bypassPermissions"),
        hooks=None, abort=AbortSignal(), log=log,
    )  # fmt: skip
    result = asyncio.run(plan.arun(follow_up([], "go"), None, inbox=inbox))
    assert result.model == "claude-other"
    bash = [r for r in lines(log) if r.get("name") == "permission"]
    assert bash and bash[0]["args"]["mode"] == "plan"  # the call was judged in the new mode
    [change] = [r for r in lines(log) if r.get("name") == "session_change"]
    assert change["result"] == {"permission_mode": "plan", "model": "claude-other"}
    assert fsm("replay", "--check", str(log)).returncode == 0
