"""The import's own rules on hand-made transcripts (tests/support/transcripts.py): what
it makes of a compaction, how it says where the engine parts from Claude Code, and a
session's subagents, each a log of its own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from fsm_agent.app.importing import aimport_transcript
from fsm_agent.tape.log import SessionLog
from tests.support.cli import fsm
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


AGENT_CALL = {
    "type": "tool_use",
    "id": "ta",
    "name": "Agent",
    "input": {"description": "Count", "prompt": "Count the files."},
}


def _session_with_agents(tmp_path: Path, *agents: tuple[str, bytes]) -> Path:
    """A session's transcript calling Agent once, and `agents` as 2.1 writes them:
    `<session>/subagents/agent-<id>.jsonl`, with a meta file for each."""
    transcript = tmp_path / "s-1.jsonl"
    transcript.write_bytes(
        jsonl(
            prompt(1, "go"),
            said(2, "m1", AGENT_CALL, stop="tool_use"),
            result(3, "ta", "One file."),
            said(4, "m2", {"type": "text", "text": "There is one."}, stop="end_turn"),
        )
    )
    folder = tmp_path / "s-1" / "subagents"
    folder.mkdir(parents=True)
    for agent_id, data in agents:
        (folder / f"agent-{agent_id}.jsonl").write_bytes(data)
        meta = {"agentType": "general-purpose", "description": "Count", "toolUseId": "ta"}
        (folder / f"agent-{agent_id}.meta.json").write_text(json.dumps(meta))
    return transcript


def _side(agent_id: str) -> bytes:
    lines = [
        prompt(11, "Count the files."),
        said(12, "ms1", CALL, stop="tool_use"),
        result(13, "t1", "a.txt"),
        said(14, "ms2", {"type": "text", "text": "One file."}, stop="end_turn"),
    ]
    for line in lines:
        line.update(isSidechain=True, agentId=agent_id)
    return jsonl(*lines)


def test_a_subagent_is_imported_apart_and_a_broken_one_said(tmp_path: Path) -> None:
    transcript = _session_with_agents(tmp_path, ("a1", _side("a1")), ("a2", b"not json\n"))
    out = tmp_path / "out.jsonl"
    imported = asyncio.run(aimport_transcript(transcript, out))
    assert imported.logs == (out,)  # the main run alone: the subagents are apart
    good, broken = imported.subagents
    assert [run.log.name for run in good.runs] == ["out.agent-a1.jsonl"]
    assert good.runs[0].differences == () and good.runs[0].reason == "completed"
    assert broken.runs == () and broken.problem is not None
    assert "agent-a2.jsonl" in broken.problem and "not valid JSON" in broken.problem
    header = SessionLog(tmp_path / "out.agent-a1.jsonl").header
    assert header["session_id"] == "s-1"
    assert header["imported"]["subagent"]["tool_use_id"] == "ta"
    main_tools = [
        r["args"]["name"] for _, r in SessionLog(out).records() if r.get("name") == "tool"
    ]
    assert main_tools == ["Agent"]


def test_import_prints_each_subagent_s_log_as_kept_apart(tmp_path: Path) -> None:
    transcript = _session_with_agents(tmp_path, ("a1", _side("a1")), ("a2", b"[1]\n"))
    out = tmp_path / "out.jsonl"
    proc = fsm("import", str(transcript), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith(f"{out}  completed")
    assert second.startswith(f"{tmp_path / 'out.agent-a1.jsonl'}  completed  (the subagent a1 ")
    assert "of the call ta" in second and "kept apart from the main runs" in second
    assert "the subagent a2 (general-purpose: Count) of the call ta is left out" in proc.stderr
    assert "Traceback" not in proc.stderr
    check = fsm("replay", "--check", str(tmp_path / "out.agent-a1.jsonl"))
    assert check.returncode == 0, check.stderr
    assert "the run of subagent a1 (general-purpose: Count) of the call ta" in check.stderr
