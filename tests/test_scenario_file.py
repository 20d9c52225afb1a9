"""Reading a scenario file: the shorthand it allows, and what a mistake in it reads as."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fsm_agent.scripted import Scenario, ScenarioError
from fsm_agent.session import run_scenario


def test_a_string_content_is_one_text_block(workspace: Path) -> None:
    scenario = Scenario.parse({"turns": [{"content": "All done."}]})
    result = run_scenario(scenario, cwd=workspace, prompt="go", log=None)
    assert result.reason == "completed"
    assert result.messages[-1].text == "All done."


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as caught:
        Scenario.parse(data, "s.json")
    return str(caught.value)


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            {"content": [{"type": "txt", "text": "x"}]},
            "unknown type 'txt' for a content block (known: text, thinking, redacted_thinking, "
            "image, tool_use, tool_result) @ $.turns[0].content[0]",
        ),
        (
            {"content": [{"text": "x"}]},
            "a content block needs a 'type' (text, thinking, redacted_thinking, image, tool_use, "
            "tool_result) @ $.turns[0].content[0]",
        ),
        (
            {"content": ["x"]},
            "invalid value for type, expected a content block @ $.turns[0].content[0]",
        ),
        (
            {"content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "x"}]}]},
            "unknown type 'x' for a text or image block (known: text, image) "
            "@ $.turns[0].content[0].content[0]",
        ),
        (
            {"content": [{"type": "tool_use", "id": "t", "name": "Read", "input": 3}]},
            "invalid value for type, expected object @ $.turns[0].content[0].input",
        ),
        (
            {"stop_reason": "max_token"},
            "invalid value, expected one of 'end_turn', 'max_tokens', 'stop_sequence', "
            "'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded' or null "
            "@ $.turns[0].stop_reason",
        ),
        (
            {"error": {"kind": "overload", "message": "busy"}},
            "invalid value, expected one of 'prompt_too_long', 'media', 'overloaded', 'api', "
            "'rate_limit', 'connection', 'server', 'incomplete_stream', 'invalid_response' "
            "@ $.turns[0].error.kind",
        ),
        (
            {"interrupt": "later"},
            "invalid value, expected one of 'streaming', 'tools' or null @ $.turns[0].interrupt",
        ),
        ({"delay": -1}, "invalid value ('delay' must be >= 0: -1.0) @ $.turns[0]"),
        ({"event_delay": -0.5}, "invalid value ('event_delay' must be >= 0: -0.5) @ $.turns[0]"),
        ({"cut_after": -1}, "invalid value ('cut_after' must be >= 0: -1) @ $.turns[0]"),
        (
            {"usage": {"input_tokens": "many"}},
            "invalid value for type, expected int @ $.turns[0].usage.input_tokens",
        ),
    ],
)
def test_a_mistake_in_a_turn_is_named_and_placed(turn: dict[str, Any], message: str) -> None:
    assert _error({"turns": [turn]}) == f"s.json: not a valid Scenario: {message}"


def test_a_mistake_outside_the_turns_is_named_and_placed() -> None:
    assert _error({"turns": [], "hooks": {"Stop": 3}}) == (
        "s.json: not a valid Scenario: invalid value for type, expected list @ $.hooks['Stop']"
    )
