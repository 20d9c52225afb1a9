"""Property-based tests of the engine: random scripted runs through the real loop.

Each example is a scenario (docs/scenarios.md) drawn at random: turns of text,
thinking and tool calls (valid and invalid inputs, unknown tools, several per
turn) on a small workspace, cut answers, API errors, dropped streams,
interrupts, and run options (turn limit, permission mode and rules, hooks,
token budget, small context windows). It runs through `arun_scenario`, with
real tools and a real log, and every run must keep the engine's invariants:
a walk along `EDGES` to a final state, a conversation the Messages API
takes, the turn count, a log that matches its schema and replays to the same
states touching nothing, and a debugger stepper that walks it both ways.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import subprocess
import tempfile
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, get_args
from unittest import mock

import jsonschema
from attrs import evolve, frozen
from hypothesis import example, given
from hypothesis import strategies as st

import fsm_agent.live.scripted as scripted_module
import fsm_agent.tape.stepper as stepper_module
from fsm_agent.app.fork import ForkPoint, afork
from fsm_agent.app.history import aresume, follow_up
from fsm_agent.app.replaying import areplay
from fsm_agent.app.session import arun, arun_scenario
from fsm_agent.context.levels import CLEARED, IMAGE_PLACEHOLDER
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    AssistantMessage,
    DriverEvent,
    ModelEvent,
    ResponseUsage,
    ToolFinished,
    ToolRefused,
    Transition,
)
from fsm_agent.core.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.model import ModelRequest
from fsm_agent.engine.driver import LoopResult
from fsm_agent.engine.machine import EDGES, FINAL_STATES, INITIAL, TERMINAL_REASONS
from fsm_agent.engine.reasons import PROMPT_BLOCKED
from fsm_agent.live.effects import Inbox
from fsm_agent.live.scripted import Scenario, ScriptedHooks, ScriptedModel, StopReason
from fsm_agent.policy.permissions import MODES
from fsm_agent.tape.divergence import LogEnded
from fsm_agent.tape.header import config_of
from fsm_agent.tape.log import SessionLog
from fsm_agent.tape.stepper import Stepper
from tests.conftest import ROOT, examples

SCHEMA = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
EDGE_STEPS = {(e.source.value, e.name, e.dest) for e in EDGES}


def _png() -> bytes:
    """A 1×1 PNG: a Read of it answers with an image, which a media error strips."""
    row = zlib.compress(b"\x00\xff\x00\x00")
    chunks = [
        (b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)),
        (b"IDAT", row),
        (b"IEND", b""),
    ]
    body = b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        for kind, data in chunks
    )
    return b"\x89PNG\r\n\x1a\n" + body


FILES: dict[str, str | bytes] = {
    "a.txt": "alpha\nbeta\n",
    "sub/b.py": "print('b')\n",
    "sub/c.md": "# c\nalpha\n",
    "pic.png": _png(),
}
"""The scratch workspace every example starts from."""

CALLS: dict[str, list[dict[str, Any]]] = {
    "Read": [
        {"file_path": "a.txt"},
        {"file_path": "pic.png"},
        {"file_path": "sub/b.py", "offset": 1, "limit": 1},
        {"file_path": "missing.txt"},
        {"file_path": "sub"},
        {"file_path": 3},
        {},
        {"file_path": "a.txt", "bogus": True},
        {"file_path": "../outside.txt"},
    ],
    "Write": [
        {"file_path": "new.txt", "content": "new\n"},
        {"file_path": "a.txt", "content": "changed\n"},
        {"file_path": "sub/deeper/n.txt", "content": "n\n"},
        {"file_path": "../outside.txt", "content": "out\n"},
        {"file_path": "w.txt"},
    ],
    "Edit": [
        {"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"},
        {"file_path": "a.txt", "old_string": "zzz", "new_string": "y"},
        {"file_path": "missing.txt", "old_string": "a", "new_string": "b"},
        {"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": True},
        {"file_path": "a.txt"},
    ],
    "Bash": [
        {"command": "echo hi"},
        {"command": "cat a.txt"},
        {"command": "ls sub"},
        {"command": "exit 3"},
        {"command": "echo made > made.txt"},
        {"command": ""},
        {"command": "echo hi", "timeout": -1},
        {"command": "echo hi", "run_in_background": True},
    ],
    "Glob": [
        {"pattern": "*.txt"},
        {"pattern": "**/*.py"},
        {"pattern": "["},
        {"pattern": "*", "path": "nope"},
    ],
    "Grep": [
        {"pattern": "alpha"},
        {"pattern": "("},
        {"pattern": "a", "output_mode": "content", "-n": True},
        {"pattern": "x", "output_mode": "bogus"},
    ],
    "Frobnicate": [{"x": 1}],
    "read": [{"file_path": "a.txt"}],
}

ERRORS = {
    "prompt_too_long": ("prompt is too long: 210000 tokens > 200000 maximum", 400),
    "media": ("messages.1.content.0.image.source: image exceeds 5 MB maximum", 400),
    "overloaded": ("Overloaded", 529),
    "api": ("invalid x-api-key", 401),
    "rate_limit": ("rate limited", 429),
    "connection": ("connection reset", None),
    "server": ("internal server error", 500),
    "incomplete_stream": ("the stream ended early", None),
    "invalid_response": ("not an event", None),
}

STOP_REASONS = list(get_args(StopReason))

HOOK_OUTCOMES: dict[str, list[dict[str, Any]]] = {
    "Stop": [
        {},
        {"blocking_errors": ["Run the tests first."]},
        {"prevent_continuation": True, "stop_reason": "enough"},
        {"additional_context": ["one more thing"]},
        {"interrupted": True},
    ],
    "PreToolUse": [
        {},
        {"permission_decision": "allow"},
        {"permission_decision": "deny", "permission_reason": "not now"},
        {"permission_decision": "ask"},
        {"blocking_errors": ["blocked by a hook"]},
        {"prevent_continuation": True, "stop_reason": "hook says stop"},
        {"updated_input": {"file_path": "a.txt"}},
    ],
    "PostToolUse": [
        {},
        {"blocking_errors": ["post says no"]},
        {"additional_context": ["post context"]},
        {"prevent_continuation": True, "stop_reason": "post stop"},
        {"updated_outputs": ["replaced output"]},
    ],
    "PostToolUseFailure": [{}, {"additional_context": ["failed, see"]}],
    "PostToolBatch": [
        {},
        {"blocking_errors": ["batch says no"]},
        {"prevent_continuation": True, "stop_reason": "batch stop"},
        {"interrupted": True},
        {"additional_context": ["batch context"]},
    ],
    "PermissionRequest": [
        {},
        {"permission_decision": "allow"},
        {"permission_decision": "deny", "permission_reason": "no", "interrupt": True},
    ],
    "UserPromptSubmit": [{}, {"additional_context": ["ctx"]}, {"blocking_errors": ["no prompt"]}],
    "SessionStart": [{}, {"additional_context": ["session ctx"]}],
    "PreCompact": [{}, {"blocking_errors": ["do not compact"]}],
    "PostCompact": [{}],
}

COMMAND_HOOKS = [
    ("PreToolUse", "Bash", "echo 'no shell today' >&2; exit 2"),
    ("PreToolUse", "*", "exit 0"),
    ("PostToolUse", "Write|Edit", 'echo \'{"decision": "block", "reason": "check it"}\''),
    ("Stop", "", 'echo \'{"continue": false, "stopReason": "halt"}\''),
    ("UserPromptSubmit", "", "echo 'context from a hook'"),
    ("PostToolBatch", "", "echo 'batch blocked' >&2; exit 2"),
    ("Notification", "", "exit 0"),
]
"""Command hooks in Claude Code's settings format: (event, matcher, command)."""

