"""The user's Claude Code files where the real CLI finds them: `~/.claude/settings.json`
and `~/.claude.json`, or, with `CLAUDE_CONFIG_DIR` set, `$CLAUDE_CONFIG_DIR/settings.json`
and `$CLAUDE_CONFIG_DIR/.claude.json`, nothing of HOME's (measured on 2.1.332: the
trust dialog's answer, the user's settings and the notice naming the file all move)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fsm_agent.live.claude_home import UserFiles
from fsm_agent.live.mcp_files import load_mcp
from fsm_agent.live.settings import load_settings
from tests.support.cli import fsm_with
from tests.support.messages_server import MessagesServer, message, text
from tests.support.real_claude import run_claude, trusted_home
from tests.support.trust import trust


def put(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(workspace, HOME, CLAUDE_CONFIG_DIR), the two homes each with an allow rule."""
    ws, home, config = tmp_path / "ws", tmp_path / "home", tmp_path / "config"
    ws.mkdir()
    put(home / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch a)"]}})
    put(config / "settings.json", {"permissions": {"allow": ["Bash(touch b)", "Read(/x)"]}})
    return ws, home, config


def test_the_variable_moves_both_files_and_a_blank_one_is_unset(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert UserFiles.of({}, home) == UserFiles.at(home)
    assert UserFiles.of({}, home).settings == tmp_path / ".claude" / "settings.json"
    assert UserFiles.of({}, home).state_file == tmp_path / ".claude.json"
    assert UserFiles.of({"CLAUDE_CONFIG_DIR": "  "}, home) == UserFiles.at(home)
    moved = UserFiles.of({"CLAUDE_CONFIG_DIR": "/cfg"}, home)
    assert (moved.settings, moved.state_file) == (
        Path("/cfg/settings.json"),
        Path("/cfg/.claude.json"),
    )


def test_user_settings_and_trust_come_from_the_config_dir(
    places: tuple[Path, Path, Path],
) -> None:
    ws, home, config = places
    put(ws / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch c)"]}})
    trust(home, ws)  # HOME's trust does not count once the variable is set
    user = UserFiles.of({"CLAUDE_CONFIG_DIR": str(config)}, str(home))
    s = load_settings(str(ws), user=user)
    assert [r.rule for r in s.permissions.allow] == ["Bash(touch b)", "Read(/x)"]
    assert s.permissions.allow[1].root == str(config.resolve())  # `/x` is the config dir's
    assert len(s.warnings) == 1 and f"in {config / '.claude.json'}, or pass" in s.warnings[0]
    trust(config, ws)
    s = load_settings(str(ws), user=user)
    assert [r.rule for r in s.permissions.allow][-1] == "Bash(touch c)" and s.warnings == ()
    # Without the variable, HOME's files, as before.
    homes = load_settings(str(ws), user=UserFiles.of({}, str(home)))
    assert [r.rule for r in homes.permissions.allow] == ["Bash(touch a)", "Bash(touch c)"]


def test_mcp_servers_come_from_the_config_dirs_claude_json(
    places: tuple[Path, Path, Path],
) -> None:
    ws, home, config = places

    def servers(name: str) -> dict:
        return {"mcpServers": {name: {"type": "http", "url": f"http://x/{name}"}}}

    put(
        home / ".claude.json",
        {**servers("home-user"), "projects": {str(ws.resolve()): servers("home-local")}},
    )
    put(
        config / ".claude.json",
        {**servers("user"), "projects": {str(ws.resolve()): servers("local")}},
    )
    setup, warnings = load_mcp(str(ws), str(home), {"CLAUDE_CONFIG_DIR": str(config)})
    assert warnings == ()
    assert {(s.name, s.source) for s in setup.servers} == {("user", "user"), ("local", "local")}
    setup, _ = load_mcp(str(ws), str(home), {})
    assert {s.name for s in setup.servers} == {"home-user", "home-local"}


def bash(command: str, call_id: str) -> object:
    block = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}
    return message([block], stop_reason="tool_use", model="claude-sonnet-4-6")


def side(which: str, tmp_path: Path, trusted_in: str) -> tuple[list[str], str]:
    """One side's run of `touch made` allowed only by the workspace's own settings, the
    trust dialog accepted in `trusted_in` ("home" or "config"): the files made, stderr."""
    root = tmp_path / which / trusted_in
    ws, home, config = root / "ws", root / "home", root / "config"
    put(ws / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch:*)"]}})
    trusted_home(home, ws, trusted=trusted_in == "home")
    trusted_home(config, ws, trusted=trusted_in == "config")
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    with MessagesServer() as server:
        server.reply(bash("touch made", "toolu_1"), text("done"))
        if which == "claude":
            ran = run_claude(server, ws, home, "-p", "go", "--model", "claude-sonnet-4-6", env=env)
            code, stderr = ran.returncode, ran.stderr
        else:
            run_env = {**os.environ, "HOME": str(home), "ANTHROPIC_API_KEY": "test-key", **env}
            proc = fsm_with(
                run_env,
                "run",
                "go",
                "--base-url",
                server.url,
                "--model",
                "claude-sonnet-4-6",
                "--cwd",
                str(ws),
                "--log",
                str(root / "log.jsonl"),
            )
            code, stderr = proc.returncode, proc.stderr
    assert code == 0, stderr
    return sorted(p.name for p in ws.iterdir() if p.name not in (".claude", ".fsm-agent")), stderr


@pytest.mark.parametrize("trusted_in", ["config", "home"])
def test_trust_in_the_config_dir_as_the_real_cli_reads_it(tmp_path: Path, trusted_in: str) -> None:
    ours = side("fsm", tmp_path, trusted_in)
    theirs = side("claude", tmp_path, trusted_in)
    assert ours[0] == theirs[0] == (["made"] if trusted_in == "config" else [])
    if trusted_in == "home":
        for stderr in (ours[1], theirs[1]):
            assert "has not been trusted" in stderr and "config/.claude.json" in stderr
