"""The README's front door stays true: its commands and its Python example work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_quick_start_runs_a_shipped_scenario() -> None:
    block = re.search(r"```sh\n(python3 -m venv .*?)\n```", README, re.S)
    assert block is not None
    scenario = re.search(r"--scripted (\S+)", block.group(1))
    assert scenario is not None and (ROOT / scenario.group(1)).is_file()
    assert "```sh\n.venv/bin/python -m pytest\n```" in README


def test_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as written, in a fresh place: the example makes its workspace itself."""
    example = re.search(
        r"```python\n(import os\n\nfrom fsm_agent.config import .*?)```", README, re.S
    )
    assert example is not None
    work = tmp_path / "work"
    monkeypatch.chdir(ROOT)
    exec(compile(example.group(1).replace("/tmp/work", str(work)), "README", "exec"), {})
    assert (work / "notes.txt").read_text() == "hello\n"
    assert (work / "session.jsonl").is_file()
