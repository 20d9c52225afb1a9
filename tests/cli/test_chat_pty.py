"""The interactive session as a user drives it: a real pseudo-terminal, keys and Ctrl-C."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.support.cli import fsm
from tests.support.pty import TIMEOUT, leave, logs, spawn, wrapped

CHAT = {
    "description": "a chat: an answer, a slow turn to interrupt, a tool round",
    "config": {"permission_mode": "acceptEdits"},
    "turns": [
        {"content": [{"type": "text", "text": "Hello! I am **ready**.\n\n- one\n- two"}]},
        {"delay": 60, "content": [{"type": "text", "text": "This answer never arrives."}]},
        {
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_w",
                    "name": "Write",
                    "input": {"file_path": "a.txt", "content": "hi\n"},
                }
            ]
        },
        {"content": [{"type": "text", "text": "Wrote a.txt for you."}]},
    ],
}


def chatting(
    workspace: Path, tmp_path: Path, scenario: dict[str, Any] | Path, line: str
) -> pexpect.spawn:
    """A chat over `scenario` (a scenario file, or its contents), `line` typed at its
    first prompt."""
    if not isinstance(scenario, Path):
        path = tmp_path / "scenario.json"
        path.write_text(json.dumps(scenario))
        scenario = path
    child = spawn(["chat", "--scripted", str(scenario), "--cwd", str(workspace)], workspace)
    child.expect("› ")
    child.sendline(line)
    return child


@pytest.fixture
def chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    return path


def test_chat_answer_interrupt_continue_exit(workspace: Path, chat_file: Path) -> None:
    child = spawn(["chat", "--scripted", str(chat_file), "--cwd", str(workspace)], workspace)
    child.expect("› ")
    child.sendline("hi")
    child.expect("ready")
    child.expect("completed")
    child.expect("› ")

    child.sendline("something slow")
    child.expect("Waiting for the model")
    child.sendintr()
    child.expect("aborted_streaming")
    child.expect("› ")

    child.sendline("write a.txt")
    child.expect(r"Write\(a\.txt\)")
    child.expect("Wrote a.txt for you.")
    child.expect("completed")
    child.expect("› ")
    assert leave(child) == 0
    assert (workspace / "a.txt").read_text() == "hi\n"

    runs = logs(workspace)
    assert [r["records"][-1]["reason"] for r in runs] == [
        "completed",
        "aborted_streaming",
        "completed",
    ]
    first, second, third = runs
    assert "parent" not in first["header"]
    assert second["header"]["parent"]["session_id"] == first["header"]["session_id"]
    assert third["header"]["parent"]["session_id"] == second["header"]["session_id"]
    assert Path(third["header"]["parent"]["log"]).is_file()
    typed = [
        b["text"]
        for m in third["records"][0]["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "text"
    ]
    assert typed == ["hi", "something slow", "write a.txt"]


def test_ctrl_c_twice_at_the_prompt_leaves(workspace: Path, chat_file: Path) -> None:
    child = spawn(["chat", "--scripted", str(chat_file), "--cwd", str(workspace)], workspace)
    child.expect("› ")
    child.sendintr()
    child.expect("Ctrl-C again or Ctrl-D to leave")
    child.expect("› ")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_run_without_prompt_in_a_terminal_opens_a_session(workspace: Path, chat_file: Path) -> None:
    child = spawn(["run", "--scripted", str(chat_file), "--cwd", str(workspace)], workspace)
    child.expect("› ")
    child.sendline("hi")
    child.expect("completed")
    child.expect("› ")
    assert leave(child) == 0


def test_typed_during_a_run_is_queued(workspace: Path, tmp_path: Path) -> None:
    """A line typed while the model is slow reaches the loop's attachments phase."""
    scenario = {
        "turns": [
            {
                "delay": 3,
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_g",
                        "name": "Glob",
                        "input": {"pattern": "*.txt"},
                    }
                ],
            },
            {"content": [{"type": "text", "text": "Noted, also that."}]},
        ]
    }
    child = chatting(workspace, tmp_path, scenario, "list the text files")
    child.expect("Waiting for the model")
    child.sendline("and count them")
    child.expect("queued: and count them")
    child.expect("Noted, also that.")
    child.expect("› ")
    leave(child)
    (run,) = logs(workspace)
    queued = [
        r["result"] for r in run["records"] if r["t"] == "effect" and r["name"] == "queued_input"
    ]
    assert queued == [["and count them"]]


