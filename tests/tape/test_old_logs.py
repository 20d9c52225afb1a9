"""Logs written by an earlier release still replay exactly with today's engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.tape.coverage import REASONS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logs_0_1_0"
LOGS = sorted(FIXTURES.glob("*.jsonl"))


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_a_released_log_replays_with_check(log: Path) -> None:
    result = replay(log)
    assert result.path, f"{log.name} replayed no step"


def test_the_released_logs_take_every_reason() -> None:
    taken = {str(step.edge) for log in LOGS for step in replay(log).path}
    assert set(REASONS) <= taken, sorted(set(REASONS) - taken)
