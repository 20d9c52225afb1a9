"""A session log never overwrites a file: `--log` onto an existing one is refused.

The file may be the very log being resumed or forked, or a chat's earlier
log: losing it loses a recorded session. The refusal comes before anything
runs (no tool touches the workspace), in one error line naming the file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fsm_agent.cli.launch import Plan
from fsm_agent.tape.log import LogError, LogWriter
from tests.conftest import ROOT, SCENARIOS
from tests.support.cli import fsm, one_error_line

TOOL_ROUND = str(SCENARIOS / "tool_round.json")
REFUSED = "already exists; a session log never overwrites a file"


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    """A copy of a shipped log, so a test may try to overwrite it."""
    path = tmp_path / "parent.jsonl"
    shutil.copy(ROOT / "replays" / "tool_round.jsonl", path)
    return path


def test_the_writer_refuses_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text("precious\n")
    with pytest.raises(LogError, match=f"^{path}: {REFUSED}$"):
        LogWriter(path, {"session_id": "s"})
    assert path.read_text() == "precious\n"


def test_run_log_onto_an_existing_file_is_refused_before_anything_runs(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "old.jsonl"
    log.write_text("precious\n")
    proc = fsm("run", "--scripted", TOOL_ROUND, "--cwd", str(workspace), "--log", str(log))
    one_error_line(proc, f"{log}: {REFUSED}")
    assert log.read_text() == "precious\n"
    assert not (workspace / "notes.txt").exists(), "no tool may run"


def test_resume_onto_the_log_being_resumed_keeps_it(parent: Path, workspace: Path) -> None:
    before = parent.read_bytes()
    answer = parent.with_name("answer.json")
    answer.write_text(json.dumps({"turns": [{"content": "ok"}]}))
    proc = fsm(
        "run", "--scripted", str(answer), "--resume", str(parent), "--log", str(parent),
        "--cwd", str(workspace), "more",
    )  # fmt: skip
    one_error_line(proc, f"{parent}: {REFUSED}")
    assert parent.read_bytes() == before


def test_fork_onto_the_log_being_forked_keeps_it(parent: Path, workspace: Path) -> None:
    before = parent.read_bytes()
    proc = fsm(
        "replay", str(parent), "--fork-at", "3", "--scripted", TOOL_ROUND,
        "--cwd", str(workspace), "--log", str(parent),
    )  # fmt: skip
    one_error_line(proc, f"{parent}: {REFUSED}")
    assert parent.read_bytes() == before


def test_a_chat_s_later_logs_skip_files_already_there(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "two.json"
    script.write_text(json.dumps({"turns": [{"content": "one"}, {"content": "two"}]}))
    log = tmp_path / "c.jsonl"
    (tmp_path / "c.2.jsonl").write_text("precious\n")
    proc = fsm(
        "chat", "--scripted", str(script), "--cwd", str(workspace), "--log", str(log),
        input="first\nsecond\n",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "c.2.jsonl").read_text() == "precious\n"
    third = tmp_path / "c.3.jsonl"
    assert f"log: {third}" in proc.stdout
    assert json.loads(third.read_text().splitlines()[0])["parent"]["log"] == str(log)


def test_next_log_counts_past_existing_files(tmp_path: Path) -> None:
    plan = Plan(model=None, config=None, hooks=None, abort=None, log=tmp_path / "c.jsonl")  # type: ignore[arg-type]
    plan.runs = 1
    assert plan.next_log() == tmp_path / "c.2.jsonl"
    (tmp_path / "c.2.jsonl").write_text("")
    (tmp_path / "c.3.jsonl").write_text("")
    assert plan.next_log() == tmp_path / "c.4.jsonl"
