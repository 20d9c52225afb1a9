"""Bash commands cut into what a permission rule is judged against.

A compound command splits into its parts (`split_command`), a part into words as
POSIX `sh` would (`words`), with wrappers such as `timeout 10` taken off the front;
the syntax no path check can see through (redirection, substitution, expansion) is
detected here too. A lexer, not a parser: it reads only the text it is given.
"""

from __future__ import annotations

import re

_SEPARATORS = ("&&", "||", "|&", ";", "|", "&", "\n")
WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob"})


def split_command(command: str) -> list[str]:
    """Split a compound command on `&&`, `||`, `;`, `|`, `|&`, `&` and newlines, outside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if quote:
            current.append(c)
            if c == "\\" and quote == '"' and i + 1 < n:
                current.append(command[i + 1])
                i += 1
            elif c == quote:
                quote = None
            i += 1
            continue
        if c in "'\"":
            quote = c
            current.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            current.append(command[i : i + 2])
            i += 2
            continue
        sep = next((s for s in _SEPARATORS if command.startswith(s, i)), None)
        if sep == "&" and _is_redirect_amp(command, i):
            sep = None
        if sep is not None:
            parts.append("".join(current))
            current = []
            i += len(sep)
            continue
        current.append(c)
        i += 1
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _is_redirect_amp(command: str, i: int) -> bool:
    """`2>&1` and `&>file` use `&` without separating commands."""
    before = command[i - 1] if i else ""
    after = command[i + 1] if i + 1 < len(command) else ""
    return before in "<>" or after == ">"


def words(command: str) -> list[str]:
    """`shlex.split(command)` (POSIX mode) in one pass; a command it refuses (an
    unclosed quote, a trailing backslash) split on whitespace. shlex builds each word
    a character at a time, quadratic in its length, and a command is judged in the
    event loop."""
    out: list[str] = []
    word: list[str] = []
    in_word = False
    quote = ""
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if quote == "'":
            end = command.find("'", i)
            if end < 0:
                return command.split()
            word.append(command[i:end])
            quote, i = "", end + 1
            continue
        if quote == '"':
            end = min((k for k in (command.find('"', i), command.find("\\", i)) if k >= 0),
                      default=-1)  # fmt: skip
            if end < 0:
                return command.split()
            word.append(command[i:end])
            if command[end] == '"':
                quote, i = "", end + 1
            elif end + 1 >= n:
                return command.split()
            else:
                escaped = command[end + 1]
                word.append(escaped if escaped in '"\\' else "\\" + escaped)
                i = end + 2
            continue
        if c in " \t\r\n":
            if in_word:
                out.append("".join(word))
                word, in_word = [], False
        elif c in "'\"":
            in_word, quote = True, c
        elif c == "\\":
            if i + 1 >= n:
                return command.split()
            in_word = True
            word.append(command[i + 1])
            i += 1
        else:
            in_word = True
            word.append(c)
        i += 1
    if quote:
        return command.split()
    if in_word:
        out.append("".join(word))
    return out


def strip_wrappers(command: str) -> str:
    """Drop `timeout 10`, `nice -n 5`, `nohup`, bare `xargs` … in front of the real command."""
    while True:
        ws = command.split()
        if not ws:
            return command
        head = ws[0]
        if head == "xargs" and len(ws) > 1 and not ws[1].startswith("-"):
            command = command.split(None, 1)[1]
            continue
        if head not in WRAPPERS:
            return command
        rest = ws[1:]
        if head == "timeout":
            while rest and rest[0].startswith("-"):
                takes_value = rest[0] in ("-s", "-k", "--signal", "--kill-after")
                rest = rest[2:] if takes_value else rest[1:]
            rest = rest[1:] if rest else rest
        elif head in ("nice", "stdbuf"):
            while rest and rest[0].startswith("-"):
                takes_value = rest[0] in ("-n",)
                rest = rest[2:] if takes_value else rest[1:]
        if not rest:
            return command
        command = " ".join(rest) if rest != ws[1:] else command.split(None, 1)[1]


def has_write_syntax(command: str) -> bool:
    """Output redirection or command substitution makes a command not read-only."""
    text = re.sub(r"'[^']*'", "''", command)
    text = re.sub(r'"(?:[^"\\$`]|\\.)*"', '""', text)
    text = re.sub(r"[0-9]?>&[0-9-]|[0-9]?>\s*/dev/null\b", " ", text)
    return any(token in text for token in (">", "$(", "`", "<("))


def has_expansion(command: str) -> bool:
    """Parameter, brace or directory-tilde expansion (`$HOME/x`, `${X}`, `{../a,b}`,
    `x{1..3}`, `~+/..`, `~-`) names paths only the shell knows, so no path check
    can judge such a command."""
    text = re.sub(r"'[^']*'", "''", command)
    if re.search(r"\$[A-Za-z0-9_{@*#?$!-]|(?:^|[\s=:])~[+-]", text):
        return True
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return re.search(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}", text) is not None


_REDIRECTION = r"^(?:[0-9]+|&)?(?:<<<|<<-?|<>|<&|>&|>>|>\||<|>)"


def _arguments(command: str) -> list[str]:
    """The words after the program, a redirection's operator taken off the path it is
    written against (`0<../x`, `<../x`, `2>>log` name `../x`, `../x`, `log`), and
    an option's value as a word of its own: `--from-file=../x`, and a path
    written against short options (`-rf../x`, `-I/usr/include`)."""
    out: list[str] = []
    for word in words(strip_wrappers(command))[1:]:
        word = re.sub(_REDIRECTION, "", word)
        out.append(word)
        if word.startswith("-") and "=" in word:
            out.append(word.split("=", 1)[1])
        elif attached := re.match(r"-[A-Za-z0-9]+([./~].*)", word, re.DOTALL):
            out.append(attached.group(1))
    return out


def command_paths(command: str) -> list[str]:
    """The arguments of a command that look like paths (for the workspace check)."""
    return [w for w in _arguments(command) if not w.startswith("-") and _looks_like_path(w)]


def command_words(command: str) -> list[str]:
    """Every argument that is not an option: any of them may name a symlink."""
    return [w for w in _arguments(command) if w and not w.startswith("-") and "\0" not in w]


def _looks_like_path(word: str) -> bool:
    return word.startswith(("/", "~", "..")) or "/" in word or word in (".", "..")


def cd_target(command: str) -> str | None:
    """Where a `cd` takes the parts of a command after it, as written: `~` for a bare
    `cd` (home), `-` for `cd -` (the shell's previous directory); None if not a `cd`.
    Redirections are not the operand (`cd - >/dev/null`)."""
    ws = words(strip_wrappers(command))
    if not ws or ws[0] != "cd":
        return None
    rest = iter(ws[1:])
    for word in rest:
        if (op := re.match(_REDIRECTION, word)) is not None:
            if op.end() == len(word):
                next(rest, None)
            continue
        if word == "--" or (word.startswith("-") and word != "-"):
            continue
        return word
    return "~"
