"""Stop-hook loop protection as Claude Code has it (`stopHookBlockingCount`).

Claude Code counts Stop-hook blocks with nothing else in between: the
`stop_hook_blocking` continue adds one, every other continue (a tool round's
`next_turn`, a retry, a budget nudge) sets the count back to 0. The ninth block
in a row is overridden: the turn ends `completed`, the hook's feedback does not
reach the model, and the user is warned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fsm_agent.app.session import run_scenario
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent, Notice
from fsm_agent.engine.driver import LoopResult
from tests.support.cli import fsm

CAP = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
ALWAYS_BLOCKS = {"Stop": [{"blocking_errors": ["Keep going."]}] * 40}
GLOB = {"name": "Glob", "input": {"pattern": "*"}}
OVERRIDDEN = (
    "Stop hook blocked the turn from ending 9 consecutive times: overriding it and "
    "ending the turn (a Stop hook should check stop_hook_active in its input and let "
    "the turn end while it is true; CLAUDE_CODE_STOP_HOOK_BLOCK_CAP raises the limit)"
)


def _scenario(tmp_path: Path, turns: list[dict], **config: Any) -> Path:
    path = tmp_path / "scenario.json"
    data = {"prompt": "Go.", "hooks": ALWAYS_BLOCKS, "turns": turns, "config": config}
    path.write_text(json.dumps(data))
    return path


def _run(path: Path, workspace: Path, log: Path, **kwargs: Any) -> tuple[LoopResult, list[str]]:
    seen: list[DriverEvent] = []
    result = run_scenario(path, cwd=workspace, log=log, on_event=seen.append, **kwargs)
    notices = [e.text for e in seen if isinstance(e, Notice) and "consecutive" in e.text]
    return result, notices


def _texts(n: int, start: int = 0) -> list[dict]:
    return [{"content": f"done {i}"} for i in range(start, start + n)]


def test_an_always_blocking_stop_hook_is_overridden_after_8_blocks_and_the_user_told(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "run.jsonl"
    result, notices = _run(_scenario(tmp_path, _texts(12)), workspace, log)
    assert result.reason == "completed"
    assert result.edges.count("stop_hook_blocking") == 8
    assert notices == [OVERRIDDEN]
    assert result.text == "done 8"
    assert result.messages[-1].role == "assistant"
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr


def test_the_override_is_a_system_line_in_stream_json(workspace: Path, tmp_path: Path) -> None:
    path = _scenario(tmp_path, _texts(12))
    proc = fsm(
        "run", "--scripted", str(path), "--cwd", str(workspace),
        "--log", str(tmp_path / "run.jsonl"), "--output-format", "stream-json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    warned = [i for i, d in enumerate(lines) if d.get("text") == OVERRIDDEN]
    assert len(warned) == 1
    assert lines[warned[0]]["type"] == "system" and lines[warned[0]]["subtype"] == "hook"
    assert lines[-1]["type"] == "result" and lines[-1]["terminal_reason"] == "completed"


def test_a_tool_round_between_blocks_restarts_the_count_as_in_claude_code(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code's `next_turn` writes `stopHookBlockingCount: 0`: a hook that blocks
    every stop while the model calls a tool before each never reaches the cap; only
    `max_turns` (or the hook reading `stop_hook_active`) ends such a run."""
    turns: list[dict] = []
    for i in range(12):
        turns += [{"content": [{"type": "tool_use", "id": f"toolu_{i}", **GLOB}]}]
        turns += [{"content": f"done {i}"}]
    path = _scenario(tmp_path, turns, max_turns=12)
    result, notices = _run(path, workspace, tmp_path / "run.jsonl")
    assert result.reason == "max_turns"
    assert result.edges.count("stop_hook_blocking") == 11
    assert notices == []


def test_a_block_past_the_cap_ends_the_turn_with_token_budget_left(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code ends the turn at the cap; its budget nudge is only for a stop no hook
    blocked, so it does not send the model on in the hook's place."""
    path = _scenario(tmp_path, _texts(14), token_budget=100_000)
    result, notices = _run(path, workspace, tmp_path / "run.jsonl")
    assert result.reason == "completed"
    assert result.edges.count("stop_hook_blocking") == 8
    assert "token_budget_continuation" not in result.edges
    assert notices == [OVERRIDDEN]
    assert result.text == "done 8"


def test_a_retry_between_blocks_restarts_the_count(workspace: Path, tmp_path: Path) -> None:
    """Every Claude Code continue but the block's sets the count to 0: after a cut
    answer's retry, the hook may block 8 more times in a row before it is overridden."""
    cut = {"content": "Cut", "stop_reason": "max_tokens"}
    path = _scenario(tmp_path, [*_texts(5), cut, *_texts(10, start=5)])
    result, notices = _run(path, workspace, tmp_path / "run.jsonl")
    assert "max_output_tokens_recovery" in result.edges
    assert result.edges.count("stop_hook_blocking") == 5 + 8
    assert notices == [OVERRIDDEN]
    assert result.reason == "completed"


def test_the_cap_is_the_run_configs_and_0_is_none(workspace: Path, tmp_path: Path) -> None:
    """Claude Code's `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`: `RunConfig.stop_hook_block_cap`,
    kept in the log's header so a replay overrides where the run did."""
    path = _scenario(tmp_path, _texts(16))
    log = tmp_path / "two.jsonl"
    result, notices = _run(path, workspace, log, config=RunConfig(stop_hook_block_cap=2))
    assert result.edges.count("stop_hook_blocking") == 2
    assert notices == [OVERRIDDEN.replace("9 consecutive", "3 consecutive")]
    assert fsm("replay", str(log), "--check").returncode == 0
    result, notices = _run(
        path, workspace, tmp_path / "none.jsonl", config=RunConfig(stop_hook_block_cap=0)
    )
    assert result.reason == "model_error"
    assert result.edges.count("stop_hook_blocking") == 16
    assert notices == []


def test_the_cap_comes_from_claude_codes_variable(workspace: Path, tmp_path: Path) -> None:
    path = _scenario(tmp_path, _texts(12))
    args = ("run", "--scripted", str(path), "--cwd", str(workspace), "--output-format", "json")
    proc = fsm(*args, "--log", str(tmp_path / "a.jsonl"), env={CAP: "3"})
    assert proc.returncode == 0, proc.stderr
    # the prompt and the three blocks' feedback, each a user message Claude Code counts
    assert json.loads(proc.stdout)["num_turns"] == 1 + 3
    path_of = fsm("replay", str(tmp_path / "a.jsonl"), "--path", "--json")
    assert (
        json.loads(path_of.stdout).count(
            {"from": "stop_hooks", "to": "preprocess", "edge": "stop_hook_blocking"}
        )
        == 3
    )
    bad = fsm(*args, "--log", str(tmp_path / "b.jsonl"), env={CAP: "lots"})
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"fsm-agent: error: {CAP} must be a whole number (0 or less: no cap), not 'lots'"
    )
