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

When such a snapshot fails, the explanation names the first step where the paths
part, with its turn and the lines around it, numbered by step, in the few lines
plain `pytest -q` shows (syrupy's own diff needs `-vv`, and aligns the lines of a
path without their steps, so a change in one turn can show against an earlier one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence
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


_PATH_LINE = re.compile(r"^\w+ -\[\w+\]-> \w+$")
_SERIALIZED_LINE = re.compile(r"^\s*'(\w+ -\[\w+\]-> \w+)',$", re.MULTILINE)
_CONTEXT = 2


def _recorded(snapshot: Any) -> tuple[list[str], list[str]] | None:
    """The snapshot's path lines and the received ones, from syrupy's last comparison
    (its amber text); None when it was not of path lines."""
    executions = getattr(snapshot, "executions", None)
    count = getattr(snapshot, "num_executions", 0)
    if not isinstance(executions, dict) or not count or count - 1 not in executions:
        return None
    result = executions[count - 1]
    stored, received = (
        getattr(result, "recalled_data", None),
        getattr(result, "asserted_data", None),
    )
    if not isinstance(stored, str) or not isinstance(received, str):
        return None
    return _SERIALIZED_LINE.findall(stored), _SERIALIZED_LINE.findall(received)


def _turn(lines: Sequence[str], upto: int) -> int:
    """The turn step `upto + 1` is in: one more for every edge back to preprocess."""
    return 1 + sum(1 for line in lines[:upto] if line.endswith("-> preprocess"))


def path_difference(
    stored: Sequence[str], received: Sequence[str], after: int = _CONTEXT
) -> list[str]:
    """Where two paths part: the first differing step, its turn, and the lines around
    it (`after` steps from it on), each with its step number; `-` the snapshot's, `+`
    the run's."""
    first = next(
        (i for i, (a, b) in enumerate(zip(stored, received, strict=False)) if a != b),
        min(len(stored), len(received)),
    )
    lines = [
        f"the path differs from step {first + 1} (turn {_turn(received, first)}) on; "
        f"the snapshot has {len(stored)} steps, this run {len(received)}:"
    ]
    lines.extend(f"  {i + 1:>5} {stored[i]}" for i in range(max(0, first - 1), first))
    for i in range(first, first + after):
        if i < len(stored):
            lines.append(f"- {i + 1:>5} {stored[i]}")
        if i < len(received):
            lines.append(f"+ {i + 1:>5} {received[i]}")
    return lines


@pytest.hookimpl(wrapper=True)
def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: Any, right: Any
) -> Generator[None, list[list[str]], list[list[str]]]:
    """A failed `run.path_lines == snapshot`, explained by step (module docstring);
    `-vv` shows every step from the first difference on. A wrapper, so that syrupy's own
    explanation (a `tryfirst` hook too) gives way whichever plugin was registered last:
    pytest shows the first explanation of the list every plugin's hook returns."""
    theirs = yield
    ours = _path_explanation(config, op, left, right)
    return theirs if ours is None else [ours, *theirs]


def _path_explanation(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    if op != "==":
        return None
    for received, snapshot in ((left, right), (right, left)):
        if type(snapshot).__name__ != "SnapshotAssertion" or not isinstance(received, list):
            continue
        if not received or not all(isinstance(x, str) and _PATH_LINE.match(x) for x in received):
            return None
        recorded = _recorded(snapshot)
        if recorded is None or not recorded[0]:
            return None
        stored = recorded[0]
        after = max(len(stored), len(received)) if config.get_verbosity() >= 2 else _CONTEXT
        return [
            "run.path_lines == snapshot",
            *path_difference(stored, received, after),
            "(--snapshot-update accepts the new path)",
        ]
    return None
