"""PermissionRequest hooks: asked where the permission question would be put, they answer
it for the user (allow, deny, or no opinion), with no terminal too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core.events import Notice, ToolRefused
from fsm_agent.core.permission_types import ALLOW_ONCE, PermissionAsk
from fsm_agent.hooks.commands import HookRun, interpret
from fsm_agent.hooks.outcomes import HookOutcome, merge
from fsm_agent.live.scripted import Scenario, ScenarioError
from tests.support.cli import fsm
from tests.support.hooks import (
    ASKED,
    answering,
    bash_run,
    decision,
    effect_records,
    requests,
    results_by_id,
    script,
    settings_with,
    tool_turn,
)
from tests.support.logs import reseal


def test_an_allow_runs_a_call_that_would_be_denied_without_a_terminal(
    workspace: Path, tmp_path: Path
) -> None:
    hook = answering(tmp_path, decision("allow"))
    result = bash_run(workspace, tmp_path, settings_with(hook), ASKED, "echo hi")
    r = results_by_id(result)
    assert not r["t1"].is_error, r["t1"].text
    assert (workspace / "made").exists()
    assert r["t2"].text == "hi"
    # Asked once: the read-only `echo` needs no permission, so no hook hears of it.
    [sent] = requests(tmp_path)
    assert sent["hook_event_name"] == "PermissionRequest"
    assert (sent["tool_name"], sent["tool_input"]) == ("Bash", {"command": ASKED})
    assert sent["permission_suggestions"] == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "touch *"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]
    assert "tool_use_id" not in sent
    assert (sent["cwd"], sent["permission_mode"]) == (str(workspace), "default")
    assert sent["session_id"] == result.session_id


def test_a_deny_refuses_the_call_with_the_hooks_message(workspace: Path, tmp_path: Path) -> None:
    hook = answering(tmp_path, decision("deny", message="Builds only on CI"))
    seen: list[Any] = []
    result = bash_run(workspace, tmp_path, settings_with(hook), ASKED, on_event=seen.append)
    text = results_by_id(result)["t1"].text
    assert results_by_id(result)["t1"].is_error
    assert text == (
        "<tool_use_error>A PermissionRequest hook denied Bash: Builds only on CI</tool_use_error>"
    )
    assert not (workspace / "made").exists()
    assert result.reason == "completed"
    assert [e.denied_by for e in seen if isinstance(e, ToolRefused)] == ["permission_request_hook"]


@pytest.mark.parametrize(
    ("answer", "code", "notice"),
    [
        (None, 0, None),
        ({"hookSpecificOutput": {"hookEventName": "PermissionRequest"}}, 0, None),
        # A PreToolUse answer is not a PermissionRequest's decision.
        (
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
            0,
            None,
        ),
        (decision("ask"), 0, None),
        # Exit 2 decides nothing here (Claude Code reads only decision.behavior).
        (None, 2, "PermissionRequest hook error: Failed with non-blocking status code 2: "),
    ],
)
def test_no_opinion_falls_through_to_the_no_terminal_denial(
    workspace: Path, tmp_path: Path, answer: dict[str, Any] | None, code: int, notice: str | None
) -> None:
    hook = answering(tmp_path, answer, code)
    seen: list[Any] = []
    result = bash_run(workspace, tmp_path, settings_with(hook), ASKED, on_event=seen.append)
    text = results_by_id(result)["t1"].text
    assert "there is no terminal to ask the user" in text
    assert not (workspace / "made").exists()
    assert len(requests(tmp_path)) == 1
    notices = [e.text for e in seen if isinstance(e, Notice)]
    assert notices == ([] if notice is None else [notice + "said on stderr"])


def test_no_opinion_puts_the_question_to_the_user_and_an_allow_does_not(
    workspace: Path, tmp_path: Path
) -> None:
    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return ALLOW_ONCE

    quiet = answering(tmp_path, None)
    bash_run(workspace, tmp_path, settings_with(quiet), ASKED, prompter=prompter)
    assert [q.input for q in asked] == [{"command": ASKED}]
    (workspace / "made").unlink()
    allow = answering(tmp_path, decision("allow"))
    bash_run(workspace, tmp_path, settings_with(allow), ASKED, prompter=prompter)
    assert len(asked) == 1
    assert (workspace / "made").exists()


def test_updated_input_runs_in_place_of_the_calls_validated_and_judged_again(
    workspace: Path, tmp_path: Path
) -> None:
    changed = answering(tmp_path, decision("allow", updatedInput={"command": "touch other"}))
    r = results_by_id(bash_run(workspace, tmp_path, settings_with(changed), ASKED))
    assert not r["t1"].is_error, r["t1"].text
    assert (workspace / "other").exists() and not (workspace / "made").exists()

    wrong = answering(tmp_path, decision("allow", updatedInput={"command": 5}))
    text = results_by_id(bash_run(workspace, tmp_path, settings_with(wrong), ASKED))["t1"].text
    assert "InputValidationError" in text and "`command`" in text

    denied = answering(tmp_path, decision("allow", updatedInput={"command": "rm -f other"}))
    settings = settings_with(denied, deny=["Bash(rm *)"])
    text = results_by_id(bash_run(workspace, tmp_path, settings, ASKED))["t1"].text
    assert "Bash(rm *)" in text
    assert (workspace / "other").exists() and not (workspace / "made").exists()


def _outside_file_and_a_hook_allowing_reads(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A directory outside the workspace holding notes.txt, and settings whose
    PermissionRequest hook allows every Read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("outside notes\n")
    settings = settings_with(answering(tmp_path, decision("allow")))
    settings["hooks"]["PermissionRequest"][0]["matcher"] = "Read"
    return outside, settings


def test_an_allow_is_the_users_yes_so_it_opens_an_outside_path_for_that_call(
    workspace: Path, tmp_path: Path
) -> None:
    outside, settings = _outside_file_and_a_hook_allowing_reads(tmp_path)
    turns = [
        tool_turn(("t1", "Read", {"file_path": str(outside / "notes.txt")})),
        {"content": "done"},
    ]
    log = tmp_path / "run.jsonl"
    data = {"prompt": "go", "settings": settings, "turns": turns}
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    assert "outside notes" in results_by_id(result)["t1"].text
    assert replay(log).messages == result.messages


def test_a_deny_with_interrupt_ends_the_run_as_ctrl_c_would(
    workspace: Path, tmp_path: Path
) -> None:
    hook = answering(tmp_path, decision("deny", message="stop everything", interrupt=True))
    result = bash_run(workspace, tmp_path, settings_with(hook), ASKED, "echo later")
    r = results_by_id(result)
    assert "stop everything" in r["t1"].text
    assert r["t2"].text == "[Request interrupted by user for tool use]"
    assert result.reason == "aborted_tools"


def test_continue_false_stops_the_run(workspace: Path, tmp_path: Path) -> None:
    hook = answering(tmp_path, {"continue": False, "stopReason": "policy says stop"})
    result = bash_run(workspace, tmp_path, settings_with(hook), ASKED)
    assert "policy says stop" in results_by_id(result)["t1"].text
    assert result.reason == "hook_stopped"


def test_dont_ask_denies_without_asking_the_hooks(workspace: Path, tmp_path: Path) -> None:
    """Claude Code turns dontAsk's asks into denials before any PermissionRequest hook."""
    hook = answering(tmp_path, decision("allow"))
    settings = settings_with(hook, defaultMode="dontAsk")
    text = results_by_id(bash_run(workspace, tmp_path, settings, ASKED))["t1"].text
    assert "dontAsk" in text
    assert requests(tmp_path) == []


