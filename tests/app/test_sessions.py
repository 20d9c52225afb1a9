"""Resuming a recorded session, and listing a workspace's sessions (torn and corrupt ones too)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import jsonschema
import pytest

from fsm_agent.app.history import ResumeError, aresume, describe, follow_up
from fsm_agent.app.session import replay
from fsm_agent.core.codec import unstructure
from fsm_agent.core.messages import Message, TextBlock, user
from fsm_agent.tape.log import TAIL_CHUNK, LogWriter, being_written, last_line
from tests.conftest import ROOT, SCENARIOS
from tests.support.cli import fsm, one_error_line
from tests.support.logs import reseal, write_log

ANSWER = {"turns": [{"content": [{"type": "text", "text": "It says hello."}]}]}


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scripted_run(workspace: Path, name: str, *extra: str) -> None:
    proc = fsm(
        "run", "--scripted", str(SCENARIOS / f"{name}.json"), "--cwd", str(workspace), *extra
    )
    assert proc.returncode in (0, 18), proc.stderr


def test_resume_continues_the_conversation(workspace: Path, tmp_path: Path) -> None:
    first = tmp_path / "first.jsonl"
    scripted_run(workspace, "tool_round", "--log", str(first))
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    second = tmp_path / "second.jsonl"
    proc = fsm(
        "run",
        "--resume",
        str(first),
        "--scripted",
        str(answer),
        "--log",
        str(second),
        "--output-format",
        "json",
        "what does it say?",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "It says hello."
    header, start = lines_of(second)[:2]
    parent_header = lines_of(first)[0]
    assert header["parent"] == {"log": str(first), "session_id": parent_header["session_id"]}
    assert header["config"]["cwd"] == str(workspace.resolve())
    before = [unstructure(m, Message) for m in replay(first).messages.items]
    assert start["messages"][: len(before)] == before
    assert start["messages"][len(before)] == {
        "role": "user",
        "content": [{"type": "text", "text": "what does it say?"}],
    }
    check = fsm("replay", str(second), "--check")
    assert check.returncode == 0, check.stderr


def test_a_resumed_run_expands_home_as_this_machine_does(workspace: Path, tmp_path: Path) -> None:
    """The earlier run's recorded home is for replaying it; going on is a live run here."""
    first = tmp_path / "first.jsonl"
    scripted_run(workspace, "tool_round", "--log", str(first))
    records = lines_of(first)
    records[0]["config"]["home"] = "/home/elsewhere"
    write_log(first, records)
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    second = tmp_path / "second.jsonl"
    proc = fsm("run", "--resume", str(first), "--scripted", str(answer), "--log", str(second), "x")
    assert proc.returncode == 0, proc.stderr
    assert lines_of(second)[0]["config"]["home"] == os.path.expanduser("~")


def test_resume_refuses_a_foreign_log(workspace: Path, tmp_path: Path) -> None:
    """A file that is no session log is refused; a torn one (killed mid-write) is a log
    cut short, which resumes (tests/app/test_resume_cut_short.py)."""
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    one_error_line(fsm("run", "--resume", str(junk), "x"), "not a session log")


