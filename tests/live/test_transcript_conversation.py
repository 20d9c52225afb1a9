"""A conversation's later runs keep one session: one transcript, one `sessionId`.

Measured on the real CLI (the first test): `claude -p --resume ID` and `--continue`
go on the session's own file under the same session id, in the lines, the result
and every hook's `session_id` and `transcript_path`. A chat's later runs and a
resumed run of fsm-agent do the same; each run still has a log of its own
(`ID.jsonl`, `ID.2.jsonl`, …).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from fsm_agent.live.transcript_writer import project_dir_name
from fsm_agent.tape.log import SessionLog
from tests.support.cli import fsm
from tests.support.messages_server import MessagesServer, text
from tests.support.real_claude import require_claude, run_claude, trusted_home

RECORD = "import json, sys; open({out!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')"


def _hooked(workspace: Path, out: Path) -> None:
    """A Stop hook in the workspace's settings that appends each payload to `out`."""
    command = f"{sys.executable} -c {json.dumps(RECORD.format(out=str(out)))}"
    (workspace / ".claude").mkdir()
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _said(entries: list[dict[str, Any]]) -> list[str]:
    """The user's and the model's texts, in the transcript's order."""
    out = []
    for e in entries:
        if e["type"] not in ("user", "assistant"):
            continue
        content = e["message"]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out += [b["text"] for b in blocks if b.get("type") == "text"]
    return out


THREE_RUNS = ["prompt 0", "answer 0", "prompt 1", "answer 1", "prompt 2", "answer 2"]


def _one_session(config_dir: Path, payloads: Path) -> tuple[str, list[dict[str, Any]]]:
    """The one transcript under `config_dir`: every chained line, and every hook's
    payload, names its session; its chain runs unbroken from the first line."""
    [path] = config_dir.glob("projects/*/*.jsonl")
    entries = [e for e in _lines(path) if "uuid" in e]
    session = path.stem
    assert {e["sessionId"] for e in entries} == {session}
    assert [e["parentUuid"] for e in entries[1:]] == [e["uuid"] for e in entries[:-1]]
    hooks = _lines(payloads)
    assert {(h["session_id"], h["transcript_path"]) for h in hooks} == {(session, str(path))}
    return session, entries


def test_the_real_cli_keeps_one_session_over_resume_and_continue(
    workspace: Path, tmp_path: Path
) -> None:
    require_claude()
    payloads = tmp_path / "hooks.jsonl"
    _hooked(workspace, payloads)
    home = trusted_home(tmp_path / "home", workspace)
    ids = []
    with MessagesServer() as server:
        for n, more in enumerate(([], ["--resume"], ["--continue"])):
            server.reply(text(f"answer {n}"))
            if more == ["--resume"]:
                more = ["--resume", ids[0]]
            run = run_claude(server, workspace, home, "-p", *more, f"prompt {n}",
                             "--output-format", "json", "--model", "claude-test-1")  # fmt: skip
            assert run.returncode == 0, run.stderr
            ids.append(run.json()["session_id"])
    session, entries = _one_session(home / ".claude", payloads)
    assert ids == [session] * 3
    assert _said(entries) == THREE_RUNS


def _scenario(tmp_path: Path, *answers: str) -> Path:
    path = tmp_path / f"answers-{len(list(tmp_path.glob('answers-*')))}.json"
    path.write_text(json.dumps({"turns": [{"content": a} for a in answers]}))
    return path


def test_a_chat_s_later_runs_keep_the_conversation_s_session(
    workspace: Path, tmp_path: Path
) -> None:
    payloads = tmp_path / "hooks.jsonl"
    _hooked(workspace, payloads)
    config_dir = tmp_path / "claude"
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    scenario = _scenario(tmp_path, "one", "two")
    where = ("--scripted", str(scenario), "--cwd", str(workspace))
    chat = fsm("chat", *where, input="a\nb\n", env=env)
    assert chat.returncode == 0, chat.stderr
    session, entries = _one_session(config_dir, payloads)
    assert _said(entries) == ["a", "one", "b", "two"]
    assert len(_lines(payloads)) == 2
    logs = workspace / ".fsm-agent" / "sessions"
    names = sorted(p.name for p in logs.glob("*.jsonl"))
    assert names == [f"{session}.2.jsonl", f"{session}.jsonl"]
    second = SessionLog(logs / f"{session}.2.jsonl").header
    assert second["session_id"] == session
    assert second["parent"] == {"log": str(logs / f"{session}.jsonl"), "session_id": session}


def test_a_resumed_run_goes_on_the_session_s_transcript(workspace: Path, tmp_path: Path) -> None:
    """`run --resume` as `claude -p --resume`: the same id, the same file, only the new
    lines added; `--resume ID` then finds the session's last run."""
    payloads = tmp_path / "hooks.jsonl"
    _hooked(workspace, payloads)
    config_dir = tmp_path / "claude"
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    ids = []
    for n, more in enumerate(([], ["--resume", "ID"], ["--resume", "ID"])):
        scenario = _scenario(tmp_path, f"answer {n}")
        more = [ids[0] if m == "ID" else m for m in more]
        proc = fsm("run", "--scripted", str(scenario), *more, f"prompt {n}",
                   "--output-format", "json", cwd=workspace, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        ids.append(json.loads(proc.stdout)["session_id"])
    session, entries = _one_session(config_dir, payloads)
    assert ids == [session] * 3
    assert _said(entries) == THREE_RUNS
    logs = workspace / ".fsm-agent" / "sessions"
    third = SessionLog(logs / f"{session}.3.jsonl").header
    assert third["parent"]["log"] == str(logs / f"{session}.2.jsonl")
    cwd = os.path.realpath(workspace)
    assert (config_dir / "projects" / project_dir_name(cwd) / f"{session}.jsonl").is_file()


def test_a_resume_without_the_session_s_transcript_writes_the_whole_conversation(
    workspace: Path, tmp_path: Path
) -> None:
    config_dir = tmp_path / "claude"
    first = fsm("run", "--scripted", str(_scenario(tmp_path, "one")), "a", "--output-format",
                "json", cwd=workspace, env={"FSM_AGENT_CLAUDE_TRANSCRIPT": "0"})  # fmt: skip
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session_id"]
    again = fsm("run", "--scripted", str(_scenario(tmp_path, "two")), "--resume", session, "b",
                cwd=workspace, env={"CLAUDE_CONFIG_DIR": str(config_dir)})  # fmt: skip
    assert again.returncode == 0, again.stderr
    [path] = config_dir.glob("projects/*/*.jsonl")
    assert path.stem == session
    assert _said(_lines(path)) == ["a", "one", "b", "two"]
