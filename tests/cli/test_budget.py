"""`--max-budget-usd` as Claude Code honours it, measured against the real CLI: the run
stops after the response that reached the budget (its tool calls never run), with an
`error_max_budget_usd` result whose `terminal_reason` is none of the loop's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.support.cli import MODEL, costly_bash
from tests.support.messages_server import (
    MessagesServer,
    text,
)
from tests.support.real_claude import run_claude, trusted_home


def fsm_claude(server: MessagesServer, workspace: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "k", "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT), "HOME": str(workspace.parent / "home"),
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli.claude", *args],
        capture_output=True, text=True, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
        timeout=120,
    )  # fmt: skip


def spend(side: str, root: Path, budget: str, *fmt: str) -> Any:
    """One side's run of the same script: (exit code, stdout, requests, files made)."""
    with MessagesServer() as server:
        return _spend(side, server, root, budget, *fmt)


def _spend(side: str, server: MessagesServer, root: Path, budget: str, *fmt: str) -> Any:
    workspace = root / side / "ws"
    workspace.mkdir(parents=True)
    # Each call takes a second: Claude Code stops its run when the response that reached
    # the budget is out, and a call that started by then is killed with it (one quicker
    # than the process's exit may finish, a race that made the test flaky under load).
    server.reply(
        costly_bash("sleep 1; touch one", "toolu_1"),
        costly_bash("sleep 1; touch two", "toolu_2"),
        text("done"),
    )
    args = ["-p", "spend", *fmt, "--allowedTools", "Bash", "--model", MODEL,
            "--max-budget-usd", budget]  # fmt: skip
    if side == "claude":
        run = run_claude(server, workspace, trusted_home(root / side / "home", workspace), *args)
        code, out = run.returncode, run.stdout
    else:
        proc = fsm_claude(server, workspace, *args)
        code, out = proc.returncode, proc.stdout
    made = sorted(p.name for p in workspace.iterdir() if p.is_file())
    return code, out, len(server.bodies()), made


def _result(out: str) -> dict[str, Any]:
    result = [json.loads(line) for line in out.splitlines() if line.strip()][-1]
    keys = ("subtype", "is_error", "terminal_reason", "errors", "num_turns", "stop_reason")
    return {key: result.get(key) for key in keys}


@pytest.mark.parametrize("budget", ["0.01", "0.5"])
def test_the_budget_ends_the_run_where_claude_codes_does(tmp_path: Path, budget: str) -> None:
    fmt = ("--output-format", "stream-json", "--verbose")
    theirs = spend("claude", tmp_path, budget, *fmt)
    ours = spend("fsm", tmp_path, budget, *fmt)
    assert (ours[0], ours[2], ours[3]) == (theirs[0], theirs[2], theirs[3])  # exit, calls, files
    assert _result(ours[1]) == _result(theirs[1])
    assert _result(ours[1])["subtype"] == "error_max_budget_usd"


def test_text_output_says_the_budget_was_exceeded(tmp_path: Path) -> None:
    theirs = spend("claude", tmp_path, "0.5", "--output-format", "text")
    ours = spend("fsm", tmp_path, "0.5", "--output-format", "text")
    assert ours[1].strip() == theirs[1].strip() == "Error: Exceeded USD budget (0.5)"
    assert ours[0] == theirs[0] == 1
