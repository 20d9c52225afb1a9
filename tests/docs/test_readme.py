"""The README's front door stays true: its commands and its Python example work."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.messages_server import MessagesServer, text
from tests.support.messages_server import messages_server_fixture as messages_server_fixture

README = (ROOT / "README.md").read_text()


def test_quick_start_runs_a_shipped_scenario() -> None:
    block = re.search(r"```sh norun\n(python3 -m venv .*?)\n```", README, re.S)
    assert block is not None
    scenario = re.search(r"--scripted (\S+)", block.group(1))
    assert scenario is not None and (ROOT / scenario.group(1)).is_file()
    assert "```sh norun\n.venv/bin/python -m pytest\n```" in README


def test_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as written, twice, away from the checkout: the example makes its workspace
    and its scenario itself (tests/docs/test_examples.py runs it in a fresh process too)."""
    example = re.search(
        r"```python\n(import tempfile\n\nfrom fsm_agent import .*?)```", README, re.S
    )
    assert example is not None
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        scope: dict = {}
        exec(compile(example.group(1), "README", "exec"), scope)
        work = Path(scope["work"])
        assert (work / "notes.txt").read_text() == "hello\n"
        assert (work / "session.jsonl").is_file()


def test_compatible_server_command_runs_as_written(
    messages_server: MessagesServer, tmp_path: Path
) -> None:
    """The README's `--base-url` line, against a loopback server in its place."""
    line = re.search(
        r"```sh norun\n(ANTHROPIC_API_KEY=\S+ \.venv/bin/fsm-agent run .*)\n```", README
    )
    assert line is not None
    assign, _, command = line.group(1).partition(" ")
    words = shlex.split(command.replace("http://127.0.0.1:4000", messages_server.url))
    assert words[0] == ".venv/bin/fsm-agent"
    messages_server.reply(text("Hello."))
    name, _, key = assign.partition("=")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", *words[1:]],
        env={**env, name: key},
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Hello.\n")
    (body,) = messages_server.bodies()
    model = re.search(r"--model (\S+)", line.group(1))
    assert model is not None and body["model"] == model.group(1)
