"""A PermissionRequest hook's `updatedPermissions`: read as Claude Code's schema reads
them, applied to the run's permissions (rules, mode, directories) so later calls are
judged by them, written to the settings file a destination names, and replayed from
the log with no hook run and no file written."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core.events import Notice
from fsm_agent.core.permission_types import (
    PermissionSettings,
    PermissionUpdate,
    RuleSource,
    RuleValue,
    UpdateError,
    read_updates,
    update_json,
)
from fsm_agent.hooks.commands import HookRun, interpret
from fsm_agent.hooks.outcomes import HookOutcome, merge
from fsm_agent.live.permission_updates import apply_updates, persist
from fsm_agent.live.scripted import Scenario, ScenarioError
from fsm_agent.policy.permission_updates import SESSION
from tests.support.cli import fsm
from tests.support.hooks import (
    ASKED,
    answering,
    bash_run,
    decision,
    requests,
    results_by_id,
    settings_with,
    tool_turn,
)


def add_rule(rule: str, destination: str = "session", behavior: str = "allow") -> dict:
    tool, _, content = rule.partition("(")
    value = {"toolName": tool} | ({"ruleContent": content[:-1]} if content else {})
    return {"type": "addRules", "rules": [value], "behavior": behavior,
            "destination": destination}  # fmt: skip


def allowing(tmp_path: Path, *updates: dict) -> str:
    """A PermissionRequest hook that allows, with `updates` as its updatedPermissions."""
    return answering(tmp_path, decision("allow", updatedPermissions=list(updates)))


def effects(log: Path, name: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in records if r.get("t") == "effect" and r["name"] == name]


# --- reading ---------------------------------------------------------------


def test_every_update_type_is_read_in_claude_codes_shape_and_written_back_so() -> None:
    given = [
        add_rule("Bash(npm test *)"),
        {"type": "replaceRules", "rules": [{"toolName": "Read"}], "behavior": "deny",
         "destination": "localSettings"},
        {"type": "removeRules", "rules": [], "behavior": "ask", "destination": "projectSettings"},
        {"type": "setMode", "mode": "acceptEdits", "destination": "session", "extra": 1},
        {"type": "addDirectories", "directories": ["../lib"], "destination": "userSettings"},
        {"type": "removeDirectories", "directories": [], "destination": "cliArg"},
    ]  # fmt: skip
    updates = read_updates(given)
    assert updates[0] == PermissionUpdate(
        "addRules", "session", rules=(RuleValue("Bash", "npm test *"),), behavior="allow"
    )
    assert updates[3] == PermissionUpdate("setMode", "session", mode="acceptEdits")
    assert updates[4].directories == ("../lib",)
    given[3].pop("extra")  # other keys are ignored, as zod ignores them
    assert [update_json(u) for u in updates] == given


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"type": "addRules"}, "updatedPermissions: expected a list"),
        ([{"type": "addRule", "destination": "session"}], r"\[0\]\.type: expected one of"),
        ([{"type": "setMode", "mode": "default"}], r"\[0\]\.destination: .*\(missing\)"),
        ([{"type": "setMode", "mode": "yolo", "destination": "session"}], r"\.mode: .*'yolo'"),
        ([{**add_rule("Bash"), "behavior": "always"}], r"\.behavior: expected one of"),
        ([{**add_rule("Bash"), "rules": "Bash"}], r"\.rules: expected a list"),
        ([{**add_rule("Bash"), "rules": [{"tool": "Bash"}]}], r"rules\[0\]: .*'toolName'"),
        ([{**add_rule("Bash"), "rules": [{"toolName": "Bash", "ruleContent": None}]}],
         r"rules\[0\]\.ruleContent: expected a string"),
        ([{"type": "addDirectories", "directories": [1], "destination": "session"}],
         r"\.directories: expected a list of strings"),
        (["addRules"], r"\[0\]: expected an object"),
    ],
)  # fmt: skip
def test_a_malformed_update_says_where(value: Any, error: str) -> None:
    with pytest.raises(UpdateError, match=error):
        read_updates(value)


def test_a_hook_whose_updates_do_not_fit_the_schema_has_no_say() -> None:
    """Claude Code validates the hook's whole JSON: a malformed update fails it, so the
    allow is not taken either (a non-blocking error); a deny carries no updates, so
    whatever it says of them is ignored."""

    def said(answer: dict[str, Any]) -> HookOutcome:
        return interpret("PermissionRequest", HookRun("h", 0, json.dumps(answer), ""))

    bad = said(
        decision(
            "allow", updatedPermissions=[{"type": "setMode", "mode": "x", "destination": "session"}]
        )
    )
    assert bad.permission_decision is None
    [message] = bad.messages
    assert message.startswith(
        "PermissionRequest hook `h` error: JSON validation failed: hookSpecificOutput."
        "decision.updatedPermissions[0].mode: expected one of"
    )
    no_list = said(decision("allow", updatedPermissions=None))
    assert no_list.permission_decision is None
    deny = said(decision("deny", message="no", updatedPermissions=[{"type": "?"}]))
    assert (deny.permission_decision, deny.updated_permissions) == ("deny", ())
    fine = said(decision("allow", updatedPermissions=[add_rule("Bash(ls *)")]))
    assert fine == HookOutcome(
        permission_decision="allow", updated_permissions=read_updates([add_rule("Bash(ls *)")])
    )
    assert said(decision("allow", updatedPermissions=[])) == HookOutcome(
        permission_decision="allow"
    )


def test_merged_hooks_keep_the_updates_of_those_that_allowed_in_order() -> None:
    one, two = (read_updates([add_rule(r)]) for r in ("Bash(a *)", "Bash(b *)"))
    allow = [HookOutcome(permission_decision="allow", updated_permissions=u) for u in (one, two)]
    assert merge(allow).updated_permissions == one + two
    deny = HookOutcome(permission_decision="deny")
    assert merge([allow[0], deny]).updated_permissions == ()


# --- applying --------------------------------------------------------------


def _apply(settings: PermissionSettings, *updates: dict, mode: str = "default",
           start: str = "default", ws: str = "/ws", home: str = "/home/u") -> Any:  # fmt: skip
    return apply_updates(
        settings, mode, read_updates(list(updates)), cwd=ws, home=home, start_mode=start
    )


def test_rule_updates_touch_only_the_rules_of_their_destination() -> None:
    local = "/ws/.claude/settings.local.json"
    base = PermissionSettings(
        allow=(RuleSource("Bash(make *)", "/ws", local), RuleSource("Bash(ls *)", "/ws", SESSION)),
        deny=(RuleSource("Read(.env)", "/ws", "/home/u/.claude/settings.json"),),
    )
    added, _, _ = _apply(base, add_rule("Bash(npm test *)"), add_rule("Edit(src/**)", "cliArg"))
    assert added.allow[2:] == (
        RuleSource("Bash(npm test *)", "/ws", SESSION),
        RuleSource("Edit(src/**)", "/ws", "--allowed-tools"),
    )
    replaced, _, _ = _apply(
        base, {**add_rule("Bash(git *)"), "type": "replaceRules", "destination": "localSettings"}
    )
    assert [r.rule for r in replaced.allow] == ["Bash(ls *)", "Bash(git *)"]
    assert replaced.allow[1].origin == local
    # `Bash(*)` is `Bash`, as Claude Code normalizes rules it compares; only the session's go.
    both = PermissionSettings(
        allow=(RuleSource("Bash", "/ws", local), RuleSource("Bash(*)", "/ws", SESSION))
    )
    removed, _, _ = _apply(both, {**add_rule("Bash"), "type": "removeRules"})
    assert removed.allow == (RuleSource("Bash", "/ws", local),)
    denied, _, _ = _apply(base, add_rule("Read(//etc/**)", "userSettings", "deny"))
    assert denied.deny[1] == RuleSource(
        "Read(//etc/**)", os.path.realpath("/home/u/.claude"), "/home/u/.claude/settings.json"
    )


def test_set_mode_and_directories() -> None:
    settings, mode, notes = _apply(
        PermissionSettings(additional_directories=("/no-lib",)),
        {"type": "setMode", "mode": "plan", "destination": "session"},
        {
            "type": "addDirectories",
            "directories": ["../no-data", "/no-lib"],
            "destination": "session",
        },
        {"type": "removeDirectories", "directories": ["/no-lib"], "destination": "localSettings"},
    )
    assert (mode, settings.additional_directories, notes) == ("plan", ("/no-data",), [])
    # bypassPermissions only for a run started in it, as Claude Code refuses it otherwise.
    bypass = {"type": "setMode", "mode": "bypassPermissions", "destination": "session"}
    _, mode, notes = _apply(PermissionSettings(), bypass, mode="acceptEdits")
    assert mode == "acceptEdits"
    assert notes == [
        "PermissionRequest hook's setMode 'bypassPermissions' is ignored: the run was not "
        "started in bypassPermissions mode"
    ]
    assert _apply(PermissionSettings(), bypass, mode="plan", start="bypassPermissions")[1] == (
        "bypassPermissions"
    )
    _, mode, notes = _apply(PermissionSettings(), {**bypass, "mode": "auto"}, mode="plan")
    assert mode == "default" and "safety classifier" in notes[0]


def test_a_rule_fsm_agent_cannot_read_is_dropped_with_a_note() -> None:
    settings, _, notes = _apply(PermissionSettings(), add_rule("Bash Tool"), add_rule("Read"))
    assert [r.rule for r in settings.allow] == ["Read"]
    assert notes == [
        "PermissionRequest hook's rule 'Bash Tool' is ignored: not a permission rule: "
        "'Bash Tool' (expected Tool or Tool(specifier))"
    ]


# --- writing settings files ------------------------------------------------


def test_settings_file_destinations_are_written_as_claude_code_writes_them(
    tmp_path: Path,
) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    local = ws / ".claude" / "settings.local.json"
    (ws / ".claude").mkdir()
    local.write_text(json.dumps({"model": "x", "permissions": {"allow": ["Bash(ls *)"]}}))

    def write(*updates: dict) -> list[str]:
        return [persist(u, str(ws), str(home)) for u in read_updates(list(updates))]

    notes = write(
        add_rule("Bash(ls *)", "localSettings"),  # already there: added once
        add_rule("Bash(npm test:*)", "localSettings"),
        {"type": "setMode", "mode": "acceptEdits", "destination": "localSettings"},
        {"type": "addDirectories", "directories": ["../lib", "../lib"],
         "destination": "localSettings"},
        add_rule("Read(.env)", "projectSettings", "deny"),
        add_rule("WebFetch", "userSettings"),
    )  # fmt: skip
    assert notes[0] == f"PermissionRequest hook's addRules (localSettings) written to {local}"
    assert json.loads(local.read_text()) == {
        "model": "x",
        "permissions": {
            "allow": ["Bash(ls *)", "Bash(npm test:*)"],
            "defaultMode": "acceptEdits",
            "additionalDirectories": ["../lib"],
        },
    }
    assert json.loads((ws / ".claude" / "settings.json").read_text()) == {
        "permissions": {"deny": ["Read(.env)"]}
    }
    assert json.loads((home / ".claude" / "settings.json").read_text()) == {
        "permissions": {"allow": ["WebFetch"]}
    }
    write(
        {**add_rule("Bash(ls)"), "type": "removeRules", "destination": "localSettings"},
        {"type": "removeDirectories", "directories": ["../lib"], "destination": "localSettings"},
        {**add_rule("Edit"), "type": "replaceRules", "destination": "userSettings"},
    )
    assert json.loads(local.read_text())["permissions"]["additionalDirectories"] == []
    assert json.loads((home / ".claude" / "settings.json").read_text()) == {
        "permissions": {"allow": ["Edit"]}
    }
    # `Bash(ls)` is not `Bash(ls *)`: removed is only what the rule names.
    assert json.loads(local.read_text())["permissions"]["allow"] == [
        "Bash(ls *)", "Bash(npm test:*)"
    ]  # fmt: skip


def test_a_settings_file_that_does_not_parse_is_left_as_it_is(tmp_path: Path) -> None:
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text('{"permissions": {"allow": [}')
    [note] = [persist(u, str(tmp_path), str(tmp_path)) for u in read_updates(
        [add_rule("Bash", "localSettings")])]  # fmt: skip
    assert note.startswith(f"PermissionRequest hook's addRules was not written to {local}: ")
    assert local.read_text() == '{"permissions": {"allow": [}'
    local.write_text('{"permissions": ["Bash"]}')
    [note] = [persist(u, str(tmp_path), str(tmp_path)) for u in read_updates(
        [add_rule("Bash", "localSettings")])]  # fmt: skip
    assert "not a settings object with a 'permissions' object" in note
    assert local.read_text() == '{"permissions": ["Bash"]}'


# --- in a run --------------------------------------------------------------


def test_a_session_rule_from_the_hook_answers_the_later_identical_call(
    workspace: Path, tmp_path: Path
) -> None:
    """The hook's `addRules` (session) holds for the rest of the run: the same command
    later is allowed by the rule, not asked about, and the hook hears of it once. The
    log replays with no hook run, to the same path and digests."""
    hook = allowing(tmp_path, add_rule("Bash(touch *)"))
    seen: list[Any] = []
    result = bash_run(
        workspace, tmp_path, settings_with(hook), ASKED, ASKED, "touch other",
        on_event=seen.append,
    )  # fmt: skip
    r = results_by_id(result)
    assert [r[t].is_error for t in ("t1", "t2", "t3")] == [False] * 3
    assert (workspace / "made").exists() and (workspace / "other").exists()
    assert len(requests(tmp_path)) == 1
    assert not [e for e in seen if isinstance(e, Notice)]
    log = tmp_path / "run0.jsonl"
    [update] = effects(log, "permission_update")
    assert update["args"] == [add_rule("Bash(touch *)")]
    assert update["result"] == {"mode": "default", "additional_directories": []}
    decisions = [e["result"] for e in effects(log, "permission")]
    assert [d.get("rule") for d in decisions] == [None, "Bash(touch *)", "Bash(touch *)"]
    (workspace / "made").unlink()
    (workspace / "other").unlink()
    checked = fsm("replay", "--check", str(log))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (workspace / "made").exists() and len(requests(tmp_path)) == 1


def test_a_denys_updates_and_a_malformed_allow_change_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    deny = answering(
        tmp_path, decision("deny", message="no", updatedPermissions=[add_rule("Bash")])
    )
    result = bash_run(workspace, tmp_path, settings_with(deny), ASKED, ASKED)
    assert all("denied Bash: no" in results_by_id(result)[t].text for t in ("t1", "t2"))
    assert len(requests(tmp_path)) == 2

    bad = allowing(tmp_path, {**add_rule("Bash"), "destination": "everywhere"})
    seen: list[Any] = []
    result = bash_run(workspace, tmp_path, settings_with(bad), ASKED, on_event=seen.append)
    assert "no terminal to ask the user" in results_by_id(result)["t1"].text
    [notice] = [e.text for e in seen if isinstance(e, Notice)]
    assert "JSON validation failed" in notice and "destination" in notice
    assert not (workspace / "made").exists()
    assert not effects(tmp_path / "run1.jsonl", "permission_update")


def test_set_mode_judges_the_later_calls_in_the_new_mode(workspace: Path, tmp_path: Path) -> None:
    """`setMode acceptEdits`: the later Write is allowed by the mode, unasked, and the
    hooks of later calls are told the mode."""
    hook = allowing(tmp_path, {"type": "setMode", "mode": "acceptEdits", "destination": "session"})
    settings = settings_with(hook)
    settings["hooks"]["PermissionRequest"][0]["matcher"] = "Bash|Write"
    settings["hooks"]["PreToolUse"] = [{"hooks": [{"type": "command", "command": hook}]}]
    turns = [
        tool_turn(("t1", "Bash", {"command": ASKED})),
        tool_turn(("t2", "Write", {"file_path": "w.txt", "content": "hi"})),
        {"content": "done"},
    ]
    log = tmp_path / "run.jsonl"
    data = {"prompt": "go", "settings": settings, "turns": turns}
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    assert (workspace / "w.txt").read_text() == "hi"
    sent = [(s["hook_event_name"], s["permission_mode"]) for s in requests(tmp_path)]
    assert sent == [
        ("PreToolUse", "default"),
        ("PermissionRequest", "default"),
        ("PreToolUse", "acceptEdits"),
    ]
    modes = [e["args"].get("mode", "default") for e in effects(log, "permission")]
    assert modes == ["default", "acceptEdits"]
    again = replay(log)
    assert (again.path, again.messages) == (result.path, result.messages)


def test_add_directories_opens_a_directory_to_the_later_calls(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("a.txt", "b.txt"):
        (outside / name).write_text(f"{name} text\n")
    hook = allowing(
        tmp_path,
        {"type": "addDirectories", "directories": [str(outside)], "destination": "session"},
    )
    settings = settings_with(hook)
    settings["hooks"]["PermissionRequest"][0]["matcher"] = "Read"
    turns = [
        tool_turn(("t1", "Read", {"file_path": str(outside / "a.txt")})),
        tool_turn(("t2", "Read", {"file_path": str(outside / "b.txt")})),
        {"content": "done"},
    ]
    log = tmp_path / "run.jsonl"
    data = {"prompt": "go", "settings": settings, "turns": turns}
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    r = results_by_id(result)
    assert "a.txt text" in r["t1"].text and "b.txt text" in r["t2"].text
    assert len(requests(tmp_path)) == 1
    [update] = effects(log, "permission_update")
    assert update["result"] == {
        "mode": "default", "additional_directories": [os.path.realpath(outside)]
    }  # fmt: skip
    assert replay(log).messages == result.messages


def test_a_local_settings_rule_is_written_once_and_a_replay_writes_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    """`localSettings` goes to `.claude/settings.local.json`, as in Claude Code: the run
    uses it at once, a later run reads it from the file, and a replay writes nothing."""
    hook = allowing(tmp_path, add_rule("Bash(touch *)", "localSettings"))
    seen: list[Any] = []
    result = bash_run(workspace, tmp_path, settings_with(hook), ASKED, ASKED, on_event=seen.append)
    assert not results_by_id(result)["t2"].is_error
    local = workspace / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(touch *)"]}}
    shown = f"PermissionRequest hook's addRules (localSettings) written to {local}"
    assert [e.text for e in seen if isinstance(e, Notice)] == [shown]
    local.unlink()
    replayed: list[Any] = []
    replay(tmp_path / "run0.jsonl", on_event=replayed.append)
    assert not local.exists()
    assert [e.text for e in replayed if isinstance(e, Notice)] == [shown]
    assert len(requests(tmp_path)) == 1

    local.write_text(json.dumps({"permissions": {"allow": ["Bash(touch *)"]}}))
    scenario = tmp_path / "again.json"
    scenario.write_text(json.dumps({"turns": [tool_turn(("t1", "Bash", {"command": "touch x"})),
                                              {"content": "ok"}]}))  # fmt: skip
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "go")
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "x").exists() and len(requests(tmp_path)) == 1


@pytest.mark.parametrize("config_dir", [None, "config"])
def test_user_settings_go_to_the_home_directory(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_dir: str | None
) -> None:
    """Or to `$CLAUDE_CONFIG_DIR`, where the CLI keeps them when it is set."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    if config_dir is None:
        monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    else:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / config_dir))
    hook = allowing(tmp_path, add_rule("Bash(touch *)", "userSettings"))
    bash_run(workspace, tmp_path, settings_with(hook), ASKED)
    user = (tmp_path / config_dir if config_dir else home / ".claude") / "settings.json"
    assert json.loads(user.read_text()) == {"permissions": {"allow": ["Bash(touch *)"]}}
    assert config_dir is None or not (home / ".claude" / "settings.json").exists()


