"""The Anthropic adapter: the real SDK over real HTTP against the local server."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import socket
import time
from contextlib import aclosing
from typing import Any

import anthropic
import attrs
import pytest

from fsm_agent.core.codec import message_to_api
from fsm_agent.core.events import (
    BlockDelta,
    BlockStart,
    BlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelCallError,
    ModelRetry,
    StreamEvent,
)
from fsm_agent.core.limits import CAPPED_DEFAULT_MAX_TOKENS
from fsm_agent.core.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user,
)
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.transcript import Transcript
from fsm_agent.live.anthropic_model import (
    STREAM_IDLE_TIMEOUT_S,
    AnthropicModel,
    asked_delay,
    backoff,
    max_retries,
    request_body,
    stream_idle_timeout,
    will_retry,
)
from tests.support.messages_server import (
    COUNT_TOKENS,
    JsonReply,
    MessagesServer,
    PageReply,
    Sse,
    StreamReply,
    error,
    message,
    message_events,
    messages_server_fixture,  # noqa: F401
    stream_error,
    text,
    token_count,
)
from tests.support.model_request import BASH, HISTORY, READ, REQUEST

FAST = "0.01"
"""A `retry-after` that keeps retries quick."""


class Waits(list[float]):
    """A retry's wait that is only noted: each test's retries go out at once."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def model_for(
    server: MessagesServer,
    *,
    max_retries: int = 2,
    timeout: float = 5.0,
    stream_idle_timeout: float | None = STREAM_IDLE_TIMEOUT_S,
    sleep: Any = None,
) -> AnthropicModel:
    return AnthropicModel(
        api_key="test-key",
        base_url=server.url,
        max_retries=max_retries,
        timeout=timeout,
        stream_idle_timeout=stream_idle_timeout,
        sleep=Waits() if sleep is None else sleep,
        jitter=lambda: 0.0,
    )


def waits(model: AnthropicModel) -> list[float]:
    assert isinstance(model.sleep, Waits)
    return list(model.sleep)


def collect(
    model: AnthropicModel, request: ModelRequest = REQUEST
) -> tuple[list[StreamEvent], ModelCallError | None]:
    """Every event the stream yields, and the error it ends with, if any."""

    async def run() -> tuple[list[StreamEvent], ModelCallError | None]:
        events: list[StreamEvent] = []
        try:
            async for event in model.stream(request):
                events.append(event)
        except ModelCallError as exc:
            return events, exc
        finally:
            await model.aclose()
        return events, None

    return asyncio.run(run())


def stream_fails(model: AnthropicModel) -> tuple[list[StreamEvent], ModelCallError]:
    events, exc = collect(model)
    assert exc is not None, f"stream ended normally: {events}"
    return events, exc


def stops(events: list[StreamEvent]) -> list[BlockStop]:
    return [e for e in events if isinstance(e, BlockStop)]


def deltas(events: list[StreamEvent], kind: str) -> list[str]:
    return [e.delta for e in events if isinstance(e, BlockDelta) and e.kind == kind]


# --- streams ----------------------------------------------------------------------


def test_text_streams_in_order(messages_server: MessagesServer) -> None:
    messages_server.reply(text("Two files: a.py and b.py."))

    events, exc = collect(model_for(messages_server))

    assert exc is None
    assert [type(e) for e in events] == [
        MessageStart,
        BlockStart,
        BlockDelta,
        BlockDelta,
        BlockDelta,
        BlockStop,
        MessageDelta,
        MessageStop,
    ]
    assert events[0] == MessageStart("msg_test_01", "claude-test-1", events[0].usage)
    assert events[1] == BlockStart(0, TextBlock(""))
    assert "".join(deltas(events, "text")) == "Two files: a.py and b.py."
    assert events[5] == BlockStop(0, TextBlock("Two files: a.py and b.py."))
    assert isinstance(events[6], MessageDelta) and events[6].stop_reason == "end_turn"


def test_tool_use_input_is_assembled_from_pieces(messages_server: MessagesServer) -> None:
    command = {"command": 'grep -rn "TODO" src/ | head -n 20', "timeout": 30}
    messages_server.reply(
        message(
            [
                {"type": "text", "text": "Searching and reading."},
                {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": command},
                {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"file_path": "a"}},
                {"type": "tool_use", "id": "toolu_c", "name": "Noop", "input_json": ""},
            ],
            stop_reason="tool_use",
        )
    )

    events, exc = collect(model_for(messages_server))

    assert exc is None
    assert stops(events) == [
        BlockStop(0, TextBlock("Searching and reading.")),
        BlockStop(1, ToolUseBlock("toolu_a", "Bash", command)),
        BlockStop(2, ToolUseBlock("toolu_b", "Read", {"file_path": "a"})),
        BlockStop(3, ToolUseBlock("toolu_c", "Noop", {})),
    ]
    pieces = [e.delta for e in events if isinstance(e, BlockDelta) and e.index == 1]
    assert len([p for p in pieces if p]) > 1
    assert json.loads("".join(pieces)) == command
    assert BlockStart(1, ToolUseBlock("toolu_a", "Bash", {})) in events
    message_delta = next(e for e in events if isinstance(e, MessageDelta))
    assert message_delta.stop_reason == "tool_use"


def test_thinking_and_signature(messages_server: MessagesServer) -> None:
    messages_server.reply(
        message(
            [
                {"type": "thinking", "thinking": "The user wants files.", "signature": "EqQBsig=="},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3redacted"},
                {"type": "text", "text": "Done."},
            ]
        )
    )

    events, exc = collect(model_for(messages_server))

    assert exc is None
    assert events[1] == BlockStart(0, ThinkingBlock("", ""))
    assert "".join(deltas(events, "thinking")) == "The user wants files."
    assert deltas(events, "signature") == ["EqQBsig=="]
    assert stops(events) == [
        BlockStop(0, ThinkingBlock("The user wants files.", "EqQBsig==")),
        BlockStop(1, RedactedThinkingBlock("EmwKAhgBEgy3redacted")),
        BlockStop(2, TextBlock("Done.")),
    ]


