"""A log whose lines are JSON but whose contents are not what was recorded.

Replay, the debugger and resume read a header's config and tools, the start
messages and every effect's result back into the engine's classes. A value
of the wrong shape is a damaged log, not a changed engine: one error line
that names the file and the line, exit 2, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import replay
from fsm_agent.cli.debugger import Debugger
from fsm_agent.tape.log import LogError
from tests.conftest import ROOT
from tests.support.cli import fsm
from tests.support.logs import reseal, write_log

SOURCE = ROOT / "replays" / "tool_round.jsonl"
Rows = list[dict[str, Any]]


def _first(rows: Rows, name: str) -> int:
    return next(i for i, r in enumerate(rows) if r.get("name") == name)


def _tool_content(rows: Rows) -> int:
    i = _first(rows, "tool")
    rows[i]["result"]["content"] = 5
    return i


def _model_result(rows: Rows) -> int:
    i = _first(rows, "model")
    rows[i]["result"] = "oops"
    return i


def _model_error(rows: Rows) -> int:
    i = _first(rows, "model")
    rows[i]["result"]["error"] = "overloaded"
    return i


def _model_error_empty(rows: Rows) -> int:
    """Not null: an error of no kind is no error to raise, nor the absence of one."""
    i = _first(rows, "model")
    rows[i]["result"]["error"] = {}
    return i


def _negative_usage(rows: Rows) -> int:
    i = _first(rows, "model")
    rows[i]["result"]["events"][0]["usage"]["input_tokens"] = -5
    return i


def _permission(rows: Rows) -> int:
    i = _first(rows, "permission")
    rows[i]["result"]["behavior"] = 7
    return i


def _start_messages(rows: Rows) -> int:
    rows[1]["messages"] = "hello"
    return 1


def _start_message(rows: Rows) -> int:
    rows[1]["messages"] = [{"role": "user", "content": "hi"}]
    return 1


def _config(rows: Rows) -> int:
    rows[0]["config"]["max_turns"] = "many"
    return 0


def _config_flag(rows: Rows) -> int:
    rows[0]["config"]["autocompact"] = "false"
    return 0


def _tool_read_time(rows: Rows) -> int:
    i = _first(rows, "tool")
    read = rows[i]["result"]["read_files"]
    read.update({path: str(time) for path, time in read.items()})
    return i


def _tools(rows: Rows) -> int:
    rows[0]["tools"] = [{"name": 3}]
    return 0


def _tool_schema(rows: Rows) -> int:
    rows[0]["tools"][0]["input_schema"]["properties"]["extra"] = 1
    return 0


def _tool_schema_type(rows: Rows) -> int:
    """fastjsonschema raises a TypeError for this one, not its own exception."""
    rows[0]["tools"][0]["input_schema"]["type"] = {}
    return 0


def _tool_schema_properties(rows: Rows) -> int:
    rows[0]["tools"][0]["input_schema"]["properties"] = None
    return 0


def _tool_read_path(rows: Rows) -> int:
    """A path the run could not have read: the recording writes absolute ones."""
    i = _first(rows, "tool")
    rows[i]["result"]["read_files"]["notes.txt"] = 1.0
    return i


def _header(change: Callable[[dict[str, Any]], object]) -> Callable[[Rows], int]:
    def damage(rows: Rows) -> int:
        change(rows[0])
        return 0

    return damage


DAMAGE: dict[str, tuple[Callable[[Rows], int], str]] = {
    "tool result": (_tool_content, "the recorded tool is not valid: not a valid ToolOutcome"),
    "model result": (_model_result, 'the recorded model is not valid: a model result is {"events"'),
    "model error": (_model_error, 'the recorded model is not valid: its error is not {"kind"'),
    "model error empty": (
        _model_error_empty,
        'the recorded model is not valid: its error is not {"kind"',
    ),
    "negative usage": (
        _negative_usage,
        "the recorded model is not valid: not a valid list: invalid value "
        "('input_tokens' must be >= 0: -5) @ $[0].usage",
    ),
    "permission": (_permission, "the recorded permission is not valid: not a valid Decision"),
    "start messages": (_start_messages, "the start messages: not a list"),
    "start message": (_start_message, "the start messages: not a valid Message"),
    "config": (_config, "the header's config: not a valid RunConfig"),
    "config flag": (_config_flag, "the header's config: not a valid RunConfig"),
    "tool read time": (_tool_read_time, "the recorded tool is not valid: not a valid ToolOutcome"),
    "tools": (_tools, "the header's tools: not a valid list"),
    "tool schema": (_tool_schema, "the header's tools: tool 'Read': input_schema is not a valid"),
    "tool schema type": (
        _tool_schema_type,
        "the header's tools: tool 'Read': input_schema is not a valid JSON Schema",
    ),
    "tool schema properties": (
        _tool_schema_properties,
        "the header's tools: tool 'Read': input_schema is not a valid JSON Schema",
    ),
    "tool read path": (
        _tool_read_path,
        'the recorded tool is not valid: read_files: not an absolute path: "notes.txt"',
    ),
    "config not an object": (
        _header(lambda h: h.update(config="x")),
        'the header\'s config is not an object: "x"',
    ),
    "no session_id": (_header(lambda h: h.pop("session_id")), "a header without 'session_id'"),
    "no fingerprint": (_header(lambda h: h.pop("fingerprint")), "a header without 'fingerprint'"),
    "no config": (_header(lambda h: h.pop("config")), "a header without 'config'"),
    "version true": (_header(lambda h: h.update(version=True)), "unknown log format version true"),
    "version 2.0": (_header(lambda h: h.update(version=2.0)), "unknown log format version 2.0"),
    "hooked_events": (
        _header(lambda h: h["config"].update(hooked_events=5)),
        "the header's config: not a valid RunConfig",
    ),
}


def damaged(
    tmp_path: Path, case: str, table: dict[str, tuple[Callable[[Rows], int], str]] | None = None
) -> tuple[Path, str]:
    """SOURCE with the change `case` names in `table` (DAMAGE by default), and the error
    line a reader must give for it."""
    rows = [json.loads(line) for line in SOURCE.read_text().splitlines()]
    change, message = (DAMAGE if table is None else table)[case]
    line = change(rows) + 1
    path = tmp_path / "damaged.jsonl"
    write_log(path, rows)
    return path, f"{path}:{line}: {message}"


@pytest.mark.parametrize("case", DAMAGE)
def test_replay_names_the_damaged_line(case: str, tmp_path: Path) -> None:
    path, message = damaged(tmp_path, case)
    with pytest.raises(LogError) as info:
        replay(path)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    "case", ["tool result", "config", "start messages", "config not an object", "no config"]
)
def test_check_says_it_in_one_line_with_exit_2(case: str, tmp_path: Path) -> None:
    path, message = damaged(tmp_path, case)
    done = fsm("replay", str(path), "--check")
    assert done.returncode == 2
    assert done.stderr.startswith(f"fsm-agent: error: {message}")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("case", ["config", "tools", "start message"])
def test_the_debugger_refuses_a_damaged_header_or_start(case: str, tmp_path: Path) -> None:
    path, message = damaged(tmp_path, case)
    with pytest.raises(LogError) as info:
        Debugger(path)
    assert str(info.value).startswith(message)


def test_resume_of_a_damaged_log_is_one_error_line(tmp_path: Path) -> None:
    path, message = damaged(tmp_path, "tool result")
    done = fsm("run", "--resume", str(path), "again", "--cwd", str(tmp_path))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("case", ["config not an object", "hooked_events"])
def test_resume_and_fork_refuse_a_damaged_header_in_one_line(case: str, tmp_path: Path) -> None:
    path, message = damaged(tmp_path, case)
    scenario = tmp_path / "s.json"
    scenario.write_text('{"turns": [{"content": "hi"}]}')
    cwd = ["--cwd", str(tmp_path), "--scripted", str(scenario)]
    for done in (
        fsm("run", "--resume", str(path), *cwd, "again"),
        fsm("replay", str(path), "--fork-at", "3", *cwd, "--log", str(tmp_path / "f.jsonl")),
    ):
        assert done.returncode == 2
        assert done.stderr.startswith(f"fsm-agent: error: {message}")
        assert done.stderr.count("\n") == 1
    assert not (tmp_path / "f.jsonl").exists()


def test_every_effect_a_log_records_has_a_shape_to_be_read_back_as() -> None:
    """Replay and fork's edit check read results through one table, `EFFECTS`."""
    from fsm_agent.tape.effects import BY_NAME, read_result

    names = {
        r["name"]
        for log in (ROOT / "replays").glob("*.jsonl")
        for r in map(json.loads, log.read_text().splitlines())
        if r.get("t") == "effect"
    }
    assert names <= BY_NAME.keys()
    for log in (ROOT / "replays").glob("*.jsonl"):
        for r in map(json.loads, log.read_text().splitlines()):
            if r.get("t") == "effect":
                read_result(r["name"], r["result"])


