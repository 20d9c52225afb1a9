"""The test server's wire format, read with a plain HTTP client rather than the SDK."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.support.messages_server import (
    MessagesServer,
    error,
    message,
    messages_server_fixture,  # noqa: F401
    text,
)


def post(server: MessagesServer, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


def test_stream_is_framed_like_the_api(messages_server: MessagesServer) -> None:
    messages_server.reply(text("Hi there"))

    status, headers, raw = post(messages_server, {"stream": True, "model": "m"})

    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    frames = raw.decode().split("\n\n")
    assert frames[-1] == ""
    names = []
    for frame in frames[:-1]:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        name = event_line.removeprefix("event: ")
        assert json.loads(data_line.removeprefix("data: "))["type"] == name
        names.append(name)
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 3,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_non_streaming_request_gets_the_whole_message(messages_server: MessagesServer) -> None:
    messages_server.reply(
        message(
            [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
            stop_reason="tool_use",
        )
    )

    status, _, raw = post(messages_server, {"model": "m"})

    body = json.loads(raw)
    assert status == 200
    assert body["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    ]
    assert body["stop_reason"] == "tool_use"


def test_errors_carry_the_api_body_and_headers(messages_server: MessagesServer) -> None:
    messages_server.reply(
        error(529, "overloaded_error", "Overloaded", headers={"retry-after": "3"})
    )

    status, headers, raw = post(messages_server, {"stream": True})

    assert status == 529
    assert headers["retry-after"] == "3"
    assert headers["request-id"] == "req_test_0001"
    assert json.loads(raw) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_test_0001",
    }


def test_unscripted_request_fails_loudly_and_is_recorded(messages_server: MessagesServer) -> None:
    status, _, raw = post(messages_server, {"model": "m", "max_tokens": 3})

    assert status == 500
    assert "no scripted reply" in json.loads(raw)["error"]["message"]
    assert messages_server.bodies() == [{"model": "m", "max_tokens": 3}]


def test_stalls_are_bounded_and_end_with_the_server() -> None:
    server = MessagesServer().start()
    server.reply(text("never", stall_before=60.0))
    with pytest.raises(OSError):
        request = urllib.request.Request(
            server.url + "/v1/messages", data=b'{"stream": true}', method="POST"
        )
        urllib.request.urlopen(request, timeout=0.2)
    server.stop()
    assert server.stopping.is_set()
