"""The chat's input plumbing, without a terminal: the reader thread, the inbox, `ask`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
from pathlib import Path

import pytest
from rich.console import Console

from fsm_agent.cli.chat import ChatSession, LineReader, ReaderInbox
from fsm_agent.cli.launch import Plan
from fsm_agent.core.abort import AbortSignal
from tests.support.hooks import capture


def pipe_reader() -> tuple[LineReader, int]:
    read_fd, write_fd = os.pipe()
    return LineReader(os.fdopen(read_fd, encoding="utf-8")), write_fd


def test_inbox_drains_what_was_typed_and_ask_reads_an_answer() -> None:
    reader, fd = pipe_reader()
    os.write(fd, b"first\n")
    assert reader.get() == "first"
    os.write(fd, b"also this\n\nand that\n")
    inbox = ReaderInbox(reader)
    inbox.put("from the program")
    drained: list[str] = []
    while len(drained) < 3:
        drained.extend(inbox.drain())
    assert drained == ["from the program", "also this", "and that"]

    console = Console(file=io.StringIO(), width=80)
    plan = Plan(model=None, config=None, hooks=None, abort=AbortSignal(), log=None)  # type: ignore[arg-type]
    session = ChatSession(plan, console, reader, quiet=True)
    assert plan.ask == session.ask
    os.write(fd, b"y\n")
    assert session.ask("Allow Bash(ls)? [y/n]") == "y"
    assert "Allow Bash(ls)? [y/n]" in console.file.getvalue()  # type: ignore[attr-defined]
    os.close(fd)
    assert reader.get() is None
    assert reader.get() is None


def test_a_slash_command_typed_during_a_run_waits_for_the_prompt() -> None:
    """`/exit` typed while a run went was queued as a message, sent to the model."""
    reader, fd = pipe_reader()
    os.write(fd, b"first\n")
    assert reader.get() == "first"
    os.write(fd, b"also this\n/exit\n/etc/hosts too\n")
    inbox = ReaderInbox(reader)
    drained: list[str] = []
    while len(drained) < 2:
        drained.extend(inbox.drain())
    assert drained == ["also this", "/etc/hosts too"]
    assert inbox.left() == ("/exit",)
    os.close(fd)


def test_slash_commands_at_the_prompt(tmp_path: Path) -> None:
    """`/clear` ends the conversation as Claude Code does (SessionEnd `clear`) and the
    next run starts a new one; `/exit` leaves; a path is a message, not a command."""
    from fsm_agent.core.config import RunConfig
    from fsm_agent.core.messages import user
    from fsm_agent.hooks.commands import parse_hooks
    from fsm_agent.live.scripted import Scenario, ScriptedModel

    end = capture(tmp_path, "end")
    hooks = parse_hooks({"SessionEnd": [{"hooks": [{"type": "command", "command": end}]}]}, "s")
    config = RunConfig(model="scripted", cwd=str(tmp_path), hooks=hooks)
    model = ScriptedModel(Scenario.parse({"turns": [{"content": "hello"}]}))
    plan = Plan(
        model=model, config=config, hooks=None, abort=AbortSignal(), log=tmp_path / "c.jsonl"
    )
    reader, fd = pipe_reader()
    console = Console(file=io.StringIO(), width=80)
    session = ChatSession(plan, console, reader, quiet=True)
    asyncio.run(plan.arun([user("hi")], None))
    session.messages = [user("hi")]
    plan.read_files = {str(tmp_path / "a.txt"): 1.0}

    assert session.command("/help") is True
    assert "/clear" in console.file.getvalue()  # type: ignore[attr-defined]
    assert session.command("/etc/hosts looks wrong") is None
    assert session.command("/clear") is True
    assert session.messages == []
    assert plan.parent is None and plan.read_files == {}
    assert plan.config.session_source == "clear"
    assert json.loads((tmp_path / "end.json").read_text())["reason"] == "clear"
    (tmp_path / "end.json").unlink()
    plan.end("prompt_input_exit")
    assert not (tmp_path / "end.json").exists(), "the cleared conversation already ended"
    assert session.command("/exit") is False
    assert session.command(" /quit ") is False
    os.close(fd)


class InterruptedOnce(io.StringIO):
    """A terminal where Ctrl-C lands while the prompt is being written."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupted = False

    def write(self, text: str) -> int:
        if "›" in text and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return super().write(text)


