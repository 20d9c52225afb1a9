"""The whole loop against a real Messages API server on loopback, through the real SDK.

Real tools run on real files in a temporary workspace; every API error class
ends the run with the Terminal reason the seeds give it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import arun, replay
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.engine.driver import LoopResult
from fsm_agent.live.anthropic_model import AnthropicModel
from tests.support.messages_server import (
    MessagesServer,
    StreamReply,
    error,
    message,
    messages_server_fixture,  # noqa: F401
    stream_error,
    text,
)


def run_loop(
    server: MessagesServer, workspace: Path, tmp_path: Path, retries: int = 1, **config: Any
) -> LoopResult:
    async def go() -> LoopResult:
        model = AnthropicModel(api_key="test-key", base_url=server.url, max_retries=retries)
        try:
            return await arun(
                "Do the task.",
                model=model,
                config=RunConfig(
                    model="claude-test-1",
                    cwd=str(workspace),
                    **{"permission_mode": "acceptEdits", **config},
                ),
                log=tmp_path / "session.jsonl",
            )
        finally:
            await model.aclose()

    return asyncio.run(go())


def write_call(path: str, content: str, tool_id: str = "toolu_01") -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": tool_id,
        "name": "Write",
        "input": {"file_path": path, "content": content},
    }


def results(result: LoopResult) -> dict[str, ToolResultBlock]:
    return {
        b.tool_use_id: b
        for m in result.messages.items
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }


def test_task_end_to_end_with_real_tools_then_replay_offline(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        message(
            [{"type": "text", "text": "Writing it."}, write_call("hi.txt", "hi\n")],
            stop_reason="tool_use",
        ),
        text("Wrote hi.txt."),
    )
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "completed"
    assert (workspace / "hi.txt").read_text() == "hi\n"
    second = messages_server.bodies()[1]
    assert [m["role"] for m in second["messages"]][-2:] == ["assistant", "user"]
    assert second["messages"][-1]["content"][0]["tool_use_id"] == "toolu_01"
    assert second["max_tokens"] == 32000, "Claude Code 2.1.x's default"
    assert {t["name"] for t in second["tools"]} >= {"Read", "Write", "Edit", "Bash"}
    messages_server.stop()
    (workspace / "hi.txt").unlink()
    again = replay(tmp_path / "session.jsonl")
    assert again.path == result.path
    assert not (workspace / "hi.txt").exists()


TOO_LONG = "prompt is too long: 219898 tokens > 200000 maximum"


def two_rounds() -> list[StreamReply]:
    """Two Write rounds: something older than the last round for compaction to drop."""
    return [
        message([write_call(f"{n}.txt", n, f"toolu_0{n}")], stop_reason="tool_use")
        for n in ("1", "2")
    ]


def test_prompt_too_long_with_nothing_to_compact_is_not_sent_again(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """The prompt alone is too long: compaction leaves it as it is, and the retry was the
    same request, refused the same way. One request, then `prompt_too_long`."""
    too_long = error(400, "invalid_request_error", TOO_LONG)
    messages_server.reply(too_long, too_long)
    result = run_loop(messages_server, workspace, tmp_path)
    assert "reactive_compact_retry" not in result.edges
    assert result.reason == "prompt_too_long"
    assert len(messages_server.bodies()) == 1
    assert result.error is not None and result.error.startswith(TOO_LONG)
    assert result.error.endswith("(nothing older than the last round to compact)")


def test_prompt_too_long_compacts_then_ends_prompt_too_long(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    too_long = error(400, "invalid_request_error", TOO_LONG)
    messages_server.reply(*two_rounds(), too_long, too_long)
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.edges.count("reactive_compact_retry") == 1
    assert result.reason == "prompt_too_long"
    assert result.error is not None
    assert result.error.startswith(f"still too long after compaction: {TOO_LONG}")


def test_prompt_too_long_then_success(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        *two_rounds(), error(400, "invalid_request_error", TOO_LONG), text("Fits now.")
    )
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.edges.count("reactive_compact_retry") == 1
    assert result.reason == "completed"
    failed, retried = messages_server.bodies()[2:]
    assert len(retried["messages"]) < len(failed["messages"])
    assert (workspace / "1.txt").read_text() == "1"


def test_image_error(messages_server: MessagesServer, workspace: Path, tmp_path: Path) -> None:
    media = error(
        400,
        "invalid_request_error",
        "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum",
    )
    messages_server.reply(media, media)
    assert run_loop(messages_server, workspace, tmp_path).reason == "image_error"
    assert len(messages_server.bodies()) == 1, "no image to strip, nothing older to compact"


def test_overloaded_switches_to_the_fallback_model(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    overloaded = error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0.01"})
    messages_server.reply(overloaded, overloaded, text("Hello from the fallback."))
    result = run_loop(messages_server, workspace, tmp_path, fallback_model="claude-fallback-1")
    assert "model_fallback" in result.edges
    assert result.reason == "completed"
    assert messages_server.bodies()[-1]["model"] == "claude-fallback-1"


def test_the_third_529_in_a_row_switches_models_and_the_fallback_s_retries_go_on(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """Claude Code's rule with its 10 retries: the main model gets three tries, the
    fallback model (with no model to fall back to) all of its retries."""
    overloaded = error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0.01"})
    messages_server.reply(*[overloaded] * 7, text("Hello from the fallback."))
    result = run_loop(
        messages_server, workspace, tmp_path, retries=10, fallback_model="claude-fallback-1"
    )
    assert result.reason == "completed" and result.edges.count("model_fallback") == 1
    models = [b["model"] for b in messages_server.bodies()]
    assert models == ["claude-test-1"] * 3 + ["claude-fallback-1"] * 5


def test_repeated_5xx_without_fallback_is_model_error(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    broken = error(500, "api_error", "Internal server error", headers={"retry-after": "0.01"})
    messages_server.reply(broken, broken)
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "model_error"


def test_rate_limit_retry_honours_retry_after(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        error(429, "rate_limit_error", "rate limited", headers={"retry-after": "0.01"}),
        text("After the wait."),
    )
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "completed"
    assert result.text == "After the wait."


def test_midstream_error_event_is_model_error_with_results_filled(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    events = message([write_call("x.txt", "x")], stop_reason="tool_use").events[:-2]
    messages_server.reply(stream_error(events, "api_error", "Internal error"))
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "model_error"
    assert results(result)["toolu_01"].is_error
    assert not (workspace / "x.txt").exists()


def test_dropped_connection_is_model_error(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        message([{"type": "text", "text": "Starting a long answer"}], cut_after=4),
        message([{"type": "text", "text": "Starting a long answer"}], cut_after=4),
    )
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "model_error"
    assert "connection" in (result.error or "")


def test_stream_without_message_stop_is_sent_again(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """Claude Code sends the request again and finishes: the answer was lost in transit."""
    messages_server.reply(
        message([{"type": "text", "text": "Half an answer"}], end_after=4),
        text("The whole answer."),
    )
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "completed"
    assert result.text == "The whole answer."
    assert len(messages_server.bodies()) == 2


@pytest.mark.parametrize("stop_reason", ["max_tokens", "model_context_window_exceeded"])
def test_a_cut_tool_input_is_never_run(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path, stop_reason: str
) -> None:
    """`model_context_window_exceeded` (Sonnet 4.5 and later) cuts the answer as
    `max_tokens` does. As Claude Code 2.1.x, the cut call is never run: it gets its
    input's error as its result and the loop takes the tools' path, with no escalation
    or recovery prompt (the conformance case max_tokens_in_tool_input)."""
    cut = {
        "type": "tool_use",
        "id": "toolu_cut",
        "name": "Write",
        "input_json": '{"file_path": "cut.txt", "content": "abc',
    }
    messages_server.reply(
        message([{"type": "text", "text": "Writing"}, cut], stop_reason=stop_reason),
        text("Done in smaller pieces."),
    )
    result = run_loop(messages_server, workspace, tmp_path, capped_output=True)
    assert "max_output_tokens_escalate" not in result.edges
    assert "max_output_tokens_recovery" not in result.edges
    assert result.reason == "completed"
    assert not (workspace / "cut.txt").exists()
    second = messages_server.bodies()[1]
    assert second["max_tokens"] == messages_server.bodies()[0]["max_tokens"]
    (answer,) = [b for b in second["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert answer["tool_use_id"] == "toolu_cut" and answer["is_error"]
    assert result.text == "Done in smaller pieces."
    assert not result.is_error


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ('{"file_path": ', "Write was called with input that could not be parsed as JSON."),
        ('{"file_path": ' + "[" * 400 + "]" * 400 + "}", "nested more than 100 levels"),
        ('{"file_path": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 100 levels"),
    ],
    ids=["cut", "deep", "deeper than the parser goes"],
)
def test_invalid_tool_json_gets_an_error_result_and_the_loop_goes_on(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path, raw: str, said: str
) -> None:
    """Input the log could not hold (nested past what writing it recurses through) is
    the model's bad input like any other: an error result, and the run replays."""
    bad = {"type": "tool_use", "id": "toolu_bad", "name": "Write", "input_json": raw}
    messages_server.reply(message([bad], stop_reason="tool_use"), text("Let me retry properly."))
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "completed"
    assert results(result)["toolu_bad"].is_error
    assert said in results(result)["toolu_bad"].text
    assert result.log_path is not None
    assert replay(result.log_path).text == "Let me retry properly."


