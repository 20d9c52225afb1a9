"""The pure permission layer decides from what it is given: paths arrive resolved, or
through the functions passed in, so these tests hand it plain functions and no file."""

from __future__ import annotations

import ast
from pathlib import Path

from fsm_agent.core.permission_types import PermissionSettings, PermissionUpdate, RuleSource
from fsm_agent.core.permission_types import RuleValue as Value
from fsm_agent.policy.permission_updates import SESSION, Destinations, applied, rewritten
from fsm_agent.policy.permissions import Workspace, call_facts, denied_reads, evaluate

PACKAGE = Path(__file__).resolve().parents[2] / "fsm_agent"
PURE = [
    *sorted((PACKAGE / "policy").glob("*.py")),
    *sorted((PACKAGE / "hooks").glob("*.py")),
    PACKAGE / "core" / "permission_types.py",
]
IO_MODULES = {"glob", "fnmatch", "pathlib", "tempfile", "shutil", "subprocess", "time"}
IO_CALLS = {"realpath", "expanduser", "abspath", "getcwd", "scandir", "listdir", "readlink",
            "islink", "isdir", "isfile", "exists", "lexists", "stat", "environ", "getenv",
            "open", "read_text", "write_text"}  # fmt: skip

LINKS = {"/ws/link": "/elsewhere/file", "/home/u/.claude/settings.json": "/dots/settings.json"}


def real(path: str) -> str:
    """A made-up file system: two links, everything else where it is written."""
    return LINKS.get(path, path)


def test_no_pure_module_reads_a_file_the_clock_or_the_environment() -> None:
    """What a pure layer needs arrives as an argument; a call that asks the machine
    itself belongs in `fsm_agent/live/`."""
    found = []
    for path in PURE:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                )
                found += [f"{path.name}: import {n}" for n in names if n in IO_MODULES]
            elif isinstance(node, ast.Attribute) and node.attr in IO_CALLS:
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.Name) and node.id == "open":
                found.append(f"{path.name}:{node.lineno}: open")
    assert found == []


def test_a_call_is_judged_by_where_the_given_resolver_says_its_path_leads() -> None:
    ws = Workspace("/ws", "/home/u")
    inside = call_facts("Read", {"file_path": "/ws/notes"}, ws, real)
    linked = call_facts("Read", {"file_path": "/ws/link"}, ws, real)
    assert linked.paths == ("/elsewhere/file",)
    assert evaluate(inside, PermissionSettings(), "default", ws).behavior == "allow"
    assert evaluate(linked, PermissionSettings(), "default", ws).outside == ("/elsewhere/file",)


def test_a_read_deny_rule_hides_a_file_by_the_real_path_it_is_given() -> None:
    deny = (RuleSource("Read(//elsewhere/**)", "/ws", "test"),)
    hidden = denied_reads(PermissionSettings(deny=deny), Workspace("/ws", "/home/u"), real)
    assert hidden is not None
    assert hidden("/ws/link")
    assert not hidden("/ws/notes")


def test_updates_land_where_the_destinations_say_without_a_file() -> None:
    """A settings file's rules are told by the real path of their origin; a directory is
    resolved by the function given; session rules are anchored at the given root."""
    places = Destinations(
        "/real-ws",
        {
            "userSettings": ("/home/u/.claude/settings.json", "/home/u/.claude"),
            "projectSettings": ("/ws/.claude/settings.json", "/real-ws"),
            "localSettings": ("/ws/.claude/settings.local.json", "/real-ws"),
        },
        real,
        lambda directory: "/resolved/" + directory,
    )
    held = PermissionSettings(
        allow=(
            RuleSource("Bash(ls *)", "/home/u/.claude", "/dots/settings.json"),
            RuleSource("Bash(make *)", "/real-ws", "/ws/.claude/settings.json"),
        )
    )
    updates = [
        PermissionUpdate("replaceRules", "userSettings", (Value("Edit"),), behavior="allow"),
        PermissionUpdate("addRules", "session", (Value("Bash", "git *"),), behavior="allow"),
        PermissionUpdate("addDirectories", "session", directories=("lib", "lib")),
        PermissionUpdate("setMode", "session", mode="bypassPermissions"),
    ]
    settings, mode, notes = applied(held, "default", updates, places, start_mode="default")
    assert settings.allow == (
        RuleSource("Bash(make *)", "/real-ws", "/ws/.claude/settings.json"),
        RuleSource("Edit", "/home/u/.claude", "/home/u/.claude/settings.json"),
        RuleSource("Bash(git *)", "/real-ws", SESSION),
    )
    assert settings.additional_directories == ("/resolved/lib",)
    assert mode == "default"
    assert notes == [
        "PermissionRequest hook's setMode 'bypassPermissions' is ignored: the run was not "
        "started in bypassPermissions mode"
    ]


def test_a_settings_files_permissions_are_rewritten_keeping_what_else_they_hold() -> None:
    held = {"allow": ["Bash(ls *)", 3], "defaultMode": "plan", "x": 1}
    add = PermissionUpdate(
        "addRules", "localSettings", (Value("Bash", "ls *"), Value("Read")), behavior="allow"
    )
    assert rewritten(held, add) == {"allow": ["Bash(ls *)", "Read"], "defaultMode": "plan", "x": 1}
    assert held["allow"] == ["Bash(ls *)", 3], "the object given is left as it was"
    dirs = PermissionUpdate("addDirectories", "localSettings", directories=("a", "a\0b", "a"))
    assert rewritten({}, dirs) == {"additionalDirectories": ["a"]}
