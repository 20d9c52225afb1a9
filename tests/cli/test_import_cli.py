"""`fsm-agent import`: hand-made transcripts, the errors it gives, the interrupts it re-enacts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.cli import fsm, one_error_line, run_scripted
from tests.support.transcripts import CALL, jsonl, prompt, result, said

INTERRUPT = {"type": "text", "text": "[Request interrupted by user]"}
TOOL_INTERRUPT = "[Request interrupted by user for tool use]"


def _import(tmp_path: Path, data: bytes, *extra: str) -> tuple[Path, object]:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(data)
    out = tmp_path / "out.jsonl"
    return out, fsm("import", str(transcript), "-o", str(out), *extra)


def _reason(log: Path) -> str:
    return json.loads(log.read_text().splitlines()[-1])["reason"]


def test_an_interrupt_while_the_model_answered_is_re_enacted(tmp_path: Path) -> None:
    stopped = said(2, "m1", {"type": "text", "text": "Let me"})
    interrupt = prompt(3, "")
    interrupt["message"]["content"] = [INTERRUPT]
    out, proc = _import(tmp_path, jsonl(prompt(1, "go"), stopped, interrupt))
    assert proc.returncode == 0, proc.stderr
    assert _reason(out) == "aborted_streaming"
    assert fsm("replay", "--check", str(out)).returncode == 0


def test_an_interrupt_during_tools_is_re_enacted(tmp_path: Path) -> None:
    data = jsonl(prompt(1, "go"), said(2, "m1", CALL), result(3, "t1", TOOL_INTERRUPT, error=True))
    out, proc = _import(tmp_path, data)
    assert proc.returncode == 0, proc.stderr
    assert _reason(out) == "aborted_tools"
    assert fsm("replay", "--check", str(out)).returncode == 0


def test_a_run_that_parts_from_the_transcript_says_where_and_exits_1(tmp_path: Path) -> None:
    # The model calls a tool but the transcript holds no result for it: the engine
    # asks for a second response the transcript does not have.
    out, proc = _import(tmp_path, jsonl(prompt(1, "go"), said(2, "m1", CALL)))
    assert proc.returncode == 1
    assert f"{tmp_path / 't.jsonl'}:1: differs: no result for the call t1" in proc.stderr
    assert fsm("replay", "--check", str(out)).returncode == 0  # what it recorded replays


def test_assumptions_and_broken_lines_go_to_stderr_once_each(tmp_path: Path) -> None:
    data = jsonl(prompt(1, "go"), [1], said(3, "m1", {"type": "text", "text": "ok"}))
    out, proc = _import(tmp_path, data)
    assert proc.returncode == 0
    assert proc.stderr.count("assumed: max_tokens") == 1
    assert f"{tmp_path / 't.jsonl'}:2: not a transcript entry (a list" in proc.stderr
    assert proc.stdout.split()[0] == str(out)
    assert "Traceback" not in proc.stderr


def test_a_file_that_is_no_transcript_is_one_error_line(tmp_path: Path) -> None:
    _, proc = _import(tmp_path, b'"massive error"\n{"silly": 1}\n')
    one_error_line(proc, "not a Claude Code transcript")


def test_a_session_log_is_not_taken_for_a_transcript(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "run.jsonl"
    assert run_scripted("fix_bug", workspace, log).returncode == 0
    one_error_line(
        fsm("import", str(log), "-o", str(tmp_path / "o.jsonl")), "an fsm-agent session log"
    )


def test_a_missing_transcript_and_a_taken_log_are_one_error_line_each(tmp_path: Path) -> None:
    one_error_line(
        fsm("import", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl")), "cannot read"
    )
    taken = tmp_path / "out.jsonl"
    taken.write_text("mine")
    _, proc = _import(
        tmp_path, jsonl(prompt(1, "go"), said(2, "m1", {"type": "text", "text": "x"}))
    )
    one_error_line(proc, "already there")
    assert taken.read_text() == "mine"


def test_the_commands_that_take_logs_take_a_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(
        jsonl(
            prompt(1, "go"),
            said(2, "m1", CALL),
            result(3, "t1", "a.txt"),
            said(4, "m2", {"type": "text", "text": "One file."}),
        )
    )
    check = fsm("replay", "--check", str(transcript))
    assert check.returncode == 0 and "steps match the log; ends completed" in check.stdout
    path = fsm("replay", "--path", str(transcript))
    assert path.returncode == 0 and "abort_check -[tool_use]-> tool_execution" in path.stdout
    coverage = fsm("coverage", str(transcript))
    assert coverage.returncode == 0
    assert re.search(r"tool_execution -\[tools_done\]-> attachments +1\n", coverage.stdout)
    graph = fsm("graph", "--highlight", str(transcript))
    assert graph.returncode == 0 and "taken" in graph.stdout
    assert "assumed: max_tokens" in check.stderr


def test_a_transcript_of_several_runs_is_checked_whole_but_not_debugged_as_one(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(
        jsonl(
            prompt(1, "a"),
            said(2, "m1", {"type": "text", "text": "x"}),
            prompt(3, "b"),
            said(4, "m2", {"type": "text", "text": "y"}),
        )
    )
    check = fsm("replay", "--check", str(transcript))
    assert check.returncode == 0 and "2 logs: 2 match" in check.stdout
    one_error_line(fsm("replay", "--path", str(transcript)), "a Claude Code transcript of 2 runs")
