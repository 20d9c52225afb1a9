"""Shared fixtures: scenarios shipped in replays/scenarios/, run in a fresh workspace."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from fsm_agent.app.session import run_scenario
from fsm_agent.engine.driver import LoopResult

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "replays" / "scenarios"


@pytest.fixture(autouse=True, scope="session")
def claude_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every run's Claude Code transcript goes to a directory of the test session's, not
    to the user's `~/.claude` (a test that reads them sets its own)."""
    path = tmp_path_factory.mktemp("claude-config")
    os.environ["CLAUDE_CONFIG_DIR"] = str(path)
    return path


@pytest.fixture(autouse=True, scope="session")
def fsm_agent_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK rewrites every real-model run keeps compiled (live/rewrite_cache) go to a
    directory of the test session's, not the user's `~/.cache`; the session's runs share
    it, as a user's do."""
    path = tmp_path_factory.mktemp("fsm-agent-cache")
    os.environ["FSM_AGENT_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(autouse=True, scope="session")
def managed_settings_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No run of the suite reads the machine's /etc/claude-code: the managed settings
    come from an empty directory of the test session's (a test that needs some points
    `FSM_AGENT_MANAGED_SETTINGS_DIR` at its own)."""
    path = tmp_path_factory.mktemp("managed-settings")
    os.environ["FSM_AGENT_MANAGED_SETTINGS_DIR"] = str(path)
    return path


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


# Property tests run the same examples on every run, so CI and a developer's run agree
# and a red run can be repeated; `pytest --hypothesis-profile=explore` searches afresh,
# with many more examples, and prints how to reproduce whatever it finds.
settings.register_profile(
    "default",
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, max_examples=2000)
settings.load_profile("default")


def examples(n: int) -> settings:
    """A property's `n` examples in the default profile, and as many times more as the
    profile run asks for (`explore`: 20 times): a test's own plain `max_examples` would
    hold every profile to `n`, and exploring would search no wider."""
    base = settings.get_profile("default").max_examples
    return settings(max_examples=max(1, n * settings.default.max_examples // base))


TERMINAL = {"COLUMNS": "80", "LINES": "25", "TERM": "xterm"}
"""The terminal every test and every command it starts sees: what rich assumes for a
pipe, so output wraps at 80 columns whatever the developer's terminal is (rich reads
the size of standard input, a terminal when a developer runs the suite)."""
COLOUR_FORCING = (
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR_FORCE",
    "COLORTERM",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
)
"""Variables that switch colour (or a terminal's behaviour) on or off whatever the output
is; unset, colour is on exactly where a test asks for a terminal (a pseudo-terminal,
`force_terminal`)."""


def pytest_configure(config: pytest.Config) -> None:
    """The terminal is pinned (TERMINAL, COLOUR_FORCING) for the suite's process and
    the commands it starts, before any test module builds a console.

    The commands the tests start inherit standard input; a run with its PROMPT reads
    a piped one. Unless it is a terminal (a developer's, for --pdb), it becomes /dev/null,
    so no test waits on a pipe its runner left open, whoever started the suite."""
    os.environ.update(TERMINAL)
    for name in COLOUR_FORCING:
        os.environ.pop(name, None)
    if not os.isatty(0):
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