def test_a_later_signature_delta_replaces_the_earlier(messages_server: MessagesServer) -> None:
    """As the SDK's own accumulator does: a signature is a whole value, not text pieces
    (the API sends one; a compatible server sending two must not make a third)."""
    reply = message([{"type": "thinking", "thinking": "Hm.", "signature": "first=="}])
    at = next(i for i, e in enumerate(reply.events) if e.data.get("delta", {}).get("signature"))
    second = Sse(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "second=="}},
    )  # fmt: skip
    events = (*reply.events[: at + 1], second, *reply.events[at + 1 :])
    messages_server.reply(dataclasses.replace(reply, events=events))

    got, exc = collect(model_for(messages_server))

    assert exc is None
    assert stops(got) == [BlockStop(0, ThinkingBlock("Hm.", "second=="))]


def test_block_types_we_do_not_model_are_skipped(messages_server: MessagesServer) -> None:
    messages_server.reply(
        message(
            [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {"type": "text", "text": "Found it."},
            ]
        )
    )

    events, exc = collect(model_for(messages_server))

    assert exc is None
    block_events = [e for e in events if isinstance(e, BlockStart | BlockDelta | BlockStop)]
    assert {e.index for e in block_events} == {1}
    assert stops(events) == [BlockStop(1, TextBlock("Found it."))]


def test_a_tool_use_id_repeated_in_one_message_is_an_unreadable_response(
    messages_server: MessagesServer,
) -> None:
    """A compatible server that gives two calls one id (or none: ``): their results
    could not be told apart, and the first call's was given to both."""
    calls = [
        {"type": "tool_use", "id": "call_0", "name": "Read", "input": {"file_path": p}}
        for p in ("a.txt", "b.txt")
    ]
    messages_server.reply(message(calls, stop_reason="tool_use"))

    events, exc = stream_fails(model_for(messages_server))

    assert exc.kind == "invalid_response"
    assert exc.message == "two tool_use blocks with the id 'call_0' in one message"
    assert stops(events) == [BlockStop(0, ToolUseBlock("call_0", "Read", {"file_path": "a.txt"}))]


def _with_block(start: dict) -> StreamReply:
    """A message whose first block starts as `start` (a compatible server's)."""
    events = list(message_events([{"type": "text", "text": "x"}]))
    events[1] = Sse(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": start},
    )
    return StreamReply(tuple(e for e in events if e.event != "content_block_delta"))


@pytest.mark.parametrize(
    ("start", "problem"),
    [
        ({"type": "tool_use", "name": "Read", "input": {}}, "tool_use block 0 has no id"),
        (
            {"type": "tool_use", "id": None, "name": "Read", "input": {}},
            "tool_use block 0 has no id",
        ),
        ({"type": "tool_use", "id": 5, "name": "Read", "input": {}}, "tool_use block 0 has no id"),
        ({"type": "tool_use", "id": "t1", "input": {}}, "tool_use block 0 has no name"),
        ({"type": "redacted_thinking"}, "redacted_thinking block 0 has no data"),
        ({"type": "text", "text": 7}, "text block 0 has no text"),
    ],
)
def test_a_block_without_a_field_it_needs_is_an_unreadable_response(
    start: dict, problem: str, messages_server: MessagesServer
) -> None:
    """The SDK does not check a stream's fields: a call with no id or name could not be
    answered (no name was a traceback), and one recorded as null made the log unreadable."""
    messages_server.reply(_with_block(start))

    events, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.message) == ("invalid_response", problem)
    assert not stops(events)


def test_fields_a_compatible_server_leaves_out_are_empty(messages_server: MessagesServer) -> None:
    """No message id or model, no text in a block's start, a null stop reason's type: each
    is what the API would send for nothing, so the stream can be recorded and replayed."""
    events = list(message_events([{"type": "thinking", "thinking": "hm"}]))
    start = dict(events[0].data)
    start["message"] = {k: v for k, v in start["message"].items() if k not in ("id", "model")}
    events[0] = Sse("message_start", start)
    events[1] = Sse(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
    )
    messages_server.reply(StreamReply(tuple(events)))

    got, exc = collect(model_for(messages_server))

    assert exc is None
    assert got[0] == MessageStart("", "", Usage(10, 1, 0, 0))
    assert got[1] == BlockStart(0, ThinkingBlock("", ""))
    assert stops(got) == [BlockStop(0, ThinkingBlock("hm", ""))]


@pytest.mark.parametrize("cumulative", [True, False])
def test_usage_from_message_start_and_delta(
    messages_server: MessagesServer, cumulative: bool
) -> None:
    usage = {
        "input_tokens": 1200,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 4000,
        "output_tokens": 77,
    }
    messages_server.reply(text("ok", usage=usage, cumulative_delta_usage=cumulative))

    assert usages(messages_server) == (Usage(1200, 1, 300, 4000), Usage(1200, 77, 300, 4000))


def usages(server: MessagesServer) -> tuple[Usage, Usage]:
    """The usage of the reply's `message_start` and of its `message_delta`."""
    events, exc = collect(model_for(server))
    assert exc is None
    start = next(e for e in events if isinstance(e, MessageStart))
    delta = next(e for e in events if isinstance(e, MessageDelta))
    return start.usage, delta.usage


def test_a_negative_token_count_is_not_taken(messages_server: MessagesServer) -> None:
    """A proxy's -1 for a count it does not know: taken, it made a negative cost and a
    log no replay could read (counts are 0 or more)."""
    usage = {"input_tokens": 500, "cache_read_input_tokens": -1, "output_tokens": -1}
    messages_server.reply(text("ok", usage=usage))

    assert usages(messages_server) == (Usage(500, 1, 0, 0), Usage(500, 1, 0, 0))


