"""The driver's events that output layers build on: whole messages and the raw stream."""

from __future__ import annotations

from pathlib import Path

from fsm_agent.events import AssistantMessage, DriverEvent, ModelEvent
from fsm_agent.launch import Plan
from fsm_agent.log import SessionLog


def test_each_assistant_message_and_stream_event_is_emitted(scenario, tmp_path: Path) -> None:
    seen: list[DriverEvent] = []
    result = scenario("tool_round", on_event=seen.append)
    messages = [e.message for e in seen if isinstance(e, AssistantMessage)]
    assert messages == [m for m in result.messages.items if m.role == "assistant"]
    recorded = [
        event
        for _, record in SessionLog(tmp_path / "tool_round.jsonl").records()
        if record["t"] == "effect" and record["name"] == "model"
        for event in record["result"]["events"]
    ]
    raw = [e.event for e in seen if isinstance(e, ModelEvent)]
    assert len(raw) == len(recorded) > 0
    assert [type(e).__name__ for e in raw] == [e["event"] for e in recorded]


def test_a_dropped_fallback_attempt_is_not_an_assistant_message(scenario) -> None:
    seen: list[DriverEvent] = []
    result = scenario("model_fallback", on_event=seen.append)
    messages = [e.message for e in seen if isinstance(e, AssistantMessage)]
    assert messages == [m for m in result.messages.items if m.role == "assistant"]


def test_chat_logs_follow_the_first_log_name(tmp_path: Path) -> None:
    plan = Plan(model=None, config=None, hooks=None, abort=None, log=tmp_path / "chat.jsonl")  # type: ignore[arg-type]
    assert plan.next_log() == tmp_path / "chat.jsonl"
    plan.runs = 2
    assert plan.next_log() == tmp_path / "chat.3.jsonl"
    assert Plan(model=None, config=None, hooks=None, abort=None, log=None).next_log() is None  # type: ignore[arg-type]
