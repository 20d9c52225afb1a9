"""A Claude Code project's MCP servers in a run: configured by `.mcp.json`, under its
deny rule and PreToolUse hook, and its log replayed with no server at all."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import arun_scenario, replay
from fsm_agent.core.codec import unstructure
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import ToolFinished, ToolStarted
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.live.mcp_servers import McpServers
from fsm_agent.live.scripted import Scenario
from tests.support.cli import fsm
from tests.support.hooks import script, tool_turn
from tests.support.mcp_fixtures import SERVER, everything_command, git_repo, probe, pypi_server
from tests.support.trust import trust

NO_MCP = """
import sys
sys.modules["mcp"] = None  # importing the SDK now fails: a replay needs no server
from fsm_agent.cli.main import main
sys.argv = ["fsm-agent", *sys.argv[1:]]
main()
"""


def project(tmp_path: Path, servers: dict[str, Any], settings: dict[str, Any]) -> Path:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    trust(tmp_path / "home", ws)
    return ws


def scripted_run(tmp_path: Path, ws: Path, *turns: dict[str, Any]) -> tuple[Any, list[dict]]:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"prompt": "go", "turns": [*turns, {"content": "done"}]}))
    log = tmp_path / "run.jsonl"
    env = {"HOME": str(tmp_path / "home"), "REPO": str(tmp_path / "repo")}
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(ws), "--log", str(log),
               "--output-format", "json", env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return log, records


def results(log: Path) -> dict[str, tuple[Any, bool]]:
    """Each tool_result the model was sent, by tool_use id, from the log's replay."""
    return {
        block.tool_use_id: (plain(block.content), block.is_error)
        for message in replay(log).messages.items
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }


def plain(content: Any) -> Any:
    return content if isinstance(content, str) else [unstructure(b) | {"type": b.type}
                                                     for b in content]  # fmt: skip


def replays_without_mcp(log: Path, tmp_path: Path) -> None:
    """`replay --check` in a process that cannot import the `mcp` SDK, with no server on
    the PATH and the workspace's `.mcp.json` gone."""
    (tmp_path / "ws" / ".mcp.json").unlink()
    env = {**os.environ, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", NO_MCP, "replay", "--check", str(log)],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_time_and_git_from_mcp_json_under_a_deny_rule_and_a_hook_replay_offline(
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path / "repo")
    hook = script(tmp_path / "pre.sh", 'cat >> "$CLAUDE_PROJECT_DIR/pre.jsonl"\n'
                  'echo >> "$CLAUDE_PROJECT_DIR/pre.jsonl"\n'
                  'grep -q git_log "$CLAUDE_PROJECT_DIR/pre.jsonl" && '
                  '{ echo "no history today" >&2; exit 2; }\nexit 0\n')  # fmt: skip
    ws = project(
        tmp_path,
        {
            "time": {"command": pypi_server("time")},
            "git": {"command": pypi_server("git"), "args": ["--repository", "${REPO}"]},
            "probe": {"command": sys.executable, "args": [str(SERVER)]},
        },
        {
            "enabledMcpjsonServers": ["time", "git", "probe"],
            "permissions": {"allow": ["mcp__time", "mcp__git", "mcp__probe"],
                            "deny": ["mcp__git__git_commit"]},
            "hooks": {"PreToolUse": [{"matcher": "mcp__git__.*",
                                      "hooks": [{"type": "command", "command": hook}]}]},
        },
    )  # fmt: skip
    log, records = scripted_run(
        tmp_path, ws,
        tool_turn(("t1", "mcp__time__get_current_time", {"timezone": "Etc/UTC"}),
                  ("t2", "mcp__git__git_status", {"repo_path": str(repo)})),
        tool_turn(("t3", "mcp__git__git_commit", {"repo_path": str(repo), "message": "x"}),
                  ("t4", "mcp__git__git_log", {"repo_path": str(repo)}),
                  ("t5", "mcp__probe__die", {})),
        tool_turn(("t6", "mcp__probe__hello", {"name": "still here"})),
    )  # fmt: skip
    got = results(log)
    assert '"timezone":"Etc/UTC"' in got["t1"][0] and not got["t1"][1]
    assert "notes.txt" in str(got["t2"][0])
    assert got["t3"] == (  # the deny rule took the tool out of the model's list
        "<tool_use_error>Error: No such tool available: mcp__git__git_commit</tool_use_error>",
        True,
    )
    assert got["t4"][1] and "no history today" in got["t4"][0]  # the PreToolUse hook blocked it
    ran = [r["args"]["name"] for r in records if r.get("name") == "tool"]
    # time and git_status are read-only, so they run together and finish in either order.
    assert sorted(ran[:2]) == ["mcp__git__git_status", "mcp__time__get_current_time"]
    assert ran[2:] == ["mcp__probe__die", "mcp__probe__hello"]
    assert got["t5"] == ('MCP server "probe": Connection closed (it exited)', True)
    assert got["t6"] == ('{"result":"hello still here"}', False)
    servers = next(r["result"] for r in records if r.get("name") == "mcp_servers")
    git = next(s for s in servers if s["name"] == "git")
    assert "git_commit" not in [t["name"] for t in git["tools"]]
    payloads = [json.loads(line) for line in (ws / "pre.jsonl").read_text().splitlines()]
    assert [p["tool_name"] for p in payloads] == ["mcp__git__git_status", "mcp__git__git_log"]
    assert payloads[0]["mcp_server"] == {"name": "git", "source": "project"}
    assert payloads[0]["tool_input"] == {"repo_path": str(repo)}
    replays_without_mcp(log, tmp_path)


