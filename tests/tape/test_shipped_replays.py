"""The logs shipped in replays/: one per scenario, each replays exactly; coverage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.engine.machine import EDGES
from fsm_agent.tape.coverage import REASONS
from fsm_agent.tape.log import SessionLog
from tests.conftest import ROOT, SCENARIOS
from tests.support.cli import fsm
from tests.support.logs import reseal

REPLAYS = ROOT / "replays"
NAMES = sorted(p.stem for p in SCENARIOS.glob("*.json"))


def test_regenerating_a_replay_gives_the_shipped_log(tmp_path: Path) -> None:
    import asyncio

    from tools.regen_replays import regenerate, workspace_path

    shipped = REPLAYS / "tool_round.jsonl"
    assert asyncio.run(regenerate("tool_round", tmp_path)) == "completed"
    fresh = (tmp_path / "tool_round.jsonl").read_text()
    here = str(workspace_path("tool_round"))
    there = SessionLog(shipped).header["config"]["cwd"]
    assert fresh.replace(here, there) == shipped.read_text()


def test_every_scenario_has_a_shipped_replay() -> None:
    shipped = {p.stem for p in REPLAYS.glob("*.jsonl")}
    assert NAMES, "no scenarios found"
    assert sorted(set(NAMES) - shipped) == [], "run python tools/regen_replays.py"
    assert sorted(shipped - set(NAMES)) == [], "a shipped replay without its scenario"


@pytest.mark.parametrize("name", NAMES)
def test_shipped_replay_matches_its_scenario(name: str, scenario) -> None:
    log = REPLAYS / f"{name}.jsonl"
    if not log.exists():
        pytest.fail(f"replays/{name}.jsonl is missing: run python tools/regen_replays.py")
    header = SessionLog(log).header
    assert header["session_id"] == f"replay-{name}"
    again = replay(log)
    live = scenario(name)
    assert again.path == live.path, "stale: run python tools/regen_replays.py"
    assert again.reason == live.reason


@pytest.mark.parametrize("name", ["tool_round", "reactive_compact", "stop_hook_blocking"])
def test_shipped_replay_checks_through_the_cli(name: str) -> None:
    proc = fsm("replay", str(REPLAYS / f"{name}.jsonl"), "--check")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("✓ ") and "steps match the log" in proc.stdout


def test_coverage_of_all_shipped_replays_takes_every_reason() -> None:
    logs = sorted(str(p) for p in REPLAYS.glob("*.jsonl"))
    proc = fsm("coverage", *logs)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["edge", "taken"]
    assert f"{len(EDGES)} of {len(EDGES)} edges taken by {len(logs)} log(s)" in proc.stdout
    assert f"{len(REASONS)} of {len(REASONS)} reasons" in proc.stdout
    assert len(REASONS) == 17
    assert "not taken by any log" not in proc.stdout
    total_next_turn = sum(
        1
        for log in logs
        for line in Path(log).read_text().splitlines()[1:]
        if json.loads(line).get("edge") == "next_turn"
    )
    row = next(line for line in lines if line.startswith("continuation -[next_turn]-> preprocess"))
    assert row.split()[-1] == str(total_next_turn)


def test_coverage_of_one_log_lists_what_it_misses() -> None:
    proc = fsm("coverage", str(REPLAYS / "tool_round.jsonl"))
    assert proc.returncode == 0
    assert "10 of 28 edges taken by 1 log(s); 2 of 17 reasons" in proc.stdout
    missed = proc.stdout.split("not taken by any log:\n")[1].splitlines()
    assert "  continuation -[max_turns]-> max_turns" in missed
    assert "  api_call -[streamed]-> abort_check" not in missed
    assert len(missed) == 18
    row = next(line for line in proc.stdout.splitlines() if line.startswith("api_call -[model_err"))
    assert row.split()[-1] == "-"


def test_a_log_named_twice_is_counted_once() -> None:
    """Two globs that overlap (`replays/*.jsonl replays/tool_*.jsonl`) named a log twice,
    and its edges and the log count were doubled."""
    log = REPLAYS / "tool_round.jsonl"
    proc = fsm("coverage", str(log), str(REPLAYS / ".." / "replays" / log.name))
    assert proc.returncode == 0, proc.stderr
    assert "10 of 28 edges taken by 1 log(s)" in proc.stdout
    once = fsm("coverage", str(log))
    assert proc.stdout == once.stdout


def test_coverage_refuses_a_non_log(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text("hello\n")
    proc = fsm("coverage", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith("fsm-agent: error: ") and "not a session log" in proc.stderr


def test_a_version_1_log_still_replays(tmp_path: Path) -> None:
    """Version 2 only added an event; a log written before it is read as it was."""
    frozen = ROOT / "tests" / "fixtures" / "logs_0_1_0" / "fix_bug.jsonl"
    lines = frozen.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    assert header["version"] == 2
    old = tmp_path / "v1.jsonl"
    old.write_text(json.dumps({**header, "version": 1}) + "\n" + "".join(lines[1:]))
    reseal(old)
    assert replay(old).reason == "completed"
    check = fsm("replay", str(old), "--check")
    assert check.returncode == 0, check.stderr


def test_coverage_counts_the_logs_it_can_read_and_names_the_others(tmp_path: Path) -> None:
    """As `replay --check` does for several logs: a sessions folder may hold a log just
    created (only its header yet) or left empty; the others are still counted."""
    header_only = tmp_path / "new.jsonl"
    header_only.write_text((REPLAYS / "tool_round.jsonl").read_text().splitlines()[0] + "\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    proc = fsm("coverage", str(REPLAYS / "tool_round.jsonl"), str(header_only), str(empty))
    assert proc.returncode == 2
    errors = proc.stderr.splitlines()
    assert len(errors) == 2 and all(e.startswith("fsm-agent: error: ") for e in errors)
    assert str(header_only) in errors[0] and str(empty) in errors[1]
    assert "10 of 28 edges taken by 1 log(s); 2 of 17 reasons (2 unreadable)" in proc.stdout


INTENDED_TOOL_ERRORS: dict[str, set[str]] = {}
"""The tool calls whose error a shipped scenario means to cause, by log: none of them
does (an unknown tool or a cut input is refused before any tool runs)."""


def tool_errors(lines: list[str]) -> dict[str, str]:
    """The calls a log's tools answered with an error, and the error's text."""
    found = {}
    for line in lines:
        record = json.loads(line)
        if record.get("t") == "effect" and record.get("name") == "tool":
            result = record.get("result") or {}
            if result.get("is_error"):
                found[record["args"]["id"]] = str(result.get("content"))
    return found


def test_a_tool_error_is_found_in_a_log() -> None:
    """What a shipped fix_bug once held: its Edit refused as stale."""
    line = json.dumps(
        {
            "t": "effect",
            "name": "tool",
            "args": {"id": "toolu_03edit", "name": "Edit", "input": {}},
            "result": {"content": "<tool_use_error>File has been modified</tool_use_error>",
                       "is_error": True},
        }
    )  # fmt: skip
    assert list(tool_errors([line])) == ["toolu_03edit"]


@pytest.mark.parametrize("name", NAMES)
def test_a_shipped_session_holds_only_the_tool_errors_its_scenario_means(name: str) -> None:
    """The README sends newcomers to these: fix_bug must show the fix working."""
    errors = tool_errors((REPLAYS / f"{name}.jsonl").read_text().splitlines())
    unintended = {i: e for i, e in errors.items() if i not in INTENDED_TOOL_ERRORS.get(name, set())}
    assert unintended == {}