@pytest.mark.parametrize("cut", ["torn", "missing"])
def test_resume_of_a_finished_run_whose_result_line_is_torn_or_missing(
    cut: str, workspace: Path, tmp_path: Path
) -> None:
    """The run reached its final state: its conversation is whole, only the `result`
    summary after it was lost to a kill (docs/cli.md, Resume)."""
    log = tmp_path / "run.jsonl"
    scripted_run(workspace, "tool_round", "--log", str(log))
    data = log.read_bytes()
    result_at = data.rstrip(b"\n").rfind(b"\n") + 1
    assert json.loads(data[result_at:])["t"] == "result"
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(data[: result_at + 15] if cut == "torn" else data[:result_at])
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    after = tmp_path / "after.jsonl"
    proc = fsm(
        "run", "--resume", str(damaged), "--scripted", str(answer), "--log", str(after),
        "-q", "and?",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It says hello.\n"
    before = [unstructure(m, Message) for m in replay(log).messages.items]
    assert lines_of(after)[1]["messages"][: len(before)] == before


def test_resume_by_session_id_prefix(workspace: Path, tmp_path: Path) -> None:
    scripted_run(workspace, "tool_round")
    (log,) = (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    prefix = log.stem[:8]
    proc = fsm("run", "--resume", prefix, "--scripted", str(answer), "-q", "and?", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It says hello.\n"
    one_error_line(fsm("run", "--resume", "nosuch", "x", cwd=workspace), "no session log")


@pytest.mark.parametrize("command", ["run", "chat"])
def test_resume_of_a_missing_absolute_path_is_one_error_line(
    command: str, workspace: Path, tmp_path: Path
) -> None:
    """An absolute path is not a session id to glob for (glob refuses one as a pattern)."""
    scripted_run(workspace, "tool_round")
    missing = tmp_path / "nowhere.jsonl"
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    prompt = ["x"] if command == "run" else []
    proc = fsm(command, "--resume", str(missing), "--scripted", str(answer), *prompt, cwd=workspace)
    one_error_line(proc, f"{missing}: no session log by that path or session id")


def test_resume_of_an_unreadable_log_is_one_error_line(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """As root no mode bits keep a file from being read, so `open` is made to refuse it."""
    from fsm_agent.cli import main as cli

    scripted_run(workspace, "tool_round")
    (log,) = (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    real_open = Path.open

    def refuse(self: Path, *args: object, **kwargs: object) -> object:
        if self.name == log.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", refuse)
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(sys, "argv", ["fsm-agent", "run", "--resume", log.stem[:8], "x"])
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"fsm-agent: error: {log.relative_to(workspace)}: cannot read the log: Permission denied"
    ]


BLOCK = {"hooks": {"UserPromptSubmit": [{"blocking_errors": ["it holds a secret"]}]}}


def _sent(log: Path) -> str:
    """Every text of the conversation a log's run started with."""
    return json.dumps(lines_of(log)[1]["messages"])


def test_a_blocked_prompt_is_erased_not_sent_with_the_next_message(
    workspace: Path, tmp_path: Path
) -> None:
    """A UserPromptSubmit hook erases the prompt it blocks (Claude Code never sends it):
    the blocked run's conversation kept it, so a chat's next message, or a --resume of the
    blocked run, sent it to the model all the same."""
    scenario = tmp_path / "block.json"
    scenario.write_text(json.dumps({**BLOCK, "turns": [{"content": "hello"}]}))
    where = ("--cwd", str(workspace))
    typed = "my password is hunter2\nhi\n"
    chat = fsm("chat", "--scripted", str(scenario), "--log", str(tmp_path / "chat.jsonl"),
               *where, input=typed)  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    assert "hunter2" in _sent(tmp_path / "chat.jsonl")
    assert "hunter2" not in _sent(tmp_path / "chat.2.jsonl")
    assert lines_of(tmp_path / "chat.2.jsonl")[1]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]

    scripted_run(workspace, "max_turns", "--log", str(tmp_path / "first.jsonl"))
    blocked = fsm("run", "--resume", str(tmp_path / "first.jsonl"), "the key is 1234",
                  "--scripted", str(scenario), "--log", str(tmp_path / "b.jsonl"),
                  *where)  # fmt: skip
    assert blocked.returncode == 0, blocked.stderr  # a success, as `claude -p` exits
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    after = fsm("run", "--resume", str(tmp_path / "b.jsonl"), "go on", "--scripted",
                str(answer), "--log", str(tmp_path / "after.jsonl"), *where)  # fmt: skip
    assert after.returncode == 0, after.stderr
    first = replay(tmp_path / "first.jsonl").messages.items
    expected = [unstructure(m, Message) for m in follow_up(first, "go on")]
    assert lines_of(tmp_path / "after.jsonl")[1]["messages"] == expected
    assert "1234" not in _sent(tmp_path / "after.jsonl")


def test_session_start_fires_once_a_session_and_resume_says_so(
    workspace: Path, tmp_path: Path
) -> None:
    """SessionStart hooks ran before every message of a chat, each time as `startup`, and
    the context they added piled up in the conversation (one reminder more a message);
    Claude Code runs them when a session starts: `startup`, or `resume` for --resume."""
    hook = tmp_path / "start.sh"
    hook.write_text(
        f"#!/bin/sh\ncat >> {tmp_path / 'starts.jsonl'}\necho >> {tmp_path / 'starts.jsonl'}\n"
        "echo 'the build is green'\n"
    )
    hook.chmod(0o755)
    settings = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}
    scenario = tmp_path / "chat.json"
    turns = [{"content": "one"}, {"content": "two"}, {"content": "three"}]
    scenario.write_text(json.dumps({"settings": settings, "turns": turns}))
    where = ("--scripted", str(scenario), "--cwd", str(workspace))
    chat = fsm("chat", *where, "--log", str(tmp_path / "c.jsonl"), input="a\nb\n")
    assert chat.returncode == 0, chat.stderr
    resumed = fsm("run", "--resume", str(tmp_path / "c.2.jsonl"), "c", *where,
                  "--log", str(tmp_path / "r.jsonl"))  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    starts = [json.loads(x) for x in (tmp_path / "starts.jsonl").read_text().split("\n") if x]
    assert [s["source"] for s in starts] == ["startup", "resume"]
    second = replay(tmp_path / "c.2.jsonl").messages.items
    assert sum("the build is green" in m.text for m in second) == 1


def test_user_prompt_submit_gets_the_prompt_typed_not_the_unanswered_one_before(
    workspace: Path, tmp_path: Path
) -> None:
    """A run that failed before any answer leaves its prompt last; the next prompt joins
    that message (roles alternate), and UserPromptSubmit got both texts run together
    ("fix itfix it, then stop") as the prompt typed."""
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({"turns": [{"error": {"kind": "connection", "message": "x"}}]}))
    where = ("--cwd", str(workspace))
    first = fsm("run", "fix it", "--scripted", str(failed), "--log", str(tmp_path / "a.jsonl"),
                *where)  # fmt: skip
    assert first.returncode == 13, first.stderr
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ncat > {tmp_path / 'payload.json'}\n")
    hook.chmod(0o755)
    command = [{"type": "command", "command": str(hook)}]
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": command}]}}
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({**ANSWER, "settings": settings}))
    second = fsm("run", "--resume", str(tmp_path / "a.jsonl"), "fix it, then stop",
                 "--scripted", str(answer), "--log", str(tmp_path / "b.jsonl"), *where)  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert json.loads((tmp_path / "payload.json").read_text())["prompt"] == "fix it, then stop"


