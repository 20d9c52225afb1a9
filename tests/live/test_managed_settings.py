"""Managed settings as the real CLI 2.1.332 honours them, measured with a private
/etc/claude-code (`unshare -rm` and a bind mount over /etc): `managed-settings.json`,
then `managed-settings.d/*.json` in name order (dot files and other suffixes are not
read), above user, project and local settings and the command line.

What was measured, and each test here holds fsm-agent to:
- a managed allow rule applies, in a workspace trusted or not; the managed
  `defaultMode` beats the user's (`--permission-mode` beats both); a later drop-in wins
  a key both set, lists add up;
- a managed `disableBypassPermissionsMode` turns `--permission-mode bypassPermissions`
  into default; a managed `defaultMode: bypassPermissions` is honoured;
- `allowManagedPermissionRulesOnly`: user, project, local rules and `--allowed-tools`
  are ignored, `--disallowed-tools`, modes and directories are kept; set in the user's
  file it does nothing;
- `allowManagedHooksOnly`: only managed hooks run; a `disableAllHooks` below the
  managed settings turns off the hooks below them only, a managed one turns off all;
- a managed file that is not JSON stops the run (the CLI exits 1 naming it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.live.settings import (
    MANAGED_DIR,
    SettingsError,
    load_settings,
    managed_dir,
    managed_files,
)
from tests.support.cli import fsm


def put(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(workspace, home, managed settings directory)."""
    ws, home, managed = tmp_path / "ws", tmp_path / "home", tmp_path / "etc-claude-code"
    for d in (ws, home, managed):
        d.mkdir()
    return ws, home, managed


def hook(name: str) -> dict:
    command = {"type": "command", "command": f"touch {name}"}
    return {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [command]}]}}


def hook_commands(settings) -> list[str]:
    return [h.command for m in settings.hooks for h in m.hooks]


def test_the_directory_is_etc_claude_code_unless_the_variable_says() -> None:
    assert managed_dir({}) == MANAGED_DIR == Path("/etc/claude-code")
    assert managed_dir({"FSM_AGENT_MANAGED_SETTINGS_DIR": " "}) == MANAGED_DIR
    assert managed_dir({"FSM_AGENT_MANAGED_SETTINGS_DIR": "/x"}) == Path("/x")


def test_the_file_then_the_drop_ins_in_name_order(places: tuple[Path, Path, Path]) -> None:
    _, _, managed = places
    assert managed_files(managed) == []
    d = managed / "managed-settings.d"
    for name in ("20-b.json", "10-a.json", ".hidden.json", "notes.txt", "c.JSON"):
        put(d / name, {})
    (d / "sub.json").mkdir()
    assert managed_files(managed) == [d / "10-a.json", d / "20-b.json"]
    put(managed / "managed-settings.json", {})
    assert managed_files(managed)[0] == managed / "managed-settings.json"


def test_managed_rules_and_mode_stand_above_the_users(places: tuple[Path, Path, Path]) -> None:
    ws, home, managed = places
    put(home / ".claude" / "settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    put(ws / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch b)"]}})
    put(
        managed / "managed-settings.json",
        {"permissions": {"allow": ["Bash(touch a)"], "defaultMode": "default"}},
    )
    put(managed / "managed-settings.d" / "20-b.json", {"permissions": {"defaultMode": "plan"}})
    put(
        managed / "managed-settings.d" / "10-a.json",
        {"permissions": {"defaultMode": "acceptEdits", "allow": ["Bash(touch c)"]}},
    )
    s = load_settings(str(ws), str(home), managed=managed)  # the workspace is not trusted
    assert [r.rule for r in s.permissions.allow] == ["Bash(touch a)", "Bash(touch c)"]
    assert s.permissions.default_mode == "plan"  # the last drop-in's
    assert s.permissions.allow[0].root == str(ws.resolve())  # `/path` is the project's
    assert s.permissions.sources[-3:] == (
        str(managed / "managed-settings.json"),
        str(managed / "managed-settings.d" / "10-a.json"),
        str(managed / "managed-settings.d" / "20-b.json"),
    )


def test_managed_rules_only_leaves_out_every_other_allow_ask_and_deny(
    places: tuple[Path, Path, Path],
) -> None:
    ws, home, managed = places
    put(
        home / ".claude" / "settings.json",
        {
            "permissions": {
                "allow": ["Bash(touch b)"],
                "deny": ["Bash(touch a)"],
                "defaultMode": "acceptEdits",
            },
            "allowManagedPermissionRulesOnly": False,
        },
    )
    put(
        ws / ".claude" / "settings.local.json",
        {"permissions": {"ask": ["Bash(touch c)"], "additionalDirectories": ["../lib"]}},
    )
    put(
        managed / "managed-settings.json",
        {"allowManagedPermissionRulesOnly": True, "permissions": {"allow": ["Bash(touch a)"]}},
    )
    s = load_settings(
        str(ws),
        str(home),
        managed=managed,
        allowed_tools=["Bash(touch d)"],
        disallowed_tools=["Bash(touch e)"],
    )
    p = s.permissions
    assert [r.rule for r in p.allow] == ["Bash(touch a)"]
    assert [r.rule for r in p.deny] == ["Bash(touch e)"]  # --disallowed-tools stays
    assert p.ask == ()
    assert p.default_mode == "acceptEdits" and len(p.additional_directories) == 1
    assert s.warnings == (
        f"Ignoring 2 permission rules from {home / '.claude' / 'settings.json'}: the managed "
        "settings set allowManagedPermissionRulesOnly",
        f"Ignoring 1 permission rule from {ws / '.claude' / 'settings.local.json'}: the "
        "managed settings set allowManagedPermissionRulesOnly",
        "Ignoring 1 permission rule from --allowed-tools: the managed settings set "
        "allowManagedPermissionRulesOnly",
    )
    # A later drop-in may turn it off again, as in the CLI; the user's own file cannot set it.
    put(managed / "managed-settings.d" / "1.json", {"allowManagedPermissionRulesOnly": False})
    again = load_settings(str(ws), str(home), managed=managed)
    assert len(again.permissions.allow) == 2 and again.warnings == ()
    (managed / "managed-settings.json").unlink()
    put(
        home / ".claude" / "settings.json",
        {"allowManagedPermissionRulesOnly": True, "permissions": {"allow": ["Bash(touch b)"]}},
    )
    assert len(load_settings(str(ws), str(home), managed=managed).permissions.allow) == 1