def test_a_pre_tool_use_ask_reaches_the_permission_request_hooks(
    workspace: Path, tmp_path: Path
) -> None:
    """A PreToolUse `ask` on a call the rules allow puts the question, which the
    PermissionRequest hooks then answer."""
    ask = script(
        tmp_path / "ask.sh",
        "cat > /dev/null\necho '"
        + json.dumps(
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
        )
        + "'\n",
    )
    hook = answering(tmp_path, decision("deny", message="not today"))
    settings = settings_with(hook, allow=["Bash(touch *)"])
    settings["hooks"]["PreToolUse"] = [{"hooks": [{"type": "command", "command": ask}]}]
    text = results_by_id(bash_run(workspace, tmp_path, settings, ASKED))["t1"].text
    assert "not today" in text
    assert len(requests(tmp_path)) == 1


def test_a_scripted_scenario_answers_permission_requests(workspace: Path, tmp_path: Path) -> None:
    data = {
        "prompt": "go",
        "hooks": {
            "PermissionRequest": [
                {"permission_decision": "allow"},
                {"permission_decision": "deny", "permission_reason": "no more"},
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
    r = results_by_id(result)
    assert not r["t1"].is_error and (workspace / "made").exists()
    assert "no more" in r["t2"].text and not (workspace / "again").exists()
    assert replay(log).messages == result.messages
    with pytest.raises(ScenarioError, match=r"'allow', 'deny' or null .*PermissionRequest"):
        Scenario.parse(
            {"turns": [], "hooks": {"PermissionRequest": [{"permission_decision": "ask"}]}}
        )


def test_through_the_cli_headless_and_replayed_with_check(workspace: Path, tmp_path: Path) -> None:
    allow = answering(tmp_path, decision("allow"))
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings_with(allow)))
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps({"turns": [tool_turn(("t1", "Bash", {"command": ASKED})), {"content": "ok"}]})
    )
    log = tmp_path / "run.jsonl"
    base = ("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log))
    proc = fsm(*base, "go")
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "made").exists()
    assert len(requests(tmp_path)) == 1
    (workspace / "made").unlink()
    checked = fsm("replay", "--check", str(log))
    assert checked.returncode == 0, checked.stderr
    assert not (workspace / "made").exists()
    assert len(requests(tmp_path)) == 1  # the replay ran no hook

    deny = answering(tmp_path, decision("deny", message="not from the CLI"))
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings_with(deny)))
    log2 = tmp_path / "run2.jsonl"
    proc = fsm(*base[:-1], str(log2), "--output-format", "json", "go")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [d["tool_name"] for d in out["permission_denials"]] == ["Bash"]
    assert not (workspace / "made").exists()
    assert fsm("replay", "--check", str(log2)).returncode == 0