def test_an_edited_result_is_checked_like_a_recorded_one(tmp_path: Path) -> None:
    from fsm_agent.app.fork import ForkError, ForkPoint, check_point
    from fsm_agent.tape.log import SessionLog

    rows = [json.loads(line) for line in SOURCE.read_text().splitlines()]
    effects = [r for r in rows if r.get("t") == "effect"]
    number = next(i for i, r in enumerate(effects, 1) if r["name"] == "permission")
    with pytest.raises(ForkError, match="the edited permission result does not fit: not a valid"):
        check_point(SessionLog(SOURCE), ForkPoint(effect=number, result={"behavior": 7}))


def test_a_corrupt_line_read_ahead_by_a_call_started_early_is_an_error(tmp_path: Path) -> None:
    """A call started while the model streams reads ahead for its effects; a damaged line
    it met must not be taken for the end of a log cut short (✓, exit 0), at any line."""
    rows = SOURCE.read_text().splitlines(keepends=True)
    for line in range(2, len(rows) + 1):
        path = tmp_path / f"corrupt-{line}.jsonl"
        path.write_text("".join([*rows[: line - 1], "{not json\n", *rows[line:]]))
        reseal(path)
        with pytest.raises(LogError, match=rf"^{path}:{line}: corrupt record"):
            replay(path)


