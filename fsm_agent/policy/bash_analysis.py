"""Bash commands read by tree-sitter-bash, the grammar Claude Code parses them with.

`analyse` turns a command into the simple commands it runs (`Part`: each word's value
as the shell would pass it, the files its redirections name) and says whether it
understood all of it. Whatever it does not fully understand (a parse error, ANSI-C
or locale quoting, an expansion or substitution whose value only the shell knows, a
loop, a program that takes commands or paths from its input or arguments, control
characters) is named in `Analysis.problem`, and the permission check asks about the
command instead of judging it: failing closed, not guessing.
"""

from __future__ import annotations

import functools
import re

import tree_sitter
import tree_sitter_bash
from attrs import frozen

_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))

ESCAPES = "Text with escape codes in this command can't be checked before it runs"
"""Claude Code's words for `$'…'`, as the real CLI puts them."""

WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "stdbuf"})
"""Programs that run the command after them unchanged, whose options are known: the
command after them is the one judged and matched (`timeout 30 npm test`)."""

RUNNERS = frozenset(
    {"xargs", "parallel", "env", "sudo", "doas", "su", "sh", "bash", "zsh", "dash", "ksh",
     "fish", "csh", "tcsh", "eval", "exec", "source", ".", "command", "builtin", "noglob",
     "watch", "setsid", "chroot", "unshare", "nsenter", "flock", "script", "strace",
     "ltrace", "ionice", "chrt", "taskset", "busybox", "runuser", "systemd-run", "trap"}
)  # fmt: skip
"""Programs that run a command or take paths they are not given as words (from stdin, a
file, a string): what they run cannot be judged from the command line."""

FROM_ELSEWHERE = re.compile(
    r"^--?(?:files0-from|files-from|from-file|pathspec-from-file|include-from|exclude-from"
    r"|stdin|target-directory-from)\b|^-exec|^-execdir$|^-ok$|^-okdir$"
)
"""Options naming the paths or commands to act on somewhere the check cannot see."""

_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f\u00a0\u1680\u2000-\u200f\u2028-\u202f\u205f\u3000\ufeff]"
)
_CONTINUATION = re.compile(rb"\\\r?\n")
_JOINED_LINE = re.compile(r"[^\s\\]\\\r?\n[^\s]")
"""A backslash-newline inside a word joins two lines into one word for bash, where
tree-sitter-bash sees two: the two would judge different paths."""

_SEQUENCES = frozenset({"program", "list", "pipeline", "subshell", "compound_statement",
                        "negated_command"})  # fmt: skip
_SKIPPED = frozenset({"comment", "&&", "||", "|", "|&", ";", "&", ";;", "\n", "(", ")",
                      "{", "}", "!"})  # fmt: skip
_UNSUPPORTED = {
    "ansi_c_string": ESCAPES,
    "translated_string": 'Locale-translated text ($"…")',
    "simple_expansion": "A variable ($NAME)",
    "expansion": "A parameter expansion (${…})",
    "command_substitution": "Command substitution ($(…) or `…`)",
    "process_substitution": "Process substitution (<(…) or >(…))",
    "arithmetic_expansion": "Arithmetic expansion ($((…)))",
    "brace_expression": "Brace expansion ({a,b} or {1..3})",
    "$": 'Locale-translated text ($"…")',
}
_WRITES = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})


class Unclear(Exception):
    """A construct the analysis does not fully understand; the message says which."""


@frozen
class Redirect:
    operator: str
    target: str
    """The file it names, or "" for a descriptor duplicated or closed (`2>&1`, `<&-`)."""

    @property
    def writes(self) -> bool:
        if not self.target or self.target == "/dev/null":
            return False
        return self.operator in _WRITES or self.operator == ">&"


@frozen
class Part:
    """One simple command: its text as written (for rule matching), its words' values,
    its leading assignments (`NAME=value`) and its redirections."""

    text: str
    words: tuple[str, ...] = ()
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    stdin_text: bool = False
    """A here-document or here-string feeds it."""

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""

    def unwrapped(self) -> tuple[str, ...]:
        """The words of the command a wrapper runs (`timeout 5 cat x` → `cat x`)."""
        return unwrap(self.words)

    def writes(self) -> bool:
        return any(r.writes for r in self.redirects)


