"""Driving `fsm-claude` with the real Claude Agent SDK: its `cli_path` pointed at a wrapper
script that runs the entry point in this interpreter (`sys.executable`, so CI's venv works),
the model served by the local Messages server, and each session's logs replayed."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import ROOT
from tests.support.cli import MODEL, fsm
from tests.support.messages_server import MessagesServer

sdk = pytest.importorskip("claude_agent_sdk")

TIMEOUT_S = 60.0
"""A session that hangs fails the test instead of the suite (not a timed assertion)."""


def entry_point(tmp_path: Path) -> Path:
    """A `claude` for `cli_path`: execs `python -m fsm_agent.cli.claude` with this tree first."""
    script = tmp_path / "fsm-claude"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"tree = {str(ROOT)!r}\n"
        "os.environ['PYTHONPATH'] = os.pathsep.join([tree, os.environ.get('PYTHONPATH', '')])\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'fsm_agent.cli.claude', *sys.argv[1:]])\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def options(server: MessagesServer, workspace: Path, tmp_path: Path, **kwargs: Any) -> Any:
    """`ClaudeAgentOptions` for a session in `workspace` against `server`."""
    env = {
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "test-key",
        **kwargs.pop("env", {}),
    }
    kwargs.setdefault("model", MODEL)
    return sdk.ClaudeAgentOptions(
        cli_path=str(entry_point(tmp_path)), cwd=str(workspace), env=env, **kwargs
    )


def ask(prompt: Any, opts: Any) -> list[Any]:
    """Every message `query()` yields for `prompt`."""

    async def go() -> list[Any]:
        with anyio.fail_after(TIMEOUT_S):
            return [m async for m in sdk.query(prompt=prompt, options=opts)]

    return anyio.run(go)


def with_client(opts: Any, body: Callable[[Any], Awaitable[Any]]) -> Any:
    """`body(client)` inside a connected `ClaudeSDKClient`."""

    async def go() -> Any:
        with anyio.fail_after(TIMEOUT_S):
            async with sdk.ClaudeSDKClient(options=opts) as client:
                return await body(client)

    return anyio.run(go)


async def one_response(client: Any) -> list[Any]:
    return [m async for m in client.receive_response()]


async def prompts(*texts: str) -> AsyncIterator[dict[str, Any]]:
    """A streamed prompt (what `can_use_tool` and hooks need): one user message per text."""
    for text in texts:
        yield {"type": "user", "message": {"role": "user", "content": text}}


def of_type(messages: list[Any], name: str) -> list[Any]:
    return [m for m in messages if type(m).__name__ == name]


def session_logs(workspace: Path) -> list[Path]:
    """The workspace's session logs, oldest first (an SDK session is one, whatever its runs)."""
    logs = (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    return sorted(logs, key=lambda p: os.stat(p).st_mtime_ns)


def replays(workspace: Path) -> list[Path]:
    """The workspace's logs, each checked to replay offline with `--check` (no SDK there)."""
    logs = session_logs(workspace)
    assert logs, "the session wrote no log"
    proc = fsm("replay", "--check", *map(str, logs))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return logs
