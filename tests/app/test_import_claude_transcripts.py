"""Transcripts the real Claude Code CLI writes import, take Claude Code's path, and replay.

Each conformance session (`tests/support/claude_sessions.py`) is run through the
real CLI offline; `fsm-agent import` makes its transcript session logs, and
`fsm-agent replay --check` must pass on every one of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.tape.log import SessionLog
from tests.support.claude_sessions import SESSIONS, Session, record
from tests.support.cli import fsm
from tests.support.real_claude import require_claude

EDGES = {
    "tool_call": {"tool_use", "next_turn", "completed"},
    "tool_error": {"tool_use", "next_turn", "completed"},
    "bash_exit_code": {"tool_use", "next_turn", "completed"},
    "api_error_retry": {"completed"},
    "stop_hook_block": {"stop_hook_blocking", "completed"},
    "resumed": {"completed"},
    "autocompact": {"tool_use", "next_turn", "completed"},
    "subagent": {"tool_use", "next_turn", "completed"},
}
"""Edges each session's import must take (Claude Code's path, as the transcript shows it)."""


def _records(log: Path) -> list[dict]:
    return [record for _, record in SessionLog(log).records()]


def _edges(log: Path) -> set[str]:
    return {r["edge"] for r in _records(log) if r.get("t") == "transition"}


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.name)
def test_a_real_transcript_imports_and_replays(session: Session, tmp_path: Path) -> None:
    require_claude()
    transcript = record(session, tmp_path / "claude")
    out = tmp_path / "imported.jsonl"
    imported = fsm("import", str(transcript), "-o", str(out))
    assert imported.returncode == 0, imported.stderr
    assert "differs" not in imported.stderr
    logs = [Path(line.split()[0]) for line in imported.stdout.splitlines()]
    main = [line for line in imported.stdout.splitlines() if "kept apart" not in line]
    assert len(main) == len(session.prompts)  # and a log per subagent, apart
    check = fsm("replay", "--check", *map(str, logs))
    assert check.returncode == 0, check.stdout + check.stderr
    taken = set().union(*map(_edges, logs))
    assert EDGES[session.name] <= taken, taken


def test_several_prompts_are_runs_of_one_conversation(tmp_path: Path) -> None:
    require_claude()
    session = next(s for s in SESSIONS if s.name == "resumed")
    transcript = record(session, tmp_path / "claude")
    out = tmp_path / "imported.jsonl"
    assert fsm("import", str(transcript), "-o", str(out), "-q").returncode == 0
    second = SessionLog(out.with_name("imported-2.jsonl"))
    assert second.header["parent"]["log"] == str(out.resolve())
    # one session over the runs, as the CLI kept it over --resume
    assert second.header["session_id"] == SessionLog(out).header["session_id"] == transcript.stem
    start = next(r for r in _records(second.path) if r.get("t") == "start")
    texts = json.dumps(start["messages"])
    assert "Hello." in texts and "and again" in texts  # the whole conversation so far


def test_a_retried_api_error_is_the_response_s_retry(tmp_path: Path) -> None:
    require_claude()
    session = next(s for s in SESSIONS if s.name == "api_error_retry")
    transcript = record(session, tmp_path / "claude")
    out = tmp_path / "imported.jsonl"
    assert fsm("import", str(transcript), "-o", str(out), "-q").returncode == 0
    model = next(r for r in _records(out) if r.get("name") == "model")
    retry = model["result"]["events"][0]
    assert retry["event"] == "ModelRetry" and retry["status"] == 529


def test_a_blocking_stop_hook_is_the_stop_hook_s_outcome(tmp_path: Path) -> None:
    require_claude()
    session = next(s for s in SESSIONS if s.name == "stop_hook_block")
    transcript = record(session, tmp_path / "claude")
    out = tmp_path / "imported.jsonl"
    assert fsm("import", str(transcript), "-o", str(out), "-q").returncode == 0
    hooks = [r for r in _records(out) if r.get("name") == "hooks"]
    assert [h["args"] for h in hooks] == ["Stop", "Stop"]
    assert "say what you changed" in hooks[0]["result"]["blocking_errors"][0]
    assert not hooks[1]["result"].get("blocking_errors")


def test_an_automatic_compaction_is_the_engine_s_own_in_the_same_run(tmp_path: Path) -> None:
    """Claude Code compacted before its second request: the import makes one run whose
    engine compacts there too, its summary request answered with Claude Code's summary."""
    require_claude()
    session = next(s for s in SESSIONS if s.name == "autocompact")
    transcript = record(session, tmp_path / "claude")
    out = tmp_path / "imported.jsonl"
    imported = fsm("import", str(transcript), "-o", str(out))
    assert imported.returncode == 0, imported.stderr
    assert "starts a new run" not in imported.stderr
    assert len(imported.stdout.splitlines()) == 1
    records = _records(out)
    summary = [r for r in records if r.get("name") == "model" and r["args"]["purpose"] == "compact"]
    assert len(summary) == 1
    reports = [r for r in records if r.get("t") == "context" or r.get("level") == "autocompact"]
    assert any("autocompact" in json.dumps(r) for r in reports), reports


def _chained(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in lines if "uuid" in e]


def test_a_subagent_s_transcript_is_imported_apart_from_the_main_run(tmp_path: Path) -> None:
    """What the CLI writes for an `Agent` call (measured): the main transcript holds the
    call and its result only; the subagent's loop goes to `<session>/subagents/
    agent-<id>.jsonl`, every line `isSidechain` under the session's id, beside a
    `.meta.json`. The import makes it a log of its own, which replays with --check."""
    require_claude()
    session = next(s for s in SESSIONS if s.name == "subagent")
    transcript = record(session, tmp_path / "claude")
    [side] = (transcript.parent / transcript.stem / "subagents").glob("agent-*.jsonl")
    meta = json.loads(side.with_name(f"{side.stem}.meta.json").read_text())
    assert (meta["toolUseId"], meta["agentType"]) == ("toolu_a1", "general-purpose")
    main, sub = _chained(transcript), _chained(side)
    assert not any(e.get("isSidechain") for e in main)
    assert all(e["isSidechain"] and e["sessionId"] == transcript.stem for e in sub)
    assert sub[0]["message"]["content"] == "Say what notes.txt holds."
    out = tmp_path / "imported.jsonl"
    imported = fsm("import", str(transcript), "-o", str(out))
    assert imported.returncode == 0, imported.stderr
    agent_id = side.stem.removeprefix("agent-")
    agent_log = tmp_path / f"imported.agent-{agent_id}.jsonl"
    assert [line.split()[0] for line in imported.stdout.splitlines()] == [str(out), str(agent_log)]
    assert "kept apart from the main runs" in imported.stdout.splitlines()[1]
    header = SessionLog(agent_log).header
    assert header["imported"]["subagent"] == {
        "agent_id": agent_id,
        "tool_use_id": "toolu_a1",
        "agent_type": "general-purpose",
        "description": "Read the notes",
    }
    called = [r["args"]["name"] for r in _records(out) if r.get("name") == "tool"]
    assert called == ["Agent"]  # the subagent's Read is its own log's, not the main run's
    assert [r["args"]["name"] for r in _records(agent_log) if r.get("name") == "tool"] == ["Read"]
    check = fsm("replay", "--check", str(out), str(agent_log))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "a sidechain, apart from the session's main runs" in check.stderr