def test_interpretation_of_a_permission_request_hooks_answer() -> None:
    def outcome(answer: dict[str, Any], code: int = 0) -> HookOutcome:
        return interpret("PermissionRequest", HookRun("c", code, json.dumps(answer), "oops"))

    assert outcome(decision("allow", updatedInput={"command": "ls"})) == HookOutcome(
        permission_decision="allow", updated_input={"command": "ls"}
    )
    assert outcome(decision("deny", message="no", interrupt=True, updatedInput={})) == HookOutcome(
        permission_decision="deny", permission_reason="no", interrupt=True
    )
    # The JSON is honoured whatever the exit code; an allow cannot interrupt.
    assert outcome(decision("allow", interrupt=True, message="m"), 2) == HookOutcome(
        permission_decision="allow"
    )
    # Claude Code's schema refuses a malformed updatedPermissions, and the whole answer
    # with it: the hook has no say (see tests/policy/test_permission_updates.py).
    said = outcome(decision("allow", updatedPermissions=[{"type": "addRules"}]))
    assert said.permission_decision is None and said.updated_permissions == ()
    assert said.messages == (
        "PermissionRequest hook `c` error: JSON validation failed: hookSpecificOutput.decision."
        "updatedPermissions[0].destination: expected one of 'userSettings', 'projectSettings', "
        "'localSettings', 'session', 'cliArg' (missing)",
    )
    assert outcome({"decision": "block", "reason": "x"}) == HookOutcome()


def test_hooks_that_disagree_deny_and_only_a_denys_interrupt_counts() -> None:
    allow = HookOutcome(permission_decision="allow", updated_input={"command": "ls"})
    deny = HookOutcome(permission_decision="deny", permission_reason="no", interrupt=True)
    assert merge([allow, deny]) == HookOutcome(
        permission_decision="deny", permission_reason="no", interrupt=True,
        updated_input={"command": "ls"},
    )  # fmt: skip
    assert merge([allow, HookOutcome(permission_decision="deny")]).interrupt is False


def test_a_log_that_does_not_say_what_it_listened_to_replays_without_the_event(
    workspace: Path, tmp_path: Path
) -> None:
    """A `Hooks` with no `events` is asked every event, and its log records no
    `hooked_events`; such a log written before PermissionRequest was asked has no
    record of it, and replays as it ran."""
    from fsm_agent.app.session import arun
    from fsm_agent.core.config import RunConfig
    from fsm_agent.hooks.outcomes import NO_OPINION
    from fsm_agent.live.scripted import ScriptedModel

    class Silent:
        async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
            return NO_OPINION

    turns = [tool_turn(("t1", "Bash", {"command": ASKED})), {"content": "done"}]
    model = ScriptedModel(Scenario.parse({"turns": turns}))
    log = tmp_path / "run.jsonl"
    config = RunConfig(cwd=str(workspace))
    result = asyncio.run(arun("go", model=model, config=config, hooks=Silent(), log=log))
    assert "no terminal" in results_by_id(result)["t1"].text
    lines = log.read_text().splitlines()
    older = [line for line in lines if '"PermissionRequest"' not in line]
    assert len(older) == len(lines) - 1
    (tmp_path / "older.jsonl").write_text("\n".join(older) + "\n")
    reseal(tmp_path / "older.jsonl")
    assert replay(log).messages == result.messages
    assert replay(tmp_path / "older.jsonl").messages == result.messages


