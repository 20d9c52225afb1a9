"""Hand-made Claude Code transcripts: the smallest lines that show one rule each.

Shaped like what the real CLI writes (tests/support/claude_sessions.py records
those), with only the fields the import reads.
"""

from __future__ import annotations

import json
from typing import Any


def entry(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u{n}",
        "sessionId": "s-1",
        "cwd": "/ws",
        "isSidechain": False,
        **fields,
    }


def prompt(n: int, text: str) -> dict[str, Any]:
    return entry("user", n, message={"role": "user", "content": text})


def said(n: int, msg_id: str, *blocks: dict[str, Any], stop: str | None = None) -> dict[str, Any]:
    message = {
        "id": msg_id,
        "role": "assistant",
        "model": "claude-x",
        "content": list(blocks),
        "stop_reason": stop,
        "usage": {"input_tokens": 7, "output_tokens": 3},
    }
    return entry("assistant", n, message=message)


def result(n: int, use_id: str, content: str, *, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": use_id, "content": content, "is_error": error}
    return entry(
        "user", n, message={"role": "user", "content": [block]}, toolUseResult={"stdout": content}
    )


def jsonl(*entries: Any) -> bytes:
    return b"\n".join(json.dumps(e).encode() for e in entries) + b"\n"


CALL = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
