"""Logs written by an earlier release still replay exactly with today's engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.tape.coverage import REASONS
from fsm_agent.tape.divergence import Divergence
from tests.support.logs import reseal

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logs_0_1_0"
LOGS = sorted(FIXTURES.glob("*.jsonl"))
BLOCKED = sorted((FIXTURES.parent / "logs_v3").glob("*.jsonl"))


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_a_released_log_replays_with_check(log: Path) -> None:
    result = replay(log)
    assert result.path, f"{log.name} replayed no step"


def test_the_released_logs_take_every_reason() -> None:
    taken = {str(step.edge) for log in LOGS for step in replay(log).path}
    assert set(REASONS) <= taken, sorted(set(REASONS) - taken)


@pytest.mark.parametrize("log", BLOCKED, ids=[p.stem for p in BLOCKED])
def test_a_prompt_blocked_before_the_machine_had_its_edge_replays_with_check(log: Path) -> None:
    """Those logs end with no transition and a result of 0 steps; today's engine takes
    the `prompt_blocked` edge there, which is what they recorded as the end."""
    records = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [r["t"] for r in records if r["t"] != "effect"] == ["start", "result"]
    result = replay(log)
    assert (result.reason, result.edges, result.turns) == ("prompt_blocked", ("prompt_blocked",), 0)
    assert result.error is not None and "by hook" in result.error


def test_an_old_log_of_0_steps_that_ended_otherwise_still_diverges(tmp_path: Path) -> None:
    """The rule is for blocked prompts only: any other result of 0 steps is not what the
    engine does."""
    lines = BLOCKED[0].read_text().splitlines(keepends=True)
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(lines[:-1]) + lines[-1].replace('"prompt_blocked"', '"completed"'))
    with pytest.raises(Divergence):
        replay(reseal(edited))