@frozen
class Analysis:
    parts: tuple[Part, ...]
    problem: str | None = None
    """Why the command is not understood (None: every part of it is)."""


@functools.lru_cache(maxsize=256)
def analyse(command: str) -> Analysis:
    """The parts of `command` and what, if anything, the analysis did not understand.
    Cached: one call is judged by the permission check, its hooks' `if` and the
    replay of its question."""
    problem: str | None = None
    if _CONTROL.search(command):
        problem = "Control or invisible characters in this command can't be checked before it runs"
    elif _JOINED_LINE.search(command):
        problem = "A backslash-newline inside a word can't be checked before it runs"
    tree = _PARSER.parse(command.encode("utf-8", "surrogatepass"))
    walker = _Walker(command)
    root = tree.root_node
    walker.gap(0, root.start_byte)
    walker.gap(root.end_byte, len(walker.source))
    walker.statement(root, ())
    if tree.root_node.has_error:
        problem = (
            problem or "This command could not be parsed, so it can't be checked before it runs"
        )
    return Analysis(tuple(walker.parts), problem or walker.problem)


def unwrap(words: tuple[str, ...]) -> tuple[str, ...]:
    """Take known wrappers and their options off the front; a wrapper option not known
    leaves the words as they are (the part is then not understood, see `_wrapper_problem`)."""
    while words and words[0] in WRAPPERS:
        rest = _after_wrapper(words)
        if rest is None or not rest:
            return words
        words = rest
    return words


_WRAPPER_VALUE_OPTIONS = {
    "timeout": ("-s", "-k", "--signal", "--kill-after"),
    "nice": ("-n", "--adjustment"),
    "stdbuf": ("-i", "-o", "-e", "--input", "--output", "--error"),
    "time": ("-f", "--format", "-o", "--output"),
    "nohup": (),
}
_WRAPPER_FLAGS = {
    "timeout": ("--preserve-status", "--foreground", "-v", "--verbose"),
    "nice": (),
    "stdbuf": (),
    "time": ("-p", "-a", "--append", "-v", "--verbose", "--portability"),
    "nohup": (),
}


def _after_wrapper(words: tuple[str, ...]) -> tuple[str, ...] | None:
    """The words after one wrapper and its options; None when an option is not known."""
    head, rest = words[0], list(words[1:])
    values, flags = _WRAPPER_VALUE_OPTIONS[head], _WRAPPER_FLAGS[head]
    while rest and rest[0].startswith("-") and rest[0] != "-":
        opt = rest.pop(0)
        if opt == "--":
            break
        if opt in flags:
            continue
        if opt in values:
            if not rest:
                return None
            rest.pop(0)
        elif not _attached(head, opt, values):
            return None
    if head == "timeout":
        if not rest or not re.fullmatch(r"\d+(?:\.\d+)?[smhd]?", rest[0]):
            return None
        rest.pop(0)
    return tuple(rest)


def _attached(head: str, opt: str, values: tuple[str, ...]) -> bool:
    """An option with its value in the same word: `-oL`, `--signal=KILL`, `nice -5`."""
    if head == "nice" and re.fullmatch(r"-\d+", opt):
        return True
    return any(opt.startswith(v + ("=" if v.startswith("--") else "")) for v in values)


_SEE = "which can't be checked before it runs"


def part_problem(part: Part) -> str | None:
    """Why one understood part still cannot be judged: it runs commands or reads paths
    from somewhere its words do not say."""
    words = part.words
    while words and words[0] in WRAPPERS:
        rest = _after_wrapper(words)
        if rest is None:
            return f"`{words[0]}` with options the check does not know can't be checked"
        words = rest
    if not words:
        return None
    name = words[0].rsplit("/", 1)[-1]
    if name in RUNNERS:
        return f"`{name}` runs commands or takes paths from its input, {_SEE}"
    if any(FROM_ELSEWHERE.search(w) for w in words[1:]):
        return f"`{name}` takes commands or paths from elsewhere than its arguments, {_SEE}"
    return None


