"""Every run writes a Claude Code transcript, and Claude Code's own readers read it.

The readers are the real ones: the Agent SDK's `list_sessions()` and
`get_session_messages()` (its source, reading the files), the real CLI's
`claude -p --resume <session-id>` (against the local Messages server, whose
request must carry the whole conversation), a Stop hook that parses
`transcript_path`, and fsm-agent's own `import`, which must take the same path.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from fsm_agent.live.transcript_writer import SWITCH_VARIABLE, project_dir_name, transcript_path
from fsm_agent.tape.log import SessionLog
from tests.conftest import SCENARIOS
from tests.support.cli import fsm
from tests.support.messages_server import MessagesServer, text
from tests.support.real_claude import require_claude, run_claude, trusted_home

FIX_BUG = SCENARIOS / "fix_bug.json"


def _run(workspace: Path, config_dir: Path, *extra: str) -> tuple[str, Path]:
    """`fsm-agent run --scripted fix_bug.json`; its session id and its transcript."""
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    proc = fsm(
        "run",
        "--scripted",
        str(FIX_BUG),
        "--cwd",
        str(workspace),
        "--output-format",
        "json",
        *extra,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    session_id = json.loads(proc.stdout)["session_id"]
    cwd = os.path.realpath(workspace)
    return session_id, config_dir / "projects" / project_dir_name(cwd) / f"{session_id}.jsonl"


def _entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_writes_claude_code_s_lines(workspace: Path, tmp_path: Path) -> None:
    session_id, path = _run(workspace, tmp_path / "claude")
    entries = _entries(path)
    assert {e["type"] for e in entries} == {"user", "assistant"}
    assert all(
        e["sessionId"] == session_id and e["cwd"] == os.path.realpath(workspace) for e in entries
    )
    assert entries[0]["parentUuid"] is None
    assert [e["parentUuid"] for e in entries[1:]] == [e["uuid"] for e in entries[:-1]]
    first = [e for e in entries if e["type"] == "assistant" and e["message"]["id"].endswith("1")]
    assert [e["message"]["content"][0]["type"] for e in first] == ["text", "tool_use"]
    results = [e for e in entries if "toolUseResult" in e]
    assert len(results) == 4
    assert all(e["sourceToolAssistantUUID"] in {x["uuid"] for x in entries} for e in results)


def test_the_variable_turns_it_off(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SWITCH_VARIABLE, "0")
    _, path = _run(workspace, tmp_path / "claude")
    assert not path.exists() and not (tmp_path / "claude").exists()


def test_the_agent_sdk_lists_and_reads_fsm_agent_s_sessions(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = pytest.importorskip("claude_agent_sdk")
    config_dir = tmp_path / "claude"
    session_id, _ = _run(workspace, config_dir)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    [info] = sdk.list_sessions(directory=str(workspace))
    assert info.session_id == session_id
    assert info.first_prompt.startswith("average.py prints the wrong average")
    messages = sdk.get_session_messages(session_id, directory=str(workspace))
    assert [m.type for m in messages][:2] == ["user", "assistant"]
    said = [
        b.get("text")
        for m in messages
        if m.type == "assistant"
        for b in m.message["content"]
        if b.get("type") == "text"
    ]
    assert said[-1].startswith("Fixed: `average` divided by")


def test_the_real_cli_resumes_an_fsm_agent_session(workspace: Path, tmp_path: Path) -> None:
    require_claude()
    home = trusted_home(tmp_path / "home", workspace)
    session_id, _ = _run(workspace, home / ".claude")
    with MessagesServer() as server:
        server.reply(text("It divides by len(xs) now."))
        run = run_claude(
            server,
            workspace,
            home,
            "-p",
            "--resume",
            session_id,
            "what did you change?",
            "--output-format",
            "json",
        )
        assert run.returncode == 0, run.stderr
        [body] = server.bodies()
    sent = json.dumps(body["messages"])
    for needle in (
        "average.py prints the wrong average",
        "toolu_01write",
        "toolu_04check",
        "3.75",
        "Fixed: `average` divided by",
        "what did you change?",
    ):
        assert needle in sent, needle
    uses = [
        b["id"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    assert uses == ["toolu_01write", "toolu_02run", "toolu_03edit", "toolu_04check"]


STOP_HOOK = """
import json, sys
payload = json.load(sys.stdin)
lines = [json.loads(l) for l in open(payload["transcript_path"])]
chat = [{"role": e["type"], "content": e["message"]["content"]}
        for e in lines if e.get("type") in ("user", "assistant")]
