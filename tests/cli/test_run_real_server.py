"""`fsm-agent run`'s JSON output and `--resume` against a real Messages API server on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.core.config import DEFAULT_MODEL
from fsm_agent.core.messages import ToolResultBlock, Usage
from fsm_agent.core.pricing import cost_usd
from tests.support.cli import MODEL, fsm_on_server, fsm_with
from tests.support.cli import fsm as fsm_cli
from tests.support.messages_server import (
    MessagesServer,
    Sse,
    StreamReply,
    error,
    message,
    message_events,
    messages_server_fixture,  # noqa: F401
    stream_error,
    text,
)


def texts(message: dict) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content if b["type"] == "text"]


def test_json_cost_and_resume_sends_the_history(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 100}
    messages_server.reply(text("First answer.", usage=usage, model=MODEL))
    first_log = tmp_path / "first.jsonl"
    proc = fsm_on_server(
        messages_server, workspace, "first", "--log", str(first_log), "--output-format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    first = json.loads(proc.stdout)
    expected = cost_usd(MODEL, Usage(input_tokens=1000, output_tokens=100))
    assert expected and first["total_cost_usd"] == expected
    assert first["result"] == "First answer."

    messages_server.reply(text("Second answer.", model=MODEL))
    proc = fsm_on_server(
        messages_server, workspace, "second", "--resume", str(first_log), "--output-format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    second = json.loads(proc.stdout)
    assert second["result"] == "Second answer."
    sent = messages_server.bodies()[-1]["messages"]
    assert [(m["role"], texts(m)[-1]) for m in sent[-3:]] == [
        ("user", "first"),
        ("assistant", "First answer."),
        ("user", "second"),
    ]
    header = json.loads(Path(second["log"]).read_text().splitlines()[0])
    assert header["parent"] == {"log": str(first_log), "session_id": first["session_id"]}


def test_stream_json_passes_the_raw_stream_through(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("Hi there, how are you today?", model=MODEL))
    proc = fsm_on_server(
        messages_server,
        workspace,
        "hello",
        "--log",
        str(tmp_path / "s.jsonl"),
        "--output-format",
        "stream-json",
        "--include-partial-messages",
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    events = [line["event"] for line in lines if line["type"] == "stream_event"]
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert events[0]["message"]["model"] == MODEL
    streamed = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert streamed == "Hi there, how are you today?"
    (assistant,) = [line for line in lines if line["type"] == "assistant"]
    assert assistant["message"]["content"] == [{"type": "text", "text": streamed}]
    assert lines[-1]["type"] == "result" and lines[-1]["total_cost_usd"] > 0


def system_texts(body: dict) -> list[str]:
    system = body["system"]
    return [system] if isinstance(system, str) else [b["text"] for b in system]


def test_system_prompt_options_shape_what_the_model_is_sent(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    from fsm_agent.core.config import DEFAULT_SYSTEM_PROMPT

    messages_server.reply(text("A.", model=MODEL), text("B.", model=MODEL))
    log = tmp_path / "a.jsonl"
    proc = fsm_on_server(messages_server, workspace, "hi", "--append-system-prompt", "Be terse.",
               "--log", str(log))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first = system_texts(messages_server.bodies()[-1])[0]
    assert first == f"{DEFAULT_SYSTEM_PROMPT}\n\nBe terse."
    check = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "replay", str(log), "--check"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr

    proc = fsm_on_server(messages_server, workspace, "hi",
                         "--system-prompt", "You answer in French.",
                         "--append-system-prompt", "Briefly.")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert system_texts(messages_server.bodies()[-1])[0] == "You answer in French.\n\nBriefly."


def test_a_retry_is_told_as_it_happens_and_again_on_replay(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """A 429 waited out (of Claude Code's 10 retries): stream-json has Claude Code's
    `system/api_retry` line, and the text output of a replay of the log has the same retry line."""
    import io

    from rich.console import Console

    from fsm_agent.app.session import replay
    from fsm_agent.cli.render import LiveRenderer
    from tests.support.messages_server import error

    limited = error(429, "rate_limit_error", "slow down", headers={"retry-after": "0.05"})
    messages_server.reply(limited, text("After the wait.", model=MODEL))
    log = tmp_path / "r.jsonl"
    proc = fsm_on_server(
        messages_server, workspace, "hi", "--log", str(log), "--output-format", "stream-json"
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    told = [line for line in lines if line.get("subtype") == "api_retry"]
    keys = ("attempt", "max_retries", "retry_delay_ms", "error_status", "error", "error_message")
    assert [{k: t[k] for k in keys} for t in told] == [
        {
            "attempt": 1,
            "max_retries": 10,
            "retry_delay_ms": 50,
            "error_status": 429,
            "error": "rate_limit",
            "error_message": "rate_limit_error: slow down",
        }
    ]
    assert lines[-1]["result"] == "After the wait."

    console = Console(file=io.StringIO(), width=120, color_system=None)
    replay(log, on_event=LiveRenderer(console, live=False))
    shown = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    retry = "↻ the API answered 429 (rate_limit_error: slow down); retry 1 in 0.05 s"
    assert shown[: shown.index("After the wait.")] == [retry]


def test_a_request_refitted_to_the_context_window_is_an_api_retry_line(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """The 400 "input length and `max_tokens` exceed context limit" that is sent again
    asking for less is told as an `api_retry` line, as cli.md says: the 400, no wait, and
    no `max_retries` (the SDK's retries are not what sent it)."""
    overflow = (
        "input length and `max_tokens` exceed context limit: 150000 + 32000 > 170000, "
        "decrease input length or `max_tokens` and try again"
    )
    messages_server.reply(
        text("Cut", stop_reason="max_tokens", model=MODEL),
        error(400, "invalid_request_error", overflow),
        text("Whole.", model=MODEL),
    )
    proc = fsm_on_server(messages_server, workspace, "hi", "--output-format", "stream-json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    (told,) = [line for line in lines if line.get("subtype") == "api_retry"]
    keys = ("attempt", "max_retries", "retry_delay_ms", "error_status")
    assert {k: told[k] for k in keys} == {
        "attempt": 1,
        "max_retries": None,
        "retry_delay_ms": 0,
        "error_status": 400,
    }
    assert told["error"] == "unknown"
    assert "sent again asking for 19000" in told["error_message"]
    assert lines[-1]["result"] == "Whole."


HAIKU = "claude-haiku-4-5"


@pytest.mark.parametrize("fallback", [True, False])
def test_a_response_cut_by_an_error_is_counted_and_priced(
    messages_server: MessagesServer, workspace: Path, fallback: bool
) -> None:
    """The overloaded first try reported 50,000 input tokens: `usage`, `modelUsage`
    and the cost all count it, each response priced on its own."""
    cut = message_events(
        [{"type": "text", "text": "partial answer"}],
        model=MODEL,
        usage={"input_tokens": 50000, "output_tokens": 7},
    )[:7]  # the text block complete: a stream broken before that would be sent again
    replies = [stream_error(cut, "overloaded_error", "Overloaded")]
    args = ["go", "--output-format", "json"]
    if fallback:
        replies.append(
            text("from fallback", model=HAIKU, usage={"input_tokens": 100, "output_tokens": 10})
        )
        args += ["--fallback-model", HAIKU]
    messages_server.reply(*replies)
    proc = fsm_on_server(messages_server, workspace, *args)
    assert proc.returncode == (0 if fallback else 13), proc.stderr
    out = json.loads(proc.stdout)
    first = Usage(input_tokens=50000, output_tokens=1)  # message_start's count: no delta came
    spent = {MODEL: first, HAIKU: Usage(input_tokens=100, output_tokens=10)}
    if not fallback:
        del spent[HAIKU]
    assert {m: (u["inputTokens"], u["outputTokens"]) for m, u in out["modelUsage"].items()} == {
        m: (u.input_tokens, u.output_tokens) for m, u in spent.items()
    }
    assert out["usage"]["input_tokens"] == sum(u.input_tokens for u in spent.values())
    assert out["usage"]["output_tokens"] == sum(u.output_tokens for u in spent.values())
    prices = [cost_usd(m, u) for m, u in spent.items()]
    assert out["total_cost_usd"] == pytest.approx(sum(p for p in prices if p is not None))
    assert out["total_cost_usd"] > 0.15


def _cut_after_the_read(error_type: str, text: str) -> StreamReply:
    """Text, a Read (safe: it starts while the stream goes on) and a Write, the stream
    failing right after the Read's block is complete."""
    content = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "a.txt"}},
        {"type": "tool_use", "id": "toolu_w", "name": "Write",
         "input": {"file_path": "b.txt", "content": "x"}},
    ]  # fmt: skip
    events = message_events(content, model=MODEL, stop_reason="tool_use")
    stops = [i for i, e in enumerate(events) if e.event == "content_block_stop"]
    return stream_error(events[: stops[1] + 1], error_type, text)


