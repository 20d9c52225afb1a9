"""`fsm-agent view` and `replay --check --view` as a user runs them: the page written
where asked, a browser opened on it (BROWSER, a script here that notes its URL), and
every bad input one error line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.conftest import ROOT
from tests.support.cli import fsm, one_error_line
from tests.support.logs import reseal

FIX_BUG = ROOT / "replays" / "fix_bug.jsonl"


def _data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


def _browser(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A BROWSER that writes the URL it is given to a file, as a real one would open it."""
    seen = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> {seen}\n')
    script.chmod(0o755)
    return {"BROWSER": str(script)}, seen


def test_view_writes_one_self_contained_page_next_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "fix_bug.jsonl"
    shutil.copy(FIX_BUG, log)
    proc = fsm("view", str(log))
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "fix_bug.html"
    assert proc.stdout.strip() == str(page)
    html = page.read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html)  # nothing fetched
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    data = _data(html)
    assert data["log"] == "fix_bug.jsonl" and len(data["steps"]) == 34


def test_a_string_in_the_log_cannot_end_the_data_early(tmp_path: Path) -> None:
    rows = [json.loads(r) for r in FIX_BUG.read_text().splitlines()]
    rows[1]["messages"][0]["content"][0]["text"] = "</script><script>alert(1)</script>"
    log = tmp_path / "odd.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reseal(log)
    out = tmp_path / "odd.html"
    assert fsm("view", str(log), "-o", str(out)).returncode == 0
    html = out.read_text()
    assert html.count("</script>") == 2  # the data's and the script's own
    assert "</script><script>alert(1)" in json.dumps(_data(html), ensure_ascii=False)


def test_view_open_hands_the_browser_the_page(tmp_path: Path) -> None:
    env, seen = _browser(tmp_path)
    out = tmp_path / "page.html"
    proc = fsm("view", str(FIX_BUG), "-o", str(out), "--open", env=env)
    assert proc.returncode == 0, proc.stderr
    assert seen.read_text().strip() == out.resolve().as_uri()


def test_view_refuses_bad_input_with_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    one_error_line(fsm("view", str(junk), "-o", str(tmp_path / "x.html")), "not a session log")
    one_error_line(fsm("view", str(tmp_path / "nope.jsonl")), "no such")
    log = tmp_path / "log.html"
    shutil.copy(FIX_BUG, log)
    one_error_line(fsm("view", str(log)), "is the log itself")
    assert log.read_bytes() == FIX_BUG.read_bytes()
    gone = tmp_path / "no" / "such" / "dir" / "x.html"
    one_error_line(fsm("view", str(FIX_BUG), "-o", str(gone)), "cannot write")
    one_error_line(fsm("replay", str(FIX_BUG), "--view"), "--view is for --check")


def test_replay_check_view_opens_a_divergence_at_its_step(tmp_path: Path) -> None:
    rows = [json.loads(r) for r in (ROOT / "replays" / "tool_round.jsonl").read_text().splitlines()]
    next(r for r in rows if r.get("edge") == "next_turn")["turn"] = 9
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reseal(changed)
    env, seen = _browser(tmp_path)
    proc = fsm("replay", str(changed), "--check", "--view", env=env)
    assert proc.returncode == 1
    assert "diverged at step 7: transition" in proc.stderr
    (url,) = seen.read_text().splitlines()
    assert url.startswith("file://") and url.endswith("changed.html#step=7")
    page = Path(url.removeprefix("file://").partition("#")[0])
    assert f"the viewer, at step 7: {page}" in proc.stderr
    assert _data(page.read_text())["diverged"]["diff"] == ["turn: 9 → 2"]
    assert fsm("replay", str(FIX_BUG), "--check", "--view", env=env).returncode == 0
    assert len(seen.read_text().splitlines()) == 1  # a log that matches opens nothing