class _Walker:
    """Collects every simple command of a tree, noting the first construct not understood.
    The parts are collected even then, so deny and ask rules still see each command."""

    def __init__(self, source: str) -> None:
        self.source = source.encode("utf-8", "surrogatepass")
        self.parts: list[Part] = []
        self.problem: str | None = None

    def fail(self, why: str) -> None:
        if self.problem is None:
            self.problem = (
                why if "can't" in why else f"{why} in this command can't be checked before it runs"
            )

    def gap(self, start: int, end: int) -> None:
        """Text between two nodes must be blanks (or a line continuation): tree-sitter-bash
        skips an escaped blank (`\\ `, `\\<tab>`) there, which bash keeps in a word."""
        if end > start and b"\\" in _CONTINUATION.sub(b"", self.source[start:end]):
            self.fail("An escaped blank between words")

    def gaps(self, node: tree_sitter.Node) -> None:
        at = node.start_byte
        for child in node.children:
            self.gap(at, child.start_byte)
            at = child.end_byte
        self.gap(at, node.end_byte)

    def text(self, node: tree_sitter.Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def statement(self, node: tree_sitter.Node, redirects: tuple[Redirect, ...]) -> None:
        kind = node.type
        if node.is_missing or kind == "ERROR":
            self.fail("This command could not be parsed, so it can't be checked before it runs")
            return
        self.gaps(node)
        if kind in _SEQUENCES:
            for child in node.children:
                if child.type not in _SKIPPED:
                    self.statement(child, redirects)
            return
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            extra: list[str] = []
            own = tuple(
                r
                for child in node.children
                if child.type.endswith("_redirect")
                for r in self.redirect(child, extra)
            )
            if body is not None and body.type == "command":
                self.command(body, redirects + own, self.text(node), tuple(extra))
                return
            if extra:
                self.fail("Words after a redirection of a compound command")
            if body is None:
                self.parts.append(Part(self.text(node), redirects=redirects + own))
            else:
                self.statement(body, redirects + own)
            return
        if kind == "command":
            self.command(node, redirects, self.text(node))
            return
        if kind == "variable_assignment":
            self.parts.append(
                Part(self.text(node), assignments=(self.assignment(node),), redirects=redirects)
            )
            return
        if kind in _SKIPPED:
            return
        self.fail(f"`{self.text(node).split(None, 1)[0] if self.text(node).split() else kind}` "
                  f"({kind.replace('_', ' ')})")  # fmt: skip
        self.nested(node)

    def nested(self, node: tree_sitter.Node) -> None:
        """The commands inside a construct not understood, for deny and ask rules."""
        for child in node.children:
            if child.type in ("command", "redirected_statement", "list", "pipeline"):
                self.statement(child, ())
            else:
                self.nested(child)

    def command(
        self,
        node: tree_sitter.Node,
        redirects: tuple[Redirect, ...],
        text: str,
        after: tuple[str, ...] = (),
    ) -> None:
        """`after`: words written after a redirection (`ls > out -la`), which tree-sitter
        files under the redirection and bash passes to the command."""
        words: list[str] = []
        assignments: list[str] = []
        own: list[Redirect] = []
        stdin_text = False
        self.gaps(node)
        word_end = -1
        for child in node.children:
            kind = child.type
            if not kind.endswith("_redirect") and kind != "comment":
                if child.start_byte == word_end:
                    self.fail("Words that run together")
                word_end = child.end_byte
            if kind == "variable_assignment":
                assignments.append(self.assignment(child))
            elif kind == "command_name":
                words.append(self.argument(child.children[0]) if child.children else "")
            elif kind.endswith("_redirect"):
                own += self.redirect(child, words)
                stdin_text = stdin_text or kind in ("herestring_redirect", "heredoc_redirect")
            elif kind == "comment":
                continue
            else:
                words.append(self.argument(child))
        for r in (*redirects, *own):
            stdin_text = stdin_text or r.operator in ("<<", "<<-", "<<<")
        words += after
        part = Part(text, tuple(words), tuple(assignments), (*redirects, *own), stdin_text)
        if self.problem is None and (why := part_problem(part)) is not None:
            self.fail(why)
        self.parts.append(part)

    def assignment(self, node: tree_sitter.Node) -> str:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or name.type != "variable_name":
            self.fail(f"`{self.text(node)}` (an assignment)")
            return self.text(node)
        return f"{self.text(name)}={self.word(value) if value is not None else ''}"

    def redirect(self, node: tree_sitter.Node, words: list[str]) -> list[Redirect]:
        """A redirection's operator and file; the words after its file (tree-sitter
        puts them in the redirection) go to `words`, the command's."""
        if node.type == "heredoc_redirect":
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            if body is not None and any(c.type != "heredoc_content" for c in body.children):
                self.fail("An expansion in a here-document")
                self.nested(body)
            return [Redirect("<<", "")]
        if node.type == "herestring_redirect":
            for child in node.children[1:]:
                self.word(child)
            return [Redirect("<<<", "")]
        operator, target, seen = "", "", False
        for child in node.children:
            if child.type == "file_descriptor":
                continue
            if not operator:
                operator = child.type
                continue
            if seen:
                words.append(self.argument(child))
                continue
            seen = True
            if child.type == "number" or (child.type == "word" and self.text(child) == "-"):
                target = ""
                if operator in ("<", ">", ">>"):
                    target = self.text(child)
            else:
                target = self.argument(child)
        if operator in (">&", "<&") and not target:
            return [Redirect(operator, "")]
        return [Redirect(operator, target)]

    def argument(self, node: tree_sitter.Node) -> str:
        """A whole word: a leading `~` other than `~` or `~/…` names a user's home or
        the shell's directory stack (`~root`, `~+`, `~-`)."""
        value = self.word(node)
        if self.text(node).startswith("~") and not re.match(r"~(?:/|$)", value):
            self.fail(f"`{value.split('/', 1)[0]}` (a tilde expansion)")
        return value

    def word(self, node: tree_sitter.Node) -> str:
        """A word's value as the shell passes it; a piece whose value only the shell
        knows marks the command not understood (and stands as its text)."""
        kind = node.type
        if kind in ("word", "number"):
            raw = self.text(node)
            if re.search(r"[=:]~", raw):
                self.fail(f"`{raw}` (a tilde expansion after `=` or `:`)")
            if re.search(r"(?<!\\)\s", raw):
                self.fail("A word with blanks in it")
            if _braces(raw):
                self.fail(_UNSUPPORTED["brace_expression"])
            if raw.startswith("~") and not re.match(r"~(?:/|$)", raw):
                self.fail(f"`{raw.split('/', 1)[0]}` (a tilde expansion)")
            return _unescape(raw)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "string":
            inner = [c for c in node.children if c.type != '"']
            out, at = [], node.start_byte + 1
            for i, child in enumerate(inner):
                if child.type == "string_content" or (
                    _literal_dollar(child) and i == len(inner) - 1
                ):
                    continue
                out.append(self.source[at : child.start_byte].decode("utf-8", "surrogatepass"))
                out[-1] = _unescape_quoted(out[-1])
                out.append(self.word(child))
                at = child.end_byte
            tail = self.source[at : node.end_byte - 1].decode("utf-8", "surrogatepass")
            return "".join(out) + _unescape_quoted(tail)
        if kind == "concatenation":
            self.gaps(node)
            children = node.children
            raw = "".join(self.text(c) if c.type == "word" else "x" for c in children)
            if _braces(raw):
                self.fail(_UNSUPPORTED["brace_expression"])
            out = []
            for i, child in enumerate(children):
                if _literal_dollar(child) and i == len(children) - 1:
                    out.append("$")
                elif child.type == "word" and i > 0:
                    out.append(_unescape(self.text(child)))
                else:
                    out.append(self.word(child))
            return "".join(out)
        if kind == "command_substitution" and (body := _quoted_heredoc(node)) is not None:
            return body
        self.fail(_UNSUPPORTED.get(kind, f"`{self.text(node)}` ({kind.replace('_', ' ')})"))
        self.nested(node)
        return self.text(node)


def _braces(raw: str) -> bool:
    """Whether unquoted text may hold a brace expansion: a `{`, then `,` or `..`, then
    `}` (found in one pass: a regex with two `.*` is quadratic on a long word)."""
    start = raw.find("{")
    if start < 0:
        return False
    comma, dots = raw.find(",", start), raw.find("..", start)
    after = min((i for i in (comma, dots) if i >= 0), default=-1)
    return after >= 0 and raw.find("}", after) >= 0


def _literal_dollar(node: tree_sitter.Node) -> bool:
    """A `$` that ends a word (`grep 'a'$`) is a `$`; `$$` is the shell's process id."""
    return node.type == "$" and node.end_byte - node.start_byte == 1


def _quoted_heredoc(node: tree_sitter.Node) -> str | None:
    """`$(cat <<'EOF' … EOF)`, the way models write a commit message: its value is the
    here-document's text, which a quoted delimiter keeps from every expansion."""
    inner = [c for c in node.children if c.type not in ("$(", ")", "`")]
    if len(inner) != 1 or inner[0].type != "redirected_statement":
        return None
    statement = inner[0]
    body, redirects = statement.child_by_field_name("body"), statement.children[1:]
    if body is None or body.type != "command" or len(body.children) != 1:
        return None
    name = body.children[0]
    if name.type != "command_name" or name.text != b"cat" or len(redirects) != 1:
        return None
    heredoc = redirects[0]
    start = next((c for c in heredoc.children if c.type == "heredoc_start"), None)
    text = next((c for c in heredoc.children if c.type == "heredoc_body"), None)
    if heredoc.type != "heredoc_redirect" or start is None or text is None:
        return None
    if start.text is None or start.text[:1] not in (b"'", b'"') or text.children:
        return None
    return (text.text or b"").decode("utf-8", "surrogatepass").removesuffix("\n")


def _unescape(raw: str) -> str:
    """An unquoted word's backslashes: `\\x` is `x`, a backslash-newline nothing."""
    if "\\" not in raw:
        return raw
    return re.sub(
        r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), raw, flags=re.DOTALL
    )


