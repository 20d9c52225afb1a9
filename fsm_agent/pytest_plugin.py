"""pytest plugin: the `fsm_run` fixture, for snapshotting transition paths.

    def test_fix_bug(fsm_run, snapshot):
        run = fsm_run("scenarios/fix_bug.json")
        assert run.path_lines == snapshot

A `.json` argument is a scenario, run in a fresh workspace with its log in
the test's tmp_path; so is a scenario written inline, as a dict or a
`Scenario`. A `.jsonl` argument is a recorded session, replayed with every
effect answered from it (a divergence fails the test).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from attrs import frozen

if TYPE_CHECKING:
    from fsm_agent.driver import LoopResult
    from fsm_agent.scripted import Scenario


@frozen
class FsmRun:
    result: LoopResult
    log: Path | None

    @property
    def path_lines(self) -> list[str]:
        return [str(step) for step in self.result.path]

    @property
    def edges(self) -> tuple[str, ...]:
        return self.result.edges

    @property
    def reason(self) -> str:
        return self.result.reason


@pytest.fixture
def fsm_run(tmp_path: Path) -> Callable[..., FsmRun]:
    from fsm_agent.scripted import Scenario
    from fsm_agent.session import replay, run_scenario

    def go(source: str | Path | dict[str, Any] | Scenario, **kwargs: Any) -> FsmRun:
        if isinstance(source, dict):
            source = Scenario.parse(source, "the inline scenario")
        if isinstance(source, Scenario):
            name = "scenario"
        else:
            source = Path(source)
            if source.suffix == ".jsonl":
                return FsmRun(replay(source), source)
            name = source.stem
        workspace = Path(kwargs.pop("cwd", tmp_path / "workspace"))
        workspace.mkdir(parents=True, exist_ok=True)
        log = Path(kwargs.pop("log", tmp_path / f"{name}.jsonl"))
        return FsmRun(run_scenario(source, cwd=workspace, log=log, **kwargs), log)

    return go
