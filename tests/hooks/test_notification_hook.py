"""Notification hooks: told of each permission question put to the user, as Claude Code
tells them (`permission_prompt`), beside the question, and never on a replay."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core.permission_types import ALLOW_ONCE, DENY, PermissionAsk
from fsm_agent.live.scripted import Scenario
from fsm_agent.live.transcript_writer import transcript_path
from tests.conftest import SCENARIOS
from tests.support.cli import fsm
from tests.support.hooks import ASKED, decision, results_by_id, script, tool_turn
from tests.support.pty import leave, logs, spawn


def notifier(tmp_path: Path) -> str:
    """A hook that keeps each payload it gets as one JSON line."""
    out = tmp_path / "notified.jsonl"
    return script(tmp_path / "notify.sh", f"cat >> {out}\necho >> {out}\n")


def notified(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "notified.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hooks(command: str, matcher: str = "", **more: Any) -> dict[str, Any]:
    entry = {"hooks": [{"type": "command", "command": command}]}
    if matcher:
        entry["matcher"] = matcher
    return {"hooks": {"Notification": [entry], **more}}


def waiting_for(tmp_path: Path, answer: str, asked: list[str], seconds: float = 10) -> Any:
    """A prompter that answers once the notification has come (or after `seconds`), so
    the run ends with the hook's payload written."""

    def prompter(question: PermissionAsk) -> str:
        asked.append(question.tool)
        deadline = time.monotonic() + seconds
        while not notified(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.02)
        return answer

    return prompter


def go(ws: Path, tmp_path: Path, settings: dict[str, Any], **kw: Any) -> tuple[Any, Path]:
    log = tmp_path / "run.jsonl"
    turns = [tool_turn(("t1", "Bash", {"command": ASKED})), {"content": "done"}]
    data = {"prompt": "go", "settings": settings, "turns": turns}
    return run_scenario(Scenario.parse(data), cwd=ws, log=log, **kw), log


def test_a_question_put_to_the_user_notifies_with_claude_codes_payload(
    workspace: Path, tmp_path: Path
) -> None:
    asked: list[str] = []
    prompter = waiting_for(tmp_path, ALLOW_ONCE, asked)
    result, log = go(workspace, tmp_path, hooks(notifier(tmp_path)), prompter=prompter)
    assert asked == ["Bash"]
    assert (workspace / "made").exists()
    [payload] = notified(tmp_path)
    assert payload["hook_event_name"] == "Notification"
    assert payload["notification_type"] == "permission_prompt"
    assert payload["message"] == "Claude needs your permission to use Bash"
    assert payload["session_id"] == result.session_id
    assert payload["cwd"] == str(workspace)
    assert payload["transcript_path"] == str(transcript_path(str(workspace), result.session_id))

    (tmp_path / "notified.jsonl").unlink()
    again = replay(log)
    assert (again.path, again.messages) == (result.path, result.messages)
    assert notified(tmp_path) == []


def test_the_matcher_is_tested_against_the_notification_type(
    workspace: Path, tmp_path: Path
) -> None:
    asked: list[str] = []
    settings = hooks(notifier(tmp_path), matcher="idle_prompt")
    prompter = waiting_for(tmp_path, DENY, asked, seconds=1)
    result, _ = go(workspace, tmp_path, settings, prompter=prompter)
    assert asked == ["Bash"]
    assert results_by_id(result)["t1"].is_error
    assert notified(tmp_path) == []

    settings = hooks(notifier(tmp_path), matcher="permission_prompt|idle_prompt")
    (tmp_path / "run.jsonl").unlink()
    go(workspace, tmp_path, settings, prompter=waiting_for(tmp_path, DENY, asked))
    assert [p["notification_type"] for p in notified(tmp_path)] == ["permission_prompt"]


def test_no_question_no_notification(workspace: Path, tmp_path: Path) -> None:
    """Without a terminal nobody is asked, and a PermissionRequest hook that answers
    keeps the question from being put: neither notifies."""
    result, _ = go(workspace, tmp_path, hooks(notifier(tmp_path)))
    assert results_by_id(result)["t1"].is_error
    assert notified(tmp_path) == []

    allow = script(tmp_path / "allow.sh", f"echo '{json.dumps(decision('allow'))}'\n")
    request = [{"hooks": [{"type": "command", "command": allow}]}]
    settings = hooks(notifier(tmp_path), PermissionRequest=request)
    asked: list[str] = []
    (tmp_path / "run.jsonl").unlink()
    result, _ = go(workspace, tmp_path, settings, prompter=waiting_for(tmp_path, DENY, asked))
    assert asked == []
    assert (workspace / "made").exists()
    assert notified(tmp_path) == []


def test_a_slow_notifier_does_not_hold_the_question_back(workspace: Path, tmp_path: Path) -> None:
    """The hook runs beside the question: the user is asked while it still runs."""
    slow = script(tmp_path / "slow.sh", f"sleep 30\ntouch {tmp_path / 'late'}\n")
    asked: list[str] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question.tool)
        return ALLOW_ONCE

    result, _ = go(workspace, tmp_path, hooks(slow), prompter=prompter)
    assert asked == ["Bash"]
    assert result.reason == "completed"
    assert not (tmp_path / "late").exists()


def test_a_chat_waiting_for_the_next_message_notifies_idle_prompt_once(
    workspace: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """After an answer, a prompt left waiting past the threshold tells Notification hooks
    once (`idle_prompt`); the first prompt, before any answer, tells them nothing."""

    (workspace / ".claude").mkdir()
    settings = hooks(notifier(tmp_path))
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    scenario = tmp_path / "chat.json"
    scenario.write_text(json.dumps({"turns": [{"content": "Hi there."}]}))
    monkeypatch.setenv("FSM_AGENT_IDLE_NOTIFY_MS", "200")
    child = spawn(["chat", "--scripted", str(scenario), "--cwd", str(workspace)], workspace)
    child.expect("› ")
    time.sleep(1)
    assert notified(tmp_path) == []
    child.sendline("hello")
    child.expect("Hi there.")
    child.expect("› ")
    deadline = time.monotonic() + 10
    while not notified(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.6)
    [payload] = notified(tmp_path)
    assert leave(child) == 0
    [run] = logs(workspace)
    assert payload["hook_event_name"] == "Notification"
    assert payload["notification_type"] == "idle_prompt"
    assert payload["message"] == "Claude is waiting for your input"
    assert payload["session_id"] == run["header"]["session_id"]
    assert payload["cwd"] == str(workspace)
    assert not any(r.get("name") == "hooks" for r in run["records"])


def test_a_bad_idle_threshold_is_a_usage_error(workspace: Path) -> None:

    scenario = str(SCENARIOS / "tool_round.json")
    proc = fsm("run", "--scripted", scenario, "--cwd", str(workspace),
               env={"FSM_AGENT_IDLE_NOTIFY_MS": "1m"})  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        "fsm-agent: error: FSM_AGENT_IDLE_NOTIFY_MS must be a whole number of milliseconds, "
        "not '1m'\n"
    )
    assert not (workspace / ".fsm-agent").exists()