def _nth(rows: Rows, kind: str, n: int = 0) -> int:
    return [i for i, r in enumerate(rows) if r.get("t") == kind][n]


def _set(kind: str, key: str, value: Any, n: int = 0) -> Callable[[Rows], int]:
    def change(rows: Rows) -> int:
        i = _nth(rows, kind, n)
        rows[i][key] = value
        return i

    return change


def _move(rows: Rows) -> int:
    """Two transitions swapped: each keeps its number, so the first is out of place."""
    i, j = _nth(rows, "transition", 3), _nth(rows, "transition", 4)
    rows[i], rows[j] = rows[j], rows[i]
    return i


def _repeat(rows: Rows) -> int:
    i = _nth(rows, "transition", 2)
    rows.insert(i + 1, dict(rows[i]))
    return i + 1


def _lose(rows: Rows) -> int:
    i = _nth(rows, "transition", 2)
    del rows[i]
    return i


def _after_result(rows: Rows) -> int:
    rows.append(dict(rows[_nth(rows, "transition")]))
    return len(rows) - 1


def _second_start(rows: Rows) -> int:
    i = _nth(rows, "transition", 5)
    rows.insert(i, dict(rows[1]))
    return i


def _before_start(rows: Rows) -> int:
    rows[1], rows[2] = rows[2], rows[1]
    return 1