def test_a_scenario_scripts_the_updates_in_claude_codes_shape(
    workspace: Path, tmp_path: Path
) -> None:
    data = {
        "prompt": "go",
        "hooks": {
            "PermissionRequest": [
                {"permission_decision": "allow", "updated_permissions": [add_rule("Bash(touch *)")]}
            ]
        },
        "turns": [
            tool_turn(("t1", "Bash", {"command": ASKED})),
            tool_turn(("t2", "Bash", {"command": "touch again"})),
            {"content": "done"},
        ],
    }
    log = tmp_path / "run.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    assert (workspace / "made").exists() and (workspace / "again").exists()
    assert replay(log).messages == result.messages
    bad = {"turns": [], "hooks": {"PermissionRequest": [{"updated_permissions": [{"type": 1}]}]}}
    with pytest.raises(ScenarioError, match=r"\.type: expected one of .*updated_permissions\[0\]"):
        Scenario.parse(bad)


def test_a_chats_later_runs_keep_the_session_updates_until_clear(
    workspace: Path, tmp_path: Path
) -> None:
    """As an "always" answer's rule, a hook's session update holds for the chat's later
    messages; `/clear` ends the session and them, not what a settings file was given."""
    from fsm_agent.cli.launch import Plan
    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.config import RunConfig
    from fsm_agent.core.messages import user
    from fsm_agent.live.scripted import ScriptedModel
    from fsm_agent.live.settings import parse_settings

    hook = allowing(
        tmp_path,
        add_rule("Bash(touch *)"),
        add_rule("Bash(mkdir *)", "localSettings"),
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
    )
    loaded = parse_settings(settings_with(hook), "settings", str(workspace), str(workspace))
    config = RunConfig(cwd=str(workspace), permissions=loaded.permissions, hooks=loaded.hooks)
    turns = [tool_turn(("t1", "Bash", {"command": ASKED})), {"content": "one"}]
    turns += [tool_turn(("t2", "Bash", {"command": "touch b"})), {"content": "two"}]
    model = ScriptedModel(Scenario.parse({"turns": turns}))
    plan = Plan(model=model, config=config, hooks=None, abort=AbortSignal(),
                log=tmp_path / "chat.jsonl")  # fmt: skip
    asyncio.run(plan.arun([user("one")], None))
    second = asyncio.run(plan.arun([user("two")], None))
    assert (workspace / "b").exists() and len(requests(tmp_path)) == 1
    assert plan.config.permission_mode == "acceptEdits"
    assert [r.rule for r in plan.config.permissions.allow] == ["Bash(touch *)", "Bash(mkdir *)"]
    assert replay(second.log_path or "").messages == second.messages  # the header holds them
    plan.clear()
    assert plan.config.permission_mode == "default"
    assert [r.rule for r in plan.config.permissions.allow] == ["Bash(mkdir *)"]


