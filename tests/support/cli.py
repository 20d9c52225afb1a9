"""Running `fsm-agent` as a user runs it: a fresh interpreter, no API key unless a test
gives one, and the one-line error the command line promises."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import SCENARIOS
from tests.support.messages_server import MessagesServer, message

MODEL = "claude-sonnet-4-6"
"""The model id the runs against the local Messages server ask for (a priced one)."""


def fsm_argv() -> list[str]:
    return [sys.executable, "-m", "fsm_agent.cli"]


def fsm(
    *args: str | bytes,
    cwd: Path | None = None,
    env: dict | None = None,
    input: str | bytes | None = None,
) -> subprocess.CompletedProcess:
    """`fsm-agent ARGS` with no API key; text in and out, or bytes given `input` bytes.

    An `env` that gives the run its own HOME gives it a whole user's: the suite's
    `CLAUDE_CONFIG_DIR` is dropped (unless `env` sets one), so `~/.claude.json` and
    `~/.claude/settings.json` are read there, as the CLI reads them."""
    full_env = {**os.environ, **(env or {})}
    if env and "HOME" in env and "CLAUDE_CONFIG_DIR" not in env:
        full_env.pop("CLAUDE_CONFIG_DIR", None)
    full_env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [*fsm_argv(), *args],
        capture_output=True,
        text=not isinstance(input, bytes),
        cwd=cwd,
        env=full_env,
        input=input,
        timeout=60,
    )


def fsm_with(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`fsm-agent ARGS` in a fresh interpreter with `env`, stdin empty."""
    return subprocess.run(
        [*fsm_argv(), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def fsm_on_server(
    server: MessagesServer, workspace: Path, *args: str
) -> subprocess.CompletedProcess:
    """`fsm-agent run ARGS` against the local Messages server, in `workspace`."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key"}
    where = ["--base-url", server.url, "--model", MODEL, "--cwd", str(workspace)]
    return fsm_with(env, "run", *args, *where)


def run_scripted(name: str, workspace: Path, log: Path, *extra: str) -> subprocess.CompletedProcess:
    """`fsm-agent run --scripted` on a shipped scenario, in `workspace`, logging to `log`."""
    scenario = str(SCENARIOS / f"{name}.json")
    return fsm("run", "--scripted", scenario, "--cwd", str(workspace), "--log", str(log), *extra)


def run_json(workspace: Path, tmp_path: Path, name: str, *extra: str) -> tuple[dict, int]:
    """A shipped scenario's `--output-format json` result, and the exit code."""
    proc = run_scripted(
        name, workspace, tmp_path / f"{name}.jsonl", "--output-format", "json", *extra
    )
    return json.loads(proc.stdout), proc.returncode


def stream_lines(workspace: Path, tmp_path: Path, name: str, *extra: str) -> list[dict]:
    """A shipped scenario's `--output-format stream-json` lines, from a run that succeeded."""
    proc = run_scripted(
        name, workspace, tmp_path / f"{name}.jsonl", "--output-format", "stream-json", *extra
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def one_error_line(proc: subprocess.CompletedProcess, needle: str) -> None:
    """The command refused its input the documented way: exit 2, one `fsm-agent: error:`
    line holding `needle`, no traceback."""
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fsm-agent: error:") and needle in lines[0]


def costly_bash(command: str, call_id: str) -> Any:
    """A Bash call whose response costs $0.315 at the test model's price."""
    return message(
        [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}],
        stop_reason="tool_use", usage={"input_tokens": 100_000, "output_tokens": 1000},
        model=MODEL,
    )  # fmt: skip
