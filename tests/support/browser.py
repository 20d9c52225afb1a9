"""A real browser for the replay viewer's tests: Debian's Chromium, driven by Playwright
through its executable path (no `playwright install`, no download).

Without Chromium (or Playwright) the tests skip with one line saying how to get it.
Screenshots are kept in one directory per run (`artifacts()`), printed by the tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""What Chromium needs to start here (as root, in a container, with no network)."""

HOW = (
    "no Chromium for the viewer's browser tests: `apt-get install chromium` (Debian), "
    "or set FSM_AGENT_CHROMIUM to a Chromium binary"
)


def chromium_path() -> str | None:
    named = os.environ.get("FSM_AGENT_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, or the test skipped with how to install one."""
    path = chromium_path()
    if path is None:
        pytest.skip(HOW)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("no Playwright for the viewer's browser tests: pip install playwright")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def artifacts() -> Path:
    """Where the screenshots go: FSM_AGENT_ARTIFACTS, or one directory in the system's
    temporary directory (kept after the run)."""
    named = os.environ.get("FSM_AGENT_ARTIFACTS")
    where = Path(named) if named else Path(tempfile.gettempdir()) / "fsm-agent-artifacts"
    where.mkdir(parents=True, exist_ok=True)
    return where