def _lines(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_calls_of_a_message_dropped_for_a_fallback_are_not_reported(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    messages_server.reply(
        _cut_after_the_read("overloaded_error", "Overloaded"), text("from fallback", model=HAIKU)
    )
    log = tmp_path / "fb.jsonl"
    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "stream-json",
               "--verbose", "--fallback-model", HAIKU, "--log", str(log))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = _lines(proc)
    kinds = [(line["type"], line.get("subtype")) for line in lines if line["type"] != "transition"]
    assert kinds == [("system", "init"), ("system", "fallback"), ("assistant", None),
                     ("result", "success")]  # fmt: skip
    assert "toolu_r" not in proc.stdout
    assert "toolu_r" not in json.dumps(messages_server.bodies()[-1]["messages"])
    check = fsm_cli("replay", "--check", str(log))
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_call_cut_by_a_model_error_says_so_not_that_the_user_interrupted(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """The Read waits on a slow PreToolUse hook, so the error comes before it runs."""
    (workspace / "a.txt").write_text("hello\n")
    slow = {"matcher": "Read", "hooks": [{"type": "command", "command": "sleep 1"}]}
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [slow]}})
    )
    messages_server.reply(_cut_after_the_read("api_error", "boom"))
    log = tmp_path / "err.jsonl"
    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "stream-json",
               "--verbose", "--log", str(log))  # fmt: skip
    assert proc.returncode == 13, proc.stderr
    (user,) = [line for line in _lines(proc) if line["type"] == "user"]
    (block,) = user["message"]["content"]
    assert block["tool_use_id"] == "toolu_r" and block["is_error"]
    assert block["content"].startswith("Tool not run: the model call failed (")
    assert "boom" in block["content"]
    replayed = replay(log)
    (result,) = [b for m in replayed.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert result.content == block["content"]


@pytest.mark.parametrize(
    ("model", "asked"),
    [
        ("claude-sonnet-4-6", [32_000, 32_000]),
        ("claude-opus-4-1-20250805", [32_000, 32_000]),
        ("claude-3-5-haiku-20241022", [8_192, 8_192]),
        ("claude-3-haiku-20240307", [4_096, 4_096]),
    ],
)
def test_max_tokens_stay_within_the_models_output_limit(
    messages_server: MessagesServer, workspace: Path, model: str, asked: list[int]
) -> None:
    """The API refuses `max_tokens` over a model's output limit (400 "max_tokens: 64000 >
    32000, which is the maximum allowed number of output tokens for claude-opus-4-1"):
    the default (Claude Code's 32k) is held to it, and so is the resumed request."""
    messages_server.reply(
        text("Cut", stop_reason="max_tokens", model=model), text("Whole.", model=model)
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key"}
    where = ["--base-url", messages_server.url, "--model", model, "--cwd", str(workspace)]
    proc = fsm_with(env, "run", "say it", *where)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [b["max_tokens"] for b in messages_server.bodies()] == asked


def test_input_counts_that_come_only_with_message_delta_are_counted(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """A compatible server may send zeros in `message_start` and the prompt's counts in
    the cumulative `message_delta` usage, as Claude Code takes them (when above zero):
    the usage, the cost and the next context count use them."""
    usage = {"input_tokens": 1200, "cache_read_input_tokens": 3000, "output_tokens": 40}
    events = list(message_events([{"type": "text", "text": "Done."}], model=MODEL, usage=usage))
    start = dict(events[0].data)
    zeros = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    start["message"] = {**start["message"], "usage": {**zeros, "output_tokens": 1}}
    events[0] = Sse("message_start", start)
    messages_server.reply(StreamReply(tuple(events)))
    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["usage"]["input_tokens"] == 1200
    assert out["usage"]["cache_read_input_tokens"] == 3000
    spent = Usage(input_tokens=1200, output_tokens=40, cache_read_input_tokens=3000)
    assert out["total_cost_usd"] == pytest.approx(cost_usd(MODEL, spent))


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "authentication_error"), (404, "not_found_error")]
)
def test_an_api_error_answer_carries_its_http_status(
    status: int, kind: str, messages_server: MessagesServer, workspace: Path
) -> None:
    """The server's status reaches the result as `api_error_status`, as in `claude -p`."""
    messages_server.reply(error(status, kind, "no"))
    proc = fsm_on_server(messages_server, workspace, "hi", "--output-format", "json")
    assert proc.returncode == 20, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["subtype"], result["is_error"]) == ("success", True)
    assert result["api_error_status"] == status