def test_chat_asks_before_a_write_and_always_adds_a_rule(workspace: Path, tmp_path: Path) -> None:
    """In default mode a chat asks inline; `a` allows this call and the rest of the run's."""
    write = {
        "type": "tool_use",
        "name": "Write",
        "input": {"file_path": "a.txt", "content": "hi\n"},
    }
    scenario = {
        "turns": [
            {"content": [{**write, "id": "toolu_w1"}]},
            {
                "content": [
                    {**write, "id": "toolu_w2", "input": {"file_path": "b.txt", "content": "b"}}
                ]
            },
            {"content": [{"type": "text", "text": "Both written."}]},
        ]
    }
    child = chatting(workspace, tmp_path, scenario, "write two files")
    child.expect(wrapped("needs approval"))  # after the file's path, as long as it is
    child.expect(r"Allow\? \[y\] once  \[a\] always \(Edit\(\./\*\*\)\)  \[n\] deny")
    child.sendline("a")
    child.expect("Both written.")
    child.expect("completed")
    child.expect("› ")
    leave(child)
    assert (workspace / "a.txt").read_text() == "hi\n"
    assert (workspace / "b.txt").read_text() == "b"


def _asked_after_a_queued_line(workspace: Path, tmp_path: Path, answer: str) -> pexpect.spawn:
    """A chat whose model is slow to ask about a command: the user types a line while it
    waits (queued), and the question comes; the model's next answer is `answer`."""
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "touch asked"}}
    scenario = {"turns": [{"delay": 3, "content": [call]}, {"content": answer}]}
    child = chatting(workspace, tmp_path, scenario, "touch it")
    child.expect("Waiting for the model")
    child.sendline("also update the docs")
    child.expect("queued: also update the docs")
    child.expect(r"Allow\? \[y\] once")
    return child


def test_a_line_queued_before_a_question_is_not_its_answer(workspace: Path, tmp_path: Path) -> None:
    """A line typed while the model was slow (`⧗ queued: also …`) was taken as the answer
    to the permission question that came next: "also" read as [a] always, the command
    ran, a rule was added, and the message never reached the model."""
    child = _asked_after_a_queued_line(workspace, tmp_path, "Noted.")
    child.sendline("n")
    child.expect("Noted.")
    child.expect("› ")
    leave(child)
    assert not (workspace / "asked").exists()
    (run,) = logs(workspace)
    effects = [r for r in run["records"] if r["t"] == "effect"]
    assert [r["result"] for r in effects if r["name"] == "ask_permission"] == ["deny"]
    queued = [r["result"] for r in effects if r["name"] == "queued_input"]
    assert queued == [["also update the docs"]]


def test_a_line_queued_before_a_question_survives_the_run_s_interruption(
    workspace: Path, tmp_path: Path
) -> None:
    """Kept out of the question's answer, the queued line is still the user's: if the run
    ends before taking it (Ctrl-C at the question), it becomes the next message."""
    child = _asked_after_a_queued_line(workspace, tmp_path, "Docs updated.")
    child.sendintr()
    child.expect("aborted_tools")
    child.expect("Docs updated.")
    child.expect("› ")
    leave(child)
    _, second = logs(workspace)
    assert second["records"][0]["messages"][-1]["content"][-1]["text"] == "also update the docs"


def test_ctrl_c_at_a_question_denies_and_the_session_goes_on(
    workspace: Path, tmp_path: Path
) -> None:
    """Ctrl-C at a permission question was not seen until the user typed an answer."""
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "touch asked"}}
    child = chatting(
        workspace, tmp_path, {"turns": [{"content": [call]}, {"content": "never"}]}, "touch it"
    )
    child.expect(r"Allow\? \[y\] once")
    child.sendintr()
    child.expect("aborted_tools")
    child.expect("› ")
    leave(child)
    assert not (workspace / "asked").exists()


