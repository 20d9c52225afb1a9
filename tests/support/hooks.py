"""Command hooks as Claude Code users write them (shell scripts reading stdin JSON), and
the runs that exercise them."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.live.scripted import Scenario


def script(path: Path, body: str) -> str:
    """An executable `/bin/sh` script at `path`; its path, as a hook's command."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


CAPTURE = """\
cat > "$CLAUDE_PROJECT_DIR/{name}.json"
{rest}
"""


def capture(tmp_path: Path, name: str, rest: str = "exit 0") -> str:
    """A hook that keeps its stdin in the workspace as `{name}.json`, then runs `rest`."""
    return script(tmp_path / f"{name}.sh", CAPTURE.format(name=name, rest=rest))


def tool_turn(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A scenario turn of tool calls, each (id, tool name, input)."""
    return {
        "content": [{"type": "tool_use", "id": i, "name": n, "input": inp} for i, n, inp in calls]
    }


def results_by_id(result: Any) -> dict[str, ToolResultBlock]:
    """Every tool result of a run's conversation, by the id of its call."""
    return {
        b.tool_use_id: b
        for m in result.messages
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }


def effect_records(log: Path) -> list[dict[str, Any]]:
    """A log's effect records, in order."""
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in rows if r.get("t") == "effect"]


# --- PermissionRequest hooks --------------------------------------------------------------

ASKED = "touch made"
"""A command default mode asks about: not read-only, no rule allows it."""


def answering(tmp_path: Path, answer: dict[str, Any] | None, code: int = 0) -> str:
    """A hook that keeps every payload it gets (one JSON line each) and answers `answer`."""
    out = "" if answer is None else json.dumps(answer).replace("'", "'\\''")
    return script(
        tmp_path / "request.sh",
        f"cat >> {tmp_path / 'requests.jsonl'}\necho >> {tmp_path / 'requests.jsonl'}\n"
        + (f"echo '{out}'\n" if out else "")
        + "echo 'said on stderr' >&2\n"
        + f"exit {code}\n",
    )


def decision(behavior: str, **more: Any) -> dict[str, Any]:
    """A PermissionRequest hook's answer."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": behavior, **more},
        }
    }


def settings_with(hook: str, **permissions: Any) -> dict[str, Any]:
    """Settings with `hook` on PermissionRequest for Bash, and these permissions."""
    return {
        "permissions": permissions,
        "hooks": {
            "PermissionRequest": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}
            ]
        },
    }


def requests(tmp_path: Path) -> list[dict[str, Any]]:
    """The payloads an `answering` hook got."""
    path = tmp_path / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def bash_run(ws: Path, tmp_path: Path, settings: dict[str, Any], *commands: str, **kw: Any) -> Any:
    """A headless run (no prompter: no terminal) of one Bash call per command; the log
    replays to the same path and outcome."""
    turns = [
        tool_turn(*((f"t{n}", "Bash", {"command": c}) for n, c in enumerate(commands, 1))),
        {"content": "done"},
    ]
    log = tmp_path / f"run{len(list(tmp_path.glob('run*.jsonl')))}.jsonl"
    result = run_scenario(
        Scenario.parse({"prompt": "go", "settings": settings, "turns": turns}),
        cwd=ws,
        log=log,
        **kw,
    )
    again = replay(log)
    assert (again.path, again.reason, again.messages) == (
        result.path,
        result.reason,
        result.messages,
    )
    return result


# --- PostToolUse hooks and each tool's tool_response --------------------------------------

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
"""A 1×1 PNG image."""

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Write", {"file_path": "a.txt", "content": "one\ntwo\nthree\n"}),
    ("Read", {"file_path": "a.txt"}),
    ("Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "TWO"}),
    ("Write", {"file_path": "a.txt", "content": "one\nTWO\nfour\n"}),
    ("Bash", {"command": "echo out; echo err >&2"}),
    ("Glob", {"pattern": "*.txt"}),
    ("Grep", {"pattern": "TWO"}),
    ("Grep", {"pattern": "o", "output_mode": "content"}),
]
"""A call of each built-in tool, call `tN` being the Nth."""


def hooked_run(workspace: Path, tmp_path: Path) -> tuple[Any, dict[str, dict[str, Any]], Path]:
    """Every call of CALLS, one a turn, with a command hook on PostToolUse that writes
    its stdin to a file; the stdin it got, by tool_use_id, and the log."""
    sent = tmp_path / "post.jsonl"
    hook = script(tmp_path / "post.sh", f'{{ cat; echo; }} >> "{sent}"\n')
    settings = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]
        },
    }
    turns = [
        tool_turn((f"t{n}", name, tool_input)) for n, (name, tool_input) in enumerate(CALLS, 1)
    ]
    turns.append({"content": [{"type": "text", "text": "done"}]})
    data = {"prompt": "go", "config": {"permission_mode": "acceptEdits"}, "settings": settings}
    log = tmp_path / "run.jsonl"
    result = run_scenario(Scenario.parse({**data, "turns": turns}), cwd=workspace, log=log)
    assert result.reason == "completed"
    payloads = [json.loads(line) for line in sent.read_text().splitlines()]
    assert [p["hook_event_name"] for p in payloads] == ["PostToolUse"] * len(CALLS)
    return result, {p["tool_use_id"]: p for p in payloads}, log
