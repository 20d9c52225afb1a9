"""A log cut short (the recorded run was killed): replay goes as far as it reaches.

Every step it holds is checked as usual; where it stops, the replay says so
(`LogEnded`) instead of reporting a divergence, and `replay --check` passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.cli.debugger import Debugger
from fsm_agent.tape.divergence import Divergence, LogEnded
from tests.conftest import ROOT
from tests.support.cli import fsm
from tests.support.logs import change_next_turn, cut, reseal, transitions_in

REPLAYS = ROOT / "replays"
SHIPPED = sorted(REPLAYS.glob("*.jsonl"))


@pytest.mark.parametrize("log", SHIPPED, ids=lambda p: p.stem)
def test_every_cut_of_a_shipped_log_replays_up_to_where_it_stops(log: Path, tmp_path: Path) -> None:
    lines = len(log.read_bytes().splitlines())
    for keep in range(2, lines):
        part = cut(log, keep, tmp_path / f"{keep}.jsonl")
        with pytest.raises(LogEnded) as info:
            replay(part)
        assert info.value.step == transitions_in(part) + 1, f"cut after line {keep}"


def test_a_log_that_lost_only_its_result_is_cut_short_after_its_last_step(tmp_path: Path) -> None:
    """Every step matches, but a fixture without its `result` is not a whole session."""
    log = REPLAYS / "tool_round.jsonl"
    lines = len(log.read_bytes().splitlines())
    with pytest.raises(LogEnded) as info:
        replay(cut(log, lines - 1, tmp_path / "no_result.jsonl"))
    assert info.value.matched == transitions_in(log)
    done = fsm("replay", str(tmp_path / "no_result.jsonl"), "--check")
    assert done.returncode == 0
    assert done.stdout.startswith(
        f"✓ {transitions_in(log)} steps match the log; it ends there, without a result"
    )


def test_a_torn_result_line_is_a_log_cut_short(tmp_path: Path) -> None:
    data = (REPLAYS / "tool_round.jsonl").read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[:-20])
    with pytest.raises(LogEnded):
        replay(torn)


def test_records_after_the_last_step_are_a_divergence(tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_bytes().splitlines(keepends=True)
    extra = b'{"t":"effect","step":%d,"name":"now","request":"","result":1.0}\n' % (
        transitions_in(REPLAYS / "tool_round.jsonl") + 1
    )
    longer = tmp_path / "longer.jsonl"
    longer.write_bytes(b"".join([*rows[:-1], extra, rows[-1]]))
    reseal(longer)
    with pytest.raises(Divergence) as info:
        replay(longer)
    assert not isinstance(info.value, LogEnded)
    assert info.value.what == "effect now not asked for"


def test_a_transition_after_the_terminal_one_is_a_divergence(tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_bytes().splitlines(keepends=True)
    last = rows[-2]
    assert b'"t":"transition","step":20,' in last
    longer = tmp_path / "longer.jsonl"
    again = last.replace(b'"step":20,', b'"step":21,')  # numbered in order: a longer run
    longer.write_bytes(b"".join([*rows[:-1], again, rows[-1]]))
    reseal(longer)
    with pytest.raises(Divergence) as info:
        replay(longer)
    assert info.value.what == "transition"
    assert info.value.got == "the run ended completed"


def test_a_result_record_that_says_something_else_is_a_divergence(tmp_path: Path) -> None:
    text = (REPLAYS / "tool_round.jsonl").read_text()
    assert '"reason":"completed"' in text.splitlines()[-1]
    edited = tmp_path / "edited.jsonl"
    edited.write_text(text.replace('"reason":"completed"', '"reason":"max_turns"'))
    reseal(edited)
    with pytest.raises(Divergence) as info:
        replay(edited)
    assert info.value.what == "result"
    assert info.value.diff == ["reason: max_turns → completed"]
    done = fsm("replay", str(edited), "--check")
    assert done.returncode == 1
    assert "diverged at step" in done.stderr and ": result" in done.stderr


def test_a_divergence_before_the_cut_is_still_a_divergence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    part = cut(REPLAYS / "tool_round.jsonl", 20, tmp_path / "part.jsonl")
    assert transitions_in(part) > 7
    change_next_turn(monkeypatch)
    with pytest.raises(Divergence) as info:
        replay(part)
    assert not isinstance(info.value, LogEnded)
    assert info.value.step == 7


def test_a_missing_effect_before_the_cut_is_still_a_divergence(tmp_path: Path) -> None:
    rows = (REPLAYS / "tool_round.jsonl").read_bytes().splitlines(keepends=True)
    first_effect = next(i for i, r in enumerate(rows) if b'"t":"effect"' in r)
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(rows[:first_effect] + rows[first_effect + 1 : 12]))
    reseal(part)
    with pytest.raises(Divergence) as info:
        replay(part)
    assert not isinstance(info.value, LogEnded)


def test_check_passes_on_a_cut_log_and_says_where_it_stops(tmp_path: Path) -> None:
    part = cut(REPLAYS / "tool_round.jsonl", 12, tmp_path / "part.jsonl")
    steps = transitions_in(part)
    done = fsm("replay", str(part), "--check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"✓ {steps} steps match the log; it ends there, without a result")
    assert done.stdout.rstrip().endswith("the recorded run was killed, or is still running")


def test_check_of_a_log_with_only_a_header_is_a_clear_error(tmp_path: Path) -> None:
    part = cut(REPLAYS / "tool_round.jsonl", 1, tmp_path / "header.jsonl")
    done = fsm("replay", str(part), "--check")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"fsm-agent: error: {part}: the log ends after its header, before the run started "
        "(no `start` record)"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["replay", "LOG", "--path"],
        ["replay", "LOG"],
        ["coverage", "LOG"],
        ["graph", "--highlight", "LOG"],
    ],
)
def test_every_reader_of_a_log_with_only_a_header_says_so(
    command: list[str], tmp_path: Path
) -> None:
    """Not an empty path, exit 0: a header-only log holds no run (`replay` off a
    terminal prints the path, so it is the same check)."""
    part = cut(REPLAYS / "tool_round.jsonl", 1, tmp_path / "header.jsonl")
    done = fsm(*[str(part) if a == "LOG" else a for a in command], input="")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"fsm-agent: error: {part}: the log ends after its header, before the run started "
        "(no `start` record)"
    )


def test_a_log_cut_right_after_its_start_has_an_empty_path(tmp_path: Path) -> None:
    part = cut(REPLAYS / "tool_round.jsonl", 2, tmp_path / "start.jsonl")
    done = fsm("replay", str(part), "--path")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_debugger_shows_where_a_cut_log_ends(tmp_path: Path) -> None:
    part = cut(REPLAYS / "tool_round.jsonl", 12, tmp_path / "part.jsonl")
    steps = transitions_in(part)
    dbg = Debugger(part)
    try:
        assert "(end of the log: cut short, no result)" in dbg.text(f"g {steps}")
        assert dbg.text("n").startswith(
            f"*** no step {steps + 1}: the log ends after step {steps} without a result"
        )
    finally:
        dbg.stepper.close()


def test_a_call_started_early_leaves_nothing_behind_when_the_log_stops(tmp_path: Path) -> None:
    """The stream's call started a tool whose effects the log never got to: the
    replay stops cleanly, with no task left to complain that nobody read its failure."""
    rows = (REPLAYS / "autocompact.jsonl").read_bytes().splitlines(keepends=True)
    early = next(
        i
        for i in range(1, len(rows))
        if b'"name":"model"' in rows[i] and b'"name":"permission"' in rows[i - 1]
    )
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(rows[: early + 1]))
    reseal(part)
    done = fsm("replay", str(part), "--check")
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.count("\n") == 1