def test_slash_commands_clear_the_conversation_and_exit(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "two.json"
    script.write_text(json.dumps({"turns": [{"content": "First answer."}, {"content": "Fresh."}]}))
    child = spawn(["chat", "--scripted", str(script), "--cwd", str(workspace)], workspace)
    child.expect("› ")
    for line, answer in [
        ("/help", "forget the conversation"),
        ("hello", "First answer."),
        ("/clear", "conversation cleared"),
        ("start over", "Fresh."),
    ]:
        child.sendline(line)
        child.expect(answer)
        child.expect("› ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    runs = [
        [json.loads(line) for line in p.read_text().splitlines()]
        for p in (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    ]
    assert len(runs) == 2 and all("parent" not in run[0] for run in runs)
    sent = sorted(
        tuple(b["text"] for m in run[1]["messages"] if m["role"] == "user" for b in m["content"])
        for run in runs
    )
    assert sent == [("hello",), ("start over",)], "the second run does not carry the first"


def test_a_question_is_withdrawn_when_the_stream_fails(workspace: Path, tmp_path: Path) -> None:
    """A Read started while the model streams asks (an ask rule); the stream then fails.
    The question is withdrawn and the run ends: the next line typed is a message, not
    an answer to a question no one waits for."""
    (workspace / "a.txt").write_text("a\n")
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "a.txt"}}
    first = {
        "content": [read, {"type": "text", "text": "word " * 60}],
        "event_delay": 0.05,  # the question is on screen well before the stream fails
        "error": {"kind": "connection", "message": "connection reset"},
    }
    scenario = {
        "settings": {"permissions": {"ask": ["Read"]}},
        "turns": [first, {"content": "A message, not an answer."}],
    }
    child = chatting(workspace, tmp_path, scenario, "read it")
    child.expect(r"Allow\? \[y\] once")
    child.expect("model_error")
    child.expect("› ")
    child.sendline("y")
    child.expect("A message, not an answer.")
    child.expect("completed")
    child.expect("› ")
    leave(child)
    failed, answered = logs(workspace)
    effects = [r for r in failed["records"] if r["t"] == "effect"]
    assert [e["result"] for e in effects if e["name"] == "ask_permission"] == ["cancelled"]
    assert not [e for e in effects if e["name"] == "tool"]
    withdrawn, typed = answered["records"][0]["messages"][-1]["content"]
    assert (withdrawn["tool_use_id"], withdrawn["is_error"], typed["text"]) == ("r1", True, "y")


def _two_reads_one_asked(workspace: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A scenario reading a file outside (asked about) and globbing inside (not asked)
    at once; the glob's PostToolUse hook ends once the returned marker exists (at most
    10 s), so the glob's result comes while the question waits however slow the machine."""
    outside = tmp_path / "outside.txt"
    outside.write_text("far\n")
    go = tmp_path / "glob-go"
    (workspace / ".claude").mkdir(exist_ok=True)
    wait = f"for i in $(seq 200); do [ -e {go} ] && break; sleep 0.05; done"
    hook = {"type": "command", "command": wait}
    settings = {"hooks": {"PostToolUse": [{"matcher": "Glob", "hooks": [hook]}]}}
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    read = {"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": str(outside)}}
    glob = {"type": "tool_use", "id": "g", "name": "Glob", "input": {"pattern": "*"}}
    scenario = {"turns": [{"content": [read, glob]}, {"content": "Both seen."}]}
    path = tmp_path / "ask.json"
    path.write_text(json.dumps(scenario))
    return path, go


def _answered_after_the_glob(child: pexpect.spawn, go: Path, workspace: Path) -> str:
    """Once the question is on the screen, let the glob end; answer y once its result
    has come (its hook's outcome is in the log); what the screen showed."""
    shown = io.StringIO()
    child.logfile_read = shown
    child.expect(r"Allow\?")
    child.expect("deny")  # the question's last word, styled apart from `[n]` in `run`
    go.touch()
    sessions = workspace / ".fsm-agent" / "sessions"
    deadline = time.monotonic() + TIMEOUT
    while not any('"args":"PostToolUse"' in p.read_text() for p in sessions.glob("*.jsonl")):
        assert time.monotonic() < deadline, "the glob's PostToolUse hook never ended"
        time.sleep(0.05)
    time.sleep(0.5)  # the result is handed to the screen just after its hook's record
    child.sendline("y")
    child.expect("Both seen.")
    return shown.getvalue()


def _answer_comes_first(shown: str) -> None:
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    # The question names the file outside, a tmp path: its line may wrap anywhere.
    found = (re.search(pattern, plain) for pattern in (r"\[n\]\s+deny", r"\(n\):"))
    end = max(m.end() for m in found if m)
    after_question = plain[end:]
    assert after_question.lstrip(" ").startswith("y"), after_question[:200]
    assert after_question.count("⎿") == 2


def test_a_result_that_comes_while_a_question_waits_is_shown_after_the_answer(
    workspace: Path, tmp_path: Path
) -> None:
    """A call running beside the one asked about (two reads at once) printed its result
    while the question waited, onto the question's line: `[n] deny   ⎿ …` with the
    typed answer under it. It is held until the question is answered."""
    path, go = _two_reads_one_asked(workspace, tmp_path)
    child = chatting(workspace, tmp_path, path, "look")
    shown = _answered_after_the_glob(child, go, workspace)
    child.expect("› ")
    leave(child)
    _answer_comes_first(shown)


