"""Path snapshots: the exact transitions each shipped scenario takes."""

from __future__ import annotations

import pytest

from fsm_agent.engine.machine import Continue, Terminal
from tests.conftest import SCENARIOS

NAMES = sorted(p.stem for p in SCENARIOS.glob("*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_path(name: str, scenario, snapshot) -> None:
    result = scenario(name)
    assert [str(step) for step in result.path] == snapshot


def test_scenarios_reach_all_seventeen_reasons(scenario) -> None:
    taken: set[str] = set()
    for name in NAMES:
        taken.update(scenario(name).edges)
    reasons = {c.value for c in Continue} | {t.value for t in Terminal}
    assert len(reasons) == 17
    assert reasons - taken == set()
