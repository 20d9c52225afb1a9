"""Whose settings a run may widen itself by: the workspace's `.claude/settings.json`
allows and adds directories only once the user trusts the workspace, as the real CLI
2.1.332 decides it (`~/.claude.json`'s `projects[<cwd or git root>]
.hasTrustDialogAccepted`, measured: a parent's trust does not carry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.live.settings import load_settings, trusted_by_claude
from tests.support.cli import fsm
from tests.support.trust import trust

GRANTS = {
    "permissions": {
        "allow": ["Bash(touch:*)", "Read(//etc/**)"],
        "additionalDirectories": ["../lib"],
        "deny": ["Bash(rm:*)"],
        "ask": ["Bash(git push *)"],
        "defaultMode": "acceptEdits",
        "disableBypassPermissionsMode": "disable",
    },
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
}


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude").mkdir(parents=True)
    home.mkdir()
    return ws, home


def put(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_an_untrusted_workspace_keeps_what_narrows_and_loses_what_grants(
    places: tuple[Path, Path],
) -> None:
    ws, home = places
    put(ws / ".claude" / "settings.json", GRANTS)
    s = load_settings(str(ws), str(home))
    p = s.permissions
    assert p.allow == () and p.additional_directories == ()
    assert [r.rule for r in p.deny] == ["Bash(rm:*)"]
    assert [r.rule for r in p.ask] == ["Bash(git push *)"]
    assert p.default_mode == "acceptEdits"
    assert s.bypass_disabled and [h.event for h in s.hooks] == ["Stop"]
    settings = ws / ".claude" / "settings.json"
    assert s.warnings == (
        f"Ignoring 2 permissions.allow entries from {settings}: this workspace has not been "
        "trusted. Accept Claude Code's trust dialog here once, set "
        f'projects["{ws.resolve()}"].hasTrustDialogAccepted: true in {home / ".claude.json"}, '
        "or pass --trust",
        f"Ignoring 1 permissions.additionalDirectories entry from {settings}: this workspace "
        "has not been trusted. Accept Claude Code's trust dialog here once, set "
        f'projects["{ws.resolve()}"].hasTrustDialogAccepted: true in {home / ".claude.json"}, '
        "or pass --trust",
    )
    trusted = load_settings(str(ws), str(trust(home, ws)))
    assert len(trusted.permissions.allow) == 2 and trusted.warnings == ()
    assert trusted.permissions.additional_directories == (str(ws.parent.resolve() / "lib"),)
    assert load_settings(str(ws), str(home / "nohome"), trusted=True).permissions.allow


def test_the_local_file_is_the_users_own_and_honoured_untrusted(
    places: tuple[Path, Path],
) -> None:
    ws, home = places
    put(ws / ".claude" / "settings.local.json", GRANTS)
    p = load_settings(str(ws), str(home)).permissions
    assert len(p.allow) == 2 and len(p.additional_directories) == 1


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
def test_no_workspace_file_sets_bypass_permissions(places: tuple[Path, Path], name: str) -> None:
    """Trusted or not; the user's own ~/.claude/settings.json may."""
    ws, home = places
    put(home / ".claude" / "settings.json", {"permissions": {"defaultMode": "plan"}})
    put(ws / ".claude" / name, {"permissions": {"defaultMode": "bypassPermissions"}})
    s = load_settings(str(ws), str(trust(home, ws)))
    assert s.permissions.default_mode == "plan"
    assert len(s.warnings) == 1 and "bypassPermissions is ignored" in s.warnings[0]
    assert str(ws / ".claude" / name) in s.warnings[0]
    (ws / ".claude" / name).unlink()
    put(home / ".claude" / "settings.json", {"permissions": {"defaultMode": "bypassPermissions"}})
    assert load_settings(str(ws), str(home)).permissions.default_mode == "bypassPermissions"


def test_trust_is_the_workspaces_or_its_git_roots_and_no_parents(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    trust(home, tmp_path)  # a parent's trust does not carry
    assert not trusted_by_claude(str(sub), str(home))
    (repo / ".git").mkdir()
    trust(home, repo)
    assert trusted_by_claude(str(sub), str(home))  # the git root's does
    assert trusted_by_claude(str(repo), str(home))
    (repo / ".git").rmdir()
    (repo / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's `.git` file
    assert trusted_by_claude(str(sub), str(home))
    (sub / ".git").mkdir()  # a nearer repository is its own project
    assert not trusted_by_claude(str(sub), str(home))
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert trusted_by_claude(str(link), str(home))  # the key is the resolved path


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        '{"projects": []}',
        '{"projects": {"WS": {"hasTrustDialogAccepted": "yes"}}}',
        '{"projects": {"WS": {"hasTrustDialogAccepted": false}}}',
        '{"projects": {"WS": true}}',
    ],
)
def test_anything_but_a_true_accepted_trusts_nothing(places: tuple[Path, Path], text: str) -> None:
    ws, home = places
    (home / ".claude.json").write_text(text.replace("WS", str(ws.resolve())))
    assert not trusted_by_claude(str(ws), str(home))


def test_the_cli_says_in_one_line_what_it_ignored_and_trust_lifts_it(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    put(ws / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch:*)"]}})
    scenario = tmp_path / "s.json"
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "touch made"}}
    put(scenario, {"prompt": "go", "turns": [{"content": [call]}, {"content": "done"}]})
    env = {"HOME": str(home)}
    args = ("run", "--scripted", str(scenario), "--cwd", str(ws))
    untrusted = fsm(*args, "--log", str(tmp_path / "a.jsonl"), env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    warning = [line for line in untrusted.stderr.splitlines() if "not been trusted" in line]
    assert len(warning) == 1 and warning[0].startswith("fsm-agent: warning: Ignoring 1 ")
    assert "Traceback" not in untrusted.stderr
    assert not (ws / "made").exists()
    trusted = fsm(*args, "--log", str(tmp_path / "b.jsonl"), "--trust", env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert "not been trusted" not in trusted.stderr
    assert (ws / "made").exists()
