"""`fsm-agent run` output as programs read it: JSON result, JSON lines, exit codes, --quiet."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.cli.headless import RunTally, StreamJson, subtype_of
from fsm_agent.cli.main import EXIT_CODES, EXIT_ERROR_ANSWER, EXIT_USAGE
from fsm_agent.core.events import CallsDiscarded, ToolRefused
from fsm_agent.core.messages import ToolResultBlock, ToolUseBlock
from fsm_agent.engine.machine import TERMINAL_REASONS
from tests.conftest import SCENARIOS
from tests.support.cli import fsm, fsm_argv, run_json, run_scripted, stream_lines


def test_json_result_on_success(workspace: Path, tmp_path: Path) -> None:
    result, code = run_json(workspace, tmp_path, "tool_round")
    assert code == 0
    assert result["type"] == "result"
    assert result["subtype"] == "success"
    assert result["is_error"] is False
    assert result["result"] == "notes.txt now says hello."
    assert result["num_turns"] == 3
    assert result["stop_reason"] == "end_turn"
    assert result["terminal_reason"] == "completed"
    assert result["usage"]["input_tokens"] == 300 and result["usage"]["output_tokens"] == 60
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] >= 0
    assert "total_cost_usd" in result and "errors" not in result
    log = Path(result["log"])
    assert log == tmp_path / "tool_round.jsonl"
    header = json.loads(log.read_text().splitlines()[0])
    assert header["session_id"] == result["session_id"]
    replayed = json.loads(fsm("replay", str(log), "--path", "--json").stdout)
    assert result["path"] == replayed
    assert result["path"][-1] == {"from": "stop_hooks", "to": "completed", "edge": "completed"}


def test_json_result_on_max_turns(workspace: Path, tmp_path: Path) -> None:
    result, code = run_json(workspace, tmp_path, "max_turns")
    assert code == EXIT_CODES["max_turns"]
    assert result["subtype"] == "error_max_turns"
    assert result["is_error"] is True
    assert "result" not in result
    assert result["errors"] and result["terminal_reason"] == "max_turns"


def test_an_api_error_answer_is_success_with_is_error(workspace: Path, tmp_path: Path) -> None:
    """The loop completed, but with an error for an answer: a script must see it failed."""
    result, code = run_json(workspace, tmp_path, "api_error")
    assert code == EXIT_ERROR_ANSWER
    assert result["subtype"] == "success" and result["is_error"] is True
    assert "invalid x-api-key" in result["result"]
    assert result["api_error_status"] == 401


def test_api_error_status_is_null_but_for_an_api_error(workspace: Path, tmp_path: Path) -> None:
    """As `claude -p` 2.1.x: the HTTP status of the error that became the answer, so a
    script tells a rejected key (401) from a bad request (400) without parsing the text;
    null on every other `success` result, and on an error no response carried (a
    connection dropped mid-stream)."""
    result, _ = run_json(workspace, tmp_path, "fix_bug")
    assert result["api_error_status"] is None
    result, _ = run_json(workspace, tmp_path, "model_error")
    assert result["api_error_status"] is None


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.json")))
def test_every_scenario_exit_code_and_subtype(workspace: Path, tmp_path: Path, name: str) -> None:
    result, code = run_json(workspace, tmp_path, name)
    reason = result["terminal_reason"]
    assert reason in TERMINAL_REASONS | {"prompt_blocked"}
    error_answer = name in ("api_error", "max_output_tokens")  # `API Error: …` answers
    # a Stop hook's continue:false, or a tool hook's stop (hook_stopped), as claude -p
    hook_stop = name in ("stop_hook_prevented", "hook_stopped")
    expected = EXIT_ERROR_ANSWER if error_answer else 0 if hook_stop else EXIT_CODES[reason]
    assert code == expected
    assert result["subtype"] == ("success" if hook_stop else subtype_of(reason))
    succeeded = hook_stop or reason in ("completed", "prompt_blocked")
    assert result["is_error"] is (not succeeded or error_answer)
    assert result["is_error"] is (code != 0)
    answered = hook_stop or reason in (
        "completed", "prompt_blocked", "model_error", "prompt_too_long", "image_error",
        "blocking_limit",
    )  # fmt: skip
    assert ("result" in result) is answered
    assert ("errors" in result) is not answered


def test_an_answer_still_cut_after_every_recovery_is_the_error_it_hit(
    workspace: Path, tmp_path: Path
) -> None:
    """As `claude -p` prints the max-output-tokens error it surfaces, not the cut text."""
    result, code = run_json(workspace, tmp_path, "max_output_tokens")
    assert (code, result["subtype"], result["is_error"]) == (EXIT_ERROR_ANSWER, "success", True)
    assert result["result"] == (
        "API Error: Claude's response exceeded the 64000 output token maximum."
    )


def test_a_stop_hooks_stop_is_success_with_the_last_text_as_claude_code_reports_it(
    workspace: Path, tmp_path: Path
) -> None:
    """The model had finished; the hook only kept the loop from going on. Ctrl-C while
    the Stop hooks ran is still an interruption (`stop_hooks_interrupted`)."""
    result, code = run_json(workspace, tmp_path, "stop_hook_prevented")
    assert (code, result["subtype"], result["is_error"]) == (0, "success", False)
    assert result["terminal_reason"] == "stop_hook_prevented"
    assert result["result"] == replay(Path(result["log"])).text
    result, code = run_json(workspace, tmp_path, "stop_hooks_interrupted")
    assert (code, result["subtype"], result["is_error"]) == (16, "error_during_execution", True)
    assert result["errors"] == ["interrupted while Stop hooks ran"]


def test_exit_codes_are_distinct_and_cover_every_reason() -> None:
    assert set(EXIT_CODES) == TERMINAL_REASONS | {"prompt_blocked"}
    succeed = {"completed", "prompt_blocked", "hook_stopped"}  # as `claude -p`
    assert {EXIT_CODES[r] for r in succeed} == {0}
    codes = [*EXIT_CODES.values(), EXIT_ERROR_ANSWER, EXIT_USAGE, 1, 130]
    assert len(codes) == len(set(codes)) + 2, "only the hooks' successes share completed's 0"
    assert 17 not in codes, "hook_stopped's old code is left unused, not given to another"


def test_a_tool_hooks_stop_is_success_with_an_empty_answer_as_claude_code_reports_it(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code 2.1.332 ends a run a PreToolUse, PostToolUse or PostToolBatch hook
    stopped as `success`, exit 0, its `result` the text of its last content block (a
    tool call's: empty); the hook's reason is not in the result, but the summary line
    and the log keep it."""
    result, code = run_json(workspace, tmp_path, "hook_stopped")
    assert (code, result["subtype"], result["is_error"]) == (0, "success", False)
    assert result["terminal_reason"] == "hook_stopped"
    assert result["result"] == ""
    assert "errors" not in result
    assert result["api_error_status"] is None


