"""A local Messages API server that plays scripted replies over real HTTP.

It speaks the wire format of the Anthropic API (JSON error bodies, SSE streams
sent with chunked transfer encoding) so the real SDK can be tested end to end
on loopback, including the failures a test cannot get from the real service
on demand: overload, rate limits, cut connections, stalls.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"
MAX_STALL_S = 5.0
"""No stall lasts longer than this, whatever a test asks for."""

DEFAULT_MODEL = "claude-test-1"


@dataclass(frozen=True)
class Sse:
    """One server-sent event: `event: <name>` and its JSON `data`."""

    event: str
    data: Mapping[str, Any]

    def encode(self) -> bytes:
        return f"event: {self.event}\ndata: {json.dumps(self.data)}\n\n".encode()


@dataclass(frozen=True)
class StreamReply:
    """A 200 `text/event-stream` response, possibly broken on purpose.

    `cut_after` closes the socket mid-body after that many events (the client
    sees a dropped connection); `end_after` ends the body cleanly after that
    many events (a well-formed response that lacks the rest of the stream).
    `stall_at` events in, the server waits `stall_for` seconds, sending a `ping`
    every `ping_every` seconds meanwhile if that is set (the API's keep-alive,
    which the SDK does not pass on: only the bytes flow). `message` is
    the same message as one JSON body, sent when the request did not ask to
    stream.
    """

    events: tuple[Sse, ...]
    cut_after: int | None = None
    end_after: int | None = None
    stall_before: float = 0.0
    stall_at: int | None = None
    stall_for: float = 0.0
    ping_every: float = 0.0
    message: Mapping[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JsonReply:
    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()
    stall_before: float = 0.0


@dataclass(frozen=True)
class PageReply:
    """A body that is not the API's JSON: what a proxy or a wrong base URL answers."""

    status: int
    text: str
    content_type: str = "text/html; charset=utf-8"


Reply = StreamReply | JsonReply | PageReply


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any


# --- building replies ---------------------------------------------------------


def split(text: str, pieces: int = 3) -> list[str]:
    """`text` in up to `pieces` consecutive non-empty parts, the way deltas arrive."""
    if not text:
        return []
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _block_events(index: int, block: Mapping[str, Any]) -> list[Sse]:
    kind = block["type"]
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": part} for part in split(block["text"])]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in split(block["thinking"])]
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        raw = block.get("input_json")
        if raw is None:
            raw = json.dumps(block.get("input", {}))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *split(raw, 4)]]
    else:
        start, deltas = dict(block), []
    return [
        Sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *(
            Sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            for delta in deltas
        ),
        Sse("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _final_block(block: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in block.items() if k != "input_json"}
    if block["type"] == "tool_use" and "input_json" in block:
        out["input"] = {}
    return out


def message_events(
    content: Sequence[Mapping[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: Mapping[str, int] | None = None,
    cumulative_delta_usage: bool = True,
    model: str = DEFAULT_MODEL,
    message_id: str = "msg_test_01",
) -> tuple[Sse, ...]:
    """The SSE events of one streamed message, in the API's order.

    `content` holds API-shaped blocks. Text and thinking are split into
    several deltas; tool input is sent as JSON in several `input_json_delta`
    pieces after an empty one, as the API does (a tool_use block's
    `input_json`, if given, is sent verbatim instead, valid or not). A ping
    follows the first block start. `message_delta` repeats the whole usage
    when `cumulative_delta_usage`, else carries only `output_tokens`.
    """
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
        **(usage or {}),
    }
    start_usage = {**usage, "output_tokens": 1}
    events = [
        Sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
    ]
    for index, block in enumerate(content):
        block_events = _block_events(index, block)
        events.append(block_events[0])
        if index == 0:
            events.append(Sse("ping", {"type": "ping"}))
        events.extend(block_events[1:])
    delta_usage = usage if cumulative_delta_usage else {"output_tokens": usage["output_tokens"]}
    events.append(
        Sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": delta_usage,
            },
        )
    )
    events.append(Sse("message_stop", {"type": "message_stop"}))
    return tuple(events)


def message(
    content: Sequence[Mapping[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: Mapping[str, int] | None = None,
    cumulative_delta_usage: bool = True,
    model: str = DEFAULT_MODEL,
    message_id: str = "msg_test_01",
    **broken: Any,
) -> StreamReply:
    """A complete message; `broken` takes `StreamReply`'s fault options."""
    events = message_events(
        content,
        stop_reason=stop_reason,
        usage=usage,
        cumulative_delta_usage=cumulative_delta_usage,
        model=model,
        message_id=message_id,
    )
    final = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_final_block(b) for b in content],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(events[-2].data["usage"]),
    }
    return StreamReply(events, message=final, **broken)


def text(reply: str, **kwargs: Any) -> StreamReply:
    return message([{"type": "text", "text": reply}], **kwargs)


def error_body(error_type: str, text: str, request_id: str = "req_test_0001") -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": text},
        "request_id": request_id,
    }