def test_unauthorized_is_completed_with_the_api_error(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(error(401, "authentication_error", "invalid x-api-key"))
    result = run_loop(messages_server, workspace, tmp_path)
    assert result.reason == "completed"
    assert result.text.startswith("API Error")


def test_cli_run_against_the_server(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        message([write_call("cli.txt", "from the cli\n")], stop_reason="tool_use"),
        text("Done via the CLI."),
    )
    log = tmp_path / "cli.jsonl"
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsm_agent.cli",
            "run",
            "Write cli.txt",
            "--base-url",
            messages_server.url,
            "--model",
            "claude-test-1",
            "--cwd",
            str(workspace),
            "--log",
            str(log),
            "--permission-mode",
            "acceptEdits",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Done via the CLI." in proc.stdout
    assert (workspace / "cli.txt").read_text() == "from the cli\n"
    check = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "replay", str(log), "--check"],
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"},
        timeout=60,
    )
    assert check.returncode == 0, check.stderr


def test_fork_a_scripted_session_into_a_real_model(
    messages_server: MessagesServer, scenario, workspace: Path, tmp_path: Path
) -> None:
    scenario("tool_round")
    parent = tmp_path / "tool_round.jsonl"
    messages_server.reply(text("The real model takes over."))
    new = tmp_path / "forked.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "replay", str(parent), "--fork-at", "6",
         "--model", "claude-test-1", "--base-url", messages_server.url,
         "--cwd", str(workspace), "--log", str(new)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "ANTHROPIC_API_KEY": "test-key"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "The real model takes over." in proc.stdout
    sent = messages_server.bodies()
    assert len(sent) == 1
    assert sent[0]["model"] == "claude-test-1"
    assert sent[0]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_01write"
    assert replay(new).reason == "completed"