@pytest.mark.parametrize(
    "url", ["localhost:8080", "127.0.0.1:8080/v1", "ftp://example.com", "http://[::1", "http://"]
)
@pytest.mark.parametrize("given_by", ["--base-url", "ANTHROPIC_BASE_URL"])
def test_a_base_url_that_is_not_an_http_url_is_a_usage_error(
    url: str, given_by: str, workspace: Path
) -> None:
    """A mistyped base URL is an error in what was typed: one line naming it, exit 2, and
    no run (it was a model_error after two retries told as lost connections)."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key"}
    args = ["run", "hi", "--cwd", str(workspace)]
    if given_by == "--base-url":
        args += ["--base-url", url]
    else:
        env["ANTHROPIC_BASE_URL"] = url
    proc = fsm_with(env, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"fsm-agent: error: {given_by} {url!r} is not an http(s) URL "
        "(give one like https://api.anthropic.com or http://127.0.0.1:4000)"
    ]
    assert not (workspace / ".fsm-agent").exists()


def test_a_stream_with_fields_left_out_ends_cleanly_and_replays(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """A compatible server's message with no id or model, then a call with no name: the
    first was a log no replay could read, the second a traceback."""
    events = list(message_events([{"type": "text", "text": "Hello."}]))
    start = dict(events[0].data)
    start["message"] = {k: v for k, v in start["message"].items() if k not in ("id", "model")}
    events[0] = Sse("message_start", start)
    nameless = {"type": "tool_use", "id": "call_1", "input": {"pattern": "*"}}
    called = list(message_events([{"type": "text", "text": "x"}], stop_reason="tool_use"))
    called[1] = Sse(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": nameless},
    )
    called = [e for e in called if e.event != "content_block_delta"]
    messages_server.reply(StreamReply(tuple(events)), StreamReply(tuple(called)))
    logs = [tmp_path / "first.jsonl", tmp_path / "second.jsonl"]

    first = fsm_on_server(
        messages_server, workspace, "hi", "--log", str(logs[0]), "--output-format", "json"
    )
    second = fsm_on_server(messages_server, workspace, "go", "--log", str(logs[1]))

    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["result"] == "Hello."
    assert second.returncode == 13, second.stderr
    assert "invalid_response: tool_use block 0 has no name" in second.stdout
    assert "Traceback" not in second.stderr
    for log in logs:
        check = fsm_cli("replay", "--check", str(log))
        assert check.returncode == 0, check.stdout + check.stderr


def test_an_answer_whose_blocks_are_never_stopped_is_kept(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """A compatible server that leaves out `content_block_stop`: the answer was streamed,
    then the run ended with an empty result and an empty message in the transcript."""
    events = message_events([{"type": "text", "text": "The answer is 42."}], model=MODEL)
    messages_server.reply(StreamReply(tuple(e for e in events if e.event != "content_block_stop")))

    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "json")

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["result"] == "The answer is 42."
    check = fsm_cli("replay", "--check", out["log"])
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_emoji_split_across_deltas_does_not_stop_the_conversation(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """A compatible server that cuts an emoji's JSON escape in two deltas: the halves are
    surrogates, no UTF-8, and the next request could not be made (`API Error: …
    UnicodeEncodeError`, exit 20), nor could any resume of the session."""
    events = list(
        message_events(
            [
                {"type": "text", "text": "xx"},
                {"type": "tool_use", "id": "toolu_1", "name": "Glob", "input": {"pattern": "*"}},
            ],
            stop_reason="tool_use",
            model=MODEL,
        )
    )
    halves = [
        Sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
        )
        for t in ("smile \ud83d", "\ude00")
    ]
    deltas = [i for i, e in enumerate(events) if e.data.get("index") == 0 and "delta" in e.data]
    events[deltas[0] : deltas[-1] + 1] = halves
    messages_server.reply(StreamReply(tuple(events)), text("Done.", model=MODEL))

    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "json")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["result"] == "Done."
    sent = messages_server.bodies()[1]["messages"]
    assert texts(sent[-2]) == ["smile \U0001f600"]


def test_a_key_and_base_url_set_with_spaces_or_a_line_break_are_trimmed(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """`ANTHROPIC_API_KEY` read from a file with its line break (a CRLF .env): the header
    could not be sent, each try was told as a lost connection, and the error that ended
    the run printed the key and wrote it into the session log. Claude Code trims both."""
    messages_server.reply(text("Hello.", model=MODEL))
    env = {**os.environ, "ANTHROPIC_API_KEY": " test-key\r\n", "ANTHROPIC_BASE_URL": ""}
    args = ["run", "hi", "--cwd", str(workspace), "--base-url", f" {messages_server.url}/ \n"]
    proc = fsm_with(env, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (request,) = messages_server.requests
    assert [v for v in request.headers.values() if v.endswith("test-key")]


@pytest.mark.parametrize(
    ("variables", "error"),
    [
        (  # refused without showing the key
            {"ANTHROPIC_API_KEY": "sk-secret\x1bkey"},
            "ANTHROPIC_API_KEY holds a control character, which no HTTP header can carry: "
            "check how it was set",
        ),
        (
            {"ANTHROPIC_API_KEY": "k", "CLAUDE_STREAM_IDLE_TIMEOUT_MS": "90s"},
            "CLAUDE_STREAM_IDLE_TIMEOUT_MS must be a whole number of milliseconds, not '90s'",
        ),
    ],
)
def test_a_variable_no_request_can_use_is_a_usage_error(
    workspace: Path, variables: dict[str, str], error: str
) -> None:
    env = {**os.environ, **variables}
    args = ["run", "hi", "--cwd", str(workspace), "--base-url", "http://127.0.0.1:9"]
    proc = fsm_with(env, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [f"fsm-agent: error: {error}"]
    assert not (workspace / ".fsm-agent").exists()


def test_a_refusal_is_an_api_error_answer(messages_server: MessagesServer, workspace: Path) -> None:
    """`stop_reason: refusal` (the API's streaming classifiers stopped the answer): Claude
    Code adds an `API Error: …` message and ends completed with an error; it ended as a
    success, exit 0, with whatever was streamed before the cut as the result."""
    messages_server.reply(text("Sure, here is how to", stop_reason="refusal", model=MODEL))

    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "json")

    assert proc.returncode == 20, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert (out["subtype"], out["is_error"], out["stop_reason"]) == ("success", True, "refusal")
    assert out["terminal_reason"] == "completed"
    assert out["result"].startswith("API Error: the model declined to answer")
    check = fsm_cli("replay", "--check", out["log"])
    assert check.returncode == 0, check.stdout + check.stderr
    history = [(m.role, m.text) for m in replay(out["log"]).messages]
    assert history[-1] == ("assistant", "Sure, here is how to")  # no second answer after it


def test_a_refusal_before_any_text_answers_with_the_error(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """Nothing streamed before the classifiers stopped it: the error is the answer, as an
    API error's is, so the conversation still ends on an assistant message with text."""
    messages_server.reply(message([], stop_reason="refusal", model=MODEL))

    proc = fsm_on_server(messages_server, workspace, "go", "--output-format", "json")

    assert proc.returncode == 20, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    history = [(m.role, m.text) for m in replay(out["log"]).messages]
    assert [role for role, _ in history] == ["user", "assistant"]
    assert history[-1] == ("assistant", out["result"])
    assert out["result"].startswith("API Error: the model declined to answer")


@pytest.mark.parametrize("main", [["--model", MODEL], []])
def test_a_fallback_model_that_is_the_main_model_is_a_usage_error(
    main: list[str], workspace: Path
) -> None:
    """Claude Code refuses it at start; it ran, and an overload ended model_error with no
    switch. The main model may be the default one."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key"}
    env.pop("FSM_AGENT_MODEL", None)
    fallback = MODEL if main else DEFAULT_MODEL
    args = ["run", "hi", "--cwd", str(workspace), "--fallback-model", fallback, *main]
    proc = fsm_with(env, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"fsm-agent: error: --fallback-model {fallback} is the main model: give another one"
    ]
    assert not (workspace / ".fsm-agent").exists()


def test_an_error_that_quotes_the_api_key_is_printed_and_logged_redacted(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """A proxy whose error body echoes the `x-api-key` header: the retry line, the
    error, stream-json and the session log show the key redacted, nowhere in full."""
    echo = "invalid x-api-key: test-key (check your proxy)"
    messages_server.reply(
        error(429, "rate_limit_error", echo, headers={"retry-after": "0.01"}),
        error(401, "authentication_error", echo),
    )
    log = tmp_path / "k.jsonl"
    proc = fsm_on_server(
        messages_server, workspace, "hi", "--log", str(log), "--output-format", "stream-json"
    )
    shown = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "test-key" not in shown
    assert "test-key" not in log.read_text()
    assert shown.count("invalid x-api-key: [API key redacted] (check your proxy)") >= 2


def test_a_run_the_api_ended_answers_with_the_error_as_claude_code_does(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """A 529 with no retries left (`CLAUDE_CODE_MAX_RETRIES=0`): as `claude -p`, the
    result is `success` with `is_error` and the error for an answer, after a synthetic
    assistant message saying it; the exit code still names `model_error`."""
    from tests.support.messages_server import error

    messages_server.reply(error(529, "overloaded_error", "Overloaded"))
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "CLAUDE_CODE_MAX_RETRIES": "0"}
    where = ["--base-url", messages_server.url, "--model", MODEL, "--cwd", str(workspace)]
    proc = fsm_with(env, "run", "hi", "--output-format", "stream-json", *where)
    assert proc.returncode == 13, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    said, result = [line for line in lines if line["type"] in ("assistant", "result")]
    assert (result["subtype"], result["is_error"], result["terminal_reason"]) == (
        "success",
        True,
        "model_error",
    )
    assert result["api_error_status"] == 529 and "errors" not in result
    assert result["result"].startswith("API Error: API overloaded (529 overloaded_error)")
    assert said["message"]["model"] == "<synthetic>" and said["error"] == "server_error"
    assert said["message"]["content"] == [{"type": "text", "text": result["result"]}]
    assert len(messages_server.bodies()) == 1, "no retry left"
