"""What a command's exit code says, as Claude Code reads it (`commandSemantics.ts`).

Some commands answer a question with their exit code: grep's 1 is "no matches",
not a failure. Claude Code judges a command line by the name of its last command
(the one whose code the shell returns), heuristically: `FOO=1 grep` or `! grep`
are not recognised, and neither are they there.
"""

from __future__ import annotations

import shlex

_ANSWERS: dict[str, str] = {
    "grep": "No matches found",
    "rg": "No matches found",
    "find": "Some directories were inaccessible",
    "diff": "Files differ",
    "test": "Condition is false",
    "[": "Condition is false",
}
"""Commands whose exit code 1 is an answer (and what it means); 2 or more is a failure."""
_SEPARATOR_CHARS = frozenset("&|;\n")
MAX_SPLIT_COMMAND = 8_192
"""Longer lines (a heredoc writing a file) are judged as any command: shlex, quadratic
in a word's length, would hold the loop for seconds on them (`viewed.MAX_VIEW_COMMAND`)."""


def answer(command: str, code: int) -> str | None:
    """What exit code `code` of `command` means when it is no failure; None when it is
    one (or 0)."""
    if code != 1:
        return None
    return _ANSWERS.get(last_command_name(command))


def last_command_name(command: str) -> str:
    """The first word of the last command of the line; "" when the line cannot be split."""
    if len(command) > MAX_SPLIT_COMMAND:
        return ""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    try:
        for token in lexer:
            if set(token) <= _SEPARATOR_CHARS:
                segments.append([])
            elif not set(token) <= {"(", ")"}:
                segments[-1].append(token)
    except ValueError:
        return ""
    last = next((words for words in reversed(segments) if words), [])
    return last[0] if last else ""
