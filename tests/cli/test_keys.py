"""A chat terminal's keys edited into lines while a run holds them (a real pty, no chat)."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest

from fsm_agent.cli.keys import Keyboard


@pytest.fixture
def keyboard() -> Iterator[tuple[Keyboard, list[str], int]]:
    """A keyboard on a fresh pty's terminal side, what it echoed, and that side's fd."""
    master, slave = os.openpty()
    echoed: list[str] = []
    try:
        yield Keyboard(slave, "utf-8", echoed.append), echoed, slave
    finally:
        os.close(master)
        os.close(slave)


def _echoes(fd: int) -> bool:
    return bool(termios.tcgetattr(fd)[3] & termios.ECHO)


def test_held_keys_are_edited_not_echoed(keyboard: tuple[Keyboard, list[str], int]) -> None:
    keys, echoed, fd = keyboard
    keys.hold()
    assert not _echoes(fd)
    lines, ended = keys.feed(b"fix teh\x7f\x7fhe bug\x1b[D\x1bOA now\r")
    assert (lines, ended) == (["fix the bug now"], False)
    assert keys.feed(b"one two \x17three\x15") == ([], False)
    assert keys.draft() == ""
    assert keys.feed("caf\xc3".encode("latin-1")) == ([], False)
    assert keys.feed(b"\xa9 \x04") == ([], False), "Ctrl-D ends nothing while a line is begun"
    assert keys.draft() == "café "
    assert echoed == []


def test_a_draft_left_at_the_prompt_is_echoed_to_its_end(
    keyboard: tuple[Keyboard, list[str], int],
) -> None:
    keys, echoed, fd = keyboard
    keys.hold()
    keys.feed(b"and mo")
    with keys.released() as draft:
        assert draft == "and mo"
    assert not _echoes(fd), "the terminal never saw the line's start: it is echoed here"
    assert keys.feed(b"x\x7fre\n") == (["and more"], False)
    assert "".join(echoed) == "x\b \bre\n"
    assert _echoes(fd), "the terminal's own echo is back once that line ends"
    with keys.released() as draft:
        assert draft == ""
    assert keys.feed(b"") == ([], True)


def test_a_question_sets_the_draft_aside(keyboard: tuple[Keyboard, list[str], int]) -> None:
    """A line begun before a question is no start of its answer (`also…` read as [a])."""
    keys, _, fd = keyboard
    keys.hold()
    keys.feed(b"also upd")
    with keys.released(aside=True) as draft:
        assert draft == ""
    assert _echoes(fd)
    assert keys.feed(b"n\n") == (["n"], False)
    keys.hold()
    assert keys.draft() == "also upd"
    assert keys.feed(b"\x04") == ([], False)
    keys.restore()
    assert _echoes(fd)
