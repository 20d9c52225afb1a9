"""The viewer's screenshot in docs/replay.md and the README: a shipped session
(replays/fix_bug.jsonl) opened in `fsm-agent view`'s page, drawn by the current code.

Headless Chromium (Debian's `chromium`, driven by Playwright through its path; no
browser download) opens the page at a step and saves a PNG.

    python tools/screenshot_viewer.py [LOG] [--step N] [-o PNG]   # default: docs/viewer.png
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright

from fsm_agent.cli.view_page import page
from fsm_agent.tape.view import view_data
from tests.support.browser import FLAGS, HOW, chromium_path

ROOT = Path(__file__).resolve().parent.parent


def screenshot(log: Path, step: int, png: Path, width: int = 1400, height: int = 1250) -> None:
    chromium = chromium_path()
    if chromium is None:
        sys.exit(f"screenshot_viewer: {HOW}")
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "view.html"
        html.write_text(page(view_data(log)), encoding="utf-8")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
            tab = browser.new_page(viewport={"width": width, "height": height})
            tab.goto(f"{html.as_uri()}#step={step}")
            tab.wait_for_selector("body[data-ready='1']")
            tab.screenshot(path=str(png))
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?", type=Path, default=ROOT / "replays" / "fix_bug.jsonl")
    parser.add_argument("--step", type=int, default=17, help="the step shown (default 17)")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "viewer.png")
    args = parser.parse_args()
    if shutil.which("chromium") is None and chromium_path() is None:
        sys.exit(f"screenshot_viewer: {HOW}")
    screenshot(args.log, args.step, args.output)
    print(args.output)


if __name__ == "__main__":
    main()