def error(
    status: int,
    error_type: str,
    text: str,
    *,
    headers: Mapping[str, str] | None = None,
    request_id: str = "req_test_0001",
) -> JsonReply:
    """An error response with the API's JSON body and a `request-id` header."""
    return JsonReply(
        status,
        error_body(error_type, text, request_id),
        (("request-id", request_id), *(headers or {}).items()),
    )


def stream_error(
    events: Sequence[Sse], error_type: str = "overloaded_error", text: str = "Overloaded"
) -> StreamReply:
    """A 200 stream that sends `events`, then `event: error`, then ends."""
    body = {"type": "error", "error": {"type": error_type, "message": text}}
    return StreamReply((*events, Sse("error", body)))


def token_count(tokens: int) -> JsonReply:
    return JsonReply(200, {"input_tokens": tokens})


# --- the server ---------------------------------------------------------------


class _Stop(Exception):
    """The client went away; stop writing."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:
            self.close_connection = True

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0]
        owner = self.server.owner
        owner.record(Recorded("POST", self.path, dict(self.headers.items()), body))
        reply = owner.next_reply(path)
        try:
            if reply is None:
                self._json(JsonReply(500, error_body("api_error", f"no scripted reply for {path}")))
            elif isinstance(reply, JsonReply):
                self._json(reply)
            elif isinstance(reply, PageReply):
                self._page(reply)
            elif isinstance(body, dict) and body.get("stream"):
                self._stream(reply)
            elif reply.message is not None:
                self._json(JsonReply(200, reply.message, reply.headers, reply.stall_before))
            else:
                self._json(JsonReply(500, error_body("api_error", "reply can only stream")))
        except (_Stop, OSError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._json(JsonReply(404, error_body("not_found_error", f"Not found: {self.path}")))

    def _stall(self, seconds: float) -> None:
        if seconds > 0:
            self.server.owner.stopping.wait(min(seconds, MAX_STALL_S))
        if self.server.owner.stopping.is_set():
            raise _Stop

    def _stall_pinging(self, seconds: float, every: float) -> None:
        if every <= 0:
            self._stall(seconds)
            return
        left = min(seconds, MAX_STALL_S)
        while left > 0:
            self._stall(min(every, left))
            left -= every
            self._chunk(Sse("ping", {"type": "ping"}).encode())

    def _json(self, reply: JsonReply) -> None:
        self._stall(reply.stall_before)
        data = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _page(self, reply: PageReply) -> None:
        data = reply.text.encode()
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, reply: StreamReply) -> None:
        self._stall(reply.stall_before)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", "req_test_stream")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        for sent, event in enumerate(reply.events):
            if sent == reply.cut_after:
                self._cut()
                return
            if sent == reply.end_after:
                break
            if sent == reply.stall_at:
                self._stall_pinging(reply.stall_for, reply.ping_every)
            self._chunk(event.encode())
        if reply.cut_after is not None and reply.cut_after >= len(reply.events):
            self._cut()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: MessagesServer


@dataclass
class MessagesServer:
    """The server, its reply queues per path, and every request it received.

    Replies are served in order; a request with nothing queued gets a 500
    naming the path, so a test that under-scripts fails loudly.
    """

    requests: list[Recorded] = field(default_factory=list)
    tls: ssl.SSLContext | None = None
    """The server's TLS context: given, it serves `https` (the handshake made as each
    connection is accepted; one that fails reaches no handler, and is recorded nowhere)."""
    stopping: threading.Event = field(default_factory=threading.Event)
    _queues: dict[str, deque[Reply]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: _HTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self.tls is not None else 'http'}://{host}:{port}"

    def reply(self, *replies: Reply, path: str = MESSAGES) -> None:
        with self._lock:
            self._queues.setdefault(path, deque()).extend(replies)

    def reply_count_tokens(self, *replies: Reply) -> None:
        self.reply(*replies, path=COUNT_TOKENS)

    def next_reply(self, path: str) -> Reply | None:
        with self._lock:
            queue = self._queues.get(path)
            return queue.popleft() if queue else None

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def bodies(self, path: str = MESSAGES) -> list[Any]:
        """The JSON bodies received on `path`, oldest first."""
        with self._lock:
            return [r.body for r in self.requests if r.path.split("?", 1)[0] == path]

    def start(self) -> MessagesServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        if self.tls is not None:
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=MAX_STALL_S)

    def __enter__(self) -> MessagesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(name="messages_server")
def messages_server_fixture() -> Iterator[MessagesServer]:
    """A started server, stopped after the test; import this to use it."""
    with MessagesServer() as server:
        yield server