def test_subtypes() -> None:
    """As `claude -p`: a run an API error ended (its retries used, the prompt too long,
    an image refused, the context over the blocking limit) is `success` with
    `is_error`, its answer the error."""
    assert subtype_of("completed") == "success"
    assert subtype_of("max_turns") == "error_max_turns"
    api = {"model_error", "prompt_too_long", "image_error", "blocking_limit"}
    assert {subtype_of(r) for r in api} == {"success"}
    others = TERMINAL_REASONS - {"completed", "max_turns"} - api
    assert {subtype_of(r) for r in others} == {"error_during_execution"}


def test_stream_json_lines(workspace: Path, tmp_path: Path) -> None:
    lines = stream_lines(workspace, tmp_path, "tool_round")
    init, result = lines[0], lines[-1]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["cwd"] == str(workspace.resolve())
    assert init["tools"] == ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]
    assert init["model"] == "scripted"
    assert init["permissionMode"] == "acceptEdits", "the mode the scenario's config sets"
    assert result["type"] == "result" and result["subtype"] == "success"
    assert all(line["session_id"] == init["session_id"] for line in lines)
    kinds = [line["type"] for line in lines]
    assert "stream_event" not in kinds
    assistants = [line["message"] for line in lines if line["type"] == "assistant"]
    ids = ["msg_scripted_0001", "msg_scripted_0001", "msg_scripted_0002", "msg_scripted_0003"]
    assert [m["id"] for m in assistants] == ids, "one line per block, each with its message's id"
    assert assistants[-1]["content"] == [{"type": "text", "text": "notes.txt now says hello."}]
    assert [b["type"] for m in assistants[:2] for b in m["content"]] == ["text", "tool_use"]
    users = [line["message"]["content"][0] for line in lines if line["type"] == "user"]
    assert [u["type"] for u in users] == ["tool_result", "tool_result"]
    assert [u["tool_use_id"] for u in users] == ["toolu_01write", "toolu_02read"]
    transitions = [line for line in lines if line["type"] == "transition"]
    assert [{k: t[k] for k in ("from", "to", "edge")} for t in transitions] == result["path"]
    first_tool = kinds.index("user")
    assert kinds.index("assistant") < first_tool < kinds.index("result")


@pytest.mark.parametrize("rule", ["Bash", "Bash(*)"])
def test_init_lists_the_tools_the_model_has(rule: str, workspace: Path, tmp_path: Path) -> None:
    """A bare deny rule takes a tool out of the model's list: `system/init` says so too,
    as Claude Code's does, rather than list a tool the model was never offered."""
    lines = stream_lines(workspace, tmp_path, "tool_round", "--disallowed-tools", rule)
    assert lines[0]["tools"] == ["Read", "Write", "Edit", "Glob", "Grep"]
    header = json.loads((tmp_path / "tool_round.jsonl").read_text().splitlines()[0])
    assert lines[0]["tools"] == [t["name"] for t in header["tools"]]


