"""Deterministic replay: the same engine, every effect answered from the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.tape.divergence import Divergence
from tests.conftest import SCENARIOS
from tests.support.logs import write_log

NAMES = sorted(p.stem for p in SCENARIOS.glob("*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_recorded_scenario_replays_exactly(name: str, scenario, tmp_path: Path) -> None:
    live = scenario(name)
    again = replay(tmp_path / f"{name}.jsonl")
    assert again.path == live.path
    assert again.messages.digest == live.messages.digest
    assert again.reason == live.reason


def test_replay_touches_no_file(scenario, workspace: Path, tmp_path: Path) -> None:
    scenario("tool_round")
    (workspace / "notes.txt").unlink()
    replay(tmp_path / "tool_round.jsonl")
    assert not (workspace / "notes.txt").exists()


def test_changed_tool_result_diverges_where_the_code_first_uses_it(
    scenario, tmp_path: Path
) -> None:
    scenario("tool_round")
    path = tmp_path / "tool_round.jsonl"
    rows = [json.loads(r) for r in path.read_text().splitlines()]
    for row in rows:
        if row.get("name") == "tool" and row["args"]["name"] == "Write":
            row["result"]["content"] = "something else entirely"
            changed_step = row["step"]
            break
    write_log(path, rows)
    # No hook reads the result, so its first use is the next turn's state.
    next_turn = next(
        r["step"]
        for r in rows
        if r.get("t") == "transition" and r["edge"] == "next_turn" and r["step"] >= changed_step
    )
    with pytest.raises(Divergence) as info:
        replay(path)
    assert info.value.step == next_turn
    assert info.value.what == "transition"


def test_changed_transition_diverges(scenario, tmp_path: Path) -> None:
    scenario("unknown_tool")
    path = tmp_path / "unknown_tool.jsonl"
    rows = [json.loads(r) for r in path.read_text().splitlines()]
    target = next(r for r in rows if r.get("edge") == "tool_use")
    target["edge"], target["to"] = "no_tool_use", "recovery"
    write_log(path, rows)
    with pytest.raises(Divergence) as info:
        replay(path)
    assert info.value.step == target["step"]
    assert "no_tool_use" in str(info.value.expected)
    assert "tool_use" in str(info.value.got)


def _with_polls(rows: list[dict], answer: dict[str, object]) -> list[dict]:
    """Add an `aborted`/`queued_input` record to each step that polls them, as logs
    written before only non-default answers were recorded had."""
    polls = {"abort_check": ("aborted", "streaming"), "attachments": ("queued_input", "")}
    out: list[dict] = []
    for row in rows:
        if row.get("t") == "transition" and row["from"] in polls:
            name, request = polls[row["from"]]
            out.append({"t": "effect", "step": row["step"], "name": name,
                        "request": request, "result": answer[name]})  # fmt: skip
        out.append(row)
    return out


def test_polls_answered_by_default_are_not_recorded_and_old_logs_still_replay(
    scenario, tmp_path: Path
) -> None:
    live = scenario("tool_round")
    path = tmp_path / "tool_round.jsonl"
    rows = [json.loads(r) for r in path.read_text().splitlines()]
    assert not [r for r in rows if r.get("name") in ("aborted", "queued_input")]
    old = _with_polls(rows, {"aborted": False, "queued_input": []})
    assert len(old) > len(rows)
    write_log(path, old)
    assert replay(path).path == live.path


def test_a_recorded_poll_answer_is_what_the_replay_sees(scenario, tmp_path: Path) -> None:
    scenario("tool_round")
    path = tmp_path / "tool_round.jsonl"
    rows = [json.loads(r) for r in path.read_text().splitlines()]
    edited = _with_polls(rows, {"aborted": True, "queued_input": []})
    write_log(path, edited)
    with pytest.raises(Divergence) as info:
        replay(path)
    assert "aborted_streaming" in str(info.value.got)


def test_an_interrupt_while_a_tool_runs_replays_to_aborted_tools(tmp_path: Path) -> None:
    """The poll before the calls said no (not written), the one after them said yes:
    the replay gives the written answer to the second poll, not the first."""
    from typing import Any, ClassVar

    from fsm_agent.app.session import run
    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.config import RunConfig
    from fsm_agent.core.permission_types import PermissionSettings, RuleSource
    from fsm_agent.core.tool import ToolEnv, ToolOutcome
    from fsm_agent.live.scripted import Scenario, ScriptedModel

    abort = AbortSignal()

    class CtrlC:
        name = "CtrlC"
        description = "The user presses Ctrl-C while it runs."
        input_schema: ClassVar[dict[str, Any]] = {"type": "object"}

        async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
            abort.set()
            return ToolOutcome("done")

    turns = [{"content": [{"type": "tool_use", "id": "t1", "name": "CtrlC", "input": {}}]}]
    log = tmp_path / "ctrl_c.jsonl"
    live = run(
        "go",
        model=ScriptedModel(Scenario.parse({"turns": [*turns, {"content": "never"}]}), abort),
        config=RunConfig(
            model="scripted",
            cwd=str(tmp_path),
            permissions=PermissionSettings(allow=(RuleSource("CtrlC"),)),
        ),
        tools={"CtrlC": CtrlC()},
        abort=abort,
        log=log,
    )
    assert live.reason == "aborted_tools"
    polls = [json.loads(r) for r in log.read_text().splitlines() if '"name":"aborted"' in r]
    assert [p["request"] for p in polls] == ["tools#2"]
    assert replay(log).path == live.path