def test_a_fork_goes_on_with_the_updates_its_replayed_part_made(
    workspace: Path, tmp_path: Path
) -> None:
    hook = allowing(tmp_path, add_rule("Bash(touch *)"))
    bash_run(workspace, tmp_path, settings_with(hook), ASKED, "echo hi")
    parent = tmp_path / "run0.jsonl"
    records = [json.loads(line) for line in parent.read_text().splitlines()]
    before = max(r["step"] for r in records if r.get("to") == "api_call")  # the second call
    scenario = tmp_path / "fork.json"
    scenario.write_text(json.dumps({"turns": [tool_turn(("f1", "Bash", {"command": "touch f"})),
                                              {"content": "forked"}]}))  # fmt: skip
    fork = tmp_path / "fork.jsonl"
    proc = fsm(
        "replay", str(parent), "--fork-at", str(before), "--scripted", str(scenario),
        "--cwd", str(workspace), "--log", str(fork),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (workspace / "f").exists()
    assert len(requests(tmp_path)) == 1  # the fork's call was allowed by the rule


def test_the_records_match_the_schema_and_their_damage_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    """The schema types the updates a hook outcome holds and the `permission_update`
    effect; a value a replay refuses as damaged (exit 2) the schema refuses too."""
    import jsonschema

    from tests.conftest import ROOT
    from tests.support.logs import assert_damage_refused

    hook = allowing(
        tmp_path,
        add_rule("Bash(touch *)"),
        {"type": "addDirectories", "directories": ["sub"], "destination": "session"},
    )
    bash_run(workspace, tmp_path, settings_with(hook), ASKED, ASKED)
    log = tmp_path / "run0.jsonl"
    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for record in rows:
        jsonschema.validate(record, schema)
    hooks = next(i for i, r in enumerate(rows) if r.get("args") == "PermissionRequest")
    update = next(i for i, r in enumerate(rows) if r.get("name") == "permission_update")
    damages = {
        "kind": (hooks, ("result", "updated_permissions", 0, "type"), "add"),
        "rules": (hooks, ("result", "updated_permissions", 0, "rules"), "Bash"),
        "mode": (update, ("result", "mode"), 5),
        "dirs": (update, ("result", "additional_directories"), "sub"),
    }
    assert_damage_refused(rows, damages, schema, tmp_path)


def test_a_waiting_question_is_judged_by_the_updates_a_hook_made_meanwhile(
    workspace: Path,
) -> None:
    """As after an "always": a question whose turn comes once a hook's rules allow its
    call is not put; one whose "always" rule a hook took off again is."""
    from fsm_agent.core.permission_types import ALLOW_ONCE, DENY, PermissionAsk, PermissionRequest
    from fsm_agent.live.approvals import Approvals

    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return DENY

    approvals = Approvals(PermissionSettings(), str(workspace), prompter=prompter)
    call = PermissionRequest("Bash", {"command": "touch x"})
    question = PermissionAsk("Bash", call.input, "needs approval", "Bash(touch *)")
    assert approvals.check(call).behavior == "ask"
    approvals.update(read_updates([add_rule("Bash(touch *)")]))
    assert asyncio.run(approvals.ask(question, recheck=call)) == ALLOW_ONCE
    assert asked == []
    approvals.grant(question)
    approvals.update(read_updates([{**add_rule("Bash(touch *)"), "type": "removeRules"}]))
    assert approvals.check(call).behavior == "ask"
    assert asyncio.run(approvals.ask(question)) == DENY
    assert asked == [question]


def test_a_directory_no_path_can_hold_is_left_out(tmp_path: Path) -> None:
    """A null byte or a lone surrogate (JSON lets a hook send either) names no
    directory: it is left out, never a traceback, and never written where it would
    make the settings file one the next run refuses."""
    updates = read_updates(
        [{"type": "addDirectories", "directories": ["a\0b", "\ud800", "ok"],
          "destination": "localSettings"}]
    )  # fmt: skip
    settings, _, notes = apply_updates(
        PermissionSettings(), "default", updates, cwd=str(tmp_path), home=str(tmp_path),
        start_mode="default",
    )  # fmt: skip
    assert settings.additional_directories == (str(tmp_path / "ok"),)
    assert len(notes) == 2 and all("no path can hold it" in n for n in notes)
    persist(updates[0], str(tmp_path), str(tmp_path))
    written = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert written == {"permissions": {"additionalDirectories": ["ok"]}}


def test_a_refused_bypass_is_not_written_for_the_next_run_either(tmp_path: Path) -> None:
    from fsm_agent.live.approvals import Approvals

    bypass = {"type": "setMode", "mode": "bypassPermissions", "destination": "localSettings"}
    approvals = Approvals(PermissionSettings(), str(tmp_path), home=str(tmp_path))
    updated = approvals.update(read_updates([bypass, {**bypass, "mode": "plan"}]))
    assert updated.mode == "plan" and "is ignored" in updated.messages[0]
    written = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert written == {"permissions": {"defaultMode": "plan"}}
    started = Approvals(PermissionSettings(), str(tmp_path), home=str(tmp_path),
                        mode="bypassPermissions")  # fmt: skip
    assert started.update(read_updates([bypass])).mode == "bypassPermissions"
    written = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert written == {"permissions": {"defaultMode": "bypassPermissions"}}


def test_a_settings_file_that_is_a_link_stays_one(tmp_path: Path) -> None:
    """~/.claude/settings.json is often a link into a dotfiles repository: the update
    goes to the file it leads to, and the link is kept."""
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"permissions": {"allow": ["Read"]}}')
    (tmp_path / ".claude").mkdir()
    link = tmp_path / ".claude" / "settings.json"
    link.symlink_to(dotfiles)
    [update] = read_updates([add_rule("Edit", "userSettings")])
    persist(update, str(tmp_path / "ws"), str(tmp_path))
    assert link.is_symlink()
    assert json.loads(dotfiles.read_text()) == {"permissions": {"allow": ["Read", "Edit"]}}


def test_a_settings_file_keeps_its_mode(tmp_path: Path) -> None:
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text("{}")
    local.chmod(0o640)
    [update] = read_updates([add_rule("Edit", "localSettings")])
    persist(update, str(tmp_path), str(tmp_path))
    assert (local.stat().st_mode & 0o777, json.loads(local.read_text())) == (
        0o640, {"permissions": {"allow": ["Edit"]}}
    )  # fmt: skip