def test_blocks_a_compatible_server_never_stops_are_stopped_with_the_message(
    messages_server: MessagesServer,
) -> None:
    """Some compatible servers leave out `content_block_stop`; the SDK's own message
    builder does without it. The blocks were lost: the answer came out empty."""
    content = [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}},
    ]
    events = message_events(content, stop_reason="tool_use")
    messages_server.reply(StreamReply(tuple(e for e in events if e.event != "content_block_stop")))

    got, exc = collect(model_for(messages_server))

    assert exc is None
    assert stops(got) == [
        BlockStop(0, TextBlock("Reading.")),
        BlockStop(1, ToolUseBlock("toolu_1", "Read", {"file_path": "a"})),
    ]
    assert isinstance(got[-1], MessageStop)


def test_request_body_shape(messages_server: MessagesServer) -> None:
    messages_server.reply(text("ok"))

    _, exc = collect(model_for(messages_server))

    assert exc is None
    (body,) = messages_server.bodies()
    assert body["model"] == "claude-test-1"
    assert body["max_tokens"] == CAPPED_DEFAULT_MAX_TOKENS
    assert body["stream"] is True
    assert body["system"] == [
        {"type": "text", "text": "You are a coding agent."},
        {"type": "text", "text": "cwd: /work", "cache_control": {"type": "ephemeral"}},
    ]
    expected = [message_to_api(m) for m in HISTORY]
    expected[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    assert body["messages"] == expected
    assert body["messages"][-1]["content"][-1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": "a.py\nb.py",
        "cache_control": {"type": "ephemeral"},
    }
    assert body["tools"] == [
        {"name": "Bash", "description": BASH.description, "input_schema": BASH.input_schema},
        {
            "name": "Read",
            "description": READ.description,
            "input_schema": READ.input_schema,
            "cache_control": {"type": "ephemeral"},
        },
    ]
    headers = {k.lower(): v for k, v in messages_server.requests[0].headers.items()}
    sent_key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent_key == "test-key"
    assert "anthropic-version" in headers


def test_request_without_system_or_tools_omits_them() -> None:
    bare = ModelRequest("m", (), Transcript.of([user("hi")]), (), 100)
    body = request_body(bare)
    assert set(body) == {"model", "max_tokens", "messages"}


def test_an_empty_answer_is_sent_back_as_the_api_takes_it() -> None:
    """A model may answer with no content or with an empty text block; the API refuses
    both in a request ("all messages must have non-empty content except for the optional
    final assistant message", "text content blocks must be non-empty")."""
    history = [
        user("hi"),
        Message("assistant", ()),
        user("go on"),
        Message("assistant", (TextBlock(""), ToolUseBlock("toolu_1", "Bash", {"command": "ls"}))),
        Message("user", (ToolResultBlock("toolu_1", "a.py"),)),
        Message("assistant", (TextBlock(" \n"),)),
        user("and?"),
    ]
    sent = request_body(ModelRequest("m", (), Transcript.of(history), (), 100))["messages"]
    assert [m["role"] for m in sent] == [m.role for m in history]
    assert sent[1]["content"] == [{"type": "text", "text": "(no content)"}]
    assert sent[3]["content"] == [message_to_api(history[3])["content"][1]]
    assert sent[5]["content"] == [{"type": "text", "text": "(no content)"}]
    assert sent[6]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent[:1] == [message_to_api(history[0])]


def test_surrogates_in_the_history_are_sent_as_utf_8() -> None:
    """A compatible server may split an emoji's JSON escape (`\\ud83d\\ude00`) across two
    deltas, or send half of one: the history then holds surrogates, which are no UTF-8,
    and every later request could not be made, nor any resume of the session."""
    history = [
        user("hi"),
        Message(
            "assistant",
            (
                TextBlock("smile \ud83d\ude00, half \ud800."),
                ToolUseBlock("toolu_1", "Bash", {"command": "echo \udc00"}),
            ),
        ),
        Message("user", (ToolResultBlock("toolu_1", "ok"),)),
    ]
    body = request_body(ModelRequest("m", ("sys \ud83d",), Transcript.of(history), (), 100))

    json.dumps(body, ensure_ascii=False).encode()
    assistant = body["messages"][1]["content"]
    assert assistant[0]["text"] == "smile \U0001f600, half \ufffd."
    assert assistant[1]["input"] == {"command": "echo \ufffd"}
    assert body["system"][0]["text"] == "sys \ufffd"
    assert history[1].content[0] == TextBlock("smile \ud83d\ude00, half \ud800.")


def test_cache_marker_skips_thinking_blocks() -> None:
    last = Message("assistant", (TextBlock("Let me think."), ThinkingBlock("hmm", "sig")))
    body = request_body(ModelRequest("m", (), Transcript.of([user("hi"), last]), (), 100))
    content = body["messages"][-1]["content"]
    assert content[0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in content[1]
    assert "cache_control" not in body["messages"][0]["content"][0]


def test_consumer_may_stop_early(messages_server: MessagesServer) -> None:
    messages_server.reply(text("a long answer that the consumer abandons"))
    model = model_for(messages_server)

    async def first_delta() -> StreamEvent:
        async with aclosing(model.stream(REQUEST)) as events:
            async for event in events:
                if isinstance(event, BlockDelta):
                    break
        await model.aclose()
        return event

    assert isinstance(asyncio.run(first_delta()), BlockDelta)


# --- invalid tool input --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"command": "ls" "-la"}', "Bash was called with input that could not be parsed as JSON"),
        ("[1, 2]", "invalid JSON in tool input: expected a JSON object, got list"),
    ],
)
def test_invalid_tool_json_is_reported_on_the_block(
    messages_server: MessagesServer, raw: str, problem: str
) -> None:
    messages_server.reply(
        message(
            [{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input_json": raw}],
            stop_reason="tool_use",
        )
    )

    events, exc = collect(model_for(messages_server))

    assert exc is None, "a bad tool input is the tool's problem, not the stream's"
    (stop,) = stops(events)
    assert stop.block == ToolUseBlock("toolu_x", "Bash", {})
    assert stop.error is not None
    assert problem in stop.error
    assert raw in stop.error
    assert isinstance(events[-1], MessageStop)


# --- errors -----------------------------------------------------------------------


def test_prompt_too_long(messages_server: MessagesServer) -> None:
    messages_server.reply(
        error(400, "invalid_request_error", "prompt is too long: 219898 tokens > 200000 maximum")
    )

    events, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.status) == ("prompt_too_long", 400)
    assert "219898 tokens > 200000" in exc.message
    assert events == []
    assert len(messages_server.bodies()) == 1


OVERFLOW = (
    "input length and `max_tokens` exceed context limit: {} + {} > 200000, "
    "decrease input length or `max_tokens` and try again"
)


def test_a_request_whose_max_tokens_overflow_the_window_is_sent_again_fitted(
    messages_server: MessagesServer,
) -> None:
    """As Claude Code's retry does: the output limit is lowered to what the window has
    left, less 1,000 tokens, and the request goes out once more."""
    messages_server.reply(
        error(400, "invalid_request_error", OVERFLOW.format(150_000, 64_000)), text("Fits.")
    )
    request = attrs.evolve(REQUEST, max_tokens=64_000)

    events, exc = collect(model_for(messages_server), request)

    assert exc is None
    assert [b["max_tokens"] for b in messages_server.bodies()] == [64_000, 49_000]
    assert [s.block for s in stops(events)] == [TextBlock("Fits.")]
    (retry,) = [e for e in events if isinstance(e, ModelRetry)]
    assert retry.status == 400
    assert retry.text == (
        "the API answered 400 (input and max_tokens 64000 overflow the context window; "
        "sent again asking for 49000); retry 1 in 0 s"
    )


def test_an_overflow_that_leaves_too_little_room_is_an_api_error(
    messages_server: MessagesServer,
) -> None:
    """Under 3,000 tokens left for the answer (Claude Code's floor): not sent again."""
    messages_server.reply(error(400, "invalid_request_error", OVERFLOW.format(197_500, 8_000)))

    _, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.status) == ("api", 400)
    assert "exceed context limit" in exc.message
    assert len(messages_server.bodies()) == 1


