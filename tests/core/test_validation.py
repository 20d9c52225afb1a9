"""Tool input errors: the first problem, worded as Claude Code words it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import default_tools, run_scenario
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.core.validation import input_problem, unparsable_input, unparsable_summary
from fsm_agent.live.scripted import Scenario

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string"},
        "offset": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "enum": ["a", "b"]},
    },
    "required": ["file_path"],
    "additionalProperties": False,
}


def issue(tool_input: Any) -> str | None:
    text = input_problem("Read", SCHEMA, tool_input)
    if text is None:
        return None
    head = "<tool_use_error>InputValidationError: Read failed due to the following issue:\n"
    assert text.startswith(head) and text.endswith("</tool_use_error>")
    return text[len(head) : -len("</tool_use_error>")]


def test_a_fitting_input_has_no_problem() -> None:
    assert issue({"file_path": "a.txt", "offset": 2, "mode": "a"}) is None


@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        (
            {"file_path": 3},
            "The parameter `file_path` type is expected as `string` but provided as `number`",
        ),
        (
            {"file_path": "a", "offset": "2"},
            "The parameter `offset` type is expected as `integer` but provided as `string`",
        ),
        ({}, "The required parameter `file_path` is missing"),
        ({"file_path": "a", "path": "b"}, "An unexpected parameter `path` was provided"),
        (
            {"file_path": "a", "offset": -1},
            "The parameter `offset` must be bigger than or equal to 0",
        ),
        ({"file_path": "a", "mode": "c"}, "The parameter `mode` must be one of ['a', 'b']"),
        (["a.txt"], "The input type is expected as `object` but provided as `array`"),
    ],
)
def test_each_problem_is_named(tool_input: Any, expected: str) -> None:
    assert issue(tool_input) == expected


def test_a_schema_is_compiled_once_per_object() -> None:
    from fsm_agent.core import validation

    issue({"file_path": "x"})
    compiled = validation._compiled[id(SCHEMA)][1]
    issue({"file_path": "y"})
    assert validation._compiled[id(SCHEMA)][1] is compiled


def test_defaults_in_the_schema_are_not_written_into_the_input() -> None:
    schema = {
        "type": "object",
        "properties": {"replace_all": {"type": "boolean", "default": False}},
    }
    tool_input: dict[str, Any] = {}
    assert input_problem("Edit", schema, tool_input) is None
    assert tool_input == {}


BROKEN: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "strnig"}}}


class BrokenSchemaTool:
    name = "Broken"
    description = "A tool of the caller's whose schema has a typo."
    input_schema = BROKEN

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return ToolOutcome("ran")


def test_a_tool_with_a_broken_schema_is_refused_before_the_run(tmp_path: Path) -> None:
    """Not when the model first calls it, with fastjsonschema's words, halfway through a log."""
    turns = [
        {"content": [{"type": "tool_use", "id": "t1", "name": "Broken", "input": {"x": "1"}}]},
        {"content": "done"},
    ]
    log = tmp_path / "run.jsonl"
    tools = {**default_tools(), "Broken": BrokenSchemaTool()}
    with pytest.raises(ValueError, match="tool 'Broken': input_schema is not a valid JSON Schema"):
        run_scenario(
            Scenario.parse({"prompt": "go", "turns": turns}), cwd=tmp_path, tools=tools, log=log
        )
    assert not log.exists()


COMMON_CAUSES = (
    "\nCommon causes: unescaped backslashes in file paths (use / or \\\\), unescaped control "
    "characters, or truncated output. Retry with valid JSON."
)


@pytest.mark.parametrize(
    ("raw", "shown", "counts"),
    [
        ('{"a": "h\U0001f600llo', '{"a": "h\U0001f600llo', "first 13 of 13"),
        ('{"a": "' + "x" * 300, '{"a": "' + "x" * 193, "first 200 of 307"),
        # the 200th code unit is half an emoji: left out, as Claude Code leaves it
        ('{"a": "' + "x" * 192 + "\U0001f600zz", '{"a": "' + "x" * 192, "first 199 of 203"),
    ],
    ids=["emoji counts two", "cut at 200", "never half a pair"],
)
def test_an_input_that_is_not_json_is_said_in_claude_codes_words(
    raw: str, shown: str, counts: str
) -> None:
    """Measured on Claude Code 2.1.x: lengths in UTF-16 code units (JavaScript's), at most
    200 of them quoted, and the `-p` output's toolUseResult names the length alone."""
    said = unparsable_input("Write", raw)
    assert said == (
        "InputValidationError: Write was called with input that could not be parsed as JSON.\n"
        f"You sent ({counts} bytes): {shown}" + COMMON_CAUSES
    )
    total = counts.rsplit(" ", 1)[1]
    assert unparsable_summary(said) == f"InputValidationError: JSON parse failed ({total} bytes)"
    assert unparsable_summary("InputValidationError: Write failed due to the following") is None
