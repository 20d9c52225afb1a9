"""`fsm-agent mcp list`, and MCP configuration mistakes as one error line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect

from tests.support.cli import fsm, one_error_line
from tests.support.mcp_fixtures import SERVER
from tests.support.pty import spawn


def config(tmp_path: Path) -> str:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {
        "probe": {"command": sys.executable, "args": [str(SERVER)]},
        "broken": {"command": str(tmp_path / "not-installed")},
    }}))  # fmt: skip
    return str(path)


def test_mcp_list_shows_each_servers_state_and_tools(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"new": {"command": "x"}}}))
    env = {"HOME": str(tmp_path)}
    proc = fsm("mcp", "list", "--cwd", str(tmp_path), "--mcp-config", config(tmp_path), env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "probe: connected (8 tools)  [stdio, dynamic]"
    assert "  mcp__probe__hello  (read-only)" in lines and "  mcp__probe__die" in lines
    assert any(line.startswith("broken: failed: [Errno 2] No such file") for line in lines)
    assert lines[-1] == (
        "new: needs approval: a project server (.mcp.json) not approved  [stdio, project]"
    )
    as_json = fsm("mcp", "list", "--cwd", str(tmp_path), "--strict-mcp-config",
                  "--mcp-config", config(tmp_path), "--json", env=env)  # fmt: skip
    states = json.loads(as_json.stdout)
    assert [(s["name"], s["status"]) for s in states] == [
        ("probe", "connected"), ("broken", "failed"),
    ]  # fmt: skip


def test_no_servers_is_said(tmp_path: Path) -> None:
    proc = fsm("mcp", "list", "--cwd", str(tmp_path), env={"HOME": str(tmp_path)})
    assert proc.stdout.strip() == f"no MCP servers configured for {tmp_path.resolve()}"


def test_configuration_mistakes_are_one_error_line(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"prompt": "hi", "turns": [{"content": "hello"}]}))
    run = fsm("run", "--scripted", str(scenario), "--cwd", str(tmp_path), "--mcp-config", "{nope",
              env=env)  # fmt: skip
    one_error_line(run, "--mcp-config: not valid JSON")
    one_error_line(fsm("mcp", "list", "--cwd", str(tmp_path), "--mcp-config", "gone.json",
                       env=env), "--mcp-config gone.json: no such file")  # fmt: skip
    one_error_line(fsm("mcp", "list", "--cwd", str(tmp_path), env={**env, "MCP_TIMEOUT": "soon"}),
                   "MCP_TIMEOUT must be a whole number of milliseconds")  # fmt: skip


def test_stream_json_init_lists_the_servers_and_their_tools(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"prompt": "hi", "turns": [{"content": "hello"}]}))
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(tmp_path), "--output-format",
               "stream-json", "--strict-mcp-config", "--mcp-config", config(tmp_path),
               env={"HOME": str(tmp_path)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    init, notice = (json.loads(line) for line in proc.stdout.splitlines()[:2])
    assert init["mcp_servers"] == [
        {"name": "probe", "status": "connected", "source": "dynamic"},
        {"name": "broken", "status": "failed", "source": "dynamic"},
    ]
    assert "mcp__probe__hello" in init["tools"] and "Read" in init["tools"]
    assert (notice["subtype"], notice["text"].split(":")[0]) == ("mcp", "MCP server broken")


def test_in_a_terminal_an_unapproved_project_server_is_asked_about(tmp_path: Path) -> None:
    """Yes to one, no to the other: the first's tool answers, the second's is not there."""
    servers = {name: {"command": sys.executable, "args": [str(SERVER)]} for name in ("yes", "no")}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    scenario = tmp_path / "scenario.json"
    calls = [{"type": "tool_use", "id": f"u{n}", "name": f"mcp__{name}__hello",
              "input": {"name": name}} for n, name in enumerate(("yes", "no"))]  # fmt: skip
    scenario.write_text(json.dumps({"prompt": "hi", "turns": [
        {"content": calls}, {"content": "done"}]}))  # fmt: skip
    log = tmp_path / "run.jsonl"
    child = spawn(["run", "--scripted", str(scenario), "--cwd", str(tmp_path), "--log", str(log),
                   "--permission-mode", "bypassPermissions"], tmp_path)  # fmt: skip
    child.expect("New MCP server found in .mcp.json: yes")
    child.sendline("y")
    child.expect("New MCP server found in .mcp.json: no")
    child.sendline("n")
    child.expect(pexpect.EOF, timeout=120)
    records = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    (states,) = [r["result"] for r in records if r.get("name") == "mcp_servers"]
    assert [(s["name"], s["status"]) for s in states if s["name"] in ("yes", "no")] == [
        ("yes", "connected"), ("no", "needs approval"),
    ]  # fmt: skip
    ran = [r["args"]["name"] for r in records if r.get("name") == "tool"]
    assert ran == ["mcp__yes__hello"]  # the other: No such tool available (needs approval)