@pytest.mark.parametrize(
    "text_",
    [
        "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: "
        "7340032 bytes > 5242880 bytes",
        "Could not process image",
        "messages.0.content.0.image.source.base64.media_type: Input should be "
        "'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        "The image was specified using the image/jpeg media type, but the image appears "
        "to be a image/png image",
        "At least one of the image dimensions exceed max allowed size for many-image "
        "requests: 2000 pixels",
    ],
)
def test_media_errors(messages_server: MessagesServer, text_: str) -> None:
    messages_server.reply(error(400, "invalid_request_error", text_))

    _, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.status) == ("media", 400)
    assert text_ in exc.message


def overloaded_529(**headers: str) -> JsonReply:
    return error(529, "overloaded_error", "Overloaded", headers=headers or {"retry-after": FAST})


def test_overloaded_529_after_retries(messages_server: MessagesServer) -> None:
    messages_server.reply(overloaded_529(), overloaded_529(), overloaded_529())

    _, exc = stream_fails(model_for(messages_server, max_retries=2))

    assert (exc.kind, exc.status) == ("overloaded", 529)
    assert "Overloaded" in exc.message and "req_test_0001" in exc.message
    assert len(messages_server.bodies()) == 3
    assert retries(_) == [
        ModelRetry(1, 529, "overloaded_error: Overloaded", 0.01, 2),
        ModelRetry(2, 529, "overloaded_error: Overloaded", 0.01, 2),
    ], "the third failure is not retried, so it is not told as a retry"


def test_a_request_is_retried_ten_times_by_default_as_in_claude_code(
    messages_server: MessagesServer,
) -> None:
    """Claude Code's count (`CLAUDE_CODE_MAX_RETRIES`, 10), the SDK's own retries off:
    eleven requests, and no header saying the SDK retried."""
    messages_server.reply(*[overloaded_529() for _ in range(12)])
    model = AnthropicModel(api_key="k", base_url=messages_server.url, sleep=Waits())

    events, exc = stream_fails(model)

    assert (exc.kind, exc.status) == ("overloaded", 529)
    assert [r.attempt for r in retries(events)] == list(range(1, 11))
    assert {r.max_retries for r in retries(events)} == {10}
    assert len(messages_server.bodies()) == 11
    assert {r.headers.get("x-stainless-retry-count") for r in messages_server.requests} == {"0"}


def test_without_retry_after_the_wait_is_claude_codes_backoff(
    messages_server: MessagesServer,
) -> None:
    """0.5 s doubling, capped at 32 s, each wait told before it is waited; a
    `retry-after: 0` asks for no wait, so it backs off too."""
    messages_server.reply(*[overloaded_529(**{"retry-after": "0"}) for _ in range(9)])
    model = model_for(messages_server, max_retries=8)

    events, _ = stream_fails(model)

    expected = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 32.0]
    assert waits(model) == [r.delay_s for r in retries(events)] == expected


def test_backoff_adds_up_to_a_quarter_of_jitter() -> None:
    assert backoff(1, 0.0) == 0.5 and backoff(1, 0.999) == pytest.approx(0.625, abs=1e-3)
    assert backoff(3, 0.5) == 2.25
    assert backoff(20, 0.0) == 32.0


