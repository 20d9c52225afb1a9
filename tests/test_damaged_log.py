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

from fsm_agent.debugger import Debugger
from fsm_agent.log import LogError
from fsm_agent.session import replay
from tests.test_cli import fsm

SOURCE = Path(__file__).resolve().parent.parent / "replays" / "tool_round.jsonl"
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


def _tools(rows: Rows) -> int:
    rows[0]["tools"] = [{"name": 3}]
    return 0


DAMAGE: dict[str, tuple[Callable[[Rows], int], str]] = {
    "tool result": (_tool_content, "the recorded tool is not valid: not a valid ToolOutcome"),
    "model result": (_model_result, "the recorded model stream is not valid"),
    "model error": (_model_error, "the recorded model error is not valid"),
    "permission": (_permission, "the recorded permission is not valid: not a valid Decision"),
    "start messages": (_start_messages, "the start messages: not a list"),
    "start message": (_start_message, "the start messages: not a valid Message"),
    "config": (_config, "the header's config: not a valid RunConfig"),
    "tools": (_tools, "the header's tools: not a valid list"),
}


def damaged(tmp_path: Path, case: str) -> tuple[Path, str]:
    rows = [json.loads(line) for line in SOURCE.read_text().splitlines()]
    change, message = DAMAGE[case]
    line = change(rows) + 1
    path = tmp_path / "damaged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, f"{path}:{line}: {message}"


@pytest.mark.parametrize("case", DAMAGE)
def test_replay_names_the_damaged_line(case: str, tmp_path: Path) -> None:
    path, message = damaged(tmp_path, case)
    with pytest.raises(LogError) as info:
        replay(path)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("case", ["tool result", "config", "start messages"])
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
