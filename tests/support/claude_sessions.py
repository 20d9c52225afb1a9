"""Sessions of the real Claude Code CLI, scripted, for the transcripts they leave.

Each session is a few prompts, each with the Messages server's replies for it,
and optionally a project settings file and files in the workspace. Running one
(`record`) runs the real CLI offline (`tests/support/real_claude.py`), `-p` for
the first prompt and `-p --resume <session-id>` for each later one, and returns
the transcript it wrote under `HOME/.claude/projects/<mangled cwd>/`: the
project's own fixtures, made by the oracle, never copied in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.messages_server import MessagesServer, Reply, error, message, text
from tests.support.real_claude import run_claude, trusted_home

Replies = Callable[[Path], Sequence[Reply]]
"""A prompt's replies, given the workspace (tool inputs name absolute paths)."""

STOP_ONCE = (
    "if [ -e .stopped ]; then exit 0; fi; touch .stopped; echo 'say what you changed' >&2; exit 2"
)
"""A Stop hook that blocks the first stop of the session, and lets every later one be."""


@dataclass(frozen=True)
class Session:
    name: str
    prompts: tuple[tuple[str, Replies], ...]
    settings: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    """The model the CLI is told it talks to, if not the caller's (one whose context
    window the CLI knows, for a session that must compact)."""


def _read(ws: Path) -> Sequence[Reply]:
    call = {
        "type": "tool_use",
        "id": "toolu_r1",
        "name": "Read",
        "input": {"file_path": str(ws / "notes.txt")},
    }
    return (
        message(
            [{"type": "text", "text": "Reading it."}, call],
            stop_reason="tool_use",
            message_id="msg_r1",
        ),
        text("It says hello.", message_id="msg_r2"),
    )


def _missing(ws: Path) -> Sequence[Reply]:
    call = {
        "type": "tool_use",
        "id": "toolu_m1",
        "name": "Read",
        "input": {"file_path": str(ws / "missing.txt")},
    }
    return (
        message([call], stop_reason="tool_use", message_id="msg_m1"),
        text("There is no such file.", message_id="msg_m2"),
    )


def _bash_and_glob(ws: Path) -> Sequence[Reply]:
    calls = [
        {
            "type": "tool_use",
            "id": "toolu_b1",
            "name": "Bash",
            "input": {"command": "echo hi && exit 3", "description": "Say hi"},
        },
        {"type": "tool_use", "id": "toolu_g1", "name": "Glob", "input": {"pattern": "*.txt"}},
    ]
    return (
        message(calls, stop_reason="tool_use", message_id="msg_b1"),
        text("Done.", message_id="msg_b2"),
    )


def _retried(ws: Path) -> Sequence[Reply]:
    return (error(529, "overloaded_error", "Overloaded"), text("Here now.", message_id="msg_e1"))


def _blocked_once(ws: Path) -> Sequence[Reply]:
    return (
        text("Changed nothing.", message_id="msg_s1"),
        text("I changed nothing at all.", message_id="msg_s2"),
    )


def _compacted(ws: Path) -> Sequence[Reply]:
    """A response whose usage is past the autocompact threshold: the CLI compacts before
    the next request (its summary request gets the second reply)."""
    call = {
        "type": "tool_use",
        "id": "toolu_c1",
        "name": "Read",
        "input": {"file_path": str(ws / "notes.txt")},
    }
    near_full = {"input_tokens": 190_000, "output_tokens": 50}
    return (
        message([call], stop_reason="tool_use", message_id="msg_c1", usage=near_full),
        text("<summary>The user asked what notes.txt says; it was read.</summary>"),
        text("It says hello.", message_id="msg_c2"),
    )


def _subagent(ws: Path) -> Sequence[Reply]:
    """An `Agent` call run in the foreground: the subagent's two requests come between
    the main loop's (the CLI writes the subagent a transcript of its own)."""
    call = {
        "type": "tool_use",
        "id": "toolu_a1",
        "name": "Agent",
        "input": {
            "description": "Read the notes",
            "prompt": "Say what notes.txt holds.",
            "subagent_type": "general-purpose",
            "run_in_background": False,
        },
    }
    read = {
        "type": "tool_use",
        "id": "toolu_a2",
        "name": "Read",
        "input": {"file_path": str(ws / "notes.txt")},
    }
    return (
        message([{"type": "text", "text": "Asking an agent."}, call], stop_reason="tool_use",
                message_id="msg_a1"),
        message([read], stop_reason="tool_use", message_id="msg_a2"),
        text("notes.txt says hello.", message_id="msg_a3"),
        text("The agent says: hello.", message_id="msg_a4"),
    )  # fmt: skip


def _hello(ws: Path) -> Sequence[Reply]:
    return (text("Hello.", message_id="msg_p1"),)


def _again(ws: Path) -> Sequence[Reply]:
    return (text("Hello again.", message_id="msg_p2"),)


SESSIONS = (
    Session("tool_call", (("what is in notes.txt?", _read),), files={"notes.txt": "hello\n"}),
    Session("tool_error", (("read missing.txt", _missing),)),
    Session("bash_exit_code", (("say hi, then list", _bash_and_glob),), files={"a.txt": "a"}),
    Session("api_error_retry", (("hi", _retried),)),
    Session(
        "stop_hook_block",
        (("change nothing", _blocked_once),),
        settings={"hooks": {"Stop": [{"hooks": [{"type": "command", "command": STOP_ONCE}]}]}},
    ),
    Session("resumed", (("hi", _hello), ("and again", _again))),
    Session(
        "autocompact",
        (("what is in notes.txt?", _compacted),),
        files={"notes.txt": "hello\n"},
        model="claude-sonnet-4-6",
    ),
    Session(
        "subagent",
        (("what is in notes.txt? ask an agent", _subagent),),
        files={"notes.txt": "hello\n"},
    ),
)
"""The conformance sessions whose transcripts an import must replay (`--check`)."""


def transcripts(home: Path) -> list[Path]:
    return sorted(home.glob(".claude/projects/*/*.jsonl"))


def record(session: Session, root: Path, model: str = "claude-test-1") -> Path:
    """Run `session` through the real CLI under `root`; the transcript it wrote."""
    ws = root / "ws"
    ws.mkdir(parents=True)
    for name, content in session.files.items():
        (ws / name).write_text(content)
    if session.settings is not None:
        (ws / ".claude").mkdir()
        (ws / ".claude" / "settings.json").write_text(json.dumps(session.settings))
    home = trusted_home(root / "home", ws)
    model = session.model or model
    session_id: str | None = None
    with MessagesServer() as server:
        for prompt, replies in session.prompts:
            server.reply(*replies(ws))
            resume = ["--resume", session_id] if session_id else []
            run = run_claude(
                server,
                ws,
                home,
                "-p",
                *resume,
                prompt,
                "--output-format",
                "json",
                "--model",
                model,
            )
            assert run.returncode == 0, (run.stdout, run.stderr)
            session_id = run.json()["session_id"]
    found = transcripts(home)
    assert len(found) == 1, found
    return found[0]
