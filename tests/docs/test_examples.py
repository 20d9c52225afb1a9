"""Every example of the README and the docs runs as written, from anywhere, again and again,
and leaves the checkout as it was.

The `sh`, `bash` and `python` blocks of README.md and docs/*.md are taken from the
Markdown and each is run twice in a scratch directory: shell blocks by bash with
`fsm-agent` on the PATH (this checkout's), Python blocks by this interpreter, with
no API key and a scratch HOME. A block that cannot run there (a setup step that
installs, a real model's key, a synopsis with placeholders, a pytest test that
needs the fixture) carries `norun` in its info string, ```` ```sh norun ````: the
marker docs/testing.md describes for whoever adds a section.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUNNABLE = {"sh": "shell", "bash": "shell", "shell": "shell", "python": "python", "py": "python"}
NOT_RUN = "norun"
"""The info-string word of a block the test leaves alone."""

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
_CACHES = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}


@dataclass(frozen=True)
class Example:
    where: str
    kind: str
    code: str


def examples(text: str, name: str) -> list[Example]:
    """The runnable blocks of one Markdown file, each named `FILE:LINE`."""
    found = []
    for match in _FENCE.finditer(text):
        words = match.group(1).split()
        if not words or words[0] not in RUNNABLE or NOT_RUN in words[1:]:
            continue
        line = text.count("\n", 0, match.start()) + 1
        found.append(Example(f"{name}:{line}", RUNNABLE[words[0]], match.group(2)))
    return found


def all_examples() -> list[Example]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [ex for page in pages for ex in examples(page.read_text(), page.name)]


def checkout_files() -> set[str]:
    """Every file of the checkout but caches, ignored ones included (`.fsm-agent/` is)."""
    files = set()
    for root, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _CACHES]
        files.update(os.path.relpath(os.path.join(root, n), ROOT) for n in names)
    return files


def _run(example: Example, cwd: Path, home: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    argv = (
        ["bash", "-euo", "pipefail", "-c", example.code]
        if example.kind == "shell"
        else [sys.executable, "-c", example.code]
    )
    return subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose `fsm-agent` is this checkout's (the venv's may be another's)."""
    where = tmp_path_factory.mktemp("bin")
    script = where / "fsm-agent"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m fsm_agent.cli "$@"\n')
    script.chmod(0o755)
    return where


def test_the_docs_have_examples_to_run() -> None:
    found = all_examples()
    assert any(ex.kind == "python" for ex in found)
    assert any(ex.kind == "shell" for ex in found)


def test_the_marker_is_read_from_the_info_string() -> None:
    text = "```sh\necho a\n```\n\n```sh norun\nrm -rf /\n```\n\n```text\nx\n```\n"
    assert [ex.code for ex in examples(text, "t.md")] == ["echo a\n"]


@pytest.mark.parametrize("example", all_examples(), ids=lambda ex: ex.where)
def test_an_example_runs_anywhere_twice_and_leaves_the_checkout_alone(
    example: Example, tmp_path: Path, bin_dir: Path
) -> None:
    before = checkout_files()
    for attempt in (1, 2):
        scratch = tmp_path / f"run{attempt}"
        home = tmp_path / f"home{attempt}"
        scratch.mkdir()
        home.mkdir()
        proc = _run(example, scratch, home, bin_dir)
        assert proc.returncode == 0, f"{example.where} (run {attempt}):\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr, proc.stderr
    assert checkout_files() - before == set(), f"{example.where} wrote into the checkout"