def test_follow_up_keeps_roles_alternating() -> None:
    assistant = Message("assistant", (TextBlock("hi"),))
    assert follow_up([user("a"), assistant], "b")[-1] == user("b")
    merged = follow_up([user("a"), assistant, user("tool results")], "b")
    assert len(merged) == 3
    assert merged[-1].content == (TextBlock("tool results"), TextBlock("b"))


def test_last_line_reads_backwards_across_chunks(tmp_path: Path) -> None:
    path = tmp_path / "f"
    long = "x" * (TAIL_CHUNK * 2 + 7)
    path.write_text(f"first\n{long}\n")
    assert last_line(path) == (long.encode(), True)
    path.write_text(f"first\n{long}")
    assert last_line(path) == (long.encode(), False)
    path.write_text("")
    assert last_line(path) == (b"", True)
    path.write_text(long)
    assert last_line(path) == (long.encode(), False)
    edge = "y" * (TAIL_CHUNK - 1)
    path.write_text(f"{long}\n{edge}\n")
    assert last_line(path) == (edge.encode(), True)


def test_a_log_killed_during_a_tool_shows_its_turn(tmp_path: Path) -> None:
    """Killed while a tool ran, a log ends with effect records, not a transition: its
    turns are still the last transition's (docs/cli.md, sessions)."""
    log = tmp_path / "run.jsonl"
    scripted_run(tmp_path, "tool_round", "--log", str(log))
    lines = log.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    tool = max(i for i, r in enumerate(records) if r.get("name") == "tool")
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: tool + 1]))
    reseal(cut)
    last = next(r for r in reversed(records[:tool]) if r.get("t") == "transition")
    info = describe(cut)
    assert info.status == "cut_short"
    assert info.turns == last["turn"] == 2


def sessions_listed(workspace: Path) -> dict[str, dict]:
    """`sessions --json` of the workspace, by log file name."""
    proc = fsm("sessions", "--cwd", str(workspace), "--json")
    assert proc.returncode == 0, proc.stderr
    return {Path(s["path"]).name: s for s in json.loads(proc.stdout)}


