"""A tool hook's `continue: false` (PreToolUse, PostToolUse): as in Claude Code 2.1.332,
every call of the turn still runs, then the loop ends before the next model call on
the `hook_stopped` edge, a success (`is_error` false, exit 0 under `-p`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.cli.usage import exit_code
from tests.support.hooks import bash_run, results_by_id, script

STOP = json.dumps({"continue": False, "stopReason": "halt"})


def stopping(tmp_path: Path, event: str) -> dict[str, Any]:
    """Settings that allow Bash and put on `event` a hook that logs each call's id and
    says to stop."""
    seen = tmp_path / "seen.txt"
    body = (
        "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"tool_use_id\"])' "
        f">> {seen}\necho '{STOP}'\n"
    )
    command = script(tmp_path / "stop.sh", body)
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}
    return {"permissions": {"allow": ["Bash"]}, "hooks": {event: [hook]}}


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
def test_the_turns_calls_run_and_the_model_is_not_asked_again(
    workspace: Path, tmp_path: Path, event: str
) -> None:
    result = bash_run(workspace, tmp_path, stopping(tmp_path, event), "touch a", "touch b")
    assert (workspace / "a").exists() and (workspace / "b").exists()
    assert [r.is_error for r in results_by_id(result).values()] == [False, False]
    assert (tmp_path / "seen.txt").read_text().split() == ["t1", "t2"], "each call's hook ran"
    assert result.reason == "hook_stopped"
    assert result.edges.count("streamed") == 1
    assert result.error == "halt"
    assert (result.is_error, exit_code(result), result.answer) == (False, 0, "")