@pytest.mark.parametrize(
    ("value", "count"), [(None, 10), ("", 10), ("0", 0), ("3", 3), (" 25 ", 25)]
)
def test_max_retries_comes_from_claude_codes_variable(value: str | None, count: int) -> None:
    env = {} if value is None else {"CLAUDE_CODE_MAX_RETRIES": value}
    assert max_retries(env) == count


@pytest.mark.parametrize("value", ["-1", "three", "2.5", "9" * 40])
def test_a_max_retries_that_is_not_a_count_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="CLAUDE_CODE_MAX_RETRIES must be a whole number"):
        max_retries({"CLAUDE_CODE_MAX_RETRIES": value})


FALLBACK = attrs.evolve(REQUEST, fallback_model="claude-haiku-4-5")


def test_with_a_fallback_model_the_third_529_in_a_row_is_given_up(
    messages_server: MessagesServer,
) -> None:
    """As Claude Code hands the request to its fallback model; a 429 between breaks
    the row."""
    limited = error(429, "rate_limit_error", "slow down", headers={"retry-after": FAST})
    replies = [overloaded_529(), limited, overloaded_529(), overloaded_529(), overloaded_529()]
    messages_server.reply(*replies, text("never"))

    events, exc = collect(model_for(messages_server, max_retries=10), FALLBACK)

    assert exc is not None and (exc.kind, exc.status) == ("overloaded", 529)
    assert len(messages_server.bodies()) == 5 and len(retries(events)) == 4


def test_with_a_fallback_model_a_5xx_is_given_up_at_once(
    messages_server: MessagesServer,
) -> None:
    broken = error(500, "api_error", "Internal server error", headers={"retry-after": FAST})
    messages_server.reply(broken, text("never"))

    events, exc = collect(model_for(messages_server, max_retries=10), FALLBACK)

    assert exc is not None and (exc.kind, exc.status) == ("overloaded", 500)
    assert retries(events) == [] and len(messages_server.bodies()) == 1


def test_without_a_fallback_model_529s_are_retried_past_three(
    messages_server: MessagesServer,
) -> None:
    messages_server.reply(*[overloaded_529() for _ in range(4)], text("ok"))

    events, exc = collect(model_for(messages_server, max_retries=10))

    assert exc is None and len(retries(events)) == 4


def test_overloaded_529_then_success_is_retried(messages_server: MessagesServer) -> None:
    messages_server.reply(overloaded_529(), text("ok"))

    events, exc = collect(model_for(messages_server))

    assert exc is None and isinstance(events[-1], MessageStop)


@pytest.mark.parametrize(
    ("status", "error_type"), [(500, "api_error"), (502, "api_error"), (503, "api_error")]
)
def test_repeated_5xx_is_overloaded(
    messages_server: MessagesServer, status: int, error_type: str
) -> None:
    failure = error(status, error_type, "Internal server error", headers={"retry-after": FAST})
    messages_server.reply(failure, failure, failure)

    _, exc = stream_fails(model_for(messages_server, max_retries=2))

    assert (exc.kind, exc.status) == ("overloaded", status)
    assert "after retries" in exc.message
    assert len(messages_server.bodies()) == 3


def test_429_then_success_honours_retry_after(messages_server: MessagesServer) -> None:
    messages_server.reply(
        error(429, "rate_limit_error", "Rate limited", headers={"retry-after": "2"}),
        text("ok after waiting"),
    )
    model = model_for(messages_server, max_retries=2)

    events, exc = collect(model)

    assert exc is None
    assert stops(events) == [BlockStop(0, TextBlock("ok after waiting"))]
    assert waits(model) == [2.0]
    assert events[0] == ModelRetry(1, 429, "rate_limit_error: Rate limited", 2.0, 2)


def test_a_retry_after_past_a_minute_is_not_waited_for(messages_server: MessagesServer) -> None:
    """Claude Code gives up at once on a `retry-after` over 60 s (measured: 61 s and
    100 s), rather than hang the run."""
    messages_server.reply(
        error(429, "rate_limit_error", "come back later", headers={"retry-after": "61"}),
        text("never"),
    )

    events, exc = collect(model_for(messages_server, max_retries=2))

    assert exc is not None and exc.kind == "rate_limit" and retries(events) == []


def retries(events: list[StreamEvent]) -> list[ModelRetry]:
    return [e for e in events if isinstance(e, ModelRetry)]


def test_a_response_the_server_says_not_to_retry_is_not_told_as_a_retry(
    messages_server: MessagesServer,
) -> None:
    headers = {"x-should-retry": "false"}
    messages_server.reply(error(529, "overloaded_error", "Overloaded", headers=headers))

    events, exc = stream_fails(model_for(messages_server, max_retries=2))

    assert exc.kind == "overloaded" and retries(events) == []
    assert len(messages_server.bodies()) == 1


def test_a_retry_waits_while_told_and_the_wait_is_cancelled_with_the_stream(
    messages_server: MessagesServer,
) -> None:
    """The consumer stops after the first retry notice: the wait for the server's
    `retry-after` goes with it, so nothing is left running."""
    messages_server.reply(
        error(429, "rate_limit_error", "slow down", headers={"retry-after": "30"}), text("late")
    )
    model = model_for(messages_server, max_retries=2, sleep=asyncio.sleep)

    async def first_then_stop() -> tuple[StreamEvent, int]:
        async with aclosing(model.stream(REQUEST)) as stream:
            first = await anext(stream)
            second = asyncio.ensure_future(anext(stream))
            await asyncio.sleep(0.2)
            assert not second.done(), "the retry went out without waiting"
            second.cancel()
            await asyncio.gather(second, return_exceptions=True)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        await model.aclose()
        return first, len(left)

    started = time.monotonic()
    first, left = asyncio.run(first_then_stop())
    assert first == ModelRetry(1, 429, "rate_limit_error: slow down", 30.0, 2)
    assert left == 0 and time.monotonic() - started < 10
    assert len(messages_server.bodies()) == 1