def _unescape_quoted(raw: str) -> str:
    """Inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\\` and newline."""
    if "\\" not in raw:
        return raw
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


_REDIRECT_PREFIX = re.compile(r"^(?:[0-9]+|&)?(?:<<<|<<-?|<>|<&|>&|>>|>\||<|>)")


def arguments(part: Part) -> list[str]:
    """What a part names besides its program's options: its words after the program
    (a wrapper's taken off), each option's value as a word of its own
    (`--from-file=../x`, `-rf../x`, `-I/usr/include`), a program named by a path, the
    values it assigns, and the files its redirections name."""
    words = part.unwrapped()
    out: list[str] = []
    if words and "/" in words[0]:
        out.append(words[0])
    for word in words[1:]:
        out.append(word)
        if word.startswith("-") and "=" in word:
            out.append(word.split("=", 1)[1])
        elif attached := re.match(r"-[A-Za-z0-9]+([./~].*)", word, re.DOTALL):
            out.append(attached.group(1))
    out += [a.split("=", 1)[1] for a in part.assignments]
    out += [r.target for r in part.redirects if r.target]
    return out


def command_paths(part: Part) -> list[str]:
    """The arguments of a part that look like paths (for the workspace check)."""
    return [w for w in arguments(part) if not w.startswith("-") and _looks_like_path(w)]


def command_words(part: Part) -> list[str]:
    """Every argument that is not an option: any of them may name a file or a symlink."""
    return [w for w in arguments(part) if w and not w.startswith("-") and "\0" not in w]


def _looks_like_path(word: str) -> bool:
    return word.startswith(("/", "~", "..")) or "/" in word or word in (".", "..")


def cd_target(part: Part) -> str | None:
    """Where a `cd` takes the parts of a command after it, as written: `~` for a bare
    `cd` (home), `-` for `cd -` (the shell's previous directory); None if not a `cd`."""
    words = part.unwrapped()
    if not words or words[0] != "cd":
        return None
    for word in words[1:]:
        if word == "--" or (word.startswith("-") and word != "-"):
            continue
        return word
    return "~"
