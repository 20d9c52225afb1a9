"""`fsm-agent sessions` lists the workspace's Claude Code sessions beside its own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import SCENARIOS
from tests.support.claude_sessions import SESSIONS, record
from tests.support.cli import fsm
from tests.support.real_claude import require_claude


def test_claude_code_s_sessions_are_listed_beside_fsm_agent_s(tmp_path: Path) -> None:
    require_claude()
    session = next(s for s in SESSIONS if s.name == "tool_call")
    transcript = record(session, tmp_path)
    workspace, config = tmp_path / "ws", tmp_path / "home" / ".claude"
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    ran = fsm(
        "run", "--scripted", str(SCENARIOS / "fix_bug.json"), "--cwd", str(workspace), env=env
    )
    assert ran.returncode == 0, ran.stderr
    listed = json.loads(fsm("sessions", "--cwd", str(workspace), "--json", env=env).stdout)
    assert [(i["status"], i["prompt"]) for i in listed] == [
        ("complete", "average.py prints the wrong average of [2, 4, 9]. Fix it."),
        ("claude_code", "what is in notes.txt?"),
    ]  # fsm-agent's own transcript of its run is not listed twice
    assert listed[1]["path"] == str(transcript)
    table = fsm("sessions", "--cwd", str(workspace), env={**env, "COLUMNS": "120"}).stdout
    assert "claude code" in table and "what is in notes.txt?" in table
    alone = json.loads(
        fsm("sessions", "--cwd", str(workspace), "--json", "--no-claude", env=env).stdout
    )
    assert [i["status"] for i in alone] == ["complete"]