def test_hooks_managed_only_and_disable_all(places: tuple[Path, Path, Path]) -> None:
    ws, home, managed = places
    user, local = home / ".claude" / "settings.json", ws / ".claude" / "settings.local.json"
    put(user, hook("user"))
    put(local, hook("local"))
    put(managed / "managed-settings.json", hook("managed"))

    def commands() -> list[str]:
        return hook_commands(load_settings(str(ws), str(home), managed=managed))

    assert commands() == ["touch user", "touch local", "touch managed"]
    put(local, {**hook("local"), "disableAllHooks": True})  # below: turns off those below
    assert commands() == ["touch managed"]
    put(local, hook("local"))
    put(managed / "managed-settings.json", {**hook("managed"), "allowManagedHooksOnly": True})
    s = load_settings(str(ws), str(home), managed=managed)
    assert hook_commands(s) == ["touch managed"]
    assert s.warnings == (
        f"Ignoring 1 hook from {user}: the managed settings set allowManagedHooksOnly",
        f"Ignoring 1 hook from {local}: the managed settings set allowManagedHooksOnly",
    )
    put(managed / "managed-settings.json", {**hook("managed"), "disableAllHooks": True})
    assert commands() == []


def test_managed_bypass_switch_holds_and_a_managed_bypass_mode_is_honoured(
    places: tuple[Path, Path, Path],
) -> None:
    ws, home, managed = places
    put(home / ".claude" / "settings.json", {"permissions": {"defaultMode": "bypassPermissions"}})
    put(
        managed / "managed-settings.d" / "lock.json",
        {"permissions": {"disableBypassPermissionsMode": "disable"}},
    )
    s = load_settings(str(ws), str(home), managed=managed)
    assert s.bypass_disabled == str(managed / "managed-settings.d" / "lock.json")
    (managed / "managed-settings.d" / "lock.json").unlink()
    put(managed / "managed-settings.json", {"permissions": {"defaultMode": "bypassPermissions"}})
    s = load_settings(str(ws), str(home), managed=managed)
    assert s.permissions.default_mode == "bypassPermissions" and s.warnings == ()


@pytest.mark.parametrize(
    ("where", "text", "needle"),
    [
        ("managed-settings.json", "{not json", "managed-settings.json:1:2: not valid JSON"),
        ("managed-settings.d/1.json", "{nope", "1.json:1:2: not valid JSON"),
        (
            "managed-settings.json",
            '{"allowManagedHooksOnly": "yes"}',
            'allowManagedHooksOnly must be true or false (not "yes")',
        ),
        (
            "managed-settings.json",
            '{"permissions": {"allow": "Bash"}}',
            "permissions.allow must be a list of rule strings",
        ),
    ],
)
def test_a_bad_managed_file_is_one_clear_error(
    places: tuple[Path, Path, Path], where: str, text: str, needle: str
) -> None:
    ws, home, managed = places
    put(managed / where, text)
    with pytest.raises(SettingsError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        load_settings(str(ws), str(home), managed=managed)


def scenario(tmp_path: Path, command: str) -> Path:
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": command}}
    path = tmp_path / "s.json"
    put(path, {"prompt": "go", "turns": [{"content": [call]}, {"content": "done"}]})
    return path


def test_a_run_honours_the_variables_directory(
    places: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """End to end, as `fsm-agent run` reads them: the managed allow rule lets the call
    run in an untrusted workspace, and the managed lock turns bypass down to default
    (the user's own settings cannot lift it)."""
    ws, home, managed = places
    put(
        managed / "managed-settings.json",
        {"permissions": {"allow": ["Bash(touch made)"], "disableBypassPermissionsMode": "disable"}},
    )
    env = {"HOME": str(home), "FSM_AGENT_MANAGED_SETTINGS_DIR": str(managed)}
    args = ("run", "--scripted", str(scenario(tmp_path, "touch made")), "--cwd", str(ws))
    ran = fsm(*args, "--log", str(tmp_path / "a.jsonl"), env=env)
    assert ran.returncode == 0, ran.stderr
    assert (ws / "made").exists()
    other = scenario(tmp_path, "touch other")
    bypass = fsm(
        "run",
        "--scripted",
        str(other),
        "--cwd",
        str(ws),
        "--log",
        str(tmp_path / "b.jsonl"),
        "--permission-mode",
        "bypassPermissions",
        env=env,
    )
    assert bypass.returncode == 0, bypass.stderr
    assert "disableBypassPermissionsMode" in bypass.stderr and "Traceback" not in bypass.stderr
    assert not (ws / "other").exists()
    put(managed / "managed-settings.json", "[oops")
    broken = fsm(*args, "--log", str(tmp_path / "c.jsonl"), env=env)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert broken.stderr.strip().splitlines() == [
        f"fsm-agent: error: {managed / 'managed-settings.json'}:1:2: not valid JSON: "
        "Expecting value"
    ]