def test_sessions_lists_every_log_and_marks_broken_ones(workspace: Path) -> None:
    scripted_run(workspace, "tool_round")
    scripted_run(workspace, "max_turns")
    folder = workspace / ".fsm-agent" / "sessions"
    done = sorted(folder.glob("*.jsonl"))
    assert len(done) == 2
    source = next(p for p in done if lines_of(p)[-1]["reason"] == "completed")
    data = source.read_bytes()
    (folder / "torn.jsonl").write_bytes(data[:-10])
    (folder / "cut.jsonl").write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1])
    (folder / "corrupt.jsonl").write_text("not json at all\n")
    shutil.copy(source, folder / "copy.jsonl")

    listed = sessions_listed(workspace)
    assert len(listed) == 6
    assert listed["torn.jsonl"]["status"] == "torn"
    assert listed["cut.jsonl"]["status"] == "cut_short"
    assert listed["cut.jsonl"]["turns"] == 3
    assert listed["corrupt.jsonl"]["status"] == "corrupt"
    copy = listed["copy.jsonl"]
    assert copy["status"] == "complete" and copy["reason"] == "completed"
    assert copy["turns"] == 3
    assert copy["prompt"] == "Create notes.txt saying hello, then check it."
    reasons = sorted(s["reason"] for s in listed.values() if s["status"] == "complete")
    assert reasons == ["completed", "completed", "max_turns"]

    table = fsm("sessions", "--cwd", str(workspace))
    assert table.returncode == 0
    for word in ("torn", "corrupt", "cut short", "max_turns", "completed", "Create notes"):
        assert word in table.stdout
    short = lines_of(source)[0]["session_id"][:8]
    assert short in table.stdout


def test_sessions_lists_hand_edited_logs_of_the_wrong_types(workspace: Path) -> None:
    """Each of these crashed the listing; its docstring says never fatal, never skipped."""
    scripted_run(workspace, "tool_round")
    folder = workspace / ".fsm-agent" / "sessions"
    (source,) = folder.glob("*.jsonl")
    rows = lines_of(source)

    def edited(name: str, line: int, **changes: object) -> None:
        copy = [dict(r) for r in rows]
        copy[line] = {**copy[line], **changes}
        write_log(folder / name, copy)

    edited("created.jsonl", 0, created=7)
    edited("session_id.jsonl", 0, session_id=12345)
    edited("content.jsonl", 1, messages=[{"role": "user", "content": 5}])
    edited("short_form.jsonl", 1, messages=[{"role": "user", "content": "plain text"}])
    edited("turns.jsonl", len(rows) - 1, turns="three", reason=["x"])
    edited("version.jsonl", 0, version=True)

    listed = sessions_listed(workspace)
    assert len(listed) == 7
    assert listed["created.jsonl"]["status"] == "corrupt"
    assert listed["created.jsonl"]["problem"] == "the header's created is not a string: 7"
    assert listed["session_id.jsonl"]["status"] == "corrupt"
    assert listed["session_id.jsonl"]["session_id"] is None
    assert listed["content.jsonl"]["status"] == "complete"
    assert listed["content.jsonl"]["prompt"] is None
    assert listed["short_form.jsonl"]["prompt"] == "plain text"
    assert listed["turns.jsonl"]["turns"] is None and listed["turns.jsonl"]["reason"] is None
    assert listed["version.jsonl"]["status"] == "corrupt"
    assert listed["version.jsonl"]["problem"].startswith("unknown log format version true")

    table = fsm("sessions", "--cwd", str(workspace))
    assert table.returncode == 0, table.stderr
    assert len(table.stdout.splitlines()) == 1 + 7
    assert "session_" in table.stdout, "a log without a usable id is listed by its file name"
    assert table.stdout.count("corrupt") == 3