def test_requests_to_a_fallback_model_are_held_to_its_output_limit(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """The run's limits are the first model's (a 64k escalation); once the fallback
    answers, its own limit holds (8,192 for 3.5 Haiku): the API refuses more."""
    overloaded = error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0.01"})
    fallback = "claude-3-5-haiku-20241022"
    messages_server.reply(
        overloaded,
        overloaded,
        text("Cut", stop_reason="max_tokens", model=fallback),
        text("Whole.", model=fallback),
    )
    result = run_loop(
        messages_server,
        workspace,
        tmp_path,
        fallback_model=fallback,
        capped_output=True,
    )
    assert result.reason == "completed"
    assert "max_output_tokens_escalate" in result.edges
    sent = [(b["model"], b["max_tokens"]) for b in messages_server.bodies()]
    assert sent == [
        ("claude-test-1", 8_000),
        ("claude-test-1", 8_000),
        (fallback, 8_000),
        (fallback, 8_192),
    ]


def test_an_answer_cut_by_the_context_window_every_time_ends_with_the_api_s_words(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """After the escalation and three recoveries, Claude Code surfaces the error it
    withheld: for this stop reason, that the model reached its context window."""
    messages_server.reply(
        *(text(f"Part {n}", stop_reason="model_context_window_exceeded") for n in range(5))
    )
    result = run_loop(messages_server, workspace, tmp_path, capped_output=True)
    assert result.reason == "completed"
    assert result.edges.count("max_output_tokens_recovery") == 3
    assert result.error == "API Error: The model has reached its context window limit."
    assert result.is_error
    assert len(messages_server.bodies()) == 5


def test_an_escalated_request_that_overflows_the_window_is_fitted_to_it(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """A model before Sonnet 4.5 refuses an input plus `max_tokens` over its window (the
    64k escalation after a long conversation): the request goes out again asking for what
    the window has left, as Claude Code's retry does, and the run goes on; a replay
    answers the same without the server."""
    overflow = (
        "input length and `max_tokens` exceed context limit: 150000 + 64000 > 200000, "
        "decrease input length or `max_tokens` and try again"
    )
    messages_server.reply(
        text("Cut", stop_reason="max_tokens"),
        error(400, "invalid_request_error", overflow),
        text("Whole."),
    )
    result = run_loop(messages_server, workspace, tmp_path, capped_output=True)
    assert result.reason == "completed"
    assert result.text == "Whole."
    assert [b["max_tokens"] for b in messages_server.bodies()] == [8_000, 64_000, 49_000]
    assert result.log_path is not None
    assert replay(result.log_path).text == "Whole."


def test_a_blank_system_prompt_is_not_sent_as_a_block(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """The API refuses a text block of whitespace alone ("system: text content blocks must
    contain non-whitespace text"): a blank `--system-prompt` leaves only the system
    context, here none."""
    messages_server.reply(text("Done."))
    result = run_loop(messages_server, workspace, tmp_path, system_prompt="  \n ")
    assert result.reason == "completed"
    (body,) = messages_server.bodies()
    assert all(block["text"].strip() for block in body.get("system", []))
