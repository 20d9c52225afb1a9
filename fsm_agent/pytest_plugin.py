"""pytest plugin: the `fsm_run` fixture, for snapshotting transition paths.

    def test_fix_bug(fsm_run, snapshot):
        run = fsm_run("scenarios/fix_bug.json")
        assert run.path_lines == snapshot

A `.json` argument is a scenario, run in a fresh workspace with its log in
the test's tmp_path; so is a scenario written inline, as a dict or a
`Scenario`. A `.jsonl` argument is a recorded session, replayed with every
effect answered from it (a divergence fails the test).

pytest loads this module in every session of an environment with fsm-agent
installed, so it reaches the engine through the package's lazy face: a session
that never asks for the fixture never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from attrs import frozen

import fsm_agent

if TYPE_CHECKING:
    from fsm_agent.engine.driver import LoopResult
    from fsm_agent.live.scripted import Scenario


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
    """Run a scenario (a `.json` file, a dict, a `Scenario`) or replay a log (`.jsonl`).

    Each scenario run gets its own empty workspace and log under `tmp_path`
    (the second run of a test `workspace-2` and `NAME-2.jsonl`, and so on)
    unless `cwd=` or `log=` says otherwise; other keyword arguments go to
    `run_scenario`, or to `replay` for a log. Relative paths are taken from
    the current directory, where pytest was started.
    """
    runs = 0

    def go(source: str | Path | dict[str, Any] | Scenario, **kwargs: Any) -> FsmRun:
        nonlocal runs
        if isinstance(source, dict):
            source = fsm_agent.Scenario.parse(source, "the inline scenario")
        if isinstance(source, fsm_agent.Scenario):
            name = "scenario"
        else:
            source = Path(source)
            if source.suffix.lower() == ".jsonl":
                return FsmRun(fsm_agent.replay(source, **kwargs), source)
            name = source.stem
        runs += 1
        suffix = "" if runs == 1 else f"-{runs}"
        workspace = Path(kwargs.pop("cwd", tmp_path / f"workspace{suffix}"))
        workspace.mkdir(parents=True, exist_ok=True)
        log = Path(kwargs.pop("log", tmp_path / f"{name}{suffix}.jsonl"))
        return FsmRun(fsm_agent.run_scenario(source, cwd=workspace, log=log, **kwargs), log)

    return go
