"""The MCP configuration on disk: the four scopes, --strict-mcp-config, approvals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.core.mcp_config import McpConfigError
from fsm_agent.live.mcp_files import load_mcp
from tests.support.trust import trust


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    write(home / ".claude.json", {
        "mcpServers": {"shared": {"command": "user-cmd"}, "mine": {"command": "user-only"}},
        "projects": {str(ws.resolve()): {"mcpServers": {"shared": {"command": "local-cmd"}},
                                         "enabledMcpjsonServers": ["approved"]}},
    })  # fmt: skip
    write(ws / ".mcp.json", {"mcpServers": {
        "approved": {"command": "p1", "args": ["${WHERE:-here}"]},
        "waiting": {"command": "p2"},
        "refused": {"command": "p3"},
    }})  # fmt: skip
    write(ws / ".claude" / "settings.json", {"disabledMcpjsonServers": ["refused"]})
    return ws, home


def test_every_scope_is_read_and_the_nearer_one_wins(places: tuple[Path, Path]) -> None:
    ws, home = places
    setup, warnings = load_mcp(str(ws), str(home), {}, configs=('{"mcpServers": '
                               '{"cli": {"type": "http", "url": "http://x/mcp"}}}',))  # fmt: skip
    assert warnings == ()
    got = {s.name: (s.source, s.command or s.url, s.args) for s in setup.servers}
    assert got == {
        "shared": ("local", "local-cmd", ()),
        "mine": ("user", "user-only", ()),
        "approved": ("project", "p1", ("here",)),
        "cli": ("dynamic", "http://x/mcp", ()),
    }
    assert [s.name for s in setup.unapproved] == ["waiting"]
    yes = setup.approved(["waiting"])
    assert "waiting" in {s.name for s in yes.servers} and yes.unapproved == ()


def test_strict_takes_only_the_command_lines_servers(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, home = places
    write(tmp_path / "extra.json", {"mcpServers": {"only": {"command": "x"}}})
    setup, _ = load_mcp(str(ws), str(home), {}, configs=(str(tmp_path / "extra.json"),),
                        strict=True)  # fmt: skip
    assert [s.name for s in setup.servers] == ["only"] and setup.unapproved == ()


def test_enable_all_approves_every_project_server(places: tuple[Path, Path]) -> None:
    ws, home = places
    write(ws / ".claude" / "settings.local.json", {"enableAllProjectMcpServers": True})
    setup, _ = load_mcp(str(ws), str(home), {})
    names = {s.name for s in setup.servers}
    assert {"approved", "waiting"} <= names and "refused" not in names


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ("{not json", "--mcp-config: not valid JSON"),
        ("nowhere.json", "--mcp-config nowhere.json: no such file"),
        ('["a list"]', "no such file"),
    ],
)
def test_a_mcp_config_that_cannot_be_read_is_one_error(
    places: tuple[Path, Path], given: str, needle: str
) -> None:
    ws, home = places
    with pytest.raises(McpConfigError, match=needle):
        load_mcp(str(ws), str(home), {}, configs=(given,))


def test_a_broken_mcp_json_is_an_error_and_a_broken_claude_json_a_warning(
    places: tuple[Path, Path],
) -> None:
    ws, home = places
    write(home / ".claude.json", "{oops")
    setup, warnings = load_mcp(str(ws), str(home), {})
    assert len(warnings) == 1 and "not valid JSON" in warnings[0] and "left out" in warnings[0]
    assert [s.name for s in setup.servers] == []  # the approvals were in ~/.claude.json too
    write(ws / ".mcp.json", "[1,")
    with pytest.raises(McpConfigError, match=r"\.mcp\.json: not valid JSON"):
        load_mcp(str(ws), str(home), {})


def test_an_untrusted_workspace_cannot_approve_its_own_servers(
    places: tuple[Path, Path],
) -> None:
    """Each `.mcp.json` server runs a program the repository names: its own settings may
    disable one, but approve none until the user trusts the workspace."""
    ws, home = places
    write(ws / ".claude" / "settings.json", {"enabledMcpjsonServers": ["waiting"],
                                             "disabledMcpjsonServers": ["refused"]})  # fmt: skip
    setup, warnings = load_mcp(str(ws), str(home), {})
    assert {s.name for s in setup.unapproved} == {"waiting"}
    assert any("has not been trusted" in w for w in warnings), warnings
    write(ws / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    setup, _ = load_mcp(str(ws), str(home), {})
    assert {s.name for s in setup.unapproved} == {"waiting", "refused"}
    trusted, warnings = load_mcp(str(ws), str(trust(home, ws)), {})
    assert trusted.unapproved == () and warnings == ()
    assert {"approved", "waiting", "refused"} <= {s.name for s in trusted.servers}