json.dump(chat, open("chat.json", "w"))
"""


def test_a_stop_hook_parsing_transcript_path_finds_the_conversation(
    workspace: Path, tmp_path: Path
) -> None:
    hook = tmp_path / "copy_chat.py"
    hook.write_text(STOP_HOOK)
    (workspace / ".claude").mkdir()
    command = f"{sys.executable} {hook}"
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    _run(workspace, tmp_path / "claude")
    chat = json.loads((workspace / "chat.json").read_text())
    roles = [m["role"] for m in chat]
    assert roles[0] == "user" and roles.count("assistant") == 7
    assert chat[-1]["role"] == "assistant"  # the answer the Stop hook is judging
    assert chat[-1]["content"][0]["text"].startswith("Fixed: `average` divided by")


ROUND_TRIP = (
    "fix_bug",
    "tool_round",
    "stop_hook_blocking",
    "stop_hook_prevented",
    "aborted_tools",
    "aborted_streaming",
    "autocompact",
    "unknown_tool",
    "api_error",
)
"""Shipped scenarios whose transcript says all the path depends on (not one that ends on
a run option, `max_turns`, or on an effect a transcript does not keep, a fallback model)."""


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_fsm_agent_s_transcript_imports_to_the_run_s_own_path(name: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    log = tmp_path / "run.jsonl"
    config_dir = tmp_path / "claude"
    proc = fsm(
        "run",
        "--scripted",
        str(SCENARIOS / f"{name}.json"),
        "--cwd",
        str(workspace),
        "--log",
        str(log),
        env={"CLAUDE_CONFIG_DIR": str(config_dir)},
    )
    assert log.exists(), proc.stderr  # exit codes differ: aborted_tools 15, api_error 20
    [path] = config_dir.glob("projects/*/*.jsonl")
    out = tmp_path / "imported.jsonl"
    imported = fsm("import", str(path), "-o", str(out), "-q")
    assert imported.returncode == 0, imported.stderr
    assert fsm("replay", "--check", str(out)).returncode == 0

    def edges(p: Path) -> list[str]:
        return [r["edge"] for _, r in SessionLog(p).records() if r.get("t") == "transition"]

    assert edges(out) == edges(log)


def test_the_path_is_claude_code_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv(SWITCH_VARIABLE, raising=False)
    assert (
        transcript_path("/home/me/my_proj.v2", "s1")
        == tmp_path / "projects" / "-home-me-my-proj-v2" / "s1.jsonl"
    )
    sdk = pytest.importorskip("claude_agent_sdk._internal.sessions")
    for cwd in ("/" + "a" * 300, "/tmp/" + "é😀-x" * 80):
        assert project_dir_name(cwd) == sdk._sanitize_path(cwd)  # where the SDK looks


def _scripted_transcript(name: str, tmp_path: Path) -> list[dict]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config_dir = tmp_path / "claude"
    log = tmp_path / "run.jsonl"
    scenario = str(SCENARIOS / f"{name}.json")
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    fsm("run", "--scripted", scenario, "--cwd", str(workspace), "--log", str(log), env=env)
    [path] = config_dir.glob("projects/*/*.jsonl")
    return _entries(path)


def test_each_time_the_stop_hooks_run_is_a_summary_line_as_claude_code_writes(
    tmp_path: Path,
) -> None:
    """After a blocking hook's feedback, and after the answer the hooks let be (the real
    CLI's order; tests/conformance has its own transcripts of hook_stop_exit_2)."""
    entries = _scripted_transcript("stop_hook_blocking", tmp_path)
    kinds = [(e["type"], e.get("subtype"), bool(e.get("isMeta"))) for e in entries]
    summary = ("system", "stop_hook_summary", False)
    assert kinds == [
        ("user", None, False),
        ("assistant", None, False),
        ("user", None, True),
        summary,
        ("assistant", None, False),
        summary,
    ]
    blocked, let_be = (e for e in entries if e.get("subtype") == "stop_hook_summary")
    assert blocked["hookErrors"] == ["Tests are failing: run them before you stop."]
    assert blocked["preventedContinuation"] is False and blocked["hasOutput"] is True
    assert let_be["hookErrors"] == [] and let_be["hasOutput"] is False
    assert [e["parentUuid"] for e in entries[1:]] == [e["uuid"] for e in entries[:-1]]


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("aborted_streaming", "[Request interrupted by user]"),
        ("aborted_tools", "[Request interrupted by user for tool use]"),
    ],
)
def test_an_interrupted_run_ends_in_the_user_s_interrupt_line(
    name: str, line: str, tmp_path: Path
) -> None:
    last = _scripted_transcript(name, tmp_path)[-1]
    assert last["type"] == "user"
    assert last["message"]["content"] == [{"type": "text", "text": line}]


def test_a_chat_writes_one_transcript_for_the_conversation(workspace: Path, tmp_path: Path) -> None:
    """Claude Code keeps a conversation in one file: each message's run goes on the
    first run's transcript (its session id, its chain), and `/clear` starts another."""
    scenario = tmp_path / "chat.json"
    turns = [{"content": c} for c in ("one", "two", "three")]
    scenario.write_text(json.dumps({"turns": turns}))
    config_dir = tmp_path / "claude"
    where = (
        "--scripted",
        str(scenario),
        "--cwd",
        str(workspace),
        "--log",
        str(tmp_path / "c.jsonl"),
    )
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    chat = fsm("chat", *where, input="a\nb\n/clear\nc\n", env=env)
    assert chat.returncode == 0, chat.stderr
    first_ids = [SessionLog(tmp_path / n).header["session_id"] for n in ("c.jsonl", "c.3.jsonl")]
    files = {p.stem: _entries(p) for p in config_dir.glob("projects/*/*.jsonl")}
    assert set(files) == set(first_ids)  # the conversation's first run names each file
    talk = files[first_ids[0]]
    said = [(e["type"], e["message"]["content"]) for e in talk]
    assert [s[1] if isinstance(s[1], str) else s[1][0]["text"] for s in said] == [
        "a",
        "one",
        "b",
        "two",
    ]
    assert {e["sessionId"] for e in talk} == {first_ids[0]}
    assert [e["parentUuid"] for e in talk[1:]] == [e["uuid"] for e in talk[:-1]]
    assert len(files[first_ids[1]]) == 2  # after /clear: c, three
