"""State differences named: the field, the message, the block and where texts part."""

from __future__ import annotations

from fsm_agent.tape.state_diff import LONG_TEXT, StateParts, state_changes


def _tool_result(text: str) -> dict[str, object]:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_02run", "content": text},
    ]}  # fmt: skip


def test_a_tool_result_that_differs_is_named_by_message_block_and_text() -> None:
    hello = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    log = StateParts([hello, _tool_result("The average is 3.75\n")], {"turn_count": 3})
    code = StateParts([hello, _tool_result("The average is 9.99\n")], {"turn_count": 3})
    (change,) = state_changes(log, code)
    assert change.where == "messages[1] (user).content[0] (tool_result toolu_02run).content"
    assert change.line().endswith('at char 15: "The average is 3.75\\n" → "The average is 9.99\\n"')
    assert change.as_data()["log"] == "The average is 3.75\n"


def test_a_field_and_a_message_count_are_named() -> None:
    log = StateParts([], {"turn_count": 2, "usage": {"input_tokens": 5}})
    code = StateParts([_tool_result("x")], {"turn_count": 3, "usage": {"input_tokens": 5}})
    assert [c.line() for c in state_changes(log, code)] == [
        "messages: 0 messages → 1 messages",
        "turn_count: 2 → 3",
    ]


def test_a_long_text_is_compared_by_its_digest() -> None:
    long_a, long_b = "a" * (LONG_TEXT + 1), "b" * (LONG_TEXT + 1)
    log = StateParts([_tool_result(long_a)], {})
    code = StateParts([_tool_result(long_b)], {})
    (change,) = state_changes(log, code)
    assert f"a text of {LONG_TEXT + 1} characters" in change.line()
