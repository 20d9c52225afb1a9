"""Only events something listens to go through the hooks effect, live and on replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fsm_agent.app.session import replay, run, run_scenario
from fsm_agent.core.config import RunConfig
from fsm_agent.hooks.outcomes import NO_OPINION, CombinedHooks, HookOutcome, NoHooks, events_of
from fsm_agent.live.scripted import Scenario, ScriptedHooks, ScriptedModel

TURNS: list[dict[str, Any]] = [
    {"content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}]},
    {"content": [{"type": "text", "text": "done"}]},
]


def _log(path: Path) -> tuple[dict[str, Any], list[str]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    asked = [r["args"] for r in rows if r.get("name") == "hooks"]
    return rows[0]["config"], asked


def test_a_run_without_hooks_asks_none(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a").write_text("x\n")
    log = tmp_path / "run.jsonl"
    run_scenario(Scenario.parse({"prompt": "go", "turns": TURNS}), cwd=workspace, log=log)
    config, asked = _log(log)
    assert config["hooked_events"] == []
    assert asked == []
    assert replay(log).reason == "completed"


def test_only_the_events_with_hooks_are_asked(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a").write_text("x\n")
    settings = {
        "hooks": {
            "PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "true"}]}]
        }
    }
    data = {"prompt": "go", "settings": settings, "turns": TURNS}
    log = tmp_path / "run.jsonl"
    run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    config, asked = _log(log)
    assert config["hooked_events"] == ["PostToolUse"]
    assert asked == ["PostToolUse"]
    assert replay(log).reason == "completed"


class Opaque:
    """An in-process hook that does not say which events it answers."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        self.seen.append(event)
        return NO_OPINION


def test_hooks_that_do_not_say_are_asked_every_event(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a").write_text("x\n")
    hooks = Opaque()
    log = tmp_path / "run.jsonl"
    run(
        "go",
        model=ScriptedModel(Scenario.parse({"turns": TURNS})),
        config=RunConfig(model="scripted", cwd=str(workspace), permission_mode="bypassPermissions"),
        hooks=hooks,
        log=log,
    )
    everything = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolBatch",
        "Stop",
    ]
    assert hooks.seen == everything
    config, asked = _log(log)
    assert config.get("hooked_events") is None  # the default, so not written
    assert asked == everything
    assert replay(log).reason == "completed"


def test_events_of_each_source() -> None:
    scripted = ScriptedHooks({"Stop": (NO_OPINION,)})
    assert events_of(None) == frozenset()
    assert events_of(NoHooks()) == frozenset()
    assert events_of(scripted) == {"Stop"}
    assert events_of(Opaque()) is None
    assert events_of(CombinedHooks(scripted, NoHooks())) == {"Stop"}
    assert events_of(CombinedHooks(scripted, Opaque())) is None
