"""The real model: the Anthropic Messages API through the official SDK, streamed.

Importing this module imports the SDK, so only code paths that need a real model
import it (the CLI does so lazily, in a thread as soon as a run knows it needs
one). `lazy_sdk` is installed first: the SDK's type tables, beta API and other
platforms' clients then load only when used (docs/performance.md has the figures).

A failed request (408/409/429/5xx, a lost connection, a stream broken before any
block was complete) is sent again here, not by the SDK, as Claude Code's retry loop
sends it: up to `CLAUDE_CODE_MAX_RETRIES` times (10), after the `retry-after` the
response asks for or a backoff of 0.5 s doubling to 32 s; each retry goes into the
stream as a `ModelRetry`, so the user knows why nothing comes. What is still failing
is turned into a `ModelCallError` whose `kind` the loop reacts to.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import html
import importlib
import json
import os
import random
import re
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import attrs

from fsm_agent.core.codec import message_to_api
from fsm_agent.core.events import (
    BlockDelta,
    BlockStart,
    BlockStop,
    DeltaKind,
    ErrorKind,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelCallError,
    ModelRetry,
    StreamEvent,
)
from fsm_agent.core.jsontext import MAX_DEPTH, deeper_than, no_constant, nonfinite
from fsm_agent.core.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.validation import unparsable_input
from fsm_agent.live import lazy_sdk, tls

lazy_sdk.install()  # before the SDK's first import, or it loads whole

import anthropic  # noqa: E402

EPHEMERAL = {"type": "ephemeral"}
_UNCACHEABLE = ("thinking", "redacted_thinking")
_MEDIA = re.compile(
    r"image exceeds|image too large|image dimensions exceed|could not process image"
    r"|media.type|pdf pages|image_dimensions_too_large",
    re.IGNORECASE,
)
_RAW_JSON_SHOWN = 4_000
DEFAULT_BASE_URL = "https://api.anthropic.com"


def _base_url(given: str | None) -> str | None:
    """`given`, else None for the SDK to read `ANTHROPIC_BASE_URL`; but a blank one is
    unset, as in Claude Code: the SDK would send every request to ''."""
    if given:
        return given
    blank = not os.environ.get("ANTHROPIC_BASE_URL", "unset").strip()
    return DEFAULT_BASE_URL if blank else None


def warm() -> None:
    """Do now what the first request would (load the messages resource and the HTTP
    transport, build the validator of stream events): a run that starts this in a
    thread has it done when it asks. The CA bundle is `tls.start`'s, in a thread of
    its own, and only when the run may need it."""
    client = anthropic.AsyncAnthropic(
        api_key="unused",
        base_url=DEFAULT_BASE_URL,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=tls_context()),
    )
    _ = client.messages
    with contextlib.suppress(Exception):  # the SDK's own cache of validators, if it has one
        anthropic._models.construct_type(
            type_=anthropic.types.RawMessageStreamEvent, value={"type": "message_stop"}
        )


def tls_context() -> ssl.SSLContext:
    """The TLS context every client shares (`fsm_agent.live.tls.DeferredContext`): the
    HTTP library's default, made on the first TLS handshake, so a client of a plain
    `http://` server never loads the CA bundle, and an `https` run's first handshake
    takes the one `tls.start` made beside the SDK's import."""
    return tls.deferred(anthropic.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0])


def _transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP library's own errors, which escape the SDK while a body is read.

    Recent SDKs use `httpx2`, older ones `httpx`; either may be installed.
    """
    found: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()


# --- the request ----------------------------------------------------------------


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The Messages API parameters for `request`, with prompt-cache breakpoints.

    Breakpoints go on the last system block, the last tool and the last
    cacheable block of the last message, so each turn reuses the prefix the
    previous turn wrote.
    """
    messages = [_sendable(message_to_api(m)) for m in request.messages]
    if messages:
        content = messages[-1]["content"]
        for i in range(len(content) - 1, -1, -1):
            if content[i].get("type") not in _UNCACHEABLE:
                content[i] = {**content[i], "cache_control": EPHEMERAL}
                break
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if request.system:
        system: list[dict[str, Any]] = [{"type": "text", "text": s} for s in request.system]
        system[-1]["cache_control"] = EPHEMERAL
        body["system"] = system
    if request.tools:
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        tools[-1]["cache_control"] = EPHEMERAL
        body["tools"] = tools
    return _utf8(body)