def test_sessions_table_keeps_its_columns_and_cuts_a_long_prompt(workspace: Path) -> None:
    """Piped, 80 columns: rich squeezed the session and turns columns out for a long prompt."""
    scripted_run(workspace, "tool_round", "please " * 40 + "create notes.txt")
    table = fsm("sessions", "--cwd", str(workspace), env={"COLUMNS": "80"})
    assert table.returncode == 0, table.stderr
    head, row = table.stdout.splitlines()
    assert head.split() == ["session", "when", "(UTC)", "turns", "ended", "prompt"]
    (log,) = (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    assert row.startswith(log.stem[:8])
    assert row.split()[3:5] == ["3", "completed"]
    assert row.rstrip().endswith("…") and len(row) <= 80


@pytest.mark.parametrize("columns", ["30", "50"])
def test_sessions_table_keeps_its_columns_in_a_narrow_terminal(
    columns: str, workspace: Path
) -> None:
    """ "Every column keeps its width however narrow the terminal" (docs/cli.md): the
    terminal wraps a line too long for it, the table never cuts an id or drops a column."""
    scripted_run(workspace, "tool_round")
    table = fsm("sessions", "--cwd", str(workspace), env={"COLUMNS": columns})
    assert table.returncode == 0, table.stderr
    head, row = table.stdout.splitlines()
    assert head.split() == ["session", "when", "(UTC)", "turns", "ended", "prompt"]
    (log,) = (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    assert row.split()[:1] == [log.stem[:8]]
    assert row.split()[3:5] == ["3", "completed"]


def test_sessions_table_shows_a_prompt_s_escapes_without_obeying_them(workspace: Path) -> None:
    """A prompt with a colored log piped in (`pytest | fsm-agent run "why?"`) holds escape
    sequences: the listing sent them to the terminal, which cleared it or set its colors."""
    clear, red = "\x1b[2J", "\x1b[31m"
    scripted_run(workspace, "tool_round", f"why?\n{red}FAILED{clear} test_x")
    table = fsm("sessions", "--cwd", str(workspace), env={"COLUMNS": "120"})
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout, repr(table.stdout)
    assert "why? [31mFAILED[2J test_x" in table.stdout


def test_sessions_table_shows_brackets_as_written(workspace: Path) -> None:
    """A session id, a date or a file name holding `[/]` was read as rich markup: the
    listing ended in a MarkupError traceback."""
    scripted_run(workspace, "tool_round")
    folder = workspace / ".fsm-agent" / "sessions"
    (source,) = folder.glob("*.jsonl")
    rows = lines_of(source)
    rows[0] = {**rows[0], "session_id": "[/]abc", "created": "[bold]2026"}
    write_log(folder / "edited.jsonl", rows)
    (folder / "[b]broken.jsonl").write_text("not a log\n")
    table = fsm("sessions", "--cwd", str(workspace), env={"COLUMNS": "120"})
    assert table.returncode == 0, table.stderr
    assert "[/]abc" in table.stdout and "[bold]2026" in table.stdout
    assert "\n[b]broke  " in table.stdout


def test_a_log_path_with_brackets_is_shown_as_written(tmp_path: Path) -> None:
    """`chat --resume` and a fork name the parent log: a path through a `[draft]` folder
    was read as rich markup, and the folder vanished from the line (`[/]` would raise)."""
    workspace = tmp_path / "[draft]"
    workspace.mkdir()
    scripted_run(workspace, "tool_round", "--log", str(workspace / "first.jsonl"))
    log = str(workspace / "first.jsonl")
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    chat = fsm("chat", "--resume", log, "--scripted", str(answer), input="more\n",
               env={"COLUMNS": "300"})  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    assert f"resuming {log} (" in chat.stdout
    fork = fsm("replay", log, "--fork-at", "1", "--scripted", str(answer), "--cwd",
               str(workspace), env={"COLUMNS": "300"})  # fmt: skip
    assert fork.returncode == 0, fork.stderr
    assert f"replaying {log} up to step 1" in fork.stdout


def test_sessions_of_an_empty_workspace(workspace: Path) -> None:
    proc = fsm("sessions", "--cwd", str(workspace))
    assert proc.returncode == 0
    assert "no sessions recorded" in proc.stdout


def test_describe_a_header_only_log(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"format": "fsm-agent-session", "version": 1, "session_id": "s"}\n')
    info = describe(path)
    assert info.status == "corrupt" and info.session_id == "s"


def test_a_resumed_run_remembers_the_files_read(workspace: Path, tmp_path: Path) -> None:
    """tool_round read notes.txt; the next run may edit it without reading it again."""
    first = tmp_path / "first.jsonl"
    scripted_run(workspace, "tool_round", "--log", str(first))
    edit = {
        "turns": [
            {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_e",
                        "name": "Edit",
                        "input": {
                            "file_path": "notes.txt",
                            "old_string": "hello",
                            "new_string": "goodbye",
                        },
                    }
                ]
            },
            {"content": [{"type": "text", "text": "Edited."}]},
        ]
    }
    scenario = tmp_path / "edit.json"
    scenario.write_text(json.dumps(edit))
    second = tmp_path / "second.jsonl"
    proc = fsm(
        "run", "--resume", str(first), "--scripted", str(scenario), "--log", str(second), "edit it"
    )
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "notes.txt").read_text() == "goodbye\n"
    start = lines_of(second)[1]
    assert list(start["read_files"]) == [str(workspace.resolve() / "notes.txt")]
    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    for record in lines_of(second):
        jsonschema.validate(record, schema)
    check = fsm("replay", str(second), "--check")
    assert check.returncode == 0, check.stderr


