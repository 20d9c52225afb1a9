"""The one file a Bash command only shows: `cat`, `head`, `tail`, `sed -n`, `grep`, `rg`.

Claude Code counts viewing a single file that way as the read an Edit or a Write
needs. Only a plain command with one file operand qualifies: no pipes, lists,
redirections, substitutions, variables or globs, so the file named is the file
shown, and nothing else runs. Anything else views no file (the model can Read it).
"""

from __future__ import annotations

import re
import shlex

_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "cat": frozenset(),
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "sed": frozenset({"-e", "--expression"}),
    "grep": frozenset({"-e", "-f", "-A", "-B", "-C", "-m", "--regexp", "--file"}),
    "rg": frozenset(
        {"-e", "-f", "-A", "-B", "-C", "-m", "-g", "-t", "-T", "-M", "-j", "--regexp", "--file"}
    ),
}
_PATTERN_OPTIONS = frozenset({"-e", "-f", "--regexp", "--file", "--expression"})
_SED_FLAGS = frozenset("nEr")
_SED_PRINT = re.compile(r"\s*(?:(?:\d+|\$)(?:\s*,\s*(?:\d+|\$))?)?\s*p\s*")
_OPERATOR = re.compile(r"[();<>|&]+")
MAX_VIEW_COMMAND = 8_192
"""Longer than any command that names one file (a path is at most 4,096 bytes): such
a command views nothing, and shlex, quadratic in a word's length, would hold the
loop for seconds on it (25 s for a quoted megabyte)."""


def viewed_file(command: str) -> str | None:
    """The file operand `command` shows, as written; None when it is not such a view."""
    if len(command) > MAX_VIEW_COMMAND:
        return None
    outside_quotes = re.sub(r"'[^']*'", "''", command)
    if any(c in outside_quotes for c in "$`\n"):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    if not tokens or any(_OPERATOR.fullmatch(t) for t in tokens):
        return None
    name, args = tokens[0], tokens[1:]
    takes_value = _VALUE_OPTIONS.get(name)
    if takes_value is None:
        return None
    options: list[str] = []
    operands: list[str] = []
    values: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            operands += list(words)
            break
        if word.startswith("-") and len(word) > 1:
            options.append(word)
            if word in takes_value:
                values.append(next(words, ""))
        else:
            operands.append(word)
    if name == "sed":
        operands = _sed_operands(options, values, operands)
    elif name in ("grep", "rg") and not _PATTERN_OPTIONS & set(options):
        operands = operands[1:]
    if len(operands) != 1 or any(c in operands[0] for c in "*?[~"):
        return None
    return operands[0]


def _sed_operands(options: list[str], values: list[str], operands: list[str]) -> list[str]:
    """The files of a `sed -n` that only prints lines (`1,20p`); none for any other sed."""
    quiet = False
    for option in options:
        if option in ("--quiet", "--silent"):
            quiet = True
        elif option in ("-e", "--expression", "--regexp-extended"):
            continue
        elif option.startswith("--") or not set(option[1:]) <= _SED_FLAGS:
            return []
        else:
            quiet = quiet or "n" in option
    scripts = values if values else operands[:1]
    files = operands if values else operands[1:]
    if not quiet or not scripts or not all(_SED_PRINT.fullmatch(s) for s in scripts):
        return []
    return files
