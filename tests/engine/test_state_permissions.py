"""The permission mode, the mode a hook asked for and the extra directories are part of
`LoopState`: the debugger shows them, and a state digests as it did before it held them
until a hook changes them."""

from __future__ import annotations

import json
from pathlib import Path

from attrs import evolve

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.live.scripted import Scenario
from fsm_agent.tape.stepper import Stepper

SET_MODE = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
ASKED = "touch made"
"""A Bash command no rule allows: without a terminal it is asked of the hooks."""


def _tool_turn(call_id: str, name: str, tool_input: dict) -> dict:
    return {"content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}]}


def _run(workspace: Path, tmp_path: Path) -> Path:
    data = {
        "prompt": "go",
        "hooks": {
            "PermissionRequest": [
                {"permission_decision": "allow", "updated_permissions": [SET_MODE]}
            ]
        },
        "turns": [
            _tool_turn("t1", "Bash", {"command": ASKED}),
            _tool_turn("t2", "Write", {"file_path": "w.txt", "content": "hi"}),
            {"content": "done"},
        ],
    }
    log = tmp_path / "run.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    assert result.reason == "completed"
    assert (workspace / "w.txt").read_text() == "hi"
    assert replay(log).messages == result.messages
    return log


def test_a_hooks_set_mode_is_in_the_state_from_the_next_turn(
    workspace: Path, tmp_path: Path
) -> None:
    log = _run(workspace, tmp_path)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    transitions = [r for r in records if r.get("t") == "transition"]
    turns = [r["step"] for r in transitions if r["edge"] == "next_turn"]
    stepper = Stepper(log)
    try:
        before = stepper.at(turns[0] - 1)
        after = stepper.at(turns[0])
        assert before is not None and after is not None
        assert before.state.permissions.mode == "default"
        assert after.state.permissions.mode == "acceptEdits"
        assert after.state.permissions.next_mode == "acceptEdits"
    finally:
        stepper.close()


def test_permissions_count_in_the_digest_only_once_they_change(
    workspace: Path, tmp_path: Path
) -> None:
    log = _run(workspace, tmp_path)
    stepper = Stepper(log)
    try:
        first = stepper.at(1)
        assert first is not None
        state = first.state
        start = state.permissions
        assert state.digest(start) == state.digest()
        changed = evolve(state, permissions=evolve(start, mode="plan", next_mode="plan"))
        assert changed.digest(start) != state.digest(start)
    finally:
        stepper.close()
