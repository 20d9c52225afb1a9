"""A path the OS refuses (a null byte, a name too long) is the model's input error,
never the run's end: an error result the model reads, a whole log, a replay that
matches."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import arun, replay
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.core.permission_types import PermissionRequest, PermissionSettings
from fsm_agent.live.approvals import Approvals
from fsm_agent.live.scripted import Scenario, ScriptedModel
from tests.support.cli import fsm

NUL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"file_path": "ok.txt\0x"}),
    ("Write", {"file_path": "ok.txt\0x", "content": "hi"}),
    ("Edit", {"file_path": "ok.txt\0x", "old_string": "a", "new_string": "b"}),
    ("Glob", {"pattern": "*", "path": "a\0b"}),
    ("Grep", {"pattern": "x", "path": "a\0b"}),
    ("Bash", {"command": "ls ~/a\0b"}),
    ("Bash", {"command": "cat /a\0*b > x"}),
]
LONG = "a" * 5000
LONG_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"file_path": LONG}),
    ("Write", {"file_path": LONG, "content": "hi"}),
    ("Edit", {"file_path": LONG, "old_string": "a", "new_string": "b"}),
    ("Glob", {"pattern": "*", "path": LONG}),
    ("Grep", {"pattern": "x", "path": LONG}),
    ("Read", {"file_path": ("b" * 255 + "/") * 20 + "x"}),
]


def _scenario(calls: list[tuple[str, dict[str, Any]]]) -> Scenario:
    """One turn per call (Write and Edit run alone anyway), then an answer."""
    turns: list[dict[str, Any]] = [
        {"content": [{"type": "tool_use", "id": f"t{n}", "name": name, "input": tool_input}]}
        for n, (name, tool_input) in enumerate(calls)
    ]
    turns.append({"content": [{"type": "text", "text": "done"}]})
    return Scenario.parse({"prompt": "p", "turns": turns})


def _results(result: Any) -> list[ToolResultBlock]:
    return [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_a_null_byte_is_an_input_error_and_the_run_goes_on(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "nul.jsonl"
    result = asyncio.run(
        arun(
            "p",
            model=ScriptedModel(_scenario(NUL_CALLS)),
            config=RunConfig(cwd=str(workspace), model="scripted", permission_mode=mode),
            log=log,
        )
    )
    assert result.reason == "completed"
    results = _results(result)
    assert len(results) == len(NUL_CALLS)
    for block, (name, tool_input) in zip(results, NUL_CALLS, strict=True):
        key = "command" if name == "Bash" else next(k for k in tool_input if "path" in k)
        assert block.is_error
        if name == "Bash":  # Claude Code's own check of a command's control characters
            assert "command contains control characters" in block.text
            continue
        assert block.text.startswith(f"<tool_use_error>InputValidationError: {name} failed")
        assert f"The parameter `{key}` contains a null byte" in block.text
    assert list(workspace.iterdir()) == []
    assert json.loads(log.read_text().splitlines()[-1])["t"] == "result"
    assert replay(log).path == result.path


def test_a_path_too_long_is_an_error_result(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "long.jsonl"
    result = asyncio.run(
        arun(
            "p",
            model=ScriptedModel(_scenario(LONG_CALLS)),
            config=RunConfig(cwd=str(workspace), model="scripted", permission_mode="acceptEdits"),
            log=log,
        )
    )
    assert result.reason == "completed"
    assert all(b.is_error for b in _results(result))
    assert replay(log).path == result.path


def test_the_input_error_names_the_parameter() -> None:
    from fsm_agent.core.validation import os_string_problem

    assert os_string_problem("Read", {"file_path": "ok.txt"}) is None
    assert os_string_problem("Custom", {"file_path": "a\0b"}) is None
    text = os_string_problem("Grep", {"pattern": "x", "path": "a\0b"})
    assert text == (
        "<tool_use_error>InputValidationError: Grep failed due to the following issue:\n"
        "The parameter `path` contains a null byte (\\0), which no path can contain"
        "</tool_use_error>"
    )


def test_the_permission_check_denies_what_it_cannot_resolve(workspace: Path) -> None:
    """The backstop behind validation: a path `realpath` refuses is denied, not raised."""
    approvals = Approvals(PermissionSettings(), str(workspace))
    decision = approvals.check(PermissionRequest("Read", {"file_path": "ok.txt\0x"}))
    assert decision.behavior == "deny"
    assert "cannot be resolved" in decision.reason


def test_the_cli_run_ends_normally_and_its_log_replays(workspace: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "nul.json"
    scenario.write_text(
        '{"turns":[{"content":[{"type":"tool_use","id":"t1","name":"Read",'
        '"input":{"file_path":"ok.txt\\u0000x"}}]},{"content":"done"}]}'
    )
    log = tmp_path / "nul.jsonl"
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log), "go")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "✗ <tool_use_error>InputValidationError: Read failed" in proc.stdout
    assert json.loads(log.read_text().splitlines()[-1])["t"] == "result"
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("char", ["\x00", "\x01", "\r", "\x0b", "\x1b", "\x7f", "\x85"])
def test_a_control_character_in_a_command_is_claude_code_s_input_error(char: str) -> None:
    """Measured on Claude Code 2.1.332: in every mode, a Bash command holding a C0 control
    (but tab and newline), DEL or a C1 control is refused before any permission check,
    in these words (zod's issue list)."""
    from fsm_agent.core.validation import os_string_problem

    text = os_string_problem("Bash", {"command": f"echo a{char}b"})
    assert text == (
        '<tool_use_error>InputValidationError: [\n  {\n    "code": "custom",\n'
        '    "path": [\n      "command"\n    ],\n    "message": "command contains control '
        'characters that would be hidden in the approval dialog"\n  }\n]</tool_use_error>'
    )


@pytest.mark.parametrize("char", ["\t", "\n", "\u200b", "\u202e", "\ufeff", "\u00a0"])
def test_what_claude_code_lets_through_is_no_input_error(char: str) -> None:
    from fsm_agent.core.validation import os_string_problem

    assert os_string_problem("Bash", {"command": f"echo a{char}b"}) is None
    assert os_string_problem("Read", {"file_path": f"a{char}\x01b"}) is None
