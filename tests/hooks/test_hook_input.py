"""A hook's stdin as Claude Code writes it (measured on 2.1.332 by the conformance
suite's hook cases): the common keys first, in its order, then the event's own."""

from __future__ import annotations

from typing import Any

from fsm_agent.hooks.commands import hook_input


def _input(event: str, payload: dict[str, Any], **kw: Any) -> dict[str, Any]:
    defaults = {"transcript_path": "/t.jsonl", "cwd": "/ws", "permission_mode": "default"}
    return hook_input(event, payload, prompt_id="p-1", **{**defaults, **kw})


def test_the_common_keys_come_first_in_claude_codes_order() -> None:
    got = _input(
        "PreToolUse",
        {"tool_name": "Read", "tool_input": {"file_path": "/ws/a"}, "tool_use_id": "t1",
         "session_id": "s", "hook_event_name": "ignored"},
    )  # fmt: skip
    assert list(got) == [
        "session_id", "transcript_path", "cwd", "prompt_id", "permission_mode",
        "hook_event_name", "tool_name", "tool_input", "tool_use_id",
    ]  # fmt: skip
    assert got["hook_event_name"] == "PreToolUse"
    assert (got["session_id"], got["prompt_id"], got["cwd"]) == ("s", "p-1", "/ws")


def test_post_tool_use_puts_the_response_before_the_call_id() -> None:
    payload = {"tool_name": "Bash", "tool_input": {}, "tool_use_id": "t1", "duration_ms": 4,
               "tool_response": {"stdout": "hi"}}  # fmt: skip
    got = _input("PostToolUse", payload)
    assert list(got)[6:] == [
        "tool_name",
        "tool_input",
        "tool_response",
        "tool_use_id",
        "duration_ms",
    ]


def test_session_start_has_no_prompt_id_permission_mode_nor_model() -> None:
    got = _input("SessionStart", {"source": "startup", "model": "m"})
    assert list(got) == ["session_id", "transcript_path", "cwd", "hook_event_name", "source"]


def test_session_end_has_no_prompt_id_but_the_mode() -> None:
    got = _input("SessionEnd", {"reason": "other"}, permission_mode="plan")
    assert "prompt_id" not in got
    assert got["permission_mode"] == "plan"


def test_a_mode_the_engine_recorded_wins_in_its_place() -> None:
    got = _input("Stop", {"permission_mode": "acceptEdits", "stop_hook_active": False})
    assert got["permission_mode"] == "acceptEdits"
    assert list(got).index("permission_mode") == 4


def test_stop_adds_claude_codes_empty_task_lists() -> None:
    got = _input("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})
    assert list(got)[6:] == [
        "stop_hook_active", "last_assistant_message", "background_tasks", "session_crons"
    ]  # fmt: skip
    assert got["background_tasks"] == got["session_crons"] == []
