"""The viewer's data (`fsm_agent.tape.view`): what the page shows of each step must be
what the debugger's stepper rebuilds, and what the log recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.codec import unstructure
from fsm_agent.tape.log import LogError
from fsm_agent.tape.stepper import Stepper
from fsm_agent.tape.view import COMPACTION, ERROR, HOOK_BLOCK, INTERRUPT, REFUSAL, view_data
from tests.conftest import ROOT
from tests.support.logs import reseal

REPLAYS = ROOT / "replays"


def _expand(runs: list[list[int]]) -> list[int]:
    return [first + i for first, count in runs for i in range(count)]


def _state_at(data: dict[str, Any], step: int) -> dict[str, Any]:
    """The state as the page rebuilds it: the first one, then each step's changes."""
    state = dict(data["initial"])
    for changed in sorted(int(k) for k in data["changes"]):
        if changed <= step:
            state.update(data["changes"][changed])
    return state


def _marked(data: dict[str, Any], bit: int) -> list[int]:
    return [step for step, marks in enumerate(data["marks"], 1) if marks & bit]


@pytest.mark.parametrize(
    "name", ["fix_bug", "autocompact", "reactive_compact", "collapse_drain", "model_fallback"]
)
def test_every_step_is_the_logged_edge_with_the_state_the_stepper_rebuilds(name: str) -> None:
    """Compactions rebuild the history in a new list: its runs must still say which
    messages, in which order, the stepper's state and requests hold."""
    log = REPLAYS / f"{name}.jsonl"
    data = view_data(log)
    path = [json.loads(line) for line in log.read_text().splitlines()]
    transitions = [r for r in path if r.get("t") == "transition"]
    edges = data["machine"]["edges"]
    assert [tuple(edges[i][:3]) for i in data["steps"]] == [
        (r["from"], r["edge"], r["to"]) for r in transitions
    ]
    assert data["turns"] == [r["turn"] for r in transitions]
    stepper = Stepper(log)
    try:
        for step in range(1, len(transitions) + 1):
            info = stepper.at(step)
            assert info is not None
            shown = _state_at(data, step)
            messages = [data["messages"][i] for i in _expand(shown.pop("messages"))]
            assert messages == [unstructure(m) for m in info.state.messages]
            for name, value in shown.items():
                assert value == unstructure(getattr(info.state, name)), (step, name)
            for request in stepper.requests(step):
                sent = data["requests"][step][request.digest()]
                assert [data["messages"][i] for i in _expand(sent["m"])] == [
                    unstructure(m) for m in request.messages
                ]
                assert data["systems"][sent["system"]] == list(request.system)
    finally:
        stepper.close()
    assert data["diverged"] is None and data["result"] is not None


def test_a_message_is_written_once_however_many_states_hold_it() -> None:
    data = view_data(REPLAYS / "fix_bug.jsonl")
    texts = [json.dumps(m, sort_keys=True) for m in data["messages"]]
    assert len(texts) == len(set(texts))
    assert data["initial"]["messages"] == [[0, 1]]
    assert data["changes"][28]["messages"] == [[0, 9]]  # turn 5: nine messages, one run


def test_a_model_answer_is_its_blocks_and_usage_and_a_tool_call_its_input_and_result() -> None:
    data = view_data(REPLAYS / "fix_bug.jsonl")
    model, *_ = data["effects"][3]
    assert model["n"] == "model" and model["stop"] == "tool_use"
    assert [b["type"] for b in model["blocks"]] == ["text", "tool_use"]
    assert model["blocks"][0]["text"] == "Let me set up the script and see what it prints."
    assert model["usage"] == {"input_tokens": 100, "output_tokens": 20}
    permission, tool = data["effects"][12]
    assert permission["res"]["behavior"] == "allow"
    assert tool["a"]["input"]["command"] == "python3 average.py"
    assert tool["res"]["content"] == "3.75"
    assert [u[0] for u in data["usage"]] == [3, 10, 17, 24, 31]


@pytest.mark.parametrize(
    ("name", "bit", "edge"),
    [
        ("image_error", ERROR, "image_error"),  # fix_bug's failed Edit is gone (issue 24)
        ("api_error", ERROR, None),
        ("aborted_tools", INTERRUPT, "aborted_tools"),
        ("aborted_streaming", INTERRUPT, "aborted_streaming"),
        ("autocompact", COMPACTION, "preprocessed"),
        ("reactive_compact", COMPACTION, "reactive_compact_retry"),
        ("hook_stopped", HOOK_BLOCK, None),
    ],
)
def test_the_timeline_marks_what_went_wrong_where_it_did(name: str, bit: int, edge: str) -> None:
    data = view_data(REPLAYS / f"{name}.jsonl")
    marked = _marked(data, bit)
    assert marked, f"{name}: nothing marked"
    if edge is not None:
        edges = data["machine"]["edges"]
        assert edge in {edges[data["steps"][step - 1]][1] for step in marked}
    clean = view_data(REPLAYS / "tool_round.jsonl")
    assert not _marked(clean, bit)


def test_a_refused_permission_is_marked(tmp_path: Path) -> None:
    rows = [json.loads(r) for r in (REPLAYS / "fix_bug.jsonl").read_text().splitlines()]
    data = view_data(REPLAYS / "fix_bug.jsonl")
    assert not _marked(data, REFUSAL)
    for row in rows:
        if row.get("name") == "permission" and row["step"] == 12:
            row["result"] = {"behavior": "deny", "reason": "denied by Bash(python3 *)"}
    changed = tmp_path / "denied.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reseal(changed)
    data = view_data(changed)
    assert _marked(data, REFUSAL) == [12]


def test_a_divergence_is_the_log_s_side_and_the_code_s(tmp_path: Path) -> None:
    rows = [json.loads(r) for r in (REPLAYS / "tool_round.jsonl").read_text().splitlines()]
    next(r for r in rows if r.get("edge") == "next_turn")["turn"] = 9
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reseal(changed)
    data = view_data(changed)
    diverged = data["diverged"]
    assert diverged["step"] == 7 and diverged["what"] == "transition"
    assert diverged["log"]["turn"] == 9 and diverged["code"]["turn"] == 2
    assert diverged["diff"] == ["turn: 9 → 2"]
    assert len(data["steps"]) == 20  # the log's steps are all shown, replayed or not
    assert not any(int(step) >= 7 for step in data["requests"])


def test_a_log_cut_short_says_where_it_ends(tmp_path: Path) -> None:
    lines = (REPLAYS / "fix_bug.jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:20]))
    data = view_data(cut)
    assert data["result"] is None
    assert data["diverged"] is not None and "without a result" in data["diverged"]["ended"]


def test_a_file_that_is_no_log_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    with pytest.raises(LogError, match="not a session log"):
        view_data(junk)


def test_a_failed_tool_result_is_marked_an_error(tmp_path: Path) -> None:
    """No shipped session holds a failed tool now (fix_bug's refused Edit is gone), so the
    failure is made: fix_bug's `python3 average.py` result turned into an error."""
    rows = [json.loads(r) for r in (REPLAYS / "fix_bug.jsonl").read_text().splitlines()]
    assert not _marked(view_data(REPLAYS / "fix_bug.jsonl"), ERROR)
    for row in rows:
        if row.get("name") == "tool" and row["step"] == 12:
            row["result"]["is_error"] = True
    failed = tmp_path / "failed.jsonl"
    failed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reseal(failed)
    assert _marked(view_data(failed), ERROR) == [12]