def test_a_retried_failure_that_is_not_the_api_s_json_is_told_readably(
    messages_server: MessagesServer,
) -> None:
    """A proxy's error page: markup dropped."""
    page = "<html><body><h1>Upstream overloaded</h1><p>Try again later.</p></body></html>"
    messages_server.reply(PageReply(503, page), text("ok"))

    events, exc = collect(model_for(messages_server, max_retries=1))

    assert exc is None
    assert retries(events) == [ModelRetry(1, 503, "Upstream overloaded Try again later.", 0.5, 1)]


def test_a_retry_after_a_timeout_is_told(messages_server: MessagesServer) -> None:
    """No response came: the retry has no status, and says what happened."""
    messages_server.reply(text("too slow", stall_before=1.0), text("in time"))

    events, exc = collect(model_for(messages_server, max_retries=2, timeout=0.3))

    assert exc is None
    said = "the API did not answer in time (request timed out)"
    assert retries(events) == [ModelRetry(1, 0, said, 0.5, 2)]
    assert events[0].text == f"{said}; retry 1 going out"
    assert stops(events) == [BlockStop(0, TextBlock("in time"))]


@pytest.mark.parametrize(
    ("headers", "delay"),
    [
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),
        ({"retry-after": "0"}, None),
        ({"retry-after-ms": "0", "retry-after": "9"}, None),
        ({}, None),
    ],
)
def test_the_wait_a_failed_response_asks_for(headers: dict[str, str], delay: float | None) -> None:
    assert asked_delay(headers) == delay


def test_a_retry_after_date_to_come_is_the_wait_until_then() -> None:
    """`Retry-After` may be an HTTP date, which the SDK waits for: the retry was told as
    going out "after a backoff" while it waited an hour."""
    in_an_hour = email.utils.formatdate(time.time() + 3600, usegmt=True)

    assert asked_delay({"retry-after": in_an_hour}) == pytest.approx(3600, abs=60)


@pytest.mark.parametrize(
    ("status", "headers", "retried"),
    [
        (429, {}, True),
        (529, {}, True),
        (500, {}, True),
        (408, {}, True),
        (409, {}, True),
        (400, {}, False),
        (401, {}, False),
        (400, {"x-should-retry": "true"}, True),
        (503, {"x-should-retry": "false"}, False),
    ],
)
def test_which_failures_the_sdk_retries(
    status: int, headers: dict[str, str], retried: bool
) -> None:
    assert will_retry(status, headers) is retried


def test_429_exhausted_is_rate_limit(messages_server: MessagesServer) -> None:
    limited = error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization",
        headers={"retry-after": FAST},
    )
    messages_server.reply(limited, limited, limited)

    _, exc = stream_fails(model_for(messages_server, max_retries=2))

    assert (exc.kind, exc.status) == ("rate_limit", 429)
    assert "exceed the rate limit" in exc.message
    assert len(messages_server.bodies()) == 3


def test_401_says_the_key_was_rejected(messages_server: MessagesServer) -> None:
    messages_server.reply(error(401, "authentication_error", "invalid x-api-key"))

    _, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.status) == ("api", 401)
    assert "API key was rejected" in exc.message and "invalid x-api-key" in exc.message
    assert len(messages_server.bodies()) == 1


@pytest.mark.parametrize(
    ("status", "error_type", "text_"),
    [
        (400, "invalid_request_error", "max_tokens: 999999 > 64000, the maximum allowed"),
        (403, "permission_error", "Your API key does not have permission"),
        (404, "not_found_error", "model: claude-does-not-exist"),
    ],
)
def test_other_4xx_are_api_errors(
    messages_server: MessagesServer, status: int, error_type: str, text_: str
) -> None:
    messages_server.reply(error(status, error_type, text_))

    _, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.status) == ("api", status)
    assert str(status) in exc.message and text_ in exc.message


@pytest.mark.parametrize(
    ("error_type", "kind"), [("overloaded_error", "overloaded"), ("api_error", "server")]
)
def test_error_event_mid_stream(
    messages_server: MessagesServer, error_type: str, kind: str
) -> None:
    before = message_events([{"type": "text", "text": "partial answer"}])[:4]
    messages_server.reply(stream_error(before, error_type, "Something went wrong"))

    events, exc = stream_fails(model_for(messages_server, max_retries=0))

    assert exc.kind == kind
    assert "Something went wrong" in exc.message
    assert [type(e) for e in events] == [MessageStart, BlockStart, BlockDelta]
    assert len(messages_server.bodies()) == 1


def test_dropped_connection_mid_stream(messages_server: MessagesServer) -> None:
    messages_server.reply(text("this answer is cut off", cut_after=4))

    events, exc = stream_fails(model_for(messages_server, max_retries=0))

    assert exc.kind == "connection"
    assert [type(e) for e in events] == [MessageStart, BlockStart, BlockDelta]


@pytest.mark.parametrize(
    "broken",
    [
        text("cut off", cut_after=4),
        text("ended early", end_after=4),
        stream_error(message_events([{"type": "text", "text": "x"}])[:4], "overloaded_error"),
        stream_error(message_events([{"type": "text", "text": "x"}])[:4], "api_error"),
    ],
    ids=["dropped", "ended", "overloaded_event", "server_event"],
)
def test_a_stream_broken_before_any_block_completed_is_sent_again(
    messages_server: MessagesServer, broken: StreamReply
) -> None:
    """As Claude Code 2.1.x does: the answer was lost in transit, so the same request
    goes again (told as a retry) and its answer is the message."""
    messages_server.reply(broken, text("the whole answer"))

    events, exc = collect(model_for(messages_server))

    assert exc is None
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert [r.attempt for r in retries] == [1]
    assert [s.block for s in stops(events)] == [TextBlock("the whole answer")]
    bodies = messages_server.bodies()
    assert len(bodies) == 2 and bodies[0] == bodies[1]


