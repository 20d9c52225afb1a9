"""PostToolBatch hooks: asked once every call of a turn has its result, before the next
model call; a block stops the loop there (`hook_stopped`), as Claude Code's does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.live.scripted import Scenario
from tests.support.hooks import results_by_id, script, tool_turn
from tests.support.logs import write_log


def batch_hook(tmp_path: Path, body: str) -> dict[str, Any]:
    """Settings with one PostToolBatch hook that keeps each payload, then runs `body`."""
    out = tmp_path / "batches.jsonl"
    command = script(tmp_path / "batch.sh", f"cat >> {out}\necho >> {out}\n{body}")
    return {"hooks": {"PostToolBatch": [{"hooks": [{"type": "command", "command": command}]}]}}


def batches(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "batches.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def go(ws: Path, tmp_path: Path, settings: dict[str, Any], turns: list[Any]) -> Any:
    """A run, and its replay, which agrees and runs no hook."""
    log = tmp_path / "run.jsonl"
    data = {"prompt": "go", "settings": settings, "turns": turns}
    result = run_scenario(Scenario.parse(data), cwd=ws, log=log)
    seen = len(batches(tmp_path))
    again = replay(log)
    assert (again.path, again.reason, again.messages) == (
        result.path,
        result.reason,
        result.messages,
    )
    assert len(batches(tmp_path)) == seen
    return result


READS = [
    tool_turn(("t1", "Glob", {"pattern": "*"}), ("t2", "Glob", {"pattern": "*.py"})),
    tool_turn(("t3", "Glob", {"pattern": "*.md"})),
    {"content": "done"},
]


def test_asked_once_a_turn_after_all_its_calls_and_not_after_an_answer(
    workspace: Path, tmp_path: Path
) -> None:
    result = go(workspace, tmp_path, batch_hook(tmp_path, "exit 0\n"), READS)
    assert result.reason == "completed"
    assert set(results_by_id(result)) == {"t1", "t2", "t3"}
    payloads = batches(tmp_path)
    assert [p["hook_event_name"] for p in payloads] == ["PostToolBatch", "PostToolBatch"]
    assert payloads[0]["session_id"] == result.session_id
    assert payloads[0]["cwd"] == str(workspace)


def test_exit_2_stops_the_loop_before_the_next_model_call(workspace: Path, tmp_path: Path) -> None:
    result = go(
        workspace, tmp_path, batch_hook(tmp_path, "echo 'tests are red' >&2\nexit 2\n"), READS
    )
    assert result.reason == "hook_stopped"
    assert "tests are red" in (result.error or "")
    assert set(results_by_id(result)) == {"t1", "t2"}
    assert len(batches(tmp_path)) == 1
    assert result.path[-1].edge == "hook_stopped"


def test_a_json_block_or_continue_false_stops_it_too(workspace: Path, tmp_path: Path) -> None:
    block = json.dumps({"decision": "block", "reason": "lint first"})
    result = go(workspace, tmp_path, batch_hook(tmp_path, f"echo '{block}'\n"), READS)
    assert (result.reason, result.error) == ("hook_stopped", "lint first")

    (tmp_path / "run.jsonl").unlink()
    stop = json.dumps({"continue": False, "stopReason": "budget spent"})
    result = go(workspace, tmp_path, batch_hook(tmp_path, f"echo '{stop}'\n"), READS)
    assert (result.reason, result.error) == ("hook_stopped", "budget spent")


def test_a_non_blocking_failure_lets_the_loop_go_on(workspace: Path, tmp_path: Path) -> None:
    result = go(workspace, tmp_path, batch_hook(tmp_path, "echo oops >&2\nexit 1\n"), READS)
    assert result.reason == "completed"
    assert len(batches(tmp_path)) == 2


def test_a_log_written_before_the_hook_was_asked_still_replays(
    workspace: Path, tmp_path: Path
) -> None:
    """A log from before PostToolBatch was asked, whose settings had such a hook, holds
    no record of it: the replay takes the hook as having had no say."""
    go(workspace, tmp_path, batch_hook(tmp_path, "exit 0\n"), READS)
    log = tmp_path / "run.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    kept = [r for r in lines if not (r.get("name") == "hooks" and r.get("args") == "PostToolBatch")]
    assert len(kept) == len(lines) - 2
    write_log(log, kept)
    again = replay(log)
    assert again.reason == "completed"


def test_a_scenario_scripts_a_batch_hooks_block(workspace: Path, tmp_path: Path) -> None:
    """A scenario's scripted PostToolBatch outcome drives the same edge offline."""
    data = {
        "prompt": "go",
        "hooks": {"PostToolBatch": [{}, {"blocking_errors": ["coverage dropped"]}]},
        "turns": READS,
    }
    log = tmp_path / "scripted.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    assert (result.reason, result.error) == ("hook_stopped", "coverage dropped")
    assert set(results_by_id(result)) == {"t1", "t2", "t3"}
    assert replay(log).path == result.path
