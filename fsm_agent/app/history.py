"""The recorded sessions of a workspace: list them cheaply, continue one.

Every run writes its own log (docs/log-format.md), and its `start` record
holds the whole conversation it began with, so each log replays on its own.
A run that continues another names it in its header (`parent`: the
parent's `log` path and `session_id`): a chat session or a chain of
`--resume`s is a list of logs linked back to the first.

Listing reads three lines per log: the header, the `start` record (and the
blobs its long texts are) and the last line. A log that cannot be read that far
is listed and marked, never skipped and never fatal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from fsm_agent.app.replaying import areplay
from fsm_agent.core import jsontext
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import Message, TextBlock
from fsm_agent.live.transcript_writer import ENTRYPOINT, project_dir
from fsm_agent.tape.blobs import PackError, unpack
from fsm_agent.tape.cut_log import CutTape
from fsm_agent.tape.divergence import Divergence
from fsm_agent.tape.header import config_of
from fsm_agent.tape.log import (
    TAIL_CHUNK,
    LogError,
    SessionLog,
    being_written,
    count_runs,
    header_problem,
    last_line,
    run_number,
)

TURN_WINDOW = 8 * TAIL_CHUNK
"""How far back from its end a log without its `result` is searched for its last transition."""


def sessions_dir(cwd: str | Path) -> Path:
    return Path(cwd) / ".fsm-agent" / "sessions"


@frozen
class SessionInfo:
    """One log as `fsm-agent sessions` shows it.

    `status`: `complete` (ends with its `result`), `running` (no `result` yet, and
    a run still writes it), `cut_short` (no `result`, and no run writes it: the
    run was killed between records; `--resume` goes on from where it stops),
    `torn` (the last line was cut mid-write) or `corrupt` (no readable header or
    `start` record; `problem` says why); `claude_code`: a Claude Code transcript of
    the workspace (`fsm-agent import` makes it logs).
    """

    path: Path
    status: str
    session_id: str | None = None
    created: str | None = None
    prompt: str | None = None
    turns: int | None = None
    reason: str | None = None
    parent: str | None = None
    problem: str | None = None


def _json_line(raw: bytes) -> dict[str, Any] | None:
    try:
        value = jsontext.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def last_turn(path: Path) -> int | None:
    """The turn of the last transition in the log's last `TURN_WINDOW` bytes. A run killed
    while a tool ran ends with effect records after it; the window keeps listing cheap (past
    a huge effect record the turn is not found, and left blank)."""
    with path.open("rb") as fh:
        fh.seek(max(0, os.path.getsize(path) - TURN_WINDOW))
        tail = fh.read()
    for raw in reversed(tail.split(b"\n")):
        record = _json_line(raw)
        if record is not None and record.get("t") == "transition":
            return _of_type(record.get("turn"), int)
    return None


def prompt_of(messages: Sequence[Any]) -> str | None:
    """The last prompt the user typed: the run's own prompt, not the history before it."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        if message.get("is_meta"):
            continue
        content = message.get("content")
        if isinstance(content, str):  # the Messages API's short form
            return content
        texts = [
            b["text"]
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if texts:
            return texts[-1]
    return None


def _of_type(value: Any, kind: type) -> Any:
    """`value` if it has the type a listing shows, else None: a hand-edited log may hold
    anything, and `sessions` lists it rather than crash on it (bool is no int here)."""
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def _parent_log(parent: Any) -> str | None:
    """The parent's log path: a fork's or a continuation's (`{"log": …}`)."""
    if isinstance(parent, dict) and isinstance(parent.get("log"), str):
        return parent["log"]
    return None


def _start_line(fh: Any) -> dict[str, Any] | None:
    """The `start` record after the header, with the texts of the blobs before it (a
    version 4 log writes a long prompt's text first, as a `blob` record) put back."""
    blobs: dict[str, str] = {}
    while True:
        record = _json_line(fh.readline())
        if record is None or record.get("t") != "blob":
            break
        if isinstance(record.get("id"), str) and isinstance(record.get("text"), str):
            blobs[record["id"]] = record["text"]
    if record is None or "blobs" not in record:
        return record
    try:
        return unpack(record, blobs.__getitem__)
    except (PackError, KeyError):
        return None


def describe(path: Path) -> SessionInfo:
    """What a log says about itself, from its first two lines and its last."""
    try:
        with path.open("rb") as fh:
            header = _json_line(fh.readline())
            start = _start_line(fh)
        tail, whole = last_line(path)
    except OSError as exc:
        return SessionInfo(path, "corrupt", problem=str(exc))
    if header is None:
        return SessionInfo(path, "corrupt", problem="no session header")
    info: dict[str, Any] = {
        "session_id": _of_type(header.get("session_id"), str),
        "created": _of_type(header.get("created"), str),
        "parent": _parent_log(header.get("parent")),
    }
    problem = header_problem(header)
    if problem is not None:
        return SessionInfo(path, "corrupt", **info, problem=problem)
    if start is None or start.get("t") != "start":
        return SessionInfo(path, "torn" if not whole else "corrupt", **info, problem="no start")
    messages = start.get("messages")
    info["prompt"] = prompt_of(messages if isinstance(messages, list) else [])
    if not whole:
        return SessionInfo(path, "torn", **info)
    last = _json_line(tail)
    if last is None:
        return SessionInfo(path, "corrupt", **info, problem="the last line is not JSON")
    if last.get("t") == "result":
        turns, reason = _of_type(last.get("turns"), int), _of_type(last.get("reason"), str)
        return SessionInfo(path, "complete", **info, turns=turns, reason=reason)
    try:
        info["turns"] = last_turn(path)
        running = being_written(path)
    except OSError as exc:
        return SessionInfo(path, "corrupt", **info, problem=str(exc))
    return SessionInfo(path, "running" if running else "cut_short", **info)


def list_sessions(cwd: str | Path) -> list[SessionInfo]:
    """Every log under the workspace's sessions folder, newest first."""
    folder = sessions_dir(cwd)
    if not folder.is_dir():
        return []
    infos = [(describe(p), p.stat().st_mtime) for p in folder.glob("*.jsonl") if p.is_file()]
    infos.sort(key=lambda pair: (pair[0].created or "", pair[1]), reverse=True)
    return [info for info, _ in infos]


CLAUDE_HEAD = 64 * 1024
"""How much of a Claude Code transcript listing reads: its first prompt is near the top."""


def describe_transcript(path: Path) -> SessionInfo | None:
    """A Claude Code transcript as a listing shows it, from its first lines; None for
    one fsm-agent wrote (its log is listed) or one with no prompt in its head."""
    try:
        with path.open("rb") as fh:
            head = fh.read(CLAUDE_HEAD)
    except OSError as exc:
        return SessionInfo(path, "corrupt", problem=str(exc))
    info: dict[str, Any] = {}
    for raw in head.split(b"\n"):
        entry = _json_line(raw)
        if entry is None:
            continue
        if entry.get("entrypoint") == ENTRYPOINT:
            return None
        info.setdefault("session_id", _of_type(entry.get("sessionId"), str))
        if entry.get("type") == "user" and not entry.get("isMeta") and "prompt" not in info:
            message = entry.get("message")
            prompt = prompt_of([message]) if isinstance(message, dict) else None
            if prompt is not None and not prompt.startswith("[Request interrupted"):
                info["prompt"] = prompt
                info["created"] = _of_type(entry.get("timestamp"), str)
    if "prompt" not in info:
        return None
    return SessionInfo(path, "claude_code", **info)


def list_claude_sessions(cwd: str | Path) -> list[SessionInfo]:
    """The workspace's Claude Code transcripts (`~/.claude/projects/<cwd>/`), newest first."""
    folder = project_dir(str(cwd))
    if not folder.is_dir():
        return []
    found = [(describe_transcript(p), p.stat().st_mtime) for p in folder.glob("*.jsonl")]
    infos = [(i, t) for i, t in found if i is not None]
    infos.sort(key=lambda pair: (pair[0].created or "", pair[1]), reverse=True)
    return [info for info, _ in infos]


class ResumeError(Exception):
    """A log that cannot be continued; the message says why."""


@frozen
class Resumed:
    messages: tuple[Message, ...]
    config: RunConfig
    session_id: str
    path: Path
    read_files: dict[str, float]
    cut_short: int | None = None
    """The steps the log holds when it was cut short (the run killed mid-way); else None."""


def find_log(ref: str | Path, cwd: str | Path) -> Path:
    """A log named by its path, or by its session id (or a unique prefix) in the workspace."""
    path = Path(ref)
    if path.is_file():
        return path
    folder = sessions_dir(cwd)
    # An absolute path names a file, never an id (and `glob` refuses it as a pattern).
    is_id = folder.is_dir() and not path.is_absolute()
    matches = sorted(folder.glob(f"{glob_escape(str(ref))}*.jsonl")) if is_id else []
    if len(matches) == 1:
        return matches[0]
    last = _last_run(matches)
    if last is not None:
        return last
    if not matches:
        raise ResumeError(f"{ref}: no session log by that path or session id in {folder}")
    names = ", ".join(m.stem[:12] for m in matches[:5])
    raise ResumeError(f"{ref}: names several sessions ({names}…); give more of the id")


def _last_run(logs: Sequence[Path]) -> Path | None:
    """The last run's log when `logs` are the runs of one session (`ID.jsonl`,
    `ID.2.jsonl`, …: a conversation's runs keep its id): it holds the whole conversation."""
    if not logs:
        return None
    session = logs[0].stem.partition(".")[0]
    numbered = [(run_number(p.stem, session), p) for p in logs]
    if any(n is None for n, _ in numbered):
        return None
    return max(numbered, key=lambda item: item[0] or 0)[1]


def glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


async def aresume(path: Path) -> Resumed:
    """The conversation a log ended with, by replaying it offline (no network, no tools).

    A log cut short by a kill goes on from where it stops, as an interrupt there
    would have left it (`fsm_agent.tape.cut_log`); a damaged one is refused.
    """
    tapes: list[CutTape] = []

    def tape(log: SessionLog, **kwargs: Any) -> CutTape:
        tapes.append(CutTape(log, **kwargs))
        return tapes[-1]

    try:
        log = SessionLog(path)
        if being_written(path):
            raise ResumeError(
                f"{path}: cannot resume: a run is still writing this log; "
                "wait for it to end, or interrupt it"
            )
        result = await areplay(path, tape_type=tape, run=count_runs(path) or 1)
    except (LogError, OSError) as exc:
        raise ResumeError(str(exc)) from None
    except Divergence as exc:
        raise ResumeError(
            f"{path}: cannot resume: the log does not replay to its end ({exc})"
        ) from None
    return Resumed(
        messages=tuple(result.messages.items),
        config=config_of(log, tapes[0].header),  # the last run's, in a log of several
        session_id=log.header.get("session_id", ""),
        path=path.resolve(),  # a new log's `parent` must lead here from any directory
        read_files=dict(result.read_files),
        cut_short=tapes[0].cut_at,
    )


def follow_up(messages: Sequence[Message], prompt: str) -> list[Message]:
    """The conversation so far plus the user's next message.

    A conversation that already ends with a user message (tool results left
    by `max_turns`, an interrupted tool batch) gets the prompt appended to
    that message, so roles keep alternating.
    """
    history = list(messages)
    if history and history[-1].role == "user" and not history[-1].is_meta:
        last = history.pop()
        history.append(Message("user", (*last.content, TextBlock(prompt))))
    else:
        history.append(Message("user", (TextBlock(prompt),)))
    return history
