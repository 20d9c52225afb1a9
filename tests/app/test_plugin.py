"""The `fsm_run` pytest fixture, for scenarios and for recorded logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fsm_agent.tape.divergence import Divergence, LogEnded
from fsm_agent.tape.log import LogError
from tests.conftest import ROOT, SCENARIOS
from tests.support.logs import reseal, write_log

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


def test_a_log_named_in_capitals_is_replayed_too(fsm_run, tmp_path: Path) -> None:
    """`RUN.JSONL` (a log copied from a case-insensitive file system) was taken for a
    scenario and failed as 'line 2: not valid JSON: Extra data'."""
    log = tmp_path / "RUN.JSONL"
    log.write_bytes((REPLAYS / "tool_round.jsonl").read_bytes())
    run = fsm_run(log)
    assert (run.reason, run.log) == ("completed", log)


def test_fsm_run_fails_on_a_divergent_log(fsm_run, tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_text().splitlines()
    changed = [json.loads(r) for r in rows]
    next(r for r in changed if r.get("edge") == "next_turn")["turn"] = 9
    log = tmp_path / "changed.jsonl"
    write_log(log, changed)
    with pytest.raises(Divergence) as info:
        fsm_run(log)
    assert info.value.step == 7


def test_fsm_run_fails_on_a_log_cut_short(fsm_run, tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_text().splitlines(keepends=True)
    log = tmp_path / "cut.jsonl"
    log.write_text("".join(rows[:12]))
    reseal(log)
    with pytest.raises(LogEnded, match="the log ends after step"):
        fsm_run(log)


def test_fsm_run_fails_on_a_damaged_log_naming_the_line(fsm_run, tmp_path: Path) -> None:
    rows = [json.loads(r) for r in (REPLAYS / "tool_round.jsonl").read_text().splitlines()]
    line = next(i for i, r in enumerate(rows) if r.get("name") == "tool")
    rows[line]["result"] = {"content": 5}
    log = tmp_path / "damaged.jsonl"
    write_log(log, rows)
    with pytest.raises(LogError, match=f"damaged.jsonl:{line + 1}: the recorded tool is not valid"):
        fsm_run(log)


def test_the_documented_example_passes(pytester: pytest.Pytester) -> None:
    doc = (ROOT / "docs" / "testing.md").read_text()
    example = doc.split("```python norun\n")[1].split("```")[0]
    pytester.makepyfile(test_agent=example.replace("replays/", f"{ROOT}/replays/"))
    first = pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update")
    first.assert_outcomes(passed=2)
    again = pytester.runpytest("-p", "no:cacheprovider")
    again.assert_outcomes(passed=2)
    snapshots = list((pytester.path / "__snapshots__").glob("*.ambr"))
    assert len(snapshots) == 1
    assert "'api_call -[streamed]-> abort_check'," in snapshots[0].read_text()


def test_the_readme_snapshot_example_passes_as_written(pytester: pytest.Pytester) -> None:
    readme = (ROOT / "README.md").read_text()
    example = re.search(r"```python norun\n(def test_tool_round_path.*?)```", readme, re.S)
    assert example is not None
    source = example.group(1).replace("replays/", f"{ROOT}/replays/")
    pytester.makepyfile(test_readme_example=source)
    first = pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update")
    first.assert_outcomes(passed=1)
    again = pytester.runpytest("-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)


def test_fsm_run_runs_a_scenario_written_inline(fsm_run, tmp_path: Path) -> None:
    write = {"file_path": "a.txt", "content": "x"}
    turns = [
        {"content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": write}]},
        {"content": "Wrote it."},
    ]
    config = {"permission_mode": "acceptEdits"}
    run = fsm_run({"turns": turns, "prompt": "write a.txt", "config": config})
    assert run.reason == "completed"
    assert run.edges.count("next_turn") == 1
    assert run.result.text == "Wrote it."
    assert (tmp_path / "workspace" / "a.txt").read_text() == "x"
    assert run.log == tmp_path / "scenario.jsonl" and run.log.exists()
    assert fsm_run(run.log).path_lines == run.path_lines


def test_fsm_run_names_a_mistake_in_an_inline_scenario(fsm_run) -> None:
    from fsm_agent.live.scripted import ScenarioError

    where = r"the inline scenario: .* @ \$\.turns\[0\]\.stop_reason"
    with pytest.raises(ScenarioError, match=where):
        fsm_run({"turns": [{"stop_reason": "done"}], "prompt": "x"})


def test_the_plugin_loads_no_engine_module_until_a_test_asks_for_it(pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_nothing_loaded():
            assert not [m for m in sys.modules if m.startswith("fsm_agent.") and
                        m != "fsm_agent.pytest_plugin"]
        """
    )
    assert pytester.runpytest_subprocess("-p", "no:randomly").ret == 0


