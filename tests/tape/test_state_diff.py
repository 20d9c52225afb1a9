"""State differences named: the field, the message, the block and where texts part."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.engine import actions
from fsm_agent.live.scripted import Scenario
from fsm_agent.tape.blobs import blob_id
from fsm_agent.tape.divergence import Divergence, divergence_report
from fsm_agent.tape.log import LogWriter, SessionLog
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


def test_a_long_text_is_shown_where_it_parts() -> None:
    """A delta holds every text whole: a long tool result edited in one number shows that
    number, not a digest."""
    body = "x" * 3000
    log = StateParts([_tool_result(f"{body} The average is 3.75\n")], {})
    code = StateParts([_tool_result(f"{body} The average is 9.99\n")], {})
    (change,) = state_changes(log, code)
    assert change.diff == 'at char 3016: "… The average is 3.75\\n" → "… The average is 9.99\\n"'


def test_an_older_logs_placeholder_is_compared_by_the_texts_id() -> None:
    """Logs written before put a text longer than `LONG_TEXT` in a delta as its id and
    length; where no blob holds it, the code's text is compared by its id."""
    text = "a" * (LONG_TEXT + 1)
    placeholder = {"$text": blob_id(text), "chars": len(text)}
    log = StateParts([_tool_result(placeholder)], {})  # type: ignore[arg-type]
    assert state_changes(log, StateParts([_tool_result(text)], {})) == []
    (change,) = state_changes(log, StateParts([_tool_result(text + "!")], {}))
    assert f"a text of {LONG_TEXT + 1} characters" in change.line()


def _long_read(workspace: Path, log: Path) -> Path:
    """A run that reads a file of 2,000 characters and more, ending in "3.75", logged."""
    (workspace / "data.txt").write_text("y" * 1000 + "\n" + "z" * 1000 + "\nThe average is 3.75\n")
    turns = [
        {"content": [{"type": "tool_use", "id": "toolu_01read", "name": "Read",
                      "input": {"file_path": str(workspace / "data.txt")}}]},
        {"content": [{"type": "text", "text": "done"}]},
    ]  # fmt: skip
    result = run_scenario(Scenario.parse({"turns": turns}), cwd=workspace, prompt="go", log=log)
    assert result.reason == "completed"
    return log


def _rewritten(source: Path, target: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """`source`'s records, each given to `edit`, written as a new log (its blobs and chain
    made again, as someone who knows the format could)."""
    old = SessionLog(source)
    header = {k: v for k, v in old.header.items() if k not in ("format", "version", "h")}
    writer = LogWriter(target, header)
    for _, record in old.records():
        record.pop("h", None)
        edit(record)
        writer.write(record)
    writer.close()
    return target


def _edit_result(record: dict[str, Any]) -> None:
    if record["t"] == "effect" and record["name"] == "tool":
        record["result"]["content"] = record["result"]["content"].replace("3.75", "9.99")


def _report_of(log: Path) -> tuple[str, Divergence]:
    with pytest.raises(Divergence) as info:
        replay(log)
    return divergence_report(info.value), info.value


def test_an_edited_long_result_is_reported_by_its_text(tmp_path: Path) -> None:
    """The tool result is a blob (over 1,024 characters), the delta refers to the same
    blob: the report names the result and shows 3.75 against 9.99."""
    (tmp_path / "ws").mkdir()
    log = _long_read(tmp_path / "ws", tmp_path / "read.jsonl")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(row.get("t") == "blob" and "3.75" in row["text"] for row in rows) == 1  # once
    report, exc = _report_of(_rewritten(log, tmp_path / "edited.jsonl", _edit_result))
    (change,) = exc.changes
    assert change.where.endswith("(tool_result toolu_01read).content")
    assert re.search(
        r'content: at char \d+: "…→The average is 3\.75.*" → "…→The average is 9\.99', report
    )
    assert "$text" not in report and "sha256" not in report


def test_an_older_logs_placeholder_is_resolved_from_its_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delta written before held a long text as `{"$text": id, "chars": n}`; when the
    code's text differs (a code change), the report finds the log's text in its blob of
    that id (the tool result's) and shows where the two part."""
    (tmp_path / "ws").mkdir()
    log = _long_read(tmp_path / "ws", tmp_path / "read.jsonl")

    def as_before(record: dict[str, Any]) -> None:
        delta = record.get("delta", {}).get("messages")
        for message in delta[1] if delta else ():
            for block in message["content"]:
                text = block.get("content")
                if isinstance(text, str) and len(text) > LONG_TEXT:
                    block["content"] = {"$text": blob_id(text), "chars": len(text)}

    older = _rewritten(log, tmp_path / "older.jsonl", as_before)
    assert b'"$text"' in older.read_bytes()
    replay(older)  # the placeholder stands for the text the code makes: no divergence
    original = actions._results_message

    def changed(it: Any) -> Any:
        message = original(it)
        blocks = [
            evolve(b, content=b.content.replace("3.75", "9.99"))
            if isinstance(b, ToolResultBlock) and isinstance(b.content, str)
            else b
            for b in message.content
        ]
        return evolve(message, content=tuple(blocks))

    monkeypatch.setattr(actions, "_results_message", changed)
    report, _ = _report_of(older)
    assert re.search(
        r'content: at char \d+: "…→The average is 3\.75.*" → "…→The average is 9\.99', report
    )
    assert "a text of" not in report