def test_a_one_shot_run_s_question_is_not_interleaved_either(
    workspace: Path, tmp_path: Path
) -> None:
    """`run` in a terminal asks on it too: the glob's `● Glob(*)` and result came after
    `[y/a/n] (n):`, the answer typed under them."""
    path, go = _two_reads_one_asked(workspace, tmp_path)
    child = spawn(["run", "--scripted", str(path), "--cwd", str(workspace), "look"], workspace)
    shown = _answered_after_the_glob(child, go, workspace)
    child.expect(pexpect.EOF)
    _answer_comes_first(shown)


def test_ctrl_d_at_a_question_ends_its_line(workspace: Path, tmp_path: Path) -> None:
    """Ctrl-D at a question denies; the call's `●` line was printed on the question's
    line (`[n] deny ● Bash(…)`), as nothing typed had ended it."""
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "touch asked"}}
    child = chatting(
        workspace,
        tmp_path,
        {"turns": [{"content": [call]}, {"content": "Denied, fine."}]},
        "touch it",
    )
    shown = io.StringIO()
    child.logfile_read = shown
    child.expect(r"\[n\] deny")
    child.sendeof()
    child.expect("Denied, fine.")
    child.expect(pexpect.EOF)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.getvalue())
    assert re.search(r"\n\r?● Bash\(touch asked\)", plain), plain[:300]
    assert not (workspace / "asked").exists()


def test_an_always_answer_holds_for_the_chat_s_later_messages(
    workspace: Path, tmp_path: Path
) -> None:
    """`[a] always` held for the message's run only: the next message's Write was asked
    again, where Claude Code keeps a session's rule for the session; `/clear` starts a
    new one, which asks again."""

    def write(name: str) -> dict:
        call = {"file_path": f"{name}.txt", "content": name}
        return {"content": [{"type": "tool_use", "id": name, "name": "Write", "input": call}]}

    turns = [write("a"), {"content": "one"}, write("b"), {"content": "two"}]
    turns += [write("c"), {"content": "three"}]
    child = chatting(workspace, tmp_path, {"turns": turns}, "write a")
    child.expect(r"Allow\? \[y\] once")
    child.sendline("a")
    child.expect("one")
    child.expect("› ")
    child.sendline("write b")
    assert child.expect([r"Allow\?", "two"]) == 1
    child.expect("› ")
    child.sendline("/clear")
    child.expect("› ")
    child.sendline("write c")
    child.expect(r"Allow\? \[y\] once")
    child.sendline("y")
    child.expect("three")
    child.expect("› ")
    leave(child)
    assert [(workspace / f"{n}.txt").read_text() for n in "abc"] == ["a", "b", "c"]
    for run in logs_by_time(workspace):
        assert fsm("replay", str(run), "--check").returncode == 0


def logs_by_time(workspace: Path) -> list[Path]:
    return sorted((workspace / ".fsm-agent" / "sessions").glob("*.jsonl"))


_STYLE = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def test_text_typed_during_a_run_stays_off_the_spinner_line(
    workspace: Path, tmp_path: Path
) -> None:
    """The terminal echoed keys typed while a run went where the cursor was, the end of
    the spinner's line (`…↓0 tokensalso check`). The run holds them and shows the line
    being typed under the spinner (`› also check`), as Claude Code's input box does;
    Enter queues it, and the terminal echoes again at the next prompt."""
    glob = {"type": "tool_use", "id": "g", "name": "Glob", "input": {"pattern": "*"}}
    turns = [{"delay": 3, "content": [glob]}, {"delay": 2, "content": "Checked."}]
    child = chatting(workspace, tmp_path, {"turns": [*turns, {"content": "Done."}]}, "look")
    shown = io.StringIO()
    child.logfile_read = shown
    child.expect("Waiting for the model")
    assert not child.getecho(), "the terminal echoes keys typed while a run goes"
    child.send("also chekc")
    child.send("\x7f\x7fck")  # backspace twice, as the user corrects a typo
    child.expect(f"› {_STYLE}also check")
    child.send("\r")
    child.expect("queued: also check")
    child.expect("Waiting for the model")
    child.send("and mo")  # not finished when the run ends: it waits at the prompt
    child.expect("Checked.")
    child.expect("completed")
    child.expect(f"› {_STYLE}and mo")
    child.send("re\r")
    child.expect("Done.")
    child.expect("› ")
    assert child.getecho(), "the terminal echoes again at the prompt"
    leave(child)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.getvalue())
    assert not re.search(r"tokens *(also|and)", plain), plain
    first, second = logs(workspace)
    queued = [
        r["result"] for r in first["records"] if r["t"] == "effect" and r["name"] == "queued_input"
    ]
    assert queued == [["also check"]]
    assert second["records"][0]["messages"][-1]["content"][-1]["text"] == "and more"