def test_a_log_with_read_files_steps_and_forks(workspace: Path, tmp_path: Path) -> None:
    """The debugger's stepper and a fork start from the files the log says were read."""
    from fsm_agent.tape.stepper import Stepper

    first = tmp_path / "first.jsonl"
    scripted_run(workspace, "tool_round", "--log", str(first))
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    second = tmp_path / "second.jsonl"
    proc = fsm("run", "--resume", str(first), "--scripted", str(answer), "--log", str(second), "?")
    assert proc.returncode == 0, proc.stderr
    assert lines_of(second)[1]["read_files"]

    stepper = Stepper(second)
    try:
        assert stepper.run_until(0, lambda info: False) is None
        assert stepper.stopped_by is None
        assert stepper.result is not None and stepper.result.reason == "completed"
    finally:
        stepper.close()

    third = tmp_path / "third.jsonl"
    forked = fsm(
        "replay",
        str(second),
        "--fork-at",
        "2",
        "--scripted",
        str(answer),
        "--cwd",
        str(workspace),
        "--log",
        str(third),
    )
    assert forked.returncode == 0, forked.stderr
    assert lines_of(third)[1]["read_files"] == lines_of(second)[1]["read_files"]


def test_a_parent_named_by_a_relative_path_is_linked_by_its_full_path(
    workspace: Path, tmp_path: Path
) -> None:
    """A log's `parent` must lead back to its parent from anywhere: a path relative to
    the directory the command ran in (which no log records) led nowhere."""
    scripted_run(workspace, "tool_round", "--log", str(tmp_path / "first.jsonl"))
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    resumed = fsm(
        "run", "--resume", "first.jsonl", "--scripted", "answer.json", "--log", "second.jsonl",
        "--cwd", str(workspace), "and?", cwd=tmp_path,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    forked = fsm(
        "replay", "first.jsonl", "--fork-at", "6", "--scripted", "answer.json",
        "--log", "fork.jsonl", "--cwd", str(workspace), cwd=tmp_path,
    )  # fmt: skip
    assert forked.returncode == 0, forked.stderr
    first = str((tmp_path / "first.jsonl").resolve())
    assert lines_of(tmp_path / "second.jsonl")[0]["parent"]["log"] == first
    assert lines_of(tmp_path / "fork.jsonl")[0]["parent"]["log"] == first


def test_resume_of_a_scripted_session_without_a_scenario_is_a_usage_error(
    workspace: Path, tmp_path: Path
) -> None:
    """Its model, `scripted`, is no model an API knows: going on with it sent a request
    for model "scripted" to the real API. A key is set, so only the model can stop it."""
    import os
    import subprocess

    log = tmp_path / "run.jsonl"
    scripted_run(workspace, "tool_round", "--log", str(log))
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    proc = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "run", "--resume", str(log), "and?"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    one_error_line(proc, "ran a scripted model")
    assert "--scripted" in proc.stderr and "--model" in proc.stderr
    assert not list((workspace / ".fsm-agent").glob("sessions/*.jsonl")), "nothing ran"


def test_a_log_being_written_is_running_and_one_left_behind_is_cut_short(tmp_path: Path) -> None:
    """A live run holds a lock on its log, which dies with its process: without a `result`,
    a log still locked is `running`, one nobody holds was cut short (docs/cli.md, sessions)."""
    path = tmp_path / "live.jsonl"
    writer = LogWriter(path, {"session_id": "s", "fingerprint": "f", "config": {}})
    writer.write({"t": "start", "messages": [{"role": "user", "content": "hi"}]})
    try:
        assert being_written(path)
        assert describe(path).status == "running"
        with pytest.raises(ResumeError, match="cannot resume: a run is still writing this log"):
            asyncio.run(aresume(path))
    finally:
        writer.close()
    assert not being_written(path)
    assert describe(path).status == "cut_short"
