"""The import's own rules on hand-made transcripts (tests/support/transcripts.py): what
it makes of a compaction, and how it says where the engine parts from Claude Code."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fsm_agent.app.importing import aimport_transcript
from tests.support.transcripts import CALL, entry, jsonl, prompt, result, said

NEAR_FULL = {"input_tokens": 190_000, "output_tokens": 5}


def _import(tmp_path: Path, data: bytes) -> tuple[str, ...]:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(data)
    imported = asyncio.run(aimport_transcript(transcript, tmp_path / "out.jsonl"))
    (run,) = imported.runs
    return run.differences


def _near_full(n: int, msg_id: str, *blocks: dict, stop: str) -> dict:
    line = said(n, msg_id, *blocks, stop=stop)
    line["message"]["usage"] = NEAR_FULL
    return line


def test_the_engine_compacting_where_claude_code_did_not_is_a_difference(tmp_path: Path) -> None:
    found = _import(
        tmp_path,
        jsonl(
            prompt(1, "go"),
            _near_full(2, "m1", CALL, stop="tool_use"),
            result(3, "t1", "a.txt"),
            said(4, "m2", {"type": "text", "text": "One file."}, stop="end_turn"),
        ),
    )
    assert any("the engine compacted the conversation where" in d for d in found), found


def test_claude_code_s_compaction_answers_the_engine_s(tmp_path: Path) -> None:
    boundary = entry("system", 4, subtype="compact_boundary", compactMetadata={"trigger": "auto"})
    summary = entry(
        "user", 5, isCompactSummary=True, message={"role": "user", "content": "Summary:\nls ran"}
    )
    found = _import(
        tmp_path,
        jsonl(
            prompt(1, "go"),
            _near_full(2, "m1", CALL, stop="tool_use"),
            result(3, "t1", "a.txt"),
            boundary,
            summary,
            said(6, "m2", {"type": "text", "text": "One file."}, stop="end_turn"),
        ),
    )
    assert found == ()
    log = (tmp_path / "out.jsonl").read_text()
    assert '"purpose":"compact"' in log and "<summary>ls ran</summary>" in log