SHAPES = {
    "t a list": (_set("effect", "t", ["effect"]), "not a session record"),
    "t an object": (_set("result", "t", {}), "not a session record"),
    "effect name a list": (_set("effect", "name", ["tool"]), "an effect's name is not a string"),
    "effect request an object": (_set("effect", "request", {}), "an effect's request is not a"),
    "transition step a string": (_set("transition", "step", "3"), "a transition's step is not an"),
    "transition turn true": (_set("transition", "turn", True), "a transition's turn is not an"),
    "effect step a number": (_set("effect", "step", 1.0), "an effect's step is not an integer"),
    "effect step null": (_set("effect", "step", None), "an effect's step is not an integer"),
    "result steps a string": (_set("result", "steps", "20"), "a result's steps is not an"),
    "transition misnumbered": (_set("transition", "step", 9, 2), "a transition record of step 9"),
    "effect misnumbered": (_set("effect", "step", 1, 3), "an effect record of step 1 where"),
    "transitions swapped": (_move, "a transition record of step 5 where step 4 comes"),
    "transition repeated": (_repeat, "a transition record of step 3 where step 4 comes"),
    "transition lost": (_lose, "a transition record of step 4 where step 3 comes"),
    "record after the result": (_after_result, "a transition record after the run's result"),
    "second start": (_second_start, "a second start record"),
    "transition before start": (_before_start, "a transition record before the run's start record"),
}


def shaped(tmp_path: Path, case: str) -> tuple[Path, str]:
    return damaged(tmp_path, case, SHAPES)


@pytest.mark.parametrize("case", SHAPES)
def test_a_record_of_the_wrong_shape_or_out_of_order_names_its_line(
    case: str, tmp_path: Path
) -> None:
    """Not a traceback (a list as an effect's name is no dict key), and not a pass: replay
    goes by position, so a step number out of place went unnoticed, and the debugger and
    `--edit-effect`, which go by the numbers, showed and edited other records."""
    path, message = shaped(tmp_path, case)
    with pytest.raises(LogError) as info:
        replay(path)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("case", ["t a list", "effect name a list", "transition misnumbered"])
def test_check_path_and_coverage_say_a_wrong_shape_in_one_line(case: str, tmp_path: Path) -> None:
    path, message = shaped(tmp_path, case)
    for args in (["replay", "--check"], ["replay", "--path", "--json"], ["coverage"]):
        done = fsm(*args, str(path))
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith(f"fsm-agent: error: {message}")
        assert done.stderr.count("\n") == 1


def _step_not_first(rows: Rows) -> int:
    """A hand-edited line whose keys are in another order: the index reads it whole."""
    i = _nth(rows, "effect", 1)
    rows[i] = {"step": "x", **{k: v for k, v in rows[i].items() if k != "step"}}
    return i


SHAPES["effect step a string, not first"] = (_step_not_first, "an effect's step is not an")


@pytest.mark.parametrize(
    "case", ["effect step a string, not first", "effect misnumbered", "t a list"]
)
def test_the_debugger_stops_at_a_record_of_the_wrong_shape_and_a_fork_refuses_it(
    case: str, tmp_path: Path
) -> None:
    path, message = shaped(tmp_path, case)
    dbg = Debugger(path)
    assert message in " ".join(dbg.text("g 20").split())  # rich wraps it
    dbg.stepper.close()
    scenario = tmp_path / "s.json"
    scenario.write_text('{"turns": [{"content": "hi"}]}')
    edit = tmp_path / "edit.json"
    edit.write_text('{"content": "x"}')
    live = ["--scripted", str(scenario), "--cwd", str(tmp_path), "--log", str(tmp_path / "f.jsonl")]
    for fork in (["--fork-at", "1"], ["--edit-effect", "1", str(edit)]):
        done = fsm("replay", str(path), *fork, *live)
        assert done.returncode == 2
        assert done.stderr.startswith(f"fsm-agent: error: {message}")
        assert done.stderr.count("\n") == 1
    assert not (tmp_path / "f.jsonl").exists()


def test_unknown_fields_in_the_start_messages_are_ignored(tmp_path: Path) -> None:
    """docs/log-format.md: unknown fields are ignored. A newer writer's field on a message
    or a content block is not read, so it is no divergence at step 0."""
    rows = [json.loads(line) for line in SOURCE.read_text().splitlines()]
    message = rows[1]["messages"][0]
    message["timestamp"] = "2026-11-30T00:00:00Z"
    message["content"][0]["cache_control"] = {"type": "ephemeral"}
    path = tmp_path / "newer.jsonl"
    write_log(path, rows)
    assert replay(path).reason == "completed"