def _utf8(value: Any) -> Any:
    """`value` with every string one UTF-8 can encode, as a request must be. A compatible
    server may split an emoji's JSON escape across two deltas, or send half of one: the
    halves that pair up are joined, a lone one is U+FFFD. The history keeps what came."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, dict):
        return {_utf8(k): _utf8(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_utf8(v) for v in value]
    return value


NO_CONTENT = "(no content)"


def _sendable(message: dict[str, Any]) -> dict[str, Any]:
    """`message` as the API takes it. A model may answer with nothing, or with a blank
    text block; the API refuses both in a request, so blank text blocks are left out
    and a message left with no content says so, as Claude Code's does."""
    content = message["content"]
    kept = [b for b in content if b.get("type") != "text" or b["text"].strip()]
    if kept and len(kept) == len(content):
        return message
    return {**message, "content": kept or [{"type": "text", "text": NO_CONTENT}]}


# --- errors -----------------------------------------------------------------------


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """`error.type` and `error.message` from an API error body, when it has them."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        kind, text = err.get("type"), err.get("message")
        return (kind if isinstance(kind, str) else None, text if isinstance(text, str) else None)
    return None, None


_MARKUP = re.compile(r"<!--.*?-->|<(script|style)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)
_SPACE = re.compile(r"\s+")
ERROR_TEXT_LIMIT = 300


def _readable(text: str) -> str:
    """An error body that is not the API's JSON (a proxy's page, a plain-text 404) as
    one short line: markup dropped, entities decoded, whitespace collapsed."""
    if "<" in text and ">" in text:
        text = html.unescape(_MARKUP.sub(" ", text))
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


def _status_error(exc: anthropic.APIStatusError) -> ModelCallError:
    status = exc.status_code
    err_type, api_text = _error_fields(exc.body)
    raw = exc.body if isinstance(exc.body, str) and exc.body else exc.message
    detail = api_text or _readable(raw)
    request_id = exc.response.headers.get("request-id")
    where = f" [request {request_id}]" if request_id else ""
    label = f"{status} {err_type}" if err_type else f"{status}"
    if status < 400:
        kind: ErrorKind = "overloaded" if err_type == "overloaded_error" else "server"
        return ModelCallError(kind, f"error event mid-stream ({err_type}): {detail}{where}")
    if status == 529 or err_type == "overloaded_error":
        return ModelCallError("overloaded", f"API overloaded ({label}): {detail}{where}", status)
    if status >= 500:
        return ModelCallError(
            "overloaded", f"API server error ({label}) after retries: {detail}{where}", status
        )
    if status == 429:
        return ModelCallError(
            "rate_limit", f"rate limited ({label}) after retries: {detail}{where}", status
        )
    if status == 400 and "prompt is too long" in detail.lower():
        return ModelCallError("prompt_too_long", f"{detail}{where}", status)
    error_code = getattr(exc, "error_code", None) or ""
    if status == 400 and (_MEDIA.search(detail) or _MEDIA.search(error_code)):
        return ModelCallError("media", f"API rejected media ({label}): {detail}{where}", status)
    if status == 401:
        return ModelCallError("api", f"the API key was rejected ({label}): {detail}{where}", status)
    return ModelCallError("api", f"API error {label}: {detail}{where}", status)


_RETRIED_STATUSES = (408, 409, 429)
MAX_RETRIES = 10
"""How many times a failed request is sent again, as in Claude Code (the variable)."""
MAX_RETRIES_VARIABLE = "CLAUDE_CODE_MAX_RETRIES"
RETRY_BASE_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 32.0
RETRY_JITTER = 0.25
MAX_ASKED_DELAY_S = 60.0
"""A `retry-after` past this is not waited for: the failure goes to the loop at once, as
in Claude Code (measured: 30 s waited, 61 s not)."""
OVERLOADED_BEFORE_FALLBACK = 3
"""With a fallback model, the consecutive 529 that hands the request to it."""

STREAM_IDLE_TIMEOUT_S = 90.0
"""How long a stream may go without an event before it is given up, as in Claude Code."""
MIN_STREAM_IDLE_TIMEOUT_S = 15.0
IDLE_TIMEOUT_VARIABLE = "CLAUDE_STREAM_IDLE_TIMEOUT_MS"
WATCHDOG_VARIABLE = "CLAUDE_ENABLE_STREAM_WATCHDOG"


def max_retries(env: Mapping[str, str]) -> int:
    """How many retries a request gets, from `CLAUDE_CODE_MAX_RETRIES` (default 10);
    ValueError for a value that is not a whole number of 0 or more."""
    value = env.get(MAX_RETRIES_VARIABLE, "").strip()
    if not value:
        return MAX_RETRIES
    if not re.fullmatch(r"[0-9]{1,6}", value):
        raise ValueError(
            f"{MAX_RETRIES_VARIABLE} must be a whole number of 0 or more, not {value[:40]!r}"
        )
    return int(value)


def stream_idle_timeout(env: Mapping[str, str]) -> float | None:
    """The stream watchdog's limit in seconds from Claude Code's variables, None if it
    is turned off (`CLAUDE_ENABLE_STREAM_WATCHDOG=0`); ValueError for a limit that is
    not a number of milliseconds. A limit under 15 s is 15 s, as in Claude Code."""
    if env.get(WATCHDOG_VARIABLE, "").strip().lower() in ("0", "false"):
        return None
    value = env.get(IDLE_TIMEOUT_VARIABLE, "").strip()
    if not value:
        return STREAM_IDLE_TIMEOUT_S
    wrong = ValueError(
        f"{IDLE_TIMEOUT_VARIABLE} must be a whole number of milliseconds, not {value[:40]!r}"
    )
    if not re.fullmatch(r"[0-9]+", value):
        raise wrong
    try:
        return max(MIN_STREAM_IDLE_TIMEOUT_S, int(value) / 1000)
    except (OverflowError, ValueError):  # more seconds than a float holds, or digits than int
        raise wrong from None


def will_retry(status: int, headers: Any) -> bool:
    """Whether a failed response is worth sending again: `x-should-retry` first, then
    the status (408, 409, 429, 5xx), as the SDK and Claude Code decide."""
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return status in _RETRIED_STATUSES or status >= 500


def asked_delay(headers: Any) -> float | None:
    """The wait a failed response asks for: the first of `retry-after-ms`,
    `retry-after` in seconds, `retry-after` as an HTTP date, that is given; None when
    none asks for a wait (a `retry-after: 0` included, as Claude Code reads it), and
    the retry then backs off."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            delay = float(headers.get(name)) / scale
        except (TypeError, ValueError):
            continue
        return delay if delay > 0 else None
    date = email.utils.parsedate_tz(headers.get("retry-after") or "")
    if date is None:
        return None
    delay = email.utils.mktime_tz(date) - time.time()
    return delay if delay > 0 else None