def test_a_stream_broken_after_a_block_completed_is_not_sent_again(
    messages_server: MessagesServer,
) -> None:
    """A complete block may be a tool call already started: the failure is the loop's."""
    events = message_events([{"type": "text", "text": "done"}, {"type": "text", "text": "more"}])
    first_stop = next(i for i, e in enumerate(events) if e.event == "content_block_stop")
    messages_server.reply(StreamReply(events, cut_after=first_stop + 2), text("unused"))

    got, exc = stream_fails(model_for(messages_server))

    assert exc.kind == "connection"
    assert [s.block for s in stops(got)] == [TextBlock("done")]
    assert len(messages_server.bodies()) == 1


def test_nothing_listening_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = AnthropicModel(api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)

    _, exc = stream_fails(model)

    assert exc.kind == "connection"


@pytest.mark.parametrize(
    ("given", "connect", "read"), [({}, 5.0, 600.0), ({"timeout": 2.0}, 2.0, 2.0)]
)
def test_connecting_gives_up_as_soon_as_the_sdk_s_does(
    given: dict[str, float], connect: float, read: float
) -> None:
    """The SDK waits 5 s for a connection and 10 minutes for an answer. A host that drops
    the connection attempt (a firewall, a wrong address) must not hold each try for the
    whole read timeout: 30 minutes over the SDK's retries."""

    async def timeouts() -> list[object]:
        model = AnthropicModel(api_key="k", base_url="http://127.0.0.1:9", **given)
        client = model.client()
        try:
            return [client.timeout, client._client.timeout]
        finally:
            await model.aclose()

    for timeout in asyncio.run(timeouts()):
        assert isinstance(timeout, anthropic.Timeout)
        assert (timeout.connect, timeout.read, timeout.write) == (connect, read, read)


