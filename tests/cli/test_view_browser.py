"""The replay viewer in a real browser: headless Chromium opens `fsm-agent view`'s page
from a file, and the tests step with the keyboard, search, follow a URL fragment and
read what is displayed, as a user would. Each test keeps a screenshot (its path printed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import ROOT
from tests.support.browser import artifacts, chromium
from tests.support.cli import fsm
from tests.support.logs import reseal

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

FIX_BUG = ROOT / "replays" / "fix_bug.jsonl"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def open_page(browser: Browser, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator:
    """`open_page(LOG, fragment="")`: the viewer of LOG, made by the command line and
    opened from its file; the page's script errors fail the test."""
    pages: list[Page] = []
    errors: list[str] = []

    def go(log: Path, fragment: str = "") -> Page:
        out = tmp_path / f"{log.stem}.html"
        proc = fsm("view", str(log), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(out.as_uri() + fragment)
        page.wait_for_selector("body[data-ready='1']")
        pages.append(page)
        return page

    yield go
    for n, page in enumerate(pages):
        shot = artifacts() / f"{request.node.name}-{n}.png"
        page.screenshot(path=str(shot))
        print(f"screenshot: {shot}")
        assert shot.stat().st_size > 0
        page.close()
    assert errors == []


def title(page: Page) -> str:
    return page.inner_text("#title")


def test_the_arrow_keys_step_and_the_page_shows_the_step(open_page) -> None:
    page = open_page(FIX_BUG)
    assert title(page).startswith("step 0/34: start, in preprocess")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert title(page).startswith("step 3/34: api_call -[streamed]-> abort_check")
    assert page.url.endswith("#step=3")
    assert "Let me set up the script and see what it prints." in page.inner_text("#effects")
    assert "average.py prints the wrong average" in page.inner_text("#sent")
    assert page.get_attribute("#timeline .row.sel", "data-step") == "3"
    assert page.get_attribute("#diagram .ed.cur", "data-edge") == "streamed"
    assert page.get_attribute("#diagram .st.cur", "data-state") == "abort_check"
    page.keyboard.press("ArrowLeft")
    assert title(page).startswith("step 2/34: blocking_limit_check -[under_limit]-> api_call")


def test_up_and_down_move_a_turn(open_page) -> None:
    page = open_page(FIX_BUG, "#step=3")
    page.keyboard.press("ArrowDown")
    assert title(page).startswith("step 7/34: continuation -[next_turn]-> preprocess · turn 2")
    page.keyboard.press("ArrowDown")
    assert title(page).startswith("step 14/34")
    page.keyboard.press("ArrowUp")
    assert title(page).startswith("step 7/34")
    page.keyboard.press("ArrowUp")
    assert title(page).startswith("step 1/34")
    page.keyboard.press("End")
    assert "(end: completed)" in title(page)


def test_a_step_shows_its_state_what_changed_and_the_history(open_page) -> None:
    page = open_page(FIX_BUG, "#step=7")
    changed = page.locator("#fields tr.changed td:first-child").all_inner_texts()
    assert changed == ["messages", "tool_context", "pending_tool_use_summary", "turn_count",
                       "transition", "usage"]  # fmt: skip
    diff = page.inner_text("#diff")
    assert "messages: 1 → 3" in diff and "turn_count: 1 → 2" in diff
    assert "File created successfully" in page.inner_text("#history")


def test_search_finds_the_steps_whose_output_holds_the_text(open_page) -> None:
    page = open_page(FIX_BUG)
    page.keyboard.press("/")
    page.keyboard.type("3.75")
    page.keyboard.press("Enter")
    assert title(page).startswith("step 12/34")
    assert page.inner_text("#found") == "1 of 2 steps"  # the tool result, the answer after
    assert page.locator("#effects mark").first.inner_text() == "3.75"
    page.keyboard.press("Enter")
    assert title(page).startswith("step 17/34")
    page.keyboard.press("Escape")
    page.keyboard.press("ArrowRight")
    assert title(page).startswith("step 18/34")


def test_g_goes_to_a_step_and_its_marks_show(open_page) -> None:
    page = open_page(ROOT / "replays" / "image_error.jsonl")  # fix_bug has no error now
    page.keyboard.press("g")
    page.keyboard.type("5")
    page.keyboard.press("Enter")
    assert title(page).startswith("step 5/5: recovery -[image_error]-> image_error")
    assert page.get_attribute("#title .mk", "title") == "error"


def test_the_fragment_opens_a_step_and_following_a_link_moves(open_page) -> None:
    page = open_page(FIX_BUG, "#step=26")
    assert title(page).startswith("step 26/34")
    page.evaluate("location.hash = '#step=31'")
    page.wait_for_function("document.getElementById('title').textContent.startsWith('step 31/')")
    assert "Fixed:" in page.inner_text("#effects")


def test_a_divergence_opens_at_its_step_with_both_sides(open_page, tmp_path: Path) -> None:
    rows = [json.loads(r) for r in (ROOT / "replays" / "tool_round.jsonl").read_text().splitlines()]
    next(r for r in rows if r.get("edge") == "next_turn")["turn"] = 9
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reseal(changed)
    page = open_page(changed)
    assert title(page).startswith("step 7/20")
    assert "diverged at step 7: transition" in page.inner_text("#divergence")
    assert '"turn": 9' in page.inner_text("#div-log")
    assert '"turn": 2' in page.inner_text("#div-code")