def test_ctrl_c_while_the_prompt_is_written_does_not_leave() -> None:
    """One Ctrl-C at the prompt asks for a second, wherever in drawing the prompt it
    lands: it used to escape as 'fsm-agent: interrupted' (exit 130) now and then."""
    terminal = InterruptedOnce()
    assert prompted_once(terminal) == "hello"
    assert terminal.interrupted
    assert "Ctrl-C again or Ctrl-D to leave" in terminal.getvalue()


def prompted_once(terminal: io.StringIO) -> str | None:
    """The chat's prompt drawn on `terminal` and answered with "hello"; what it read."""
    reader, fd = pipe_reader()
    plan = Plan(model=None, config=None, hooks=None, abort=AbortSignal(), log=None)  # type: ignore[arg-type]
    session = ChatSession(plan, Console(file=terminal, width=80), reader, quiet=True)
    os.write(fd, b"hello\n")
    try:
        return session._read_prompt()
    except KeyboardInterrupt:
        pytest.fail("one Ctrl-C at the prompt left the chat")
    finally:
        os.close(fd)


def test_a_question_mid_run_keeps_the_footer_s_counts() -> None:
    """The live region is put away while the user answers, not restarted as a new run:
    that set the footer back to 'Preparing the context… turn 1 · ↑0 · ↓0' mid-run."""
    from fsm_agent.core.events import ResponseUsage, Transition
    from fsm_agent.core.messages import Usage

    reader, fd = pipe_reader()
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    plan = Plan(model=None, config=None, hooks=None, abort=AbortSignal(), log=None)  # type: ignore[arg-type]
    session = ChatSession(plan, console, reader)
    renderer = session.renderer
    renderer.start()
    renderer(ResponseUsage("m", Usage(input_tokens=1200, output_tokens=30)))
    renderer(Transition(4, "abort_check", "tool_execution", "tool_use", 2))
    before = (renderer.footer(), renderer._label)  # type: ignore[union-attr]
    os.write(fd, b"y\n")
    assert session.ask("Allow Write(a.txt)? [y/n]") == "y"
    assert (renderer.footer(), renderer._label) == before  # type: ignore[union-attr]
    assert before[0] == "turn 2 · ↑1200 · ↓30 tokens"
    renderer.stop()
    os.close(fd)


def test_ctrl_c_while_the_prompt_waits_is_a_keyboard_interrupt_wherever_it_lands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Ctrl-C that lands as a `threading.Condition` wait takes its lock back (as
    `queue.Queue.get` waits) leaves the lock released, and the `with` around it then
    raises RuntimeError ('release unlocked lock'): the chat died. The reader's wait
    holds no such lock, so Ctrl-C is always the KeyboardInterrupt the prompt handles."""
    import signal
    import threading

    reader, _fd = pipe_reader()

    real = threading.Condition._acquire_restore  # type: ignore[attr-defined]
    main = threading.current_thread()

    def interrupted(self: threading.Condition, state: object) -> None:
        if threading.current_thread() is not main:  # other threads' waits are not Ctrl-C's
            return real(self, state)
        raise KeyboardInterrupt

    def ctrl_c(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGALRM, ctrl_c)
    monkeypatch.setattr(threading.Condition, "_acquire_restore", interrupted)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            reader.get()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        monkeypatch.undo()


def test_ctrl_c_inside_rich_s_print_leaves_the_console_writing(
    monkeypatch: pytest.MonkeyPatch,
    ctrl_c_raises: None,
) -> None:
    """A real SIGINT landing inside rich's print, just after it opened its buffer, used
    to leave the console buffering for good: the chat lived on and showed nothing more
    (the pty test's rare timeout waiting for 'Ctrl-C again')."""
    opened = Console._enter_buffer
    sent: list[bool] = []

    def enter_then_interrupt(self: Console) -> None:
        opened(self)
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(Console, "_enter_buffer", enter_then_interrupt)
    terminal = io.StringIO()
    assert prompted_once(terminal) == "hello"
    assert sent
    assert "Ctrl-C again or Ctrl-D to leave" in terminal.getvalue()
