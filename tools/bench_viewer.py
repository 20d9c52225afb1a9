"""The replay viewer on a long session: how soon its page is usable, and its size.

Records an N-iteration scripted session (one trivial tool call per iteration, as in
bench_replay.py: 7 steps an iteration), builds its page as `fsm-agent view` does, and
opens it from disk in headless Chromium (Debian's, driven by Playwright). Prints the
seconds to build the page, the seconds from navigation to usable (the page drawn, then
`End` pressed and the last step shown: target < 2 s at N=10,000), the same for
replays/fix_bug.jsonl measured in the same run, for scale, and the page's size against
the log's (target ≤ 3×).

    python tools/bench_viewer.py [N ...]        # default: 10000
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import Browser, sync_playwright

from fsm_agent.cli.view_page import page
from fsm_agent.tape.view import view_data
from tests.support.browser import FLAGS, HOW, chromium_path
from tools.bench_replay import record

ROOT = Path(__file__).resolve().parent.parent


def build(log: Path, html: Path) -> tuple[int, float]:
    """The page's steps, and the seconds to build it (before the browser starts:
    Playwright's sync API holds an event loop, and the stepper runs its own)."""
    start = time.perf_counter()
    data = view_data(log)
    html.write_text(page(data), encoding="utf-8")
    return len(data["steps"]), time.perf_counter() - start


def usable(browser: Browser, html: Path, repeat: int = 3) -> float:
    """The best of `repeat`: navigation to the page drawn and its last step shown."""
    best = float("inf")
    for _ in range(repeat):
        tab = browser.new_page(viewport={"width": 1400, "height": 900})
        start = time.perf_counter()
        tab.goto(html.as_uri())
        tab.wait_for_selector("body[data-ready='1']")
        tab.keyboard.press("End")
        last = tab.evaluate("JSON.parse(document.getElementById('data').textContent).steps.length")
        tab.wait_for_function(
            f"document.getElementById('title').textContent.startsWith('step {last}/')"
        )
        best = min(best, time.perf_counter() - start)
        tab.close()
    return best


def main(sizes: list[int]) -> None:
    chromium = chromium_path()
    if chromium is None:
        sys.exit(f"bench_viewer: {HOW}")
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "fix_bug.html"
        build(ROOT / "replays" / "fix_bug.jsonl", small)
        ratios = []
        for log in sorted((ROOT / "replays").glob("*.jsonl")):
            build(log, Path(tmp) / "shipped.html")
            ratios.append((Path(tmp) / "shipped.html").stat().st_size / log.stat().st_size)
        print(f"the shipped replays: page/log {min(ratios):.2f} to {max(ratios):.2f}", end="")
        print(" (small logs: the page's script and style are about 25 KB)")
        print(
            f"{'N':>6} {'steps':>7} {'log':>8} {'page':>8} {'page/log':>8} "
            f"{'build':>7} {'usable':>7} {'fix_bug usable':>15}"
        )
        built = []
        for n in sizes:
            log = Path(tmp) / f"bench-{n}.jsonl"
            record(n, log)
            built.append((n, log, log.with_suffix(".html"), *build(log, log.with_suffix(".html"))))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
            for n, log, html, steps, seconds in built:
                ready, baseline = usable(browser, html), usable(browser, small)
                size, pagesize = log.stat().st_size, html.stat().st_size
                print(
                    f"{n:>6} {steps:>7} {size / 2**20:>7.1f}M {pagesize / 2**20:>7.1f}M "
                    f"{pagesize / size:>8.2f} {seconds:>6.1f}s {ready:>6.2f}s {baseline:>14.2f}s"
                )
            browser.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10000])
