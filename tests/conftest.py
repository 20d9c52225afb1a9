"""Shared fixtures: scenarios shipped in replays/scenarios/, run in a fresh workspace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.driver import LoopResult
from fsm_agent.session import run_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "replays" / "scenarios"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def scenario(workspace: Path, tmp_path: Path) -> Callable[..., LoopResult]:
    """Run a shipped scenario by name in the workspace; the log goes to tmp_path/<name>.jsonl."""

    def go(name: str, **kwargs: Any) -> LoopResult:
        kwargs.setdefault("log", tmp_path / f"{name}.jsonl")
        return run_scenario(SCENARIOS / f"{name}.json", cwd=workspace, **kwargs)

    return go