RULES = [
    "Bash(echo:*)",
    "Bash(cat a.txt)",
    "Write(new.txt)",
    "Edit",
    "Read",
    "Write",
    "Bash",
    "Glob",
]


@st.composite
def tool_use(draw: st.DrawFn, ident: str) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(CALLS)))
    return {
        "type": "tool_use",
        "id": ident,
        "name": name,
        "input": draw(st.sampled_from(CALLS[name])),
    }


TEXT = st.sampled_from(["", "Done.", "Let me look.", "naïve ✓ 日本", "x" * 40])


@st.composite
def turn(draw: st.DrawFn, number: int, window: int | None, last: bool) -> dict[str, Any]:
    """A turn; one not the last mostly calls tools, so that runs go round. With a small
    `window`, its usage often passes one of the context pipeline's thresholds."""
    content: list[dict[str, Any]] = []
    calls = 0
    kinds = ["text", "thinking", "redacted", "tool"] + ["text"] * 2 + ["tool"] * (1 if last else 5)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind == "text":
            content.append({"type": "text", "text": draw(TEXT)})
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": "hmm", "signature": "sig"})
        elif kind == "redacted":
            content.append({"type": "redacted_thinking", "data": "opaque"})
        else:
            calls += 1
            turn_tag = draw(st.sampled_from([number, number, 0]))  # 0: an id another turn used
            content.append(draw(tool_use(f"toolu_{turn_tag:02d}_{calls}")))
    out: dict[str, Any] = {"content": content}
    if draw(st.integers(0, 3)) == 0:
        out["stop_reason"] = draw(st.sampled_from(STOP_REASONS))
    if calls and draw(st.integers(0, 4)) == 0:
        out["cut_tool_input"] = True
    if draw(st.integers(0, 9)) == 0 or (window and draw(st.integers(0, 5)) == 0):
        kind = draw(st.sampled_from([*sorted(ERRORS), "prompt_too_long", "media"]))
        message, status = ERRORS[kind]
        out["error"] = {"kind": kind, "message": message, "status": status}
    if draw(st.integers(0, 14)) == 0:
        out["cut_after"] = draw(st.integers(0, 12))
    if calls and draw(st.integers(0, 9)) == 0:
        out["event_delay"] = 0.002
    if draw(st.integers(0, 19)) == 0:
        out["interrupt"] = draw(st.sampled_from(["streaming", "tools"]))
    if window and draw(st.booleans()):
        share = draw(st.sampled_from([0.05, 0.3, 0.45, 0.55, 0.62, 0.66, 0.7, 0.85, 0.95]))
        out["usage"] = {
            "input_tokens": int(window * share),
            "output_tokens": draw(st.integers(0, 3_000)),
            "cache_read_input_tokens": draw(st.integers(0, 500)),
        }
    return out


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario with 1 to 7 turns and random options; valid, as the format takes it."""
    config: dict[str, Any] = {"permission_mode": draw(st.sampled_from(MODES))}
    if draw(st.booleans()):
        config["max_turns"] = draw(st.integers(1, 5))
    if draw(st.integers(0, 3)) == 0:
        config["token_budget"] = draw(st.integers(1, 4_000))
    window = draw(st.sampled_from([None, 40_000, 50_000, 100_000]))
    if window:
        config["context_window"] = window
        config["autocompact"] = draw(st.booleans())
        if draw(st.booleans()):
            config["snip_threshold"] = draw(st.integers(0, 30_000))
    if draw(st.integers(0, 3)) == 0:
        config["fallback_model"] = "scripted-fallback"
    count = draw(st.integers(1, 8))
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event in draw(st.lists(st.sampled_from(sorted(HOOK_OUTCOMES)), max_size=3, unique=True)):
        hooks[event] = draw(st.lists(st.sampled_from(HOOK_OUTCOMES[event]), min_size=1, max_size=4))
    data: dict[str, Any] = {
        "prompt": draw(st.sampled_from(["Do the thing.", "Fix a.txt", "Ünïcode ✓"])),
        "config": config,
        "turns": [draw(turn(n, window, n == count - 1)) for n in range(count)],
    }
    if hooks:
        data["hooks"] = hooks
    settings: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        allow = draw(st.lists(st.sampled_from(RULES), max_size=3, unique=True))
        deny = draw(st.lists(st.sampled_from(RULES), max_size=1, unique=True))
        settings["permissions"] = {"allow": allow, "deny": deny}
    if draw(st.integers(0, 7)) == 0:
        event, matcher, command = draw(st.sampled_from(COMMAND_HOOKS))
        settings["hooks"] = {
            event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]
        }
    if settings:
        data["settings"] = settings
    return data


@st.composite
def long_sessions(draw: st.DrawFn) -> dict[str, Any]:
    """Tool rounds whose usage climbs through the context pipeline's thresholds on a
    small window, with summaries, prompt-too-long and media errors among them: the
    paths of collapse, snip, microcompact, autocompact and reactive compaction."""
    window = draw(st.sampled_from([40_000, 50_000, 100_000]))
    config: dict[str, Any] = {
        "permission_mode": "bypassPermissions",
        "context_window": window,
        "autocompact": draw(st.booleans()),
    }
    if draw(st.booleans()):
        config["snip_threshold"] = int(window * draw(st.sampled_from([0.2, 0.4, 0.6])))
    turns: list[dict[str, Any]] = []
    shares = st.sampled_from([0.05, 0.1, 0.2, 0.3, 0.45, 0.55, 0.62, 0.65, 0.7, 0.8, 1.0])
    for n in range(draw(st.integers(2, 8))):
        usage = {"input_tokens": int(window * draw(shares)), "output_tokens": 50}
        kind = draw(st.sampled_from(["round"] * 6 + ["summary", "error", "error"]))
        if kind == "round":
            call = draw(tool_use(f"toolu_{n:02d}_1"))
            turns.append({"content": [{"type": "text", "text": "Looking."}, call], "usage": usage})
        elif kind == "summary":
            text = draw(st.sampled_from(["<summary>So far: read a.txt.</summary>", "", "plain"]))
            turns.append({"content": [{"type": "text", "text": text}], "usage": usage})
        else:
            error = draw(
                st.sampled_from(["prompt_too_long", "prompt_too_long", "media", "overloaded"])
            )
            message, status = ERRORS[error]
            error_turn = {"kind": error, "message": message, "status": status}
            turns.append({"content": [], "error": error_turn})
    turns.append({"content": [{"type": "text", "text": "Done."}]})
    hooks: dict[str, Any] = {}
    if draw(st.booleans()):
        hooks["PreCompact"] = draw(
            st.lists(st.sampled_from(HOOK_OUTCOMES["PreCompact"]), min_size=1, max_size=3)
        )
    data: dict[str, Any] = {"prompt": "Read the files.", "config": config, "turns": turns}
    if hooks:
        data["hooks"] = hooks
    return data


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    """Run options a scenario does not set, as a Python caller's `RunConfig` does, and
    messages the user typed ahead (`typed_ahead`, queued for the first attachments)."""
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["stop_hook_block_cap"] = draw(st.sampled_from([0, 1, 2]))
    if draw(st.booleans()):
        out["streaming_tools"] = False
    if draw(st.booleans()):
        out["max_tool_concurrency"] = 1
    if draw(st.booleans()):
        out["structured_results"] = True
    if draw(st.booleans()):
        out["max_output_tokens"] = draw(st.sampled_from([1, 100, 64_000]))
    if draw(st.integers(0, 3)) == 0:
        out["typed_ahead"] = draw(
            st.lists(st.sampled_from(["also this", "and ✓ that"]), max_size=2)
        )
    if draw(st.booleans()):
        out["escalated_max_output_tokens"] = draw(st.sampled_from([1, 200, 8_000]))
    return out


# --- running one ------------------------------------------------------------------


class _Watched(ScriptedModel):
    """The scripted model, keeping every request the engine made."""

    requests: ClassVar[list[ModelRequest]] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        _Watched.requests.append(request)
        return super().stream(request)


@contextmanager
def _no_world(touched: list[str]) -> Iterator[None]:
    """Starting a process or opening a connection is noted (and refused)."""

    def refuse(what: str) -> Any:
        def go(*args: Any, **kwargs: Any) -> Any:
            touched.append(what)
            raise OSError(f"replay touched the world: {what}")

        return go

    with (
        mock.patch.object(subprocess, "Popen", side_effect=refuse("Popen")),
        mock.patch.object(asyncio, "create_subprocess_exec", refuse("exec")),
        mock.patch.object(asyncio, "create_subprocess_shell", refuse("shell")),
        mock.patch.object(socket.socket, "connect", refuse("connect")),
    ):
        yield


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    for name, text in FILES.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (ws / name).write_bytes(text)
        else:
            (ws / name).write_text(text)
    return ws


@frozen
class Live:
    result: LoopResult
    requests: list[ModelRequest]
    log: Path
    events: list[DriverEvent]


def _live(data: dict[str, Any], root: Path, knobs: dict[str, Any] | None = None) -> Live:
    scenario = Scenario.parse(data, "the drawn scenario")
    ws = _workspace(root)
    log = root / "run.jsonl"
    _Watched.requests = []
    events: list[DriverEvent] = []
    options = dict(knobs or {})
    inbox = Inbox()
    for text in options.pop("typed_ahead", ()):
        inbox.put(text)
    config = RunConfig(**options)
    with mock.patch.object(scripted_module, "ScriptedModel", _Watched):
        result = asyncio.run(
            arun_scenario(
                scenario, cwd=ws, log=log, config=config, on_event=events.append, inbox=inbox
            )
        )
    return Live(result, list(_Watched.requests), log, events)


def _images_stripped(block: ToolResultBlock) -> ToolResultBlock:
    if isinstance(block.content, str):
        return block
    content = tuple(
        TextBlock(IMAGE_PLACEHOLDER) if isinstance(b, ImageBlock) else b for b in block.content
    )
    return evolve(block, content=content)


def _check_events(live: Live, earlier: tuple[Message, ...] = ()) -> None:
    """The run's usage is its responses' (`ResponseUsage`), its transitions its path, and
    every call answered in the conversation was reported answered with that result
    (unless microcompact has cleared it since or reactive compaction stripped its
    images, or an `earlier` run answered it)."""
    result, events = live.result, live.events
    total = Usage()
    for event in events:
        if isinstance(event, ResponseUsage):
            total += event.usage
    assert result.usage == total
    moves = [(e.source, e.edge, e.dest) for e in events if isinstance(e, Transition)]
    assert moves == [(s.source, s.edge, s.dest) for s in result.path]
    reported = [e.result for e in events if isinstance(e, ToolFinished | ToolRefused)]
    reported += [b for m in earlier for b in m.content if isinstance(b, ToolResultBlock)]
    for message in result.messages.items:
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.content != CLEARED:
                assert _images_stripped(block) in [_images_stripped(r) for r in reported], (
                    f"{block.tool_use_id}'s result was not reported"
                )


# --- the invariants -----------------------------------------------------------------


def _check_walk(result: LoopResult) -> None:
    if result.reason == PROMPT_BLOCKED:  # the machine's first edge, and only there
        assert result.edges == (PROMPT_BLOCKED,)
    else:
        assert result.reason in TERMINAL_REASONS
    at = INITIAL
    for step in result.path:
        assert step.source == at, f"{step} does not leave {at}"
        assert (step.source, step.edge, step.dest) in EDGE_STEPS, f"{step} is not an edge"
        assert at not in FINAL_STATES
        at = step.dest
    assert at == result.reason and at in FINAL_STATES


def _check_pairs(messages: tuple[Message, ...], where: str, *, open_end: bool) -> None:
    """Each tool_use answered once, in the next (user) message, and nothing else answered;
    the first message the user's and no two answers in a row. `open_end`: the last
    message may be an answer whose calls are not answered yet (a request's view)."""
    assert messages and messages[0].role == "user", f"{where}: does not start with the user"
    for i, message in enumerate(messages):
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        if message.role == "assistant":
            assert not results, f"{where}: tool_result in an answer (message {i})"
            assert i == 0 or messages[i - 1].role == "user", f"{where}: two answers in a row at {i}"
            uses = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
            assert len(uses) == len(set(uses)), f"{where}: a tool_use id twice in message {i}"
            if i + 1 == len(messages):
                assert open_end or not uses, f"{where}: the last answer's calls {uses} unanswered"
                continue
            after = messages[i + 1]
            answered = [b.tool_use_id for b in after.content if isinstance(b, ToolResultBlock)]
            assert after.role == "user", f"{where}: two answers in a row at {i + 1}"
            assert sorted(answered) == sorted(uses), (
                f"{where}: message {i} calls {uses}, message {i + 1} answers {answered}"
            )
            lead = [isinstance(b, ToolResultBlock) for b in after.content]
            assert lead == sorted(lead, reverse=True), f"{where}: tool_result after text at {i + 1}"
        else:
            assert not any(isinstance(b, ToolUseBlock) for b in message.content)
            if results:
                before = messages[i - 1] if i else None
                assert before is not None and before.role == "assistant", (
                    f"{where}: tool_results in message {i} answer no answer"
                )


def _check_messages(result: LoopResult, requests: list[ModelRequest]) -> None:
    if result.reason == PROMPT_BLOCKED:  # the blocked prompt is taken out, as Claude Code does
        assert not requests
        return
    _check_pairs(result.messages.items, "final messages", open_end=False)
    _check_pairs(
        tuple(follow_up(result.messages.items, "Go on.")), "the next message", open_end=False
    )
    for n, request in enumerate(requests, start=1):
        items = request.messages.items
        _check_pairs(items, f"request {n} ({request.purpose})", open_end=False)
        assert items[-1].role == "user", f"request {n} ends with an answer"


def _records(log: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = log.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def _check_log(log: Path, result: LoopResult, data: dict[str, Any]) -> list[dict[str, Any]]:
    header, records = _records(log)
    for record in (header, *records):
        errors = sorted(VALIDATOR.iter_errors(record), key=str)
        assert not errors, f"{record.get('t', 'header')}: {errors[0].message}"
    transitions = [r for r in records if r["t"] == "transition"]
    assert [(r["from"], r["edge"], r["to"]) for r in transitions] == [
        (s.source, s.edge, s.dest) for s in result.path
    ]
    assert records[-1]["t"] == "result" and records[-1]["reason"] == result.reason
    turns = 1
    for record in transitions:
        turns += record["edge"] == "next_turn"
        assert record["turn"] == turns, f"step {record['step']}: turn {record['turn']}, not {turns}"
    max_turns = data["config"].get("max_turns")
    if max_turns is not None:
        assert result.turns <= max_turns
        if result.reason == "max_turns":
            assert result.turns == max_turns
    cut, whole = set(), set()
    for t in data["turns"]:
        ids = [b["id"] for b in t["content"] if b["type"] == "tool_use"]
        if t.get("cut_tool_input"):
            cut.add(ids.pop())
        whole.update(ids)
    cut -= whole  # an id another turn calls whole may run there
    ran = {r["args"]["id"] for r in records if r["t"] == "effect" and r["name"] == "tool"}
    assert not cut & ran, f"calls cut short were run: {sorted(cut & ran)}"
    return transitions


def _shown(events: list[DriverEvent]) -> tuple[list[Any], Counter[str]]:
    """What a replay must show again: the stream and the transitions in order, and the
    other events (calls that run side by side finish in any order) as a multiset; a
    call's duration is the clock's."""
    ordered = [e for e in events if isinstance(e, Transition | AssistantMessage | ModelEvent)]
    rest = Counter(
        repr(evolve(e, duration_s=0.0) if isinstance(e, ToolFinished) else e)
        for e in events
        if not isinstance(e, Transition | AssistantMessage | ModelEvent)
    )
    return ordered, rest


def _check_replay(
    log: Path, result: LoopResult, root: Path, events: list[DriverEvent] | None = None
) -> None:
    before = _tree(root)
    touched: list[str] = []
    shown: list[DriverEvent] = []
    with _no_world(touched):
        again = asyncio.run(areplay(log, on_event=shown.append))
    if events is not None:
        assert _shown(shown) == _shown(events)
    assert not touched, touched
    assert _tree(root) == before
    assert again.reason == result.reason
    assert again.path == result.path
    assert again.turns == result.turns
    assert again.usage == result.usage
    assert again.messages.digest == result.messages.digest
    assert (again.error, again.api_error_status, again.model, again.read_files) == (
        result.error,
        result.api_error_status,
        result.model,
        result.read_files,
    )


def _check_stepper(
    log: Path, transitions: list[dict[str, Any]], jumps: list[float], requests: list[ModelRequest]
) -> None:
    """Forward to the end, back to the start, then to random steps, with a cache of two
    states so that going back replays again from the start; the requests each step
    made are the run's, and a breakpoint on an edge stops at its next step."""
    stepper = Stepper(log)
    steps = len(transitions)
    try:
        assert stepper.index.steps == steps
        order = [*range(1, steps + 1), *range(steps, 0, -1), *(1 + int(j * steps) for j in jumps)]
        for n in (n for n in order if n <= steps):
            info = stepper.at(n)
            assert info is not None, f"the stepper stops before step {n}: {stepper.stopped_by!r}"
            record = transitions[n - 1]
            assert (info.source, info.edge, info.dest) == (
                record["from"],
                record["edge"],
                record["to"],
            )
            assert info.state.digest() == record["state"], f"step {n}'s state"
        assert stepper.at(steps + 1) is None
        assert stepper.stopped_by is None
        made = [r.digest() for n in range(1, steps + 1) for r in stepper.requests(n)]
        assert made == [r.digest() for r in requests]
        for j in jumps:
            after = int(j * steps)
            edge = transitions[min(after + 1, steps - 1)]["edge"] if steps else ""
            found = stepper.run_until(after, lambda info, edge=edge: info.edge == edge)
            want = next(
                (n for n in range(after + 1, steps + 1) if transitions[n - 1]["edge"] == edge), None
            )
            assert (found.step if found else None) == want
    finally:
        stepper.close()


def _parses(line: bytes) -> bool:
    """A torn last line is left out by the reader, unless it was torn at its newline."""
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _check_cut_log(log: Path, root: Path, keep: float) -> None:
    """The log's first bytes, as a run killed at any moment leaves them (the header and
    `start` written, the last line maybe torn), replay as far as they go, and resume to
    a conversation the API takes, every call answered."""
    raw = log.read_bytes()
    lines = raw.splitlines(keepends=True)
    floor = len(lines[0]) + len(lines[1])
    kept = raw[: floor + int(keep * (len(raw) - floor))]
    cut = root / "cut.jsonl"
    cut.write_bytes(kept)
    whole = [json.loads(line) for line in kept.splitlines()[1:] if _parses(line)]
    held = sum(r["t"] == "transition" for r in whole)
    ended = any(r["t"] == "result" for r in whole)
    final = ended or any(r.get("to") in FINAL_STATES for r in whole)
    try:
        asyncio.run(areplay(cut))
    except LogEnded as exc:
        assert not ended
        assert exc.matched == held
    else:
        assert ended
    resumed = asyncio.run(aresume(cut))
    assert resumed.cut_short == (None if final else held)
    if not resumed.messages:  # a blocked prompt is taken out
        return
    _check_pairs(resumed.messages, "the resumed conversation", open_end=False)
    _check_pairs(
        tuple(follow_up(resumed.messages, "Go on.")), "the resumed follow-up", open_end=False
    )


def check_run(
    data: dict[str, Any],
    jumps: list[float] = [],  # noqa: B006
    keep: float = 1.0,
    knobs: dict[str, Any] | None = None,
) -> LoopResult:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        live = _live(data, root, knobs)
        result, requests, log = live.result, live.requests, live.log
        _check_walk(result)
        _check_events(live)
        _check_messages(result, requests)
        transitions = _check_log(log, result, data)
        _check_replay(log, result, root, live.events)
        with mock.patch.object(stepper_module, "CACHE", 2):
            _check_stepper(log, transitions, jumps, requests)
        _check_cut_log(log, root, keep)
        return result


@examples(80)
@given(scenarios(), st.lists(st.floats(0, 0.999), max_size=4), st.floats(0, 1), knobs())
def test_every_run_keeps_the_engine_s_invariants(
    data: dict[str, Any], jumps: list[float], keep: float, knobs: dict[str, Any]
) -> None:
    """Any scripted run ends in a final state along `EDGES`, never raising; its final
    messages and every request pair each tool_use with one tool_result in the next
    user message and never put two answers in a row; the turn count grows by one per
    `next_turn` and stays within max_turns; no call cut short is run; its log matches
    the schema, replays to the same path, states and messages touching no file,
    process or socket, the stepper walks it forward, back and at random to the same
    states, and its first lines alone replay up to where they end."""
    check_run(data, jumps, keep, knobs)


def check_fork(parent: dict[str, Any], then: dict[str, Any], at: float) -> LoopResult | None:
    """Fork the parent's run at a step it did not end on, going on with `then`'s turns
    and hooks in a fresh workspace, as `replay --fork-at N --scripted` does."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        parent_run = _live(parent, root / "parent")
        first, log = parent_run.result, parent_run.log
        if len(first.path) < 2:
            return None
        step = int(at * (len(first.path) - 1))
        ws = _workspace(root / "fork")
        continuation = Scenario.parse(then, "the drawn continuation")
        abort = AbortSignal()
        _Watched.requests = []
        fork_log = root / "fork.jsonl"
        result = asyncio.run(
            afork(
                log,
                ForkPoint(step=step),
                model=_Watched(continuation, abort),
                hooks=ScriptedHooks(continuation.hooks),
                config_changes={"cwd": str(ws)},
                log=fork_log,
                abort=abort,
            )
        )
        assert result.path[:step] == first.path[:step]
        _check_walk(result)
        _check_messages(result, list(_Watched.requests))
        header, records = _records(fork_log)
        assert header["parent"] == {"log": str(log.resolve()), "step": step}
        for record in (header, *records):
            assert not list(VALIDATOR.iter_errors(record))
        _check_replay(fork_log, result, root)
        return result


@examples(30)
@given(scenarios(), scenarios(), st.floats(0, 0.999))
def test_a_fork_of_any_run_keeps_the_engine_s_invariants(
    parent: dict[str, Any], then: dict[str, Any], at: float
) -> None:
    """A fork at any step a run did not end on takes the parent's path up to it, then
    goes on live to a final state along `EDGES`, with a conversation the API takes,
    and writes a log that matches the schema and replays on its own to the same
    path, states and messages, touching nothing."""
    check_fork(parent, then, at)


def check_follow_up(first: dict[str, Any], then: dict[str, Any]) -> LoopResult:
    """A chat's next message: the first run's conversation and the user's next message,
    run on with `then`'s turns and hooks, with the configuration, the files read and the
    session the first run left (as `launch.RunPlan` carries them)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        before = _live(first, root)
        config = evolve(config_of(SessionLog(before.log)), session_source=None)
        second = Scenario.parse(then, "the drawn next message")
        abort = AbortSignal()
        _Watched.requests = []
        events: list[DriverEvent] = []
        log = root / "next.jsonl"
        result = asyncio.run(
            arun(
                follow_up(before.result.messages.items, "Go on."),
                model=_Watched(second, abort),
                config=config,
                hooks=ScriptedHooks(second.hooks),
                log=log,
                abort=abort,
                on_event=events.append,
                read_files=before.result.read_files,
                header_extra={"parent": {"log": str(before.log), "session_id": "s"}},
            )
        )
        live = Live(result, list(_Watched.requests), log, events)
        _check_walk(result)
        _check_events(live, before.result.messages.items)
        _check_messages(result, live.requests)
        header, records = _records(log)
        for record in (header, *records):
            assert not list(VALIDATOR.iter_errors(record))
        _check_replay(log, result, root)
        return result


def _round(n: int, tokens: int) -> dict[str, Any]:
    call = {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"file_path": "a.txt"}}
    return {"content": [call], "usage": {"input_tokens": tokens, "output_tokens": 50}}


TOO_LONG = {
    "content": [],
    "error": {"kind": "prompt_too_long", "message": "too long", "status": 400},
}
DONE = {"content": [{"type": "text", "text": "Done."}]}
COLLAPSE_DRAIN = {
    "prompt": "Read the files.",
    "config": {
        "permission_mode": "bypassPermissions",
        "context_window": 100_000,
        "autocompact": False,
    },
    "turns": [_round(1, 10_000), _round(2, 10_000), _round(3, 62_000), TOO_LONG, DONE],
}
"""A collapse staged past 60% of the window, drained by the prompt-too-long that follows."""
REACTIVE_COMPACT = {
    **COLLAPSE_DRAIN,
    "turns": [_round(1, 10_000), _round(2, 10_000), TOO_LONG, DONE],
}
"""Two rounds, then a prompt-too-long with nothing staged: reactive compaction, then the retry."""


@examples(40)
@example(COLLAPSE_DRAIN, {})
@example(REACTIVE_COMPACT, {})
@given(long_sessions(), knobs())
def test_every_long_session_keeps_the_engine_s_invariants(
    data: dict[str, Any], knobs: dict[str, Any]
) -> None:
    """As `test_every_run_keeps_the_engine_s_invariants`, for runs that go through
    the context pipeline's levels and its recoveries."""
    check_run(data, knobs=knobs)


@examples(30)
@given(scenarios(), scenarios())
def test_a_chat_s_next_message_keeps_the_engine_s_invariants(
    first: dict[str, Any], then: dict[str, Any]
) -> None:
    """Whatever way a run ended, the conversation it leaves with the user's next message
    is one the next run takes: it ends in a final state along `EDGES`, its requests
    and conversation pair every tool_use with its result, and its log replays."""
    check_follow_up(first, then)


def check_edit_fork(parent: dict[str, Any], then: dict[str, Any], at: float, pick: float) -> None:
    """Fork the parent's run at one of its effects, its result replaced by another recorded
    result of the same effect (another turn's stream, another call's outcome, another
    hook's answer), going on with `then`, as `replay --edit-effect K FILE --scripted` does."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        parent_run = _live(parent, root / "parent")
        # as a reader gives them: a packed model result's deltas split again, its blobs put back
        effects = [r for _, r in SessionLog(parent_run.log).records() if r["t"] == "effect"]
        if not effects:
            return
        number = 1 + int(at * len(effects))
        edited = effects[number - 1]
        same = [r["result"] for r in effects if r["name"] == edited["name"]]
        result_to_use = same[int(pick * len(same))]
        continuation = Scenario.parse(then, "the drawn continuation")
        abort = AbortSignal()
        _Watched.requests = []
        events: list[DriverEvent] = []
        fork_log = root / "fork.jsonl"
        result = asyncio.run(
            afork(
                parent_run.log,
                ForkPoint(effect=number, result=result_to_use),
                model=_Watched(continuation, abort),
                hooks=ScriptedHooks(continuation.hooks),
                config_changes={"cwd": str(_workspace(root / "fork"))},
                log=fork_log,
                abort=abort,
                on_event=events.append,
            )
        )
        _check_walk(result)
        _check_messages(result, list(_Watched.requests))
        header, records = _records(fork_log)
        for record in (header, *records):
            assert not list(VALIDATOR.iter_errors(record))
        _check_replay(fork_log, result, root)


@examples(30)
@given(scenarios(), scenarios(), st.floats(0, 0.999), st.floats(0, 0.999))
def test_a_what_if_fork_of_any_run_keeps_the_engine_s_invariants(
    parent: dict[str, Any], then: dict[str, Any], at: float, pick: float
) -> None:
    """A fork at any effect of a run, its result edited to another the run recorded for
    that effect, ends in a final state along `EDGES` with a conversation the API takes,
    and its log replays on its own touching nothing."""
    check_edit_fork(parent, then, at, pick)
