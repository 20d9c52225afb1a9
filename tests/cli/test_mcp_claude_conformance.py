"""The conformance case for MCP: the same model turns through the real Claude Code CLI and
through fsm-agent, against the same small MCP server, and what each sends the model and
its hooks compared. Skipped in one line without the CLI (`pip install -e '.[conformance]'`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import MODEL, fsm_argv
from tests.support.hooks import script
from tests.support.mcp_fixtures import SERVER
from tests.support.messages_server import MessagesServer, Reply, message, text
from tests.support.real_claude import claude_env, require_claude, run_claude, trusted_home

CALLS = [
    ("c1", "hello", {"name": "x"}),
    ("c2", "structured", {"x": 2}),
    ("c3", "fails", {"x": 1}),
    ("c4", "resource", {}),
    ("c5", "hang", {}),  # a bare deny rule takes it out of the tool list
    ("c6", "nosuch", {}),
    ("c9", "hello", {"name": 5}),  # the server, not the client, checks the input
]
CLAUDE_ONLY = {"transcript_path", "prompt_id", "effort", "session_id", "cwd", "duration_ms"}


def replies() -> list[Reply]:
    def turn(*calls: tuple[str, str, dict[str, Any]]) -> Reply:
        blocks = [{"type": "tool_use", "id": i, "name": f"mcp__probe__{n}", "input": a}
                  for i, n, a in calls]  # fmt: skip
        return message(blocks, stop_reason="tool_use")

    return [turn(*CALLS), turn(("c7", "die", {})), turn(("c8", "hello", {"name": "y"})),
            text("done")]  # fmt: skip


def workspace(root: Path, name: str) -> tuple[Path, Path, Path]:
    ws, home = root / name / "ws", root / name / "home"
    (ws / ".claude").mkdir(parents=True)
    trusted_home(home, ws)
    hook = script(root / name / "hook.sh", f'cat >> "{root / name}/hooks.jsonl"\n'
                  f'echo >> "{root / name}/hooks.jsonl"\n')  # fmt: skip
    matcher = [{"matcher": "mcp__probe__.*", "hooks": [{"type": "command", "command": hook}]}]
    (ws / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["mcp__probe"], "deny": ["mcp__probe__hang"]},
        "hooks": {e: matcher for e in ("PreToolUse", "PostToolUse", "PostToolUseFailure")},
    }))  # fmt: skip
    config = root / name / "mcp.json"
    server = {"command": sys.executable, "args": [str(SERVER)]}
    config.write_text(json.dumps({"mcpServers": {"probe": server}}))
    return ws, home, config


def sent(server: MessagesServer) -> dict[str, tuple[Any, bool]]:
    """Each tool_result the model was sent, by tool_use id."""
    found = {}
    for body in server.bodies():
        for block in body["messages"][-1]["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found[block["tool_use_id"]] = (block.get("content"), bool(block.get("is_error")))
    return found


def hooks_heard(root: Path, name: str) -> list[dict[str, Any]]:
    lines = (root / name / "hooks.jsonl").read_text().splitlines()
    return [
        {k: v for k, v in json.loads(line).items() if k not in CLAUDE_ONLY}
        for line in lines
        if line.strip()
    ]


def test_mcp_tools_answer_the_model_and_its_hooks_as_claude_code_does(tmp_path: Path) -> None:
    require_claude()
    ws, home, config = workspace(tmp_path, "claude")
    with MessagesServer() as server:
        server.reply(*replies())
        ran = run_claude(server, ws, home, "-p", "go", "--output-format", "json",
                         "--mcp-config", str(config), "--strict-mcp-config")  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        claude = sent(server)
    ws2, home2, config2 = workspace(tmp_path, "fsm")
    with MessagesServer() as server:
        server.reply(*replies())
        env = {**claude_env(server, home2), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        proc = subprocess.run(
            [*fsm_argv(), "run", "go", "--base-url", server.url, "--model", MODEL, "--cwd",
             str(ws2), "--mcp-config", str(config2), "--strict-mcp-config"],
            capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        ours = sent(server)
    for same in ("c1", "c2", "c4", "c5", "c6", "c8"):
        assert ours[same] == claude[same], same
    # Claude Code 2.1.332 adds a note on its deferred tool schemas after the server's text.
    for noted in ("c3", "c9"):
        assert ours[noted][1] and claude[noted][1], noted
        assert claude[noted][0].startswith(ours[noted][0] + "\n\nThis tool's input schema"), noted
    # Both say the connection closed; fsm-agent names the server too.
    assert ours["c7"][1] and claude["c7"] == ("Connection closed", True)
    assert ours["c7"][0] == 'MCP server "probe": Connection closed (it exited)'
    theirs, mine = hooks_heard(tmp_path, "claude"), hooks_heard(tmp_path, "fsm")
    key = lambda p: (p["tool_use_id"], p["hook_event_name"])  # noqa: E731
    assert sorted(map(key, mine)) == sorted(map(key, theirs))
    for ours_one, claudes in zip(sorted(mine, key=key), sorted(theirs, key=key), strict=True):
        if ours_one["tool_use_id"] in ("c3", "c7", "c9"):  # the error texts differ as above
            ours_one.pop("error", None), claudes.pop("error", None)
        assert ours_one == claudes
