"""The chat's input plumbing, without a terminal: the reader thread, the inbox, `ask`."""

from __future__ import annotations

import io
import os

from rich.console import Console

from fsm_agent.chat import ChatSession, LineReader, ReaderInbox
from fsm_agent.effects import AbortSignal
from fsm_agent.launch import Plan


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