def test_the_docs_inline_example_passes_as_written(pytester) -> None:
    docs = (ROOT / "docs" / "testing.md").read_text()
    example = re.search(r"```python norun\n(def test_a_write_then_an_answer.*?)```", docs, re.S)
    assert example is not None
    pytester.makepyfile(example.group(1))
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)


def test_each_run_of_a_test_gets_its_own_workspace_and_log(fsm_run, tmp_path: Path) -> None:
    first = fsm_run(SCENARIOS / "tool_round.json")
    second = fsm_run(SCENARIOS / "tool_round.json", prompt="once more")
    assert (first.log, second.log) == (
        tmp_path / "tool_round.jsonl",
        tmp_path / "tool_round-2.jsonl",
    )
    assert first.result.session_id != second.result.session_id
    assert fsm_run(first.log).result.session_id == first.result.session_id
    assert (tmp_path / "workspace-2" / "notes.txt").exists()


def test_a_replay_takes_the_replay_s_keyword_arguments(fsm_run) -> None:
    events: list[object] = []
    run = fsm_run(REPLAYS / "tool_round.jsonl", on_event=events.append)
    assert len([e for e in events if type(e).__name__ == "Transition"]) == len(run.edges)
    with pytest.raises(TypeError, match="no_such_option"):
        fsm_run(REPLAYS / "tool_round.jsonl", no_such_option=1)


def test_the_fixture_says_what_it_does(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:randomly")
    assert "Run a scenario (a `.json` file, a dict, a `Scenario`)" in result.stdout.str()


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("run", ("hi",)),
        ("run_scenario", (SCENARIOS / "tool_round.json",)),
        ("replay", (REPLAYS / "tool_round.jsonl",)),
    ],
)
def test_a_sync_wrapper_inside_a_running_loop_says_what_to_await(
    name: str, args: tuple[object, ...], recwarn: pytest.WarningsRecorder
) -> None:
    import asyncio
    import gc

    from fsm_agent.app import session

    async def inside() -> None:
        getattr(session, name)(*args)

    with pytest.raises(RuntimeError, match=rf"await fsm_agent\.a{name}\(\.\.\.\)"):
        asyncio.run(inside())
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


def _tool_rounds(n: int) -> dict:
    """A scenario of `n` tool rounds (a Glob each), then an answer."""
    call = {"type": "tool_use", "name": "Glob", "input": {"pattern": "*.txt"}}
    turns = [{"content": [{**call, "id": f"toolu_{i}"}]} for i in range(n)]
    return {"prompt": "go", "turns": [*turns, {"content": [{"type": "text", "text": "done"}]}]}


SNAPSHOT_TEST = """
import json, os

def test_path(fsm_run, snapshot):
    run = fsm_run(json.loads(os.environ["SCENARIO"]))
    assert run.path_lines == snapshot
"""


def test_a_changed_path_snapshot_names_its_first_differing_step_in_plain_q(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three tool rounds recorded, two run: the paths part at turn 3, whose answer ends
    the run, at step 18 (syrupy's own diff, under -vv only, aligns lines without steps)."""
    pytester.makepyfile(test_path=SNAPSHOT_TEST)
    monkeypatch.setenv("SCENARIO", json.dumps(_tool_rounds(3)))
    pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update").assert_outcomes(passed=1)
    monkeypatch.setenv("SCENARIO", json.dumps(_tool_rounds(2)))
    failed = pytester.runpytest("-p", "no:cacheprovider", "-q")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        [
            "E         the path differs from step 18 (turn 3) on; "
            "the snapshot has 27 steps, this run 20:",
            "E              17 api_call -[[]streamed[]]-> abort_check",
            "E         -    18 abort_check -[[]tool_use[]]-> tool_execution",
            "E         +    18 abort_check -[[]no_tool_use[]]-> recovery",
        ]
    )
    assert "truncated" not in failed.stdout.str()
    verbose = pytester.runpytest("-p", "no:cacheprovider", "-vv").stdout.str()
    assert "the path differs from step 18 (turn 3)" in verbose
    assert "-    27 stop_hooks -[completed]-> completed" in verbose  # every step from there on
    assert "+    20 stop_hooks -[completed]-> completed" in verbose


def test_a_snapshot_of_something_else_keeps_syrupy_s_explanation(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_other="""
import os

def test_other(snapshot):
    assert [os.environ["VALUE"], "b"] == snapshot
"""
    )
    monkeypatch.setenv("VALUE", "a")
    pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update").assert_outcomes(passed=1)
    monkeypatch.setenv("VALUE", "z")
    failed = pytester.runpytest("-p", "no:cacheprovider", "-q")
    failed.assert_outcomes(failed=1)
    assert "[+ received] == [- snapshot]" in failed.stdout.str()
    assert "the path differs" not in failed.stdout.str()