def test_the_npm_everything_server_in_a_run_replays_offline(tmp_path: Path) -> None:
    command = everything_command()
    ws = project(
        tmp_path,
        {"everything": {"command": command, "args": ["stdio"]}},
        {"enableAllProjectMcpServers": True, "permissions": {"allow": ["mcp__everything"]}},
    )
    log, _records = scripted_run(
        tmp_path, ws,
        tool_turn(("e1", "mcp__everything__get-tiny-image", {}),
                  ("e2", "mcp__everything__get-structured-content", {"location": "Chicago"}),
                  ("e3", "mcp__everything__get-resource-links", {"count": 1})),
    )  # fmt: skip
    got = results(log)
    assert [b.get("type") for b in got["e1"][0]][:2] == ["text", "image"]
    assert '"conditions"' in got["e2"][0]
    assert "[Resource link: " in json.dumps(got["e3"][0])
    replays_without_mcp(log, tmp_path)


@pytest.mark.parametrize("approved", [False, True])
def test_an_unapproved_project_server_stays_off_without_a_terminal(
    tmp_path: Path, approved: bool
) -> None:
    settings = {"enabledMcpjsonServers": ["probe"]} if approved else {}
    ws = project(tmp_path, {"probe": {"command": sys.executable, "args": [str(SERVER)]}},
                 {**settings, "permissions": {"allow": ["mcp__probe"]}})  # fmt: skip
    log, _ = scripted_run(tmp_path, ws, tool_turn(("p1", "mcp__probe__hello", {"name": "a"})))
    content, is_error = results(log)["p1"]
    if approved:
        assert (content, is_error) == ('{"result":"hello a"}', False)
    else:
        assert is_error and "MCP server probe: needs approval" in content


def test_read_only_mcp_tools_run_together_and_others_one_at_a_time(tmp_path: Path) -> None:
    """`hello` is annotated `readOnlyHint: true`, `structured` is not: two of the first
    both start before either finishes; two of the second, one after the other."""
    scenario = {"prompt": "go", "turns": [
        tool_turn(("r1", "mcp__probe__hello", {"name": "a"}),
                  ("r2", "mcp__probe__hello", {"name": "b"})),
        tool_turn(("w1", "mcp__probe__structured", {"x": 1}),
                  ("w2", "mcp__probe__structured", {"x": 2})),
        {"content": "done"},
    ]}  # fmt: skip
    order: list[str] = []

    def note(event: object) -> None:
        if isinstance(event, ToolStarted | ToolFinished):
            block = event.block if isinstance(event, ToolStarted) else event.result
            name = getattr(block, "id", None) or getattr(block, "tool_use_id", "?")
            order.append(f"{type(event).__name__[4:].lower()} {name}")

    async def go() -> None:
        async with McpServers([probe()], str(tmp_path)) as mcp:
            await arun_scenario(Scenario.parse(scenario), cwd=tmp_path, keep_log=False, mcp=mcp,
                                config=RunConfig(permission_mode="bypassPermissions"),
                                on_event=note)  # fmt: skip

    asyncio.run(go())
    assert order[:2] == ["started r1", "started r2"]
    assert order[4:] == ["started w1", "finished w1", "started w2", "finished w2"]
