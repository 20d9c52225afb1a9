"""The `fsm_run` pytest fixture, for scenarios and for recorded logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.log import LogError
from fsm_agent.recording import Divergence, LogEnded
from tests.conftest import ROOT, SCENARIOS

pytest_plugins = ["pytester"]
REPLAYS = ROOT / "replays"


def test_fsm_run_runs_a_scenario(fsm_run, snapshot, tmp_path: Path) -> None:
    run = fsm_run(SCENARIOS / "tool_round.json")
    assert run.path_lines == snapshot
    assert run.reason == "completed"
    assert run.log == tmp_path / "tool_round.jsonl" and run.log.exists()
    assert (tmp_path / "workspace" / "notes.txt").read_text() == "hello\n"


def test_fsm_run_replays_a_log(fsm_run, snapshot) -> None:
    run = fsm_run(REPLAYS / "reactive_compact.jsonl")
    assert run.path_lines == snapshot
    assert "reactive_compact_retry" in run.edges


def test_fsm_run_fails_on_a_divergent_log(fsm_run, tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_text().splitlines()
    changed = [json.loads(r) for r in rows]
    next(r for r in changed if r.get("edge") == "next_turn")["turn"] = 9
    log = tmp_path / "changed.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in changed))
    with pytest.raises(Divergence) as info:
        fsm_run(log)
    assert info.value.step == 7


def test_fsm_run_fails_on_a_log_cut_short(fsm_run, tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_text().splitlines(keepends=True)
    log = tmp_path / "cut.jsonl"
    log.write_text("".join(rows[:12]))
    with pytest.raises(LogEnded, match="the log ends after step"):
        fsm_run(log)


def test_fsm_run_fails_on_a_damaged_log_naming_the_line(fsm_run, tmp_path: Path) -> None:
    rows = [json.loads(r) for r in (REPLAYS / "tool_round.jsonl").read_text().splitlines()]
    line = next(i for i, r in enumerate(rows) if r.get("name") == "tool")
    rows[line]["result"] = {"content": 5}
    log = tmp_path / "damaged.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(LogError, match=f"damaged.jsonl:{line + 1}: the recorded tool is not valid"):
        fsm_run(log)


def test_the_documented_example_passes(pytester: pytest.Pytester) -> None:
    doc = (ROOT / "docs" / "testing.md").read_text()
    example = doc.split("```python\n")[1].split("```")[0]
    pytester.makepyfile(test_agent=example.replace("replays/", f"{ROOT}/replays/"))
    first = pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update")
    first.assert_outcomes(passed=2)
    again = pytester.runpytest("-p", "no:cacheprovider")
    again.assert_outcomes(passed=2)
    snapshots = list((pytester.path / "__snapshots__").glob("*.ambr"))
    assert len(snapshots) == 1
    assert "'api_call -[streamed]-> abort_check'," in snapshots[0].read_text()
