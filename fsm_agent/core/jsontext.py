"""JSON text for the session log and for digests, through orjson.

Every step writes several log lines and hashes a few canonical JSON
documents, and a replay parses every line, so this is on the engine's hot
path; orjson does it several times faster than the standard library. Its
compact form is `JSON.stringify`'s: no spaces, UTF-8 rather than `\\u`
escapes. Where orjson cannot keep a value exactly (an integer beyond 64
bits, which it refuses to write and would read back as a float; a lone
surrogate, which is no UTF-8 but which JSON escapes such as `"\\ud800"` in a
model's answer do produce), the standard library takes over, so nothing is
lost.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

MAX_DEPTH = 100
"""JSON from outside (a hook's answer, a scenario) nested deeper is refused: writing it
to the log recurses per level (cattrs; orjson stops at 255), and nothing needs it."""
_LONG_NUMBER = re.compile(rb"\d{20}")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact JSON as UTF-8; `sort_keys` for the canonical form that digests hash."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else 0)
    except orjson.JSONEncodeError:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
        try:
            return text.encode()
        except UnicodeEncodeError:
            return json.dumps(value, separators=(",", ":"), sort_keys=sort_keys).encode()


def canonical(value: Any) -> bytes:
    return dumps(value, sort_keys=True)


def line(value: Any) -> bytes:
    """`dumps(value)` and a newline: one line of JSON Lines, made in one piece."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return dumps(value) + b"\n"


def loads(data: bytes | str) -> Any:
    """One JSON value; anything else raises `json.JSONDecodeError`."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_NUMBER.search(raw):
        return _stdlib_loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if _SURROGATE_ESCAPE.search(raw):
            return _stdlib_loads(raw)
        raise


def _stdlib_loads(raw: bytes) -> Any:
    """The standard library's reading, whose other refusals (a number of more digits
    than Python converts, a nest deeper than its stack) are a `json.JSONDecodeError`
    too, as orjson's are: the text is no JSON this program reads."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        text = raw.decode(errors="replace")
        raise json.JSONDecodeError(str(exc).split(";")[0], text, 0) from None


def no_constant(name: str) -> Any:
    """`parse_constant` for Python's JSON reader, which takes `NaN` and `Infinity`: JSON
    has no such numbers, and a file written by hand that holds them is not valid JSON."""
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """`parse_float` for Python's JSON reader, which reads `1e400` as infinity: a value the
    log cannot hold (JSON has no infinity; orjson refuses it, as the log's reader does)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond a double's range")
    return value


def strict_loads(text: str) -> Any:
    """JSON written outside fsm-agent whose values the log records (a scenario, a hook's
    answer, an edited result): `NaN` and `Infinity` (no JSON) and a number past a
    double's range (`1e400`) raise `ValueError`, where Python's reader takes them and
    the log would then hold null (a replay would judge another value). A settings file
    keeps `1e400`, as Claude Code's `JSON.parse` does; only `no_constant` holds there."""
    return json.loads(text, parse_constant=no_constant, parse_float=finite_float)


def deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests objects and arrays more than `limit` levels deep."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def nonfinite(value: Any) -> bool:
    """Whether `value` holds a float JSON has no text for (NaN, an infinity): Python's
    parser makes them of `NaN`, `Infinity` and a number past a double's range (`1e400`),
    and a log line or a request would carry them as null, or not at all."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def decode_error(exc: json.JSONDecodeError) -> str:
    """`LINE:COLUMN: not valid JSON: WHAT`, for a file's error line. The decoder's own
    message ends in "at" where its text goes on with the position (`Invalid control
    character at`), which alone read as cut off."""
    what = exc.msg.removesuffix(" at").removesuffix(" starting")
    return f"{exc.lineno}:{exc.colno}: not valid JSON: {what}"