@pytest.mark.parametrize(
    ("env", "used"),
    [
        ("", "https://api.anthropic.com"),
        (None, "https://api.anthropic.com"),
        ("http://127.0.0.1:4000/proxy", "http://127.0.0.1:4000/proxy"),
    ],
)
def test_a_blank_anthropic_base_url_means_the_default_api(
    env: str | None, used: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ANTHROPIC_BASE_URL=` (a compose file's unset variable) is unset, as in Claude Code:
    the SDK took it as the URL and every request failed as a lost connection."""
    if env is None:
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", env)

    async def base_url() -> str:
        model = AnthropicModel(api_key="k")
        try:
            return str(model.client().base_url).rstrip("/")
        finally:
            await model.aclose()

    assert asyncio.run(base_url()) == used


def test_stall_before_headers_times_out(messages_server: MessagesServer) -> None:
    messages_server.reply(text("too late", stall_before=2.0))

    _, exc = stream_fails(model_for(messages_server, max_retries=0, timeout=0.3))

    assert exc.kind == "connection" and "timed out" in exc.message


def test_stall_mid_stream_times_out(messages_server: MessagesServer) -> None:
    messages_server.reply(text("slow answer", stall_at=4, stall_for=2.0))

    events, exc = stream_fails(model_for(messages_server, max_retries=0, timeout=0.3))

    assert exc.kind == "connection" and "timed out" in exc.message
    assert [type(e) for e in events] == [MessageStart, BlockStart, BlockDelta]


def test_a_stream_that_only_pings_is_given_up_by_the_watchdog(
    messages_server: MessagesServer,
) -> None:
    """Pings keep the bytes flowing, so the read timeout never fires; the SDK drops
    them, so the stream would wait for ever. Claude Code's watchdog gives it up."""
    messages_server.reply(text("slow answer", stall_at=4, stall_for=3.0, ping_every=0.1))

    events, exc = stream_fails(model_for(messages_server, max_retries=0, stream_idle_timeout=0.5))

    assert exc.kind == "connection"
    assert exc.message.startswith("Stream idle timeout - partial response received")
    assert "no event for 0.5 s" in exc.message
    assert [type(e) for e in events] == [MessageStart, BlockStart, BlockDelta]


def test_the_watchdog_waits_for_the_first_event_too(messages_server: MessagesServer) -> None:
    messages_server.reply(text("slow answer", stall_at=0, stall_for=3.0, ping_every=0.1))

    events, exc = stream_fails(model_for(messages_server, max_retries=0, stream_idle_timeout=0.5))

    assert exc.message.startswith("Stream idle timeout - no chunks received")
    assert events == []


@pytest.mark.parametrize(("idle", "stall"), [(2.0, 0.3), (None, 1.0)])
def test_a_pause_within_the_limit_or_with_no_watchdog_is_waited_out(
    messages_server: MessagesServer, idle: float | None, stall: float
) -> None:
    messages_server.reply(text("slow answer", stall_at=4, stall_for=stall, ping_every=0.1))

    events, exc = collect(model_for(messages_server, max_retries=0, stream_idle_timeout=idle))

    assert exc is None
    assert stops(events) == [BlockStop(0, TextBlock("slow answer"))]


@pytest.mark.parametrize(
    ("env", "limit"),
    [
        ({}, STREAM_IDLE_TIMEOUT_S),
        ({"CLAUDE_STREAM_IDLE_TIMEOUT_MS": "120000"}, 120.0),
        ({"CLAUDE_STREAM_IDLE_TIMEOUT_MS": " 5000 "}, 15.0),
        ({"CLAUDE_STREAM_IDLE_TIMEOUT_MS": ""}, STREAM_IDLE_TIMEOUT_S),
        ({"CLAUDE_ENABLE_STREAM_WATCHDOG": "0", "CLAUDE_STREAM_IDLE_TIMEOUT_MS": "60000"}, None),
        ({"CLAUDE_ENABLE_STREAM_WATCHDOG": "1"}, STREAM_IDLE_TIMEOUT_S),
    ],
)
def test_the_watchdog_s_limit_comes_from_claude_code_s_variables(
    env: dict[str, str], limit: float | None
) -> None:
    assert stream_idle_timeout(env) == limit


@pytest.mark.parametrize("value", ["90s", "-1", "1.5e3", "²", "٣٠٠٠٠"])
def test_a_watchdog_limit_that_is_not_milliseconds_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="CLAUDE_STREAM_IDLE_TIMEOUT_MS must be a whole number"):
        stream_idle_timeout({"CLAUDE_STREAM_IDLE_TIMEOUT_MS": value})


@pytest.mark.parametrize("sent", [4, 7])
def test_stream_without_message_stop(messages_server: MessagesServer, sent: int) -> None:
    messages_server.reply(text("an answer", end_after=sent))

    events, exc = stream_fails(model_for(messages_server, max_retries=0))

    assert exc.kind == "incomplete_stream"
    assert not any(isinstance(e, MessageStop) for e in events)
    assert len(events) == sent - 1


def test_a_body_that_ends_after_message_delta_is_whole(messages_server: MessagesServer) -> None:
    """Every block stopped and the stop reason came: only `message_stop` is missing, and
    Claude Code takes the message as it is."""
    reply = text("an answer")
    messages_server.reply(text("an answer", end_after=len(reply.events) - 1))

    events, exc = collect(model_for(messages_server, max_retries=0))

    assert exc is None
    assert isinstance(events[-1], MessageStop)
    assert [s.block for s in stops(events)] == [TextBlock("an answer")]


# --- count_tokens ----------------------------------------------------------------------


def count(model: AnthropicModel) -> int | None:
    async def run() -> int | None:
        try:
            return await model.count_tokens(REQUEST)
        finally:
            await model.aclose()

    return asyncio.run(run())


def test_count_tokens(messages_server: MessagesServer) -> None:
    messages_server.reply_count_tokens(token_count(1234))

    assert count(model_for(messages_server)) == 1234
    (body,) = messages_server.bodies(COUNT_TOKENS)
    assert body["model"] == "claude-test-1"
    assert "max_tokens" not in body
    assert len(body["messages"]) == len(HISTORY)
    assert [t["name"] for t in body["tools"]] == ["Bash", "Read"]


def test_count_tokens_404_is_none(messages_server: MessagesServer) -> None:
    messages_server.reply_count_tokens(error(404, "not_found_error", "Not Found"))

    assert count(model_for(messages_server)) is None
    assert len(messages_server.bodies(COUNT_TOKENS)) == 1


def test_count_tokens_server_error_is_none_without_retrying(
    messages_server: MessagesServer,
) -> None:
    messages_server.reply_count_tokens(error(500, "api_error", "boom"), token_count(5))

    assert count(model_for(messages_server)) is None
    assert len(messages_server.bodies(COUNT_TOKENS)) == 1


@pytest.mark.parametrize("answer", [True, -1, 12.5, "1234", None])
def test_a_count_that_is_not_a_count_of_tokens_is_none(
    messages_server: MessagesServer, answer: object
) -> None:
    """What a compatible server answers is the run's log: a count the log cannot hold
    (`true`, -1) would make the session refuse to replay."""
    messages_server.reply_count_tokens(JsonReply(200, {"input_tokens": answer}))

    assert count(model_for(messages_server)) is None


BAD_GATEWAY = (
    """<!DOCTYPE html>
<html>
  <head><title>502 Bad Gateway</title></head>
  <body>
    <center><h1>502 Bad Gateway</h1></center>
    <hr><center>nginx/1.27.0 &amp; friends</center>
"""
    + "    <!-- padding -->\n" * 200
    + "</body></html>\n"
)


def test_an_html_error_page_is_told_in_one_short_line(messages_server: MessagesServer) -> None:
    """A proxy in front of the API, or a base URL that is not the API, answers with a
    web page: the error says what the page says, without its markup."""
    page = PageReply(502, BAD_GATEWAY)
    messages_server.reply(page, page, page)

    _, exc = stream_fails(model_for(messages_server, max_retries=2))

    assert (exc.kind, exc.status) == ("overloaded", 502)
    assert "502 Bad Gateway" in exc.message and "nginx/1.27.0 & friends" in exc.message
    assert "<" not in exc.message and "\n" not in exc.message
    assert len(exc.message) < 400


def test_a_plain_text_error_body_keeps_its_words(messages_server: MessagesServer) -> None:
    messages_server.reply(PageReply(404, "404 page not found\n", "text/plain"))

    _, exc = stream_fails(model_for(messages_server))

    assert (exc.kind, exc.status) == ("api", 404)
    assert exc.message.startswith("API error 404: 404 page not found")


@pytest.mark.parametrize(
    ("reply", "content_type"),
    [
        (PageReply(200, "<html><body>Welcome to nginx!</body></html>"), "text/html"),
        (JsonReply(200, message([{"type": "text", "text": "hi"}]).message), "application/json"),
    ],
    ids=["a web page", "a message that does not stream"],
)
def test_a_200_that_is_not_an_event_stream_says_what_came(
    messages_server: MessagesServer, reply: JsonReply | PageReply, content_type: str
) -> None:
    messages_server.reply(reply)

    events, exc = stream_fails(model_for(messages_server, max_retries=0))

    assert events == []
    assert exc.kind == "invalid_response"
    assert exc.message.startswith(f"the server answered with {content_type}, not an event stream")
    assert messages_server.url in exc.message
