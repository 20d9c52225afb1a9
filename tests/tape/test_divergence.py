"""Divergence reports: the first differing step, both sides, and a short diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from fsm_agent.app.session import replay
from fsm_agent.core.messages import user
from fsm_agent.engine import phases
from fsm_agent.tape.divergence import Divergence, divergence_report
from tests.support.cli import fsm
from tests.support.logs import change_next_turn, write_log


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    write_log(path, rows)


def first_step(rows: list[dict[str, Any]], edge: str) -> int:
    return next(r["step"] for r in rows if r.get("t") == "transition" and r["edge"] == edge)


def test_changed_continuation_reports_the_first_next_turn(
    scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario("tool_round")
    log = tmp_path / "tool_round.jsonl"
    change_next_turn(monkeypatch)
    with pytest.raises(Divergence) as info:
        replay(log)
    exc = info.value
    assert exc.step == first_step(rows_of(log), "next_turn") == 7
    assert exc.what == "transition"
    assert exc.expected["edge"] == exc.got["edge"] == "continuation -[next_turn]-> preprocess"
    assert exc.expected["state"] != exc.got["state"]
    report = divergence_report(exc)
    assert report.splitlines()[0] == "✗ diverged at step 7: transition"
    assert f'"state": "{exc.expected["state"]}"' in report.splitlines()[1]
    assert report.splitlines()[3:] == [
        "  what differs (log → code):",
        "    stop_hook_active: false → true",
    ]
    assert exc.changes[0].as_data() == {"where": "stop_hook_active", "log": False, "code": True}


def test_changed_phase_reports_the_model_request_summaries(
    scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario("tool_round")
    log = tmp_path / "tool_round.jsonl"
    original = phases.PHASES["preprocess"]

    async def changed(run: Any, state: Any, it: Any) -> Any:
        it, facts = await original(run, state, it)
        extra = it.messages_for_query.extend([user("also: be brief")])
        return evolve(it, messages_for_query=extra), facts

    monkeypatch.setitem(phases.PHASES, "preprocess", changed)
    with pytest.raises(Divergence) as info:
        replay(log)
    exc = info.value
    assert exc.step == 3
    assert exc.what == "effect model"
    assert exc.expected["args"]["messages"] == 1
    assert exc.got["args"]["messages"] == 2
    report = divergence_report(exc)
    assert "args.messages: 1 → 2" in report
    last = "args.last: user: Create notes.txt saying hello, then check it. → user: also: be brief"
    assert last in report


def test_changed_tool_call_in_the_log_reports_the_inputs(scenario, tmp_path: Path) -> None:
    scenario("tool_round")
    log = tmp_path / "tool_round.jsonl"
    rows = rows_of(log)
    row = next(r for r in rows if r.get("name") == "tool" and r["args"]["name"] == "Write")
    row["args"]["input"]["content"] = "goodbye\n"
    row["request"] = "0" * 16
    write_rows(log, rows)
    proc = fsm("replay", str(log), "--check")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == f"✗ diverged at step {row['step']}: effect tool"
    assert lines[1].startswith("  log:  ") and '"goodbye\\n"' in lines[1]
    assert lines[2].startswith("  code: ") and '"hello\\n"' in lines[2]
    assert "    request: 0000000000000000 → " in proc.stderr
    assert '    args.input.content: "goodbye\\n" → "hello\\n"' in proc.stderr


def test_changed_edge_in_the_log_reports_both_edges(scenario, tmp_path: Path) -> None:
    scenario("unknown_tool")
    log = tmp_path / "unknown_tool.jsonl"
    rows = rows_of(log)
    target = next(r for r in rows if r.get("edge") == "tool_use")
    target["edge"], target["to"] = "no_tool_use", "recovery"
    write_rows(log, rows)
    proc = fsm("replay", str(log), "--check")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == f"✗ diverged at step {target['step']}: transition"
    assert (
        "    edge: abort_check -[no_tool_use]-> recovery → abort_check -[tool_use]-> tool_execution"
        in proc.stderr
    )


def test_effect_left_unasked_is_reported(scenario, tmp_path: Path) -> None:
    scenario("tool_round")
    log = tmp_path / "tool_round.jsonl"
    rows = rows_of(log)
    i = next(i for i, r in enumerate(rows) if r.get("t") == "transition" and r["step"] == 2)
    rows.insert(i, {"t": "effect", "step": 2, "name": "now", "request": "", "result": 1.0})
    write_rows(log, rows)
    with pytest.raises(Divergence) as info:
        replay(log)
    assert info.value.step == 2
    assert info.value.what == "effect now not asked for"
    assert "blocking_limit_check -[under_limit]-> api_call" in info.value.got


def test_an_effect_the_log_lacks_lists_every_effect_of_its_step(scenario, tmp_path: Path) -> None:
    """The Write's tool effect deleted: the report names the step's recorded effects (the
    permission, already answered, too) and has no diff (docs/replay.md)."""
    scenario("tool_round")
    path = tmp_path / "tool_round.jsonl"
    rows = rows_of(path)
    rows = [r for r in rows if not (r.get("name") == "tool" and r["step"] == 5)]
    write_rows(path, rows)
    with pytest.raises(Divergence) as caught:
        replay(path)
    lines = divergence_report(caught.value).splitlines()
    assert lines[0] == "✗ diverged at step 5: effect tool"
    assert lines[1].startswith("  log:  no tool effect; at step 5: permission {")
    assert lines[2].startswith('  code: {"request": ')
    assert len(lines) == 3


def test_a_same_name_effect_found_ahead_is_compared(scenario, tmp_path: Path) -> None:
    """The Read started while the model streamed is recorded two steps later; its request
    changed, the report compares it with what the code asked for."""
    scenario("tool_round")
    path = tmp_path / "tool_round.jsonl"
    rows = rows_of(path)
    read = next(r for r in rows if r.get("name") == "tool" and r["args"]["name"] == "Read")
    asked, read["request"] = read["request"], "0" * 16
    write_rows(path, rows)
    with pytest.raises(Divergence) as caught:
        replay(path)
    lines = divergence_report(caught.value).splitlines()
    assert lines[0].endswith(": effect tool")
    assert lines[1].startswith('  log:  {"request": "0000000000000000", "args": {"id": ')
    assert lines[-1] == f"    request: 0000000000000000 → {asked}"


def test_check_says_when_a_diverging_log_was_written_by_another_machine(tmp_path: Path) -> None:
    """The header's fingerprint is there so a reader can tell (docs/log-format.md): a
    divergence from a log of another edge table says so; a log that replays does not."""
    from fsm_agent.tape.header import machine_fingerprint
    from tests.conftest import ROOT

    rows = rows_of(ROOT / "replays" / "tool_round.jsonl")
    rows[0]["fingerprint"] = "0123456789abcdef"
    other = tmp_path / "other.jsonl"
    write_rows(other, rows)
    done = fsm("replay", "--check", str(other))
    assert done.returncode == 0 and "machine" not in done.stdout + done.stderr
    rows[3]["state"] = "0000000000000000"
    write_rows(other, rows)
    done = fsm("replay", "--check", str(other))
    assert done.returncode == 1
    assert done.stderr.endswith(
        "  note: the log was written by another machine: its edge table's fingerprint is "
        f"0123456789abcdef, this one's {machine_fingerprint()}\n"
    )
    rows[0]["fingerprint"] = machine_fingerprint()
    write_rows(other, rows)
    assert "note:" not in fsm("replay", "--check", str(other)).stderr
