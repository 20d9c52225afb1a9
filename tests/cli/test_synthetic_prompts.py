"""The prompts the loop writes itself reach `-p`'s readers as Claude Code's do: a `user`
line marked `isSynthetic` in stream-json, counted in `num_turns` with the prompt and
every tool result (measured on 2.1.332: the conformance cases max_tokens_in_text and
hook_stop_exit_2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.context.levels import MAX_OUTPUT_RECOVERY_MESSAGE
from tests.conftest import SCENARIOS
from tests.support.cli import fsm

PROMPTING = {
    "max_output_tokens": "max_output_tokens_recovery",
    "stop_hook_blocking": "stop_hook_blocking",
    "token_budget": "token_budget_continuation",
}
"""A shipped scenario → the edge whose prompt it writes."""


def _lines(name: str, workspace: Path, tmp_path: Path) -> list[dict]:
    proc = fsm(
        "run", "--scripted", str(SCENARIOS / f"{name}.json"), "--cwd", str(workspace),
        "--output-format", "stream-json", "--verbose", "--log", str(tmp_path / "run.jsonl"),
    )  # fmt: skip
    assert proc.returncode in (0, 20), proc.stderr  # 20: an answer still cut after recovery
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("name", sorted(PROMPTING))
def test_each_prompt_the_loop_writes_is_a_synthetic_user_line(
    name: str, workspace: Path, tmp_path: Path
) -> None:
    lines = _lines(name, workspace, tmp_path)
    edges = [x["edge"] for x in lines if x["type"] == "transition"]
    synthetic = [x for x in lines if x.get("isSynthetic")]
    assert len(synthetic) == edges.count(PROMPTING[name]) > 0
    for line in synthetic:
        assert line["type"] == "user" and line["parent_tool_use_id"] is None
        (block,) = line["message"]["content"]
        assert block["type"] == "text" and block["text"].strip()
    results = [x for x in lines if x["type"] == "user" and not x.get("isSynthetic")]
    assert lines[-1]["num_turns"] == 1 + len(results) + len(synthetic)


def test_the_synthetic_lines_carry_the_words_the_model_got(workspace: Path, tmp_path: Path) -> None:
    lines = _lines("max_output_tokens", workspace, tmp_path)
    texts = [x["message"]["content"][0]["text"] for x in lines if x.get("isSynthetic")]
    assert set(texts) == {MAX_OUTPUT_RECOVERY_MESSAGE}
    stop = _lines("stop_hook_blocking", workspace, tmp_path / "b")
    assert all(
        x["message"]["content"][0]["text"].startswith("Stop hook feedback:\n")
        for x in stop
        if x.get("isSynthetic")
    )


def test_a_plain_run_has_none_and_counts_its_prompt_and_results(
    workspace: Path, tmp_path: Path
) -> None:
    lines = _lines("tool_round", workspace, tmp_path)
    assert not any(x.get("isSynthetic") for x in lines)
    results = [x for x in lines if x["type"] == "user"]
    assert results and lines[-1]["num_turns"] == 1 + len(results)