def backoff(retry: int, jitter: float) -> float:
    """Claude Code's wait before retry `retry` (1 for the first) that no `retry-after`
    sets: 0.5 s doubling up to 32 s, plus up to a quarter more (`jitter` in [0, 1))."""
    base = min(RETRY_BASE_DELAY_S * 2 ** (retry - 1), RETRY_MAX_DELAY_S)
    return base + jitter * RETRY_JITTER * base


def _overloaded(error: ModelCallError) -> bool:
    """A 529, or an `overloaded_error` however it came: what counts towards a fallback."""
    return error.status == 529 or "overloaded_error" in error.message


def _falls_back(request: ModelRequest, error: ModelCallError, overloaded: int) -> bool:
    """Whether retrying stops for the loop to switch to the request's fallback model:
    at the third 529 in a row, or at once at another 5xx, as Claude Code 2.1.x does."""
    if request.fallback_model is None:
        return False
    if _overloaded(error):
        return overloaded >= OVERLOADED_BEFORE_FALLBACK
    return (error.status or 0) >= 500


REDACTED = "[API key redacted]"
"""What stands for the API key in text fsm-agent did not write (an error body)."""


def _error_text(body: bytes, reason: str) -> str:
    """A failed response's error in one line: `type: message` from the API's JSON,
    else the body made readable, else the status line's reason."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    err_type, text = _error_fields(parsed)
    if err_type and text:
        return f"{err_type}: {text}"
    return text or err_type or _readable(body.decode(errors="replace")) or reason or "no reason"


def _content_type(stream: anthropic.AsyncStream[Any]) -> str:
    return stream.response.headers.get("content-type", "").split(";")[0].strip().lower()


_OVERFLOW = re.compile(r"input length and `max_tokens` exceed context limit: (\d+) \+ \d+ > (\d+)")
FLOOR_OUTPUT_TOKENS = 3_000
OVERFLOW_MARGIN_TOKENS = 1_000


def fitted_max_tokens(error: ModelCallError, asked: int) -> int | None:
    """The `max_tokens` to send again with, as Claude Code's retry computes it, when the
    API refused the request because its input and `max_tokens` overflow the window
    (models before Sonnet 4.5 refuse it; later ones stop with
    `model_context_window_exceeded`): what the window has left, less a margin. None
    for any other error, or when under 3,000 tokens would be left for the answer."""
    found = _OVERFLOW.search(error.message) if error.status == 400 else None
    if found is None:
        return None
    input_tokens, window = int(found[1]), int(found[2])
    left = window - input_tokens - OVERFLOW_MARGIN_TOKENS
    return left if FLOOR_OUTPUT_TOKENS <= left < asked else None


def to_model_error(exc: Exception, *, reading: bool) -> ModelCallError:
    """What the loop needs to know about `exc`.

    `reading` says the stream was open: an unknown failure then means the
    response could not be understood rather than that the request was refused.
    """
    if isinstance(exc, ModelCallError):
        return exc
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return ModelCallError("connection", "the API did not answer in time (request timed out)")
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        detail = f": {type(cause).__name__}: {cause}" if cause else ""
        return ModelCallError("connection", f"could not reach the API{detail}")
    if isinstance(exc, _TRANSPORT_ERRORS):
        what = "timed out" if "Timeout" in type(exc).__name__ else "was lost"
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return ModelCallError("connection", f"the connection {what} mid-stream ({detail})")
    if isinstance(exc, anthropic.APIResponseValidationError) or reading:
        return ModelCallError("invalid_response", f"unreadable API response: {exc!r}")
    return ModelCallError("api", f"the request could not be made: {type(exc).__name__}: {exc}")


# --- the stream ---------------------------------------------------------------------


def _count(value: object) -> int | None:
    """`value` if it is a count of tokens (a server's -1 or `true` is not), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _usage(raw: Any, base: Usage = Usage()) -> Usage:
    """Usage from an SDK usage object; fields it leaves out keep `base`'s values.

    `message_delta` usage is cumulative, and older API versions send only
    `output_tokens` there. A count that is not one (a proxy's -1) is left out too.
    """

    def pick(name: str) -> int:
        value = _count(getattr(raw, name, None))
        return getattr(base, name) if value is None else value

    return Usage(
        pick("input_tokens"),
        pick("output_tokens"),
        pick("cache_creation_input_tokens"),
        pick("cache_read_input_tokens"),
    )


_NOT_FINITE = "a number JSON cannot hold (NaN, Infinity, or past a double's range)"


def _tool_input(raw: str, start_input: object, name: str) -> tuple[dict[str, Any], str | None]:
    """The input a tool_use block's stream built, or the model's error for it. JSON that
    does not parse, `NaN` and `Infinity` among it (JavaScript's parser refuses them), is
    said in Claude Code's words; a number past a double's range (which Claude Code reads
    as Infinity and then fails on the schema), too deep or not an object, in fsm-agent's."""
    if not raw.strip():
        start = dict(start_input) if isinstance(start_input, dict) else {}
        if nonfinite(start):
            return {}, f"invalid JSON in tool input: {_NOT_FINITE}"
        return start, None
    deep = f"nested more than {MAX_DEPTH} levels, more than the session log holds"
    try:
        value = json.loads(raw, parse_constant=no_constant)
    except ValueError:  # JSONDecodeError, or NaN / Infinity
        return {}, unparsable_input(name, raw)
    except RecursionError:
        problem = deep
    else:
        kind = type(value).__name__
        if not isinstance(value, dict):
            problem = f"expected a JSON object, got {kind}"
        elif deeper_than(value):
            problem = deep
        elif nonfinite(value):
            problem = _NOT_FINITE
        else:
            return value, None
    shown = raw if len(raw) <= _RAW_JSON_SHOWN else raw[:_RAW_JSON_SHOWN] + "…"
    return {}, f"invalid JSON in tool input: {problem}; the model sent ({len(raw)} chars): {shown}"


def _text(owner: Any, name: str, what: str, *, required: bool = False) -> str:
    """A string field of `what` in the stream, which the SDK does not check. Left out or
    null, it is the empty string the API would send, unless it is `required` (a call
    with no id could not be answered)."""
    value = getattr(owner, name, None)
    if isinstance(value, str) and (value or not required):
        return value
    if value is None and not required:
        return ""
    raise ModelCallError("invalid_response", f"{what} has no {name}")


def _index(event: Any) -> int:
    index = getattr(event, "index", None)
    if isinstance(index, int) and not isinstance(index, bool):
        return index
    raise ModelCallError("invalid_response", f"{event.type} has no block index: {index!r}")


class _OpenBlock:
    __slots__ = ("kind", "parts", "signature", "start")

    def __init__(self, kind: str, start: ContentBlock) -> None:
        self.kind = kind
        self.start = start
        self.parts: list[str] = []
        self.signature: list[str] = []
        """A thinking block's signature deltas: the last is the signature (as the SDK
        keeps it), a whole value rather than pieces of text."""


_DELTA_FIELDS: dict[str, tuple[DeltaKind, str, str]] = {
    "text_delta": ("text", "text", "text"),
    "thinking_delta": ("thinking", "thinking", "thinking"),
    "signature_delta": ("signature", "signature", "thinking"),
    "input_json_delta": ("input_json", "partial_json", "tool_use"),
}
_BLOCK_KINDS = ("text", "thinking", "redacted_thinking", "tool_use")


class StreamAssembler:
    """Turns the SDK's raw stream events into ours, assembling each block.

    Block types this package does not model (server tools, their results)
    are never requested; if one arrives anyway it is skipped whole. Blocks
    still open at `message_stop` are stopped there: some compatible servers
    never send `content_block_stop`, and the SDK's own message builder does
    without it.
    """

    def __init__(self) -> None:
        self.open: dict[int, _OpenBlock] = {}
        self.skipped: set[int] = set()
        self.tool_ids: set[str] = set()
        self.start_usage = Usage()
        self.finished = False
        self.delta_seen = False
        self.last_event = "nothing"

    def feed(self, event: Any) -> list[StreamEvent]:
        kind = getattr(event, "type", None)
        self.last_event = str(kind)
        if kind == "message_start":
            message = event.message
            self.start_usage = _usage(getattr(message, "usage", None))
            return [
                MessageStart(
                    _text(message, "id", kind), _text(message, "model", kind), self.start_usage
                )
            ]
        if kind == "content_block_start":
            return self._start(_index(event), event.content_block)
        if kind == "content_block_delta":
            return self._delta(_index(event), event.delta)
        if kind == "content_block_stop":
            return self._stop(_index(event))
        if kind == "message_delta":
            self.delta_seen = True
            usage = _usage(getattr(event, "usage", None), self.start_usage)
            return [MessageDelta(_text(event.delta, "stop_reason", kind) or None, usage)]
        if kind == "message_stop":
            self.finished = True
            return [*(e for index in sorted(self.open) for e in self._stop(index)), MessageStop()]
        return []

    def _start(self, index: int, block: Any) -> list[StreamEvent]:
        kind = getattr(block, "type", None)
        if kind not in _BLOCK_KINDS:
            self.skipped.add(index)
            return []
        if index in self.open:
            raise ModelCallError("invalid_response", f"block {index} started twice")
        what = f"{kind} block {index}"
        ours: ContentBlock
        if kind == "text":
            ours = TextBlock(_text(block, "text", what))
        elif kind == "thinking":
            ours = ThinkingBlock(_text(block, "thinking", what), _text(block, "signature", what))
        elif kind == "redacted_thinking":
            ours = RedactedThinkingBlock(_text(block, "data", what, required=True))
        else:
            call_id = _text(block, "id", what, required=True)
            name = _text(block, "name", what, required=True)
            if call_id in self.tool_ids:  # results are matched to calls by id
                raise ModelCallError(
                    "invalid_response",
                    f"two tool_use blocks with the id {call_id!r} in one message",
                )
            self.tool_ids.add(call_id)
            start_input = getattr(block, "input", None)
            ours = ToolUseBlock(
                call_id, name, dict(start_input) if isinstance(start_input, dict) else {}
            )
        self.open[index] = _OpenBlock(kind, ours)
        return [BlockStart(index, ours)]

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        if index in self.skipped:
            return []
        block = self.open.get(index)
        if block is None:
            raise ModelCallError("invalid_response", f"delta for block {index}, which is not open")
        fields = _DELTA_FIELDS.get(getattr(delta, "type", ""))
        if fields is None:
            return []
        ours, attr, belongs_to = fields
        if block.kind != belongs_to:
            raise ModelCallError(
                "invalid_response", f"{delta.type} for block {index}, a {block.kind} block"
            )
        piece = _text(delta, attr, f"{delta.type} for block {index}")
        (block.signature if ours == "signature" else block.parts).append(piece)
        return [BlockDelta(index, ours, piece)]

    def _stop(self, index: int) -> list[StreamEvent]:
        if index in self.skipped:
            return []
        block = self.open.pop(index, None)
        if block is None:
            raise ModelCallError("invalid_response", f"stop for block {index}, which is not open")
        start, joined = block.start, "".join(block.parts)
        if isinstance(start, TextBlock):
            return [BlockStop(index, TextBlock(start.text + joined))]
        if isinstance(start, ThinkingBlock):
            signature = block.signature[-1] if block.signature else start.signature
            return [BlockStop(index, ThinkingBlock(start.thinking + joined, signature))]
        if isinstance(start, ToolUseBlock):
            tool_input, problem = _tool_input(joined, start.input, start.name)
            return [BlockStop(index, ToolUseBlock(start.id, start.name, tool_input), problem)]
        return [BlockStop(index, start)]


def _timeout(seconds: float) -> anthropic.Timeout:
    """`seconds` to wait for an answer, with the SDK's own limit for connecting (5 s). A
    bare number would set both: a host that drops the attempt would hold each try for
    the whole of it."""
    connect = anthropic.DEFAULT_TIMEOUT.connect
    return anthropic.Timeout(seconds, connect=seconds if connect is None else min(connect, seconds))


RESENT_KINDS: tuple[ErrorKind, ...] = ("connection", "incomplete_stream", "overloaded", "server")
"""A stream that broke before any block was complete is sent again, as Claude Code 2.1.x
does: a dropped connection or a body that ends early is retried, an `event: error`
(overloaded, a server error) is asked again."""


def resendable(error: ModelCallError) -> bool:
    """Whether a stream that failed this way, with no block complete yet, is sent again:
    the answer was lost in transit, not refused."""
    return error.kind in RESENT_KINDS


class _BrokenStream(Exception):
    """A stream that opened and then failed: `error` is what the loop is told unless the
    request is sent again."""

    def __init__(self, error: ModelCallError) -> None:
        super().__init__(error.message)
        self.error = error


class _Refused(Exception):
    """A request that failed before its stream opened: `error` is what the loop is told
    unless it is sent again; `again` whether that may help, `asked` the wait the
    response asked for, `text` its error in one line."""

    def __init__(self, error: ModelCallError, again: bool, asked: float | None, text: str):
        super().__init__(error.message)
        self.error, self.again, self.asked, self.text = error, again, asked, text

    @classmethod
    def of(cls, exc: Exception, error: ModelCallError) -> _Refused:
        if isinstance(exc, anthropic.APIStatusError):
            response = exc.response
            try:
                text = _error_text(response.content, response.reason_phrase)
            except Exception:  # a body never read: the SDK's message says enough
                text = error.message
            headers, asked = response.headers, asked_delay(response.headers)
            again = will_retry(response.status_code, headers)
            if asked is not None and asked > MAX_ASKED_DELAY_S:
                again = False  # as Claude Code gives up, rather than hold the run
            return cls(error, again, asked, text)
        lost = isinstance(exc, anthropic.APIConnectionError)  # a timeout is one too
        return cls(error, lost, None, error.message)


class _Stop:
    type = "message_stop"


_MESSAGE_STOP = _Stop()
"""What a body that ended cleanly after `message_delta`, every block stopped, lacked."""


class AnthropicModel:
    """A `Model` backed by the Messages API.

    The SDK client is made on first use in each event loop, because its
    connection pool belongs to the loop that opened it; `aclose()` releases
    it. The plain HTTP client is used rather than the SDK's self-closing
    wrapper, whose finaliser would try to close a dead loop's connections on
    the next loop.

    The SDK makes no retries of its own: a failed request is sent again here, as
    Claude Code's retry loop does (`_stream`), so that the count, the waits and the
    hand-over to a fallback model are Claude Code's. `sleep` and `jitter` are the
    waits' source, which a test replaces.
    """

    name = "anthropic"

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = MAX_RETRIES,
        timeout: float = 600.0,
        stream_idle_timeout: float | None = STREAM_IDLE_TIMEOUT_S,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.api_key = api_key
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream_idle_timeout = stream_idle_timeout
        """Seconds an open stream may go without an event (pings do not count: a
        server that only pings is stalled, and the read timeout never fires)."""
        self.sleep = sleep
        self.jitter = jitter
        self._client: anthropic.AsyncAnthropic | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> anthropic.AsyncAnthropic:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            timeout = _timeout(self.timeout)
            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key,
                base_url=_base_url(self.base_url),
                max_retries=0,  # retried in `_stream`, as Claude Code retries
                timeout=timeout,
                http_client=anthropic.DefaultAsyncHttpxClient(
                    timeout=timeout, verify=tls_context()
                ),
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = self._loop = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The response's events; an error or a retry's reason that quotes the API key
        (a proxy's body echoing the `x-api-key` header) has it redacted, since it is
        printed, logged and sent to hooks."""
        try:
            async with contextlib.aclosing(self._stream(request)) as events:
                async for event in events:
                    if isinstance(event, ModelRetry) and self._quotes_key(event.error):
                        event = attrs.evolve(event, error=self._redacted(event.error))
                    yield event
        except ModelCallError as exc:
            if not self._quotes_key(exc.message):
                raise
            raise ModelCallError(exc.kind, self._redacted(exc.message), exc.status) from None

    def _quotes_key(self, text: str) -> bool:
        key = self.api_key or ""
        return len(key) >= 8 and key in text

    def _redacted(self, text: str) -> str:
        return text.replace(self.api_key or "", REDACTED)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """The request's stream, sent again after a failure worth retrying, up to
        `max_retries` times, each told as a `ModelRetry` before its wait: the wait a
        response asks for (`retry-after`), else Claude Code's backoff. A stream that
        failed mid-way is sent again only if no block was complete (see `resendable`).
        A request with a fallback model is given up at the third 529 in a row, or at
        once at another server error, for the loop to switch models, as in Claude Code."""
        retries = overloaded = 0
        while True:
            completed = False
            try:
                async with contextlib.aclosing(self._stream_once(request)) as once:
                    async for event in once:
                        completed = completed or isinstance(event, BlockStop)
                        yield event
                return
            except _Refused as refused:
                error, again, asked = refused.error, refused.again, refused.asked
                text, cause = refused.text, refused.__cause__
            except _BrokenStream as broken:
                error, asked, text = broken.error, None, broken.error.message
                again, cause = not completed and resendable(error), broken.__cause__
            overloaded = overloaded + 1 if _overloaded(error) else 0
            if not again or retries >= self.max_retries or _falls_back(request, error, overloaded):
                raise error from cause
            retries += 1
            delay = asked if asked is not None else backoff(retries, self.jitter())
            yield ModelRetry(retries, error.status or 0, text, delay, self.max_retries)
            await self.sleep(delay)

    async def _stream_once(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """One attempt: a failure before the response opened is raised as `_Refused`, one
        after it as `_BrokenStream` (the caller may send the request again). A request
        refused for overflowing the context window is refitted and sent at once."""
        response: Any = None
        while response is None:
            try:
                response = await self.client().messages.create(**request_body(request), stream=True)
            except Exception as exc:
                error = to_model_error(exc, reading=False)
                fitted = fitted_max_tokens(error, request.max_tokens)
                if fitted is None:
                    raise _Refused.of(exc, error) from exc
                yield ModelRetry(
                    1,
                    error.status or 400,
                    f"input and max_tokens {request.max_tokens} overflow the context window; "
                    f"sent again asking for {fitted}",
                    0.0,
                )
                request = attrs.evolve(request, max_tokens=fitted)
        assembler = StreamAssembler()
        events = aiter(response)
        try:
            while not assembler.finished:
                watchdog = asyncio.timeout(self.stream_idle_timeout)
                try:
                    async with watchdog:
                        event = await anext(events)
                    translated = assembler.feed(event)
                except StopAsyncIteration:
                    break
                except TimeoutError as exc:
                    if not watchdog.expired():
                        raise _BrokenStream(to_model_error(exc, reading=True)) from exc
                    stalled = ModelCallError("connection", self._stalled(assembler))
                    raise _BrokenStream(stalled) from None
                except ModelCallError as exc:
                    raise _BrokenStream(exc) from exc
                except Exception as exc:
                    raise _BrokenStream(to_model_error(exc, reading=True)) from exc
                for ours in translated:
                    yield ours
        finally:
            with contextlib.suppress(Exception):
                await response.close()
        if not assembler.finished and assembler.delta_seen and not assembler.open:
            for ours in assembler.feed(_MESSAGE_STOP):  # every block and the stop reason came
                yield ours
        if not assembler.finished:
            kind = _content_type(response)
            if assembler.last_event == "nothing" and kind != "text/event-stream":
                raise ModelCallError(
                    "invalid_response",
                    f"the server answered with {kind or 'no content type'}, not an event "
                    f"stream: is {self.base_url or 'the base URL'} a Messages API that streams?",
                )
            raise _BrokenStream(
                ModelCallError(
                    "incomplete_stream",
                    f"the stream ended without message_stop (last event: {assembler.last_event})",
                )
            )

    def _stalled(self, assembler: StreamAssembler) -> str:
        """Claude Code's words for the watchdog's timeout, and the limit that was passed."""
        got = "no chunks" if assembler.last_event == "nothing" else "partial response"
        return (
            f"Stream idle timeout - {got} received (no event for "
            f"{self.stream_idle_timeout:g} s; {IDLE_TIMEOUT_VARIABLE} sets the limit)"
        )

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """The request's input tokens, or None when the server cannot say.

        Compatible servers often lack the endpoint (404); the count is only
        an estimate's refinement, so it is not retried.
        """
        body = request_body(request)
        del body["max_tokens"]
        try:
            client = self.client().with_options(max_retries=0)
            result = await client.messages.count_tokens(**body)
        except Exception:
            return None
        return _count(getattr(result, "input_tokens", None))