def test_a_log_written_before_the_event_was_asked_replays_though_settings_had_the_hook(
    workspace: Path, tmp_path: Path
) -> None:
    """Settings made for Claude Code may have had a PermissionRequest hook before this
    engine asked it: the header's `hooked_events` (taken from the settings) lists the
    event, yet the log has no record of it, and it replays as it ran."""
    result = bash_run(workspace, tmp_path, settings_with(answering(tmp_path, None)), ASKED)
    assert "no terminal" in results_by_id(result)["t1"].text
    log = tmp_path / "run0.jsonl"
    lines = log.read_text().splitlines()
    assert "PermissionRequest" in json.loads(lines[0])["config"]["hooked_events"]
    older = [line for line in lines if '"args":"PermissionRequest"' not in line]
    assert len(older) == len(lines) - 1
    (tmp_path / "older.jsonl").write_text("\n".join(older) + "\n")
    reseal(tmp_path / "older.jsonl")
    assert replay(tmp_path / "older.jsonl").messages == result.messages
    check = fsm("replay", str(tmp_path / "older.jsonl"), "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_fork_replays_the_hooks_answer_from_its_parent(workspace: Path, tmp_path: Path) -> None:
    """A fork runs in a new session, so the hooks' payload (and its digest) is not the
    parent's: the replayed part still takes the parent's answer, by event."""
    hook = answering(tmp_path, decision("allow"))
    bash_run(workspace, tmp_path, settings_with(hook), ASKED)
    (workspace / "made").unlink()
    parent = tmp_path / "run0.jsonl"
    scenario = tmp_path / "fork.json"
    scenario.write_text(json.dumps({"turns": [{"content": "forked"}]}))
    fork = tmp_path / "fork.jsonl"
    proc = fsm(
        "replay", str(parent), "--fork-at", "5", "--scripted", str(scenario),
        "--cwd", str(workspace), "--log", str(fork),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in fork.read_text().splitlines()]
    [asked] = [r for r in records if r.get("args") == "PermissionRequest"]
    assert asked["result"] == {"permission_decision": "allow"}
    assert not [r for r in records if r.get("name") == "ask_permission"]
    assert len(requests(tmp_path)) == 1  # the parent's run asked it; the fork replayed it


def test_ctrl_c_while_the_hooks_run_ends_the_run_interrupted(
    workspace: Path, tmp_path: Path
) -> None:
    from fsm_agent.app.session import arun_scenario
    from fsm_agent.core.abort import AbortSignal

    hook = script(tmp_path / "slow.sh", f"sleep 8\necho '{json.dumps(decision('allow'))}'\n")
    turns = [tool_turn(("t1", "Bash", {"command": ASKED})), {"content": "done"}]
    scenario = Scenario.parse({"prompt": "go", "settings": settings_with(hook), "turns": turns})
    log = tmp_path / "run.jsonl"
    abort = AbortSignal()

    async def main() -> Any:
        asyncio.get_running_loop().call_later(0.5, abort.set)
        return await arun_scenario(scenario, cwd=workspace, log=log, abort=abort)

    result = asyncio.run(main())
    assert result.reason == "aborted_tools"
    assert results_by_id(result)["t1"].text == "[Request interrupted by user for tool use]"
    assert not (workspace / "made").exists()
    again = replay(log)
    assert (again.path, again.reason, again.messages) == (
        result.path,
        result.reason,
        result.messages,
    )


def test_a_call_started_early_whose_stream_fails_while_the_hooks_run_goes_no_further(
    workspace: Path, tmp_path: Path
) -> None:
    """A Read started while the model streamed, asked about (its file is outside): the
    stream fails while its PermissionRequest hook runs, so, allowed or not, it is
    discarded after the hook (a `discarded` effect says so) and never reads."""
    from fsm_agent.engine.ports import model_failed

    outside, settings = _outside_file_and_a_hook_allowing_reads(tmp_path)
    call = {"type": "tool_use", "id": "r1", "name": "Read",
            "input": {"file_path": str(outside / "notes.txt")}}  # fmt: skip
    turn = {"content": [call], "error": {"kind": "connection", "message": "connection reset"}}
    data = {"prompt": "go", "settings": settings, "turns": [turn]}
    log = tmp_path / "run.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    assert result.reason == "model_error"
    assert results_by_id(result)["r1"].text == model_failed("connection: connection reset")
    assert len(requests(tmp_path)) == 1
    pipeline = ("hooks", "permission", "ask_permission", "tool", "discarded")
    ran = [(e["name"], e["request"]) for e in effect_records(log) if e["name"] in pipeline]
    assert [r if n == "discarded" else n for n, r in ran] == [
        "permission", "hooks", "1:r1:requested"
    ]  # fmt: skip
    proc = fsm("replay", "--check", str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