def test_stream_json_partial_messages(workspace: Path, tmp_path: Path) -> None:
    lines = stream_lines(workspace, tmp_path, "tool_round", "--include-partial-messages")
    events = [line["event"] for line in lines if line["type"] == "stream_event"]
    starts = [i for i, e in enumerate(events) if e["type"] == "message_start"]
    stops = [i for i, e in enumerate(events) if e["type"] == "message_stop"]
    assert len(starts) == len(stops) == 3
    last = events[starts[-1] : stops[-1] + 1]
    text = "".join(e["delta"]["text"] for e in last if e["type"] == "content_block_delta")
    assert text == "notes.txt now says hello."
    assert [e["type"] for e in last][:2] == ["message_start", "content_block_start"]
    assert last[-2]["type"] == "message_delta"
    assert last[-2]["delta"]["stop_reason"] == "end_turn"
    first = events[starts[0] : stops[0] + 1]
    tool_json = "".join(
        e["delta"]["partial_json"]
        for e in first
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(tool_json) == {"file_path": "notes.txt", "content": "hello\n"}
    kinds = [line["type"] for line in lines]
    assert kinds.index("stream_event") < kinds.index("assistant")


def test_partial_messages_need_stream_json(workspace: Path) -> None:
    proc = fsm("run", "--include-partial-messages", "x")
    assert proc.returncode == EXIT_USAGE
    assert proc.stderr.startswith("fsm-agent: error: --include-partial-messages")


def test_quiet_prints_only_the_answer(workspace: Path, tmp_path: Path) -> None:
    proc = run_scripted("tool_round", workspace, tmp_path / "q.jsonl", "--quiet")
    assert proc.returncode == 0
    assert proc.stdout == "notes.txt now says hello.\n"


def test_quiet_prints_the_json_result_when_the_answer_is_an_api_error(
    workspace: Path, tmp_path: Path
) -> None:
    """A refusal after some text ends `completed` with `API Error: …` as the JSON
    `result`, exit 20; `--quiet` printed the cut text alone, and nothing said the answer
    was refused (the stderr line is only for runs that did not complete)."""
    scenario = tmp_path / "refused.json"
    turn = {"content": "Sure, here is how to", "stop_reason": "refusal"}
    scenario.write_text(json.dumps({"prompt": "p", "turns": [turn]}))
    where = ("--scripted", str(scenario), "--cwd", str(workspace))
    as_json = fsm("run", *where, "--output-format", "json", "--log", str(tmp_path / "j.jsonl"))
    answer = json.loads(as_json.stdout)["result"]
    assert answer.startswith("API Error: the model declined")
    quiet = fsm("run", *where, "--quiet", "--log", str(tmp_path / "q.jsonl"))
    assert quiet.returncode == as_json.returncode == EXIT_ERROR_ANSWER
    assert quiet.stdout == answer + "\n"


def test_a_resumed_run_never_reports_the_previous_run_s_answer(
    workspace: Path, tmp_path: Path
) -> None:
    """A resumed run blocked before any model call printed, with --quiet, the answer the
    previous run ended with, as if it were its own; its JSON `stop_reason` was that
    answer's."""
    first = tmp_path / "first.jsonl"
    assert run_scripted("tool_round", workspace, first, "--quiet").returncode == 0
    blocked = tmp_path / "blocked.json"
    hooks = {"UserPromptSubmit": [{"blocking_errors": ["not now"]}]}
    blocked.write_text(json.dumps({"hooks": hooks, "turns": []}))
    where = ("--resume", str(first), "and then?", "--scripted", str(blocked))
    said = "UserPromptSubmit operation blocked by hook:\nnot now\n\nOriginal prompt: and then?"
    quiet = fsm("run", *where, "--quiet", "--log", str(tmp_path / "q.jsonl"))
    assert (quiet.returncode, quiet.stdout) == (0, said + "\n"), "`claude -p` prints it, exit 0"
    as_json = fsm("run", *where, "--output-format", "json", "--log", str(tmp_path / "j.jsonl"))
    result = json.loads(as_json.stdout)
    assert as_json.returncode == 0
    assert (result["subtype"], result["is_error"], result["result"]) == ("success", False, said)
    assert (result["terminal_reason"], result["num_turns"], result["stop_reason"]) == (
        "prompt_blocked",
        0,
        None,
    )
    lines = fsm("run", *where, "--output-format", "stream-json", "--verbose",
                "--log", str(tmp_path / "s.jsonl")).stdout.splitlines()  # fmt: skip
    (told,) = [m for m in map(json.loads, lines) if m.get("subtype") == "informational"]
    assert {k: told[k] for k in ("type", "subtype", "content", "level")} == {
        "type": "system",
        "subtype": "informational",
        "content": said,
        "level": "warning",
    }
    assert told["prompt_submit_outcome"] == {
        "kind": "blocked_by_hook",
        "prompt_kept": False,
        "reason": "not now",
    }


def test_piped_text_output_is_plain(workspace: Path, tmp_path: Path) -> None:
    proc = run_scripted("tool_round", workspace, tmp_path / "p.jsonl")
    assert "\x1b[" not in proc.stdout
    assert "● Write(notes.txt)" in proc.stdout
    assert f"log: {tmp_path / 'p.jsonl'}" in proc.stdout


def test_piped_text_output_with_force_color_has_colour_but_no_cursor_movement(
    workspace: Path, tmp_path: Path
) -> None:
    """FORCE_COLOR (set by many CI runners) made rich take the pipe for a terminal: the
    live area's spinner, carriage returns and cursor-up sequences went into the log a
    CI job keeps; the colour it asks for is kept, the live area is not."""
    scenario = str(SCENARIOS / "tool_round.json")
    where = ("--cwd", str(workspace), "--log", str(tmp_path / "c.jsonl"))
    proc = fsm("run", "--scripted", scenario, *where, env={"FORCE_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" in proc.stdout
    for movement in ("\r", "\x1b[1A", "\x1b[2K", "\x1b[?25l"):
        assert movement not in proc.stdout
    assert "notes.txt now says hello." in proc.stdout


def test_prompt_read_from_stdin(workspace: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"turns": [{"content": [{"type": "text", "text": "ok"}]}]}))
    log = tmp_path / "stdin.jsonl"
    argv = [*fsm_argv(), "run", "--scripted", str(scenario), "--cwd", str(workspace)]
    proc = subprocess.run(
        [*argv, "--log", str(log), "-q"],
        input="what is in here?\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    start = json.loads(log.read_text().splitlines()[1])
    assert start["messages"][0]["content"][0]["text"] == "what is in here?"
    empty = subprocess.run(
        [*fsm_argv(), "run", "--scripted", str(scenario), "--cwd", str(workspace)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert empty.returncode == EXIT_USAGE and "no prompt given" in empty.stderr


def test_cost_is_summed_per_response_and_unknown_models_cost_none() -> None:
    from fsm_agent.cli.cost import CostMeter
    from fsm_agent.core.messages import Usage
    from fsm_agent.core.pricing import cost_usd

    meter = CostMeter()
    assert meter.total == 0.0
    one = Usage(input_tokens=2000, output_tokens=300)
    meter.add("claude-sonnet-4-6", one)
    meter.add("claude-sonnet-4-6", one)
    assert meter.total == 2 * cost_usd("claude-sonnet-4-6", one)
    meter.add("scripted", one)
    assert meter.total is None


@pytest.mark.parametrize(
    "command", [["run", "--help"], ["chat", "--help"], ["sessions"], ["sessions", "--json"]]
)
def test_new_commands_stay_light(command: list[str], tmp_path: Path) -> None:
    import sys

    code = (
        "import sys\n"
        "from fsm_agent.cli.main import main\n"
        f"sys.argv = ['fsm-agent', *{command!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr


REFUSALS = {
    "prompt": "clean up",
    "turns": [
        {
            "content": [
                {
                    "type": "tool_use",
                    "id": "t_rm",
                    "name": "Bash",
                    "input": {"command": "rm -rf build"},
                },
                {"type": "tool_use", "id": "t_bad", "name": "Read", "input": {"path": "x"}},
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20},
        },
        {
            "content": [{"type": "text", "text": "I could not."}],
            "usage": {"input_tokens": 150, "output_tokens": 5},
        },
    ],
}


def _refusals(tmp_path: Path, workspace: Path, fmt: str) -> subprocess.CompletedProcess:
    scenario = tmp_path / "refusals.json"
    scenario.write_text(json.dumps(REFUSALS))
    log = str(tmp_path / "r.jsonl")
    return fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", log,
               "--output-format", fmt)  # fmt: skip


def test_json_result_lists_permission_denials_model_usage_and_api_time(
    workspace: Path, tmp_path: Path
) -> None:
    proc = _refusals(tmp_path, workspace, "json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["permission_denials"] == [
        {"tool_name": "Bash", "tool_use_id": "t_rm", "tool_input": {"command": "rm -rf build"}}
    ]
    assert result["modelUsage"] == {
        "scripted": {
            "inputTokens": 250,
            "outputTokens": 25,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
            "webSearchRequests": 0,
            "costUSD": None,
            "contextWindow": 200_000,
            "maxOutputTokens": 64_000,
        }
    }
    assert isinstance(result["duration_api_ms"], int)
    assert 0 <= result["duration_api_ms"] <= result["duration_ms"]


def test_stream_json_has_a_user_line_for_every_call_even_those_never_run(
    workspace: Path, tmp_path: Path
) -> None:
    proc = _refusals(tmp_path, workspace, "stream-json")
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    users = [line for line in lines if line["type"] == "user"]
    blocks = [u["message"]["content"][0] for u in users]
    assert [b["tool_use_id"] for b in blocks] == ["t_rm", "t_bad"]
    assert all(b["is_error"] for b in blocks)
    assert "InputValidationError" in blocks[1]["content"]
    assert users[0]["tool_use_result"].startswith("Error: Permission to use Bash was denied")
    assert users[1]["tool_use_result"].startswith("InputValidationError: Read failed")


def test_model_usage_is_kept_per_model_and_priced_when_known() -> None:
    from fsm_agent.cli.headless import RunTally
    from fsm_agent.core.messages import Usage
    from fsm_agent.core.pricing import cost_usd

    tally = RunTally()
    one = Usage(input_tokens=2000, output_tokens=300)
    tally.meter.add("claude-sonnet-4-6", one)
    tally.meter.add("claude-sonnet-4-6", one)
    tally.meter.add("scripted", one)
    usage = tally.model_usage()
    assert usage["claude-sonnet-4-6"]["inputTokens"] == 4000
    assert usage["claude-sonnet-4-6"]["costUSD"] == pytest.approx(
        2 * cost_usd("claude-sonnet-4-6", one)
    )
    assert usage["scripted"]["costUSD"] is None


def test_api_time_is_the_time_spent_in_api_call() -> None:
    from fsm_agent.cli.headless import RunTally
    from fsm_agent.core.events import Transition

    ticks = iter([1.0, 3.5, 10.0, 10.25])
    tally = RunTally(clock=lambda: next(ticks))
    tally(Transition(2, "blocking_limit_check", "api_call", "under_limit", 1))
    tally(Transition(3, "api_call", "abort_check", "streamed", 1))
    tally(Transition(9, "blocking_limit_check", "api_call", "under_limit", 2))
    tally(Transition(10, "api_call", "abort_check", "streamed", 2))
    assert tally.api_s == pytest.approx(2.75)


EARLY_READ = {
    "prompt": "What does notes.txt say?",
    "turns": [
        {
            "content": [
                {"type": "tool_use", "id": "toolu_early", "name": "Read",
                 "input": {"file_path": "notes.txt"}},
                {"type": "text", "text": "Reading it while I finish this sentence."},
            ],
            "stop_reason": "tool_use",
            "event_delay": 0.05,
        },
        {"content": "Done."},
    ]
}  # fmt: skip


def test_a_call_started_while_streaming_is_answered_after_the_message_that_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """The Read starts as its block completes and finishes while the text still
    streams; its result line still comes after the assistant line with its tool_use."""
    (workspace / "notes.txt").write_text("hello\n")
    scenario = tmp_path / "early.json"
    scenario.write_text(json.dumps(EARLY_READ))
    proc = fsm(
        "run", "--scripted", str(scenario), "--cwd", str(workspace),
        "--log", str(tmp_path / "early.jsonl"), "--output-format", "stream-json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    messages = [line for line in lines if line["type"] in ("assistant", "user")]
    assert [m["type"] for m in messages] == ["assistant", "assistant", "user", "assistant"]
    assert messages[0]["message"]["content"][0]["id"] == "toolu_early"
    assert messages[2]["message"]["content"][0]["tool_use_id"] == "toolu_early"
    assert "hello" in messages[2]["message"]["content"][0]["content"]
    log = [json.loads(line) for line in (tmp_path / "early.jsonl").read_text().splitlines()]
    ran = [r["step"] for r in log if r.get("t") == "effect" and r["name"] == "tool"]
    streamed = [r["step"] for r in log if r.get("edge") == "streamed"]
    assert ran and ran[0] <= streamed[0], "the Read did not start while the model streamed"


def test_stream_json_writes_an_assistant_line_per_block_as_claude_code_does(
    workspace: Path, tmp_path: Path
) -> None:
    """Measured on Claude Code 2.1.x (the conformance case thinking_text_tool_one_turn):
    thinking, text and a call are three `assistant` lines, each one block, each with the
    message's id, `stop_reason` null and the usage of `message_start`; the tool's result
    comes after the last of them."""
    (workspace / "notes.txt").write_text("hello\n")
    turns = [
        {
            "content": [
                {"type": "thinking", "thinking": "look first", "signature": "sig"},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_r", "name": "Read",
                 "input": {"file_path": "notes.txt"}},
            ],
            "stop_reason": "tool_use",
        },
        {"content": "Done."},
    ]  # fmt: skip
    scenario = tmp_path / "blocks.json"
    scenario.write_text(json.dumps({"turns": turns}))
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log",
               str(tmp_path / "b.jsonl"), "--output-format", "stream-json", "go")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    shown = [line for line in lines if line["type"] in ("assistant", "user")]
    assert [line["type"] for line in shown] == ["assistant"] * 3 + ["user", "assistant"]
    first = [line["message"] for line in shown[:3]]
    assert [[b["type"] for b in m["content"]] for m in first] == [
        ["thinking"],
        ["text"],
        ["tool_use"],
    ]
    assert {m["id"] for m in first} == {"msg_scripted_0001"}
    assert [m["stop_reason"] for m in first] == [None, None, None]
    assert len({json.dumps(m["usage"]) for m in first}) == 1
    assert len({line["uuid"] for line in shown}) == len(shown)
    assert shown[-1]["message"]["content"] == [{"type": "text", "text": "Done."}]


def test_a_result_whose_message_never_came_is_written_when_the_loop_leaves_api_call() -> None:
    """The stream failed after the call started: no assistant line will come, and
    the result is not lost; it goes out before the transition out of api_call."""
    import io

    from fsm_agent.cli.headless import StreamJson
    from fsm_agent.core.events import ToolRefused, ToolUseComplete, Transition
    from fsm_agent.core.messages import ToolResultBlock, ToolUseBlock

    out = io.StringIO()
    writer = StreamJson(out, "s")
    block = ToolUseBlock("toolu_cut", "Read", {"file_path": "a.txt"})
    writer(ToolUseComplete(block))
    writer(ToolRefused(block, ToolResultBlock("toolu_cut", "interrupted", True)))
    assert out.getvalue() == ""
    writer(Transition(3, "api_call", "model_error", "model_error", 1))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["user", "transition"]
    assert lines[0]["message"]["content"][0]["tool_use_id"] == "toolu_cut"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("prompt_too_long", "still too long after compaction: prompt is too long: 210000 tokens"),
        ("image_error", "an image was refused: messages.0.content.1.image.source.base64: image"),
        ("blocking_limit", "over the blocking limit of 19,000"),
        ("max_turns", "Reached maximum number of turns (1)"),
        ("aborted_tools", "interrupted while tools ran"),
        ("aborted_streaming", "interrupted while the model was answering"),
        ("model_error", "connection: connection dropped mid-stream"),
    ],
)
def test_an_error_result_says_why_the_run_ended(
    workspace: Path, tmp_path: Path, name: str, says: str
) -> None:
    """The API's own words for a withheld error, the numbers of a limit: not just
    the name of the reason, which `terminal_reason` already gives. A run an API error
    ended answers with it (`result`), as `claude -p` does; the others list it."""
    result, _ = run_json(workspace, tmp_path, name)
    assert result["terminal_reason"] == name
    if name in ("prompt_too_long", "image_error", "model_error", "blocking_limit"):
        assert result["result"].startswith("API Error: ")
        assert says.removeprefix("connection: ") in result["result"]
    else:
        assert says in result["errors"][0]


def test_every_stream_json_line_has_the_session_id_and_its_own_uuid(
    workspace: Path, tmp_path: Path
) -> None:
    lines = stream_lines(workspace, tmp_path, "tool_round")
    assert lines[-1]["type"] == "result"
    assert {line["session_id"] for line in lines} == {lines[0]["session_id"]}
    uuids = [line.get("uuid") for line in lines]
    assert None not in uuids and len(set(uuids)) == len(lines)


def test_a_denial_of_a_discarded_call_is_not_reported() -> None:
    """A safe call started while an overloaded stream went on may be denied; the
    fallback drops that message, and the denial with it."""
    tally = RunTally()
    kept = ToolUseBlock("toolu_k", "Read", {"file_path": "/etc/shadow"})
    dropped = ToolUseBlock("toolu_d", "Read", {"file_path": "/etc/passwd"})
    for block in (dropped, kept):
        tally(ToolRefused(block, ToolResultBlock(block.id, "denied", True), "rule"))
    tally(CallsDiscarded(("toolu_d",)))
    assert [d["tool_use_id"] for d in tally.denials] == ["toolu_k"]


@pytest.mark.parametrize("output", ["text", "stream-json"])
def test_a_lone_surrogate_from_the_model_is_shown_escaped_and_logged(
    output: str, workspace: Path, tmp_path: Path
) -> None:
    """A `"\\ud800"` escape in a model's answer is a str no UTF-8 output can hold: the
    run goes on, stdout shows the escape (valid JSON in stream-json) and the log replays."""
    scenario = tmp_path / "surrogate.json"
    scenario.write_text('{"turns": [{"content": [{"type": "text", "text": "odd \\ud800 text"}]}]}')
    log = tmp_path / "s.jsonl"
    proc = fsm(
        "run",
        "--scripted",
        str(scenario),
        "--cwd",
        str(workspace),
        "--log",
        str(log),
        "--output-format",
        output,
        "go",
    )
    assert proc.returncode == 0, proc.stderr
    if output == "text":
        assert "odd \\ud800 text" in proc.stdout
    else:
        (assistant,) = [
            o for o in map(json.loads, proc.stdout.splitlines()) if o["type"] == "assistant"
        ]
        assert assistant["message"]["content"][0]["text"] == "odd \ud800 text"
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_a_stdout_that_cannot_encode_the_answer_loses_nothing(
    fmt: str, workspace: Path, tmp_path: Path
) -> None:
    """An ASCII-only stdout (a legacy locale, PYTHONIOENCODING=ascii): the JSON formats
    escape what it cannot hold, text shows its escape, and the run ends and logs whole;
    an encoding error in an event callback used to kill the run mid-way."""
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"turns": [{"content": "café ☕"}]}))
    log = tmp_path / "run.jsonl"
    proc = fsm(
        "run", "--scripted", str(answer), "--cwd", str(workspace), "--log", str(log),
        "--output-format", fmt, "hi", env={"PYTHONIOENCODING": "ascii"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    if fmt == "text":
        assert "caf\\xe9 \\u2615" in proc.stdout
    else:
        last = json.loads(proc.stdout if fmt == "json" else proc.stdout.splitlines()[-1])
        assert last["result"] == "café ☕"
    assert json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["t"] == "result"


def test_an_autocompaction_is_marked_by_a_compact_boundary(workspace: Path, tmp_path: Path) -> None:
    """Claude Code's stream-json marks a compaction with `system/compact_boundary`
    (`compact_metadata`: trigger, pre_tokens), after the notice of what was done."""
    lines = stream_lines(workspace, tmp_path, "autocompact")
    systems = [line for line in lines if line["type"] == "system"]
    (boundary,) = [line for line in systems if line["subtype"] == "compact_boundary"]
    notice = systems[systems.index(boundary) - 1]
    assert notice["subtype"] == "context" and "autocompact" in notice["text"]
    pre_tokens = boundary["compact_metadata"]["pre_tokens"]
    assert boundary["compact_metadata"] == {"trigger": "auto", "pre_tokens": pre_tokens}
    assert isinstance(pre_tokens, int) and f"{pre_tokens:,}" in notice["text"]


def test_stream_json_user_lines_carry_claude_codes_tool_use_result(
    workspace: Path, tmp_path: Path
) -> None:
    """As `claude -p` does, a call that ran gives its tool's structured result; the
    json format asks for none, so its log records none."""
    lines = stream_lines(workspace, tmp_path, "fix_bug")
    results = [line["tool_use_result"] for line in lines if line["type"] == "user"]
    write, first_run, edit, second_run = results
    assert (write["type"], write["filePath"]) == ("create", str(workspace / "average.py"))
    assert first_run == {"stdout": "3.75", "stderr": "", "interrupted": False, "isImage": False,
                         "noOutputExpected": False}  # fmt: skip
    assert (edit["oldString"], edit["newString"]) == ("(len(xs) + 1)", "len(xs)")
    assert second_run["stdout"] == "5.0"
    assert fsm("replay", str(tmp_path / "fix_bug.jsonl"), "--check").returncode == 0
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    run_json(quiet, tmp_path, "tool_round")
    tools = [json.loads(line) for line in (tmp_path / "tool_round.jsonl").read_text().splitlines()]
    outcomes = [r["result"] for r in tools if r.get("name") == "tool"]
    assert outcomes and not any("response" in o for o in outcomes)


def _usage_error_only(proc: subprocess.CompletedProcess, needle: str) -> None:
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("fsm-agent: error:") and needle in line, line


@pytest.mark.parametrize("output", ["text", "json", "stream-json"])
def test_a_log_that_cannot_be_created_is_a_usage_error_before_any_output(
    output: str, workspace: Path, tmp_path: Path
) -> None:
    """`--log` under a file: nothing on stdout (no `init` a reader would wait on for its
    `result`), one error line, exit 2, as every error in what was typed."""
    (tmp_path / "a-file").write_text("")
    log = tmp_path / "a-file" / "run.jsonl"
    proc = run_scripted("tool_round", workspace, log, "--output-format", output)
    _usage_error_only(
        proc, f"cannot create the session log: {tmp_path / 'a-file'} is not a directory"
    )
    assert proc.stdout == ""


def _with_file_size_limit(limit: int, *args: str) -> subprocess.CompletedProcess:
    """`fsm-agent ARGS` where no file may grow past `limit` bytes: a disk that fills up."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [*fsm_argv(), *args], capture_output=True, text=True, timeout=60, preexec_fn=limited
    )


@pytest.mark.parametrize("output", ["json", "stream-json"])
def test_a_log_that_fails_mid_run_still_ends_with_an_error_result(
    output: str, workspace: Path, tmp_path: Path
) -> None:
    """The disk fills up after the run began (its `init` is out): a reader of JSON gets
    its `result`, an error one saying why, as `claude -p` ends every run it started; and
    stderr has the one error line, exit 2."""
    scenario = str(SCENARIOS / "tool_round.json")
    args = ["run", "--scripted", scenario, "--cwd", str(workspace), "--output-format", output]
    whole = fsm(*args, "--log", str(tmp_path / "a.jsonl"))
    assert whole.returncode == 0, whole.stderr
    sizes = [len(line) + 1 for line in (tmp_path / "a.jsonl").read_bytes().splitlines()]
    assert sizes[4] > 600  # the first model response: the limit falls inside it
    proc = _with_file_size_limit(sum(sizes[:4]) + 300, *args, "--log", str(tmp_path / "b.jsonl"))
    _usage_error_only(proc, "cannot write the session log")
    if output == "stream-json":
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        assert lines[0]["subtype"] == "init"
        assert {line["session_id"] for line in lines} == {lines[0]["session_id"]}
        result = lines[-1]
    else:
        result = json.loads(proc.stdout)
    assert result["type"] == "result"
    assert (result["subtype"], result["is_error"]) == ("error_during_execution", True)
    assert result["terminal_reason"] is None
    assert "cannot write the session log" in result["errors"][0]
    assert result["log"] == str(tmp_path / "b.jsonl")
    assert result["path"][:2] == [
        {"from": "preprocess", "to": "blocking_limit_check", "edge": "preprocessed"},
        {"from": "blocking_limit_check", "to": "api_call", "edge": "under_limit"},
    ]
    assert result["num_turns"] == 1


def test_a_reactive_compaction_is_marked_by_a_compact_boundary_live_and_on_replay(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code's reactive compaction yields its boundary as autocompaction does
    (trigger `auto`, the count the refused request had); the log's `context` record
    says the same, and a replay's events give the same line."""
    lines = stream_lines(workspace, tmp_path, "reactive_compact")
    systems = [line for line in lines if line["type"] == "system"]
    (boundary,) = [line for line in systems if line["subtype"] == "compact_boundary"]
    assert systems[systems.index(boundary) - 1]["subtype"] == "compact"
    log = tmp_path / "reactive_compact.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    (context,) = [r for r in records if r.get("t") == "context"]
    assert context["before"] > context["after"] > 0
    assert boundary["compact_metadata"] == {"trigger": "auto", "pre_tokens": context["before"]}
    seen: list[dict] = []
    replay(log, on_event=StreamJson(io.StringIO(), "s", collect=seen))
    (again,) = [line for line in seen if line.get("subtype") == "compact_boundary"]
    assert again["compact_metadata"] == boundary["compact_metadata"]


def test_a_partial_message_delta_carries_the_cumulative_usage(
    workspace: Path, tmp_path: Path
) -> None:
    """The API's `message_delta` repeats the prompt's input and cache counts beside the
    output count, cumulative: the same numbers the whole message's usage has."""
    usage = {"input_tokens": 120, "cache_read_input_tokens": 900, "output_tokens": 7}
    scenario = tmp_path / "u.json"
    scenario.write_text(json.dumps({"turns": [{"content": "hi", "usage": usage}]}))
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log",
               str(tmp_path / "u.jsonl"), "--output-format", "stream-json",
               "--include-partial-messages", "go")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    (delta,) = [
        line["event"] for line in lines
        if line["type"] == "stream_event" and line["event"]["type"] == "message_delta"
    ]  # fmt: skip
    expected = {"input_tokens": 120, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 900, "output_tokens": 7}  # fmt: skip
    assert delta["usage"] == expected
    (assistant,) = [line for line in lines if line["type"] == "assistant"]
    (start,) = [
        line["event"] for line in lines
        if line["type"] == "stream_event" and line["event"]["type"] == "message_start"
    ]  # fmt: skip
    # each block's line is written as the block stops, as Claude Code's is: with the
    # usage message_start gave, before the message_delta's count is known
    assert {k: assistant["message"]["usage"][k] for k in expected} == {
        k: start["message"]["usage"].get(k, 0) for k in expected
    }
    assert assistant["message"]["usage"]["input_tokens"] == 120
    assert assistant["message"]["stop_reason"] is None


def test_a_run_with_no_response_costs_null_for_a_model_without_a_price(
    workspace: Path, tmp_path: Path
) -> None:
    """A run that got no response (its prompt blocked, or interrupted before the model
    answered) printed `total_cost_usd: 0.0` for the scripted model, where every other
    run of a model without a price says null."""
    from fsm_agent.cli.cost import CostMeter

    scenario = tmp_path / "blocked.json"
    blocked = {"UserPromptSubmit": [{"blocking_errors": ["not today"]}]}
    scenario.write_text(json.dumps({"prompt": "go", "turns": [], "hooks": blocked}))
    proc = fsm(
        "run", "--scripted", str(scenario), "--cwd", str(workspace),
        "--log", str(tmp_path / "l.jsonl"), "--output-format", "json",
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["terminal_reason"] == "prompt_blocked"
    assert result["total_cost_usd"] is None
    assert CostMeter().total_for("claude-sonnet-4-6") == 0.0  # a priced model: nothing spent
