"""Permission rules and modes in Claude Code's syntax, evaluated as a pure function.

`evaluate` answers allow / ask / deny for one tool call from the loaded rules,
the permission mode and the workspace. It only reads the file system through
the `resolve` function it is given (symlinks), so tests can drive it with
real temporary trees and the engine can run it behind an effect, where a
replay answers it from the log instead.

Order, as in Claude Code: deny rules, then ask rules, then the mode's
bypass, then allow rules, then the tool's own default; the first match wins.
Paths outside the workspace are never allowed by a mode: only by an allow
rule whose path pattern matches them, or by the user at a prompt.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from attrs import evolve, field, frozen

from fsm_agent.core.globs import split_literal, translate

# Re-exported: the engine and the log import these from `fsm_agent.core.permission_types`.
from fsm_agent.core.permission_types import (  # noqa: F401
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    DENY,
    NO_TERMINAL,
    Behavior,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionSettings,
    RuleSource,
)

MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
MODE_ALIASES = {"manual": "default"}
UNSUPPORTED_MODES = {"auto": "default"}
"""Claude Code modes fsm-agent cannot honour, and the stricter mode it uses instead:
`auto` approves through a safety classifier model, which fsm-agent does not have."""


def unsupported_mode_warning(mode: str, where: str) -> str:
    return (
        f"{where}: permission mode {mode!r} needs Claude Code's safety classifier, which "
        f"fsm-agent does not have; using {UNSUPPORTED_MODES[mode]!r} (asks before anything "
        "but reads)"
    )


READ_TOOLS = frozenset({"Read", "Glob", "Grep"})
EDIT_TOOLS = frozenset({"Edit", "Write", "NotebookEdit"})
PATH_KEYS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path"}
SEARCH_TOOLS = frozenset({"Glob", "Grep"})

Resolve = Callable[[str], str]
Expand = Callable[[str], list[str]]
Links = Callable[[str], "list[str] | None"]


class PermissionError_(ValueError):
    """A permission rule or mode that cannot be understood; the message says which."""


# --- rules ---------------------------------------------------------------


@frozen
class Rule:
    tool: str
    content: str | None
    root: str = ""
    origin: str = ""

    @classmethod
    def parse(cls, text: str, root: str = "", origin: str = "") -> Rule:
        text = text.strip()
        m = re.fullmatch(r"([A-Za-z0-9_\-*]+)(?:\((.*)\))?", text, re.DOTALL)
        if m is None:
            raise PermissionError_(
                f"not a permission rule: {text!r} (expected Tool or Tool(specifier))"
            )
        content = m.group(2)
        if content is not None:
            content = content.strip()
            if content in ("", "*"):
                content = None
        return cls(m.group(1), content, root, origin)

    def __str__(self) -> str:
        return self.tool if self.content is None else f"{self.tool}({self.content})"

    def covers_tool(self, tool: str) -> bool:
        if self.tool == tool:
            return True
        if self.tool.startswith("mcp__") and self.tool.endswith("__*"):
            return tool.startswith(self.tool[:-1])
        if self.tool == "Edit":
            return tool in EDIT_TOOLS
        if self.tool == "Read":
            return tool in READ_TOOLS
        return False


def rules_of(settings: PermissionSettings, kind: Behavior) -> tuple[Rule, ...]:
    """The parsed `allow`, `ask` or `deny` rules of `settings`."""
    return _parsed(getattr(settings, kind))


@functools.lru_cache(maxsize=64)
def _parsed(sources: tuple[RuleSource, ...]) -> tuple[Rule, ...]:
    """Rules parsed once per list: every tool call is judged against them."""
    return tuple(Rule.parse(r.rule, r.root, r.origin) for r in sources)


def check_mode(mode: str) -> str:
    mode = MODE_ALIASES.get(mode, mode)
    if mode not in MODES:
        raise PermissionError_(
            f"unknown permission mode {mode!r}; choose one of {', '.join(MODES)}"
        )
    return mode


# --- bash commands ---------------------------------------------------------

_SEPARATORS = ("&&", "||", "|&", ";", "|", "&", "\n")
WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob"})
READ_ONLY_COMMANDS = frozenset(
    {"ls", "cat", "echo", "pwd", "head", "tail", "grep", "find", "wc", "which", "diff", "stat",
     "du", "cd", "true", "false"}
)  # fmt: skip
READ_ONLY_GIT = frozenset(
    {"status", "diff", "log", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog"}
)
GIT_SAFE_OPTIONS = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects"}
)
"""git's options before the subcommand a read-only command may have: the others choose its
configuration, repository or programs (`--config-env=core.fsmonitor=SHELL` runs a shell)."""
FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf",
                          "-fls", "-fprint0"})  # fmt: skip
ACCEPT_EDITS_COMMANDS = frozenset({"mkdir", "touch", "mv", "cp"})
PROTECTED_DIRS = frozenset({".git", ".claude", ".vscode", ".idea", ".fsm-agent"})
PROTECTED_FILES = frozenset(
    {".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile",
     ".ripgreprc", ".mcp.json", ".claude.json"}
)  # fmt: skip
"""Claude Code's protected paths: what other programs read and run (git's fsmonitor and
hooks, settings and their hooks, shell start-up files). No mode writes them unasked.
`.fsm-agent` is fsm-agent's own, as `.claude` is Claude Code's: its session logs, whose
header a fork takes its hooks and permissions from."""


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
    a character at a time, quadratic in its length: judging `echo "<1 MB>"` held
    the event loop for 53 seconds."""
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


def _has_write_syntax(command: str) -> bool:
    """Output redirection or command substitution makes a command not read-only."""
    text = re.sub(r"'[^']*'", "''", command)
    text = re.sub(r'"(?:[^"\\$`]|\\.)*"', '""', text)
    text = re.sub(r"[0-9]?>&[0-9-]|[0-9]?>\s*/dev/null\b", " ", text)
    return any(token in text for token in (">", "$(", "`", "<("))


def _has_expansion(command: str) -> bool:
    """Parameter, brace or directory-tilde expansion (`$HOME/x`, `${X}`, `{../a,b}`,
    `x{1..3}`, `~+/..`, `~-`) names paths only the shell knows, so no path check
    can judge such a command."""
    text = re.sub(r"'[^']*'", "''", command)
    if re.search(r"\$[A-Za-z0-9_{@*#?$!-]|(?:^|[\s=:])~[+-]", text):
        return True
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return re.search(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}", text) is not None


def is_read_only(command: str) -> bool:
    """Claude Code's built-in read-only set: never prompts (paths are checked separately)."""
    if _has_write_syntax(command) or _has_expansion(command):
        return False
    ws = words(strip_wrappers(command))
    if not ws:
        return True
    name, args = ws[0], ws[1:]
    if any(a.lstrip("-").startswith("files0-from") for a in args if a.startswith("-")):
        return False
    if name == "git":
        at = next((i for i, a in enumerate(args) if not a.startswith("-")), len(args))
        if not GIT_SAFE_OPTIONS.issuperset(args[:at]):
            return False
        sub, rest = (args[at], args[at + 1 :]) if at < len(args) else ("", [])
        if sub == "branch":
            return all(a in ("-a", "-r", "--list", "-v", "-vv", "--all") for a in rest)
        return sub in READ_ONLY_GIT and not any(a.startswith("--output") for a in args)
    if name == "find":
        return not any(a in FIND_ACTIONS for a in args)
    if name == "cd":
        return cd_target(command) != "-"
    return name in READ_ONLY_COMMANDS


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


def bash_pattern(content: str) -> re.Pattern[str]:
    """`npm test *` (or legacy `npm test:*`) as a regex over a whole command.

    A trailing ` *` also matches the bare command, keeping the word boundary:
    `ls *` matches `ls` and `ls -la` but not `lsof`; `ls*` matches `lsof`.
    A piece between two `*` takes its first occurrence, in an atomic group (the
    next `*` takes up whatever lies between): with plain `.*` around each,
    `Bash(a*b*c*d)` took nine seconds on a 6,000-character command, as `re`
    tried every split.
    """
    if content.endswith(":*"):
        content = content[:-2] + " *"
    trailing = content.endswith(" *")
    body = content[:-2] if trailing else content
    pieces = [re.escape(piece) for piece in body.split("*")]
    regex = pieces[0]
    if len(pieces) > 1:
        regex += "".join(f"(?>.*?{piece})" for piece in pieces[1:-1]) + ".*" + pieces[-1]
    if trailing:
        regex += r"(?: .*)?"
    return re.compile(regex, re.DOTALL)


SUBCOMMAND_TOOLS = frozenset(
    {"npm", "pnpm", "yarn", "git", "cargo", "go", "docker", "kubectl", "uv", "pip", "poetry",
     "make", "gh", "bun", "deno", "dotnet", "mvn", "gradle"}
)  # fmt: skip


def bash_suggestion(command: str) -> str:
    """The rule "always" adds: the program, plus its subcommand for tools that have them."""
    ws = words(strip_wrappers(command))
    if not ws:
        return "Bash"
    keep = 2 if ws[0] in SUBCOMMAND_TOOLS and len(ws) > 1 and ws[1].isidentifier() else 1
    return f"Bash({' '.join(ws[:keep])} *)"


def bash_rule_matches(rule: Rule, subcommand: str) -> bool:
    if rule.content is None:
        return True
    pattern = bash_pattern(rule.content)
    return any(
        pattern.fullmatch(candidate) is not None
        for candidate in dict.fromkeys((subcommand, strip_wrappers(subcommand)))
    )


# --- paths -------------------------------------------------------------------


@frozen
class Place:
    """Where a rule's relative paths start: the cwd, home, and the rule's own root."""

    cwd: str
    home: str


def rule_regex(rule: Rule, place: Place, kind: Behavior) -> re.Pattern[str]:
    """The gitignore-style path pattern of a Read/Edit rule, as a regex over absolute paths."""
    content = rule.content or "**"
    if content.startswith("//"):
        base, pattern = "/", content[2:]
    elif content.startswith("~/"):
        base, pattern = place.home, content[2:]
    elif content.startswith("/"):
        base, pattern = rule.root or place.cwd, content[1:]
    elif content.startswith("./"):
        base, pattern = place.cwd, content[2:]
    else:
        base, pattern = place.cwd, content
        if kind != "allow" and not pattern.startswith("**/"):
            pattern = "**/" + pattern
    pattern = pattern.rstrip("/") or "**"
    base = base.rstrip("/")
    return re.compile(re.escape(base) + "/" + translate(pattern), re.DOTALL)


def path_rule_matches(rule: Rule, path: str, place: Place, kind: Behavior) -> bool:
    """A path matches when it, or a directory above it, matches (gitignore's rule)."""
    if rule.content is None:
        return True
    regex = rule_regex(rule, place, kind)
    if regex.fullmatch(path.rstrip("/") + "/"):
        return True
    candidate = path
    while True:
        if regex.fullmatch(candidate):
            return True
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return False
        candidate = parent


def within(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


# --- evaluation ----------------------------------------------------------------


@frozen
class Workspace:
    cwd: str
    home: str
    additional_dirs: tuple[str, ...] = ()

    @property
    def roots(self) -> tuple[str, ...]:
        return (self.cwd, *self.additional_dirs)


@frozen
class CallFacts:
    """What evaluation needs to know about one call, paths already resolved."""

    tool: str
    input: Mapping[str, Any] = field(factory=dict)
    paths: tuple[str, ...] = ()
    subcommands: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    """The protected paths (`PROTECTED_DIRS`, `PROTECTED_FILES`) the call would write:
    an edit's file, or any a command names."""


def call_facts(
    tool: str,
    input: Mapping[str, Any],
    ws: Workspace,
    resolve: Resolve,
    expand: Expand | None = None,
    links: Links | None = None,
) -> CallFacts:
    """`resolve` turns a path as written into a real path; `expand` gives the paths a
    shell glob in a Bash word matches, so `cat l*/x` is judged by what it reads;
    `links` the targets of the symlinks under a directory, which `grep -R` follows.
    A command's paths are each listed once, without /dev/null (`ls > /dev/null`
    reaches nothing outside)."""
    paths: list[str] = []
    subcommands: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    if tool in PATH_KEYS and isinstance(input.get(PATH_KEYS[tool]), str):
        paths.append(resolve(input[PATH_KEYS[tool]]))
    elif tool in SEARCH_TOOLS:
        where = input.get("path")
        where = where if isinstance(where, str) and where else "."
        pattern = input.get("pattern")
        if tool == "Glob" and isinstance(pattern, str):
            where = os.path.join(where, split_literal(pattern)[0])
        paths.append(resolve(where))
    elif tool == "Bash" and isinstance(input.get("command"), str):
        subcommands = tuple(split_command(input["command"]))
        heres = [ws.cwd]
        named: list[str] = []
        for sub in subcommands:
            said = (command_words(sub), command_paths(sub))
            for here in heres:
                reached, real = _bash_paths(*said, here, resolve, expand)
                paths += reached
                named += real
                if links is not None and follows_links(sub):
                    paths += _followed(sub, here, links)
            target = cd_target(sub)
            if target not in (None, "-"):
                gone = [resolve(_at(here, target)) for here in heres]
                paths += gone
                heres = list(dict.fromkeys(heres + gone))
                if len(heres) > MAX_PLACES:
                    paths.append(os.sep)
                    break
        paths = [p for p in dict.fromkeys(paths) if p != os.devnull]
        protected = tuple(p for p in dict.fromkeys(paths + named) if is_protected(p, ws))
    if tool in EDIT_TOOLS:
        protected = tuple(p for p in paths if is_protected(p, ws))
    return CallFacts(tool, input, tuple(paths), subcommands, protected)


def is_protected(path: str, ws: Workspace) -> bool:
    """Whether `path`, inside the workspace, lies in a protected directory or is a
    protected file (case aside: a case-insensitive file system opens .GIT as .git)."""
    root = next((r for r in ws.roots if within(path, (r,))), None)
    if root is None:
        return False
    parts = os.path.relpath(path, root).lower().split(os.sep)
    return not PROTECTED_DIRS.isdisjoint(parts) or parts[-1] in PROTECTED_FILES


def names_protected(rule: Rule) -> bool:
    """Whether a rule's pattern names a protected directory or file: only such a rule
    opens one (`Edit(.claude/**)` does, `Edit(./**)` does not)."""
    parts = set((rule.content or "").lower().replace("\\", "").split("/"))
    return not (PROTECTED_DIRS | PROTECTED_FILES).isdisjoint(parts)


def _at(here: str, word: str) -> str:
    """`word` as a path from the directory `here` (a `~` path stays the home's)."""
    return word if word.startswith("~") else os.path.join(here, word)


MAX_PLACES = 32
"""Directories the parts of one command are judged from (each part from each): a command
whose `cd`s lead to more counts as reaching outside, and is judged no further."""


def _bash_paths(
    words: list[str], paths: list[str], here: str, resolve: Resolve, expand: Expand | None
) -> tuple[list[str], list[str]]:
    """What one part of a command reaches, run in the directory `here` (its `paths`, the
    links and globs among its `words`), and where each of its words leads."""
    real = {w: resolve(_at(here, w)) for w in dict.fromkeys([*words, *paths])}
    reached = [real[p] for p in paths]
    for word in words:
        if real[word] != os.path.normpath(os.path.join(here, word)):
            reached.append(real[word])
        if expand is not None and any(c in word for c in "*?["):
            reached += [resolve(p) for p in expand(_at(here, word))]
    return reached, [real[w] for w in words]


def _followed(sub: str, here: str, links: Links) -> list[str]:
    """Where the links lead that a command following them while recursing meets under
    its directory operands, or under `here` when none is a directory (`grep -R x`)."""
    found = [links(_at(here, w)) for w in command_words(sub)]
    if all(f is None for f in found):
        found = [links(here)]
    return [p for f in found if f is not None for p in f]


def follows_links(command: str) -> bool:
    """Whether a read-only command recurses through directories following the symlinks
    it meets there, not only those it is given: `grep -R`, `find -L`/`-follow`,
    `diff -r` (GNU diff follows them unless `--no-dereference`), `du -L`, `ls -RL`,
    and `cp -rL`, which copies what they lead to into the workspace."""
    ws = words(strip_wrappers(command))
    if not ws:
        return False
    name, args = ws[0], ws[1:]
    shorts = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    longs = {a.split("=", 1)[0] for a in args if a.startswith("--")}
    recursive = "R" in shorts or "--recursive" in longs or (name == "cp" and "r" in shorts)
    dereference = "L" in shorts or "--dereference" in longs
    if name == "grep":
        return "R" in shorts or "--dereference-recursive" in longs
    if name == "find":
        return "-L" in args or "-follow" in args
    if name == "diff":
        return ("r" in shorts or "--recursive" in longs) and "--no-dereference" not in longs
    if name == "du":
        return dereference
    if name in ("ls", "cp"):
        return recursive and dereference
    return False


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


def default_resolve(cwd: str) -> Resolve:
    def resolve(path: str) -> str:
        return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))

    return resolve


MAX_LINK_HOPS = 40


def command_resolve(cwd: str) -> Resolve:
    """`default_resolve` for the paths a command names. A path that leads through
    /proc (`/proc/self/cwd/..`, `/dev/fd/..`, a link to them) names the command's own
    process there, which `realpath` in this process cannot resolve for it: such a path
    is given as it leads into /proc, outside any workspace."""
    resolve = default_resolve(cwd)

    def resolve_command(path: str) -> str:
        full = os.path.join(cwd, os.path.expanduser(path))
        real = resolve(path)
        if real == os.path.normpath(full) and not real.startswith("/proc"):
            return real  # no link on the way: nothing led through /proc
        return _into_proc(full) or real

    return resolve_command


def _into_proc(path: str) -> str | None:
    """The path as it enters /proc, following links one at a time, or None if it does not."""
    todo = list(reversed(path.split("/")))
    resolved, hops = "/", 0
    while todo:
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        if candidate == "/proc":
            return "/".join([candidate, *reversed(todo)])
        if hops < MAX_LINK_HOPS and os.path.islink(candidate):
            hops += 1
            target = os.readlink(candidate)
            resolved = "/" if target.startswith("/") else resolved
            todo += reversed(target.split("/"))
        else:
            resolved = candidate
    return None


MAX_GLOB_MATCHES = 1000
MAX_GLOB_SCAN = 50_000
"""Directory entries one glob word may look at: `/*/*/*/*/*/*/*/*/zz` matches
nothing but would walk the whole file system, in the event loop, past Ctrl-C."""


class _TooWide(Exception):
    """A glob that would look at more than `MAX_GLOB_SCAN` entries."""


def default_expand(cwd: str) -> Expand:
    """What the shell would expand a glob word to (dotfiles only when the word asks).

    Past `MAX_GLOB_MATCHES` matches, or `MAX_GLOB_SCAN` entries looked at, the
    answer includes `/`, which lies outside any workspace, so such a command is
    asked about, not assumed safe.
    """

    def expand(word: str) -> list[str]:
        pattern = os.path.join(cwd, os.path.expanduser(word))
        found: list[str] = []
        try:
            for path in _glob(pattern, [MAX_GLOB_SCAN]):
                found.append(path)
                if len(found) > MAX_GLOB_MATCHES:
                    raise _TooWide
        except _TooWide:
            return [*found, "/"]
        return found

    return expand


def default_links(cwd: str) -> Links:
    """The real targets of the symlinks under a directory (None for what is not one),
    the directories they lead to searched in turn, as a command following them would.

    Past `MAX_GLOB_SCAN` entries looked at, the answer includes `/`, outside any
    workspace: such a command is asked about, not assumed to stay inside.
    """

    def links(top: str) -> list[str] | None:
        start = os.path.realpath(os.path.join(cwd, os.path.expanduser(top)))
        if not os.path.isdir(start):
            return None
        found: list[str] = []
        budget = MAX_GLOB_SCAN
        todo, seen = [start], set()
        while todo:
            directory = todo.pop()
            if directory in seen:
                continue
            seen.add(directory)
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget < 0:
                            return [*found, "/"]
                        if entry.is_symlink():
                            real = os.path.realpath(entry.path)
                            found.append(real)
                            if os.path.isdir(real):
                                todo.append(real)
                        elif entry.is_dir(follow_symlinks=False):
                            todo.append(entry.path)
            except OSError:
                continue
        return found

    return links


def _glob(pattern: str, budget: list[int]) -> Iterator[str]:
    """`glob.iglob(pattern)`, counting each directory entry it looks at against
    `budget` (raising `_TooWide` past it)."""
    if not glob.has_magic(pattern):
        if os.path.lexists(pattern):
            yield pattern
        return
    dirname, base = os.path.split(pattern)
    parents = _glob(dirname, budget) if glob.has_magic(dirname) else iter([dirname])
    for parent in parents:
        if not glob.has_magic(base):
            path = os.path.join(parent, base)
            if os.path.isdir(parent) if not base else os.path.lexists(path):
                yield path
            continue
        try:
            with os.scandir(parent) as entries:
                names = []
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        raise _TooWide
                    names.append(entry.name)
        except OSError:
            continue
        for name in sorted(names):
            if (base.startswith(".") or not name.startswith(".")) and fnmatch.fnmatchcase(
                name, base
            ):
                yield os.path.join(parent, name)


def _matching(rules: Iterable[Rule], call: CallFacts, place: Place, kind: Behavior) -> Rule | None:
    for rule in rules:
        if not rule.covers_tool(call.tool):
            continue
        if call.tool == "Bash" and rule.tool == "Bash":
            subs = call.subcommands or ("",)
            hit = (
                all(bash_rule_matches(rule, s) for s in subs)
                if kind == "allow"
                else any(bash_rule_matches(rule, s) for s in subs)
            )
            if hit:
                return rule
            continue
        if rule.content is None:
            return rule
        if call.paths and all(path_rule_matches(rule, p, place, kind) for p in call.paths):
            return rule
    return None


def _origin(rule: Rule) -> str:
    return f" (from {rule.origin})" if rule.origin else ""


def evaluate(
    call: CallFacts,
    settings: PermissionSettings,
    mode: str,
    ws: Workspace,
) -> Decision:
    """Allow, ask or deny one call. Pure: every path in `call` is already resolved."""
    place = Place(ws.cwd, ws.home)
    name = call.tool
    denied = _matching(rules_of(settings, "deny"), call, place, "deny")
    if denied is not None:
        return Decision(
            "deny",
            f"Permission to use {name} has been denied by the rule {denied}{_origin(denied)}.",
            str(denied),
        )
    asked = _matching(rules_of(settings, "ask"), call, place, "ask")
    if asked is not None:
        why = f"The rule {asked}{_origin(asked)} asks before {name} runs"
        return evolve(_ask_or_deny(why, mode), rule=str(asked))
    outside = tuple(p for p in call.paths if not within(p, ws.roots))
    allow_rules = rules_of(settings, "allow")
    if outside:
        scoped = [r for r in allow_rules if r.content is not None]
        rule = _matching(scoped, call, place, "allow") if name != "Bash" else None
        if rule is not None:
            return Decision("allow", f"allowed by {rule}", str(rule), grant=outside)
        return _outside(name, outside, ws, mode)
    if call.protected and name in EDIT_TOOLS and mode != "plan":
        guarded = [r for r in allow_rules if names_protected(r)]
        rule = _matching(guarded, call, place, "allow")
        if rule is not None:
            return Decision("allow", f"allowed by {rule}", str(rule))
        return _protected(name, call.protected, mode)
    if mode == "bypassPermissions":
        return Decision("allow", "bypassPermissions mode")
    allowed = _matching(allow_rules, call, place, "allow")
    if allowed is not None:
        return Decision("allow", f"allowed by {allowed}", str(allowed))
    if name == "Bash" and len(call.subcommands) > 1:
        bash_rules = [r for r in allow_rules if r.covers_tool("Bash")]
        if all(
            is_read_only(sub) or any(bash_rule_matches(r, sub) for r in bash_rules)
            for sub in call.subcommands
        ):
            return Decision("allow", "every part is allowed by a rule or read-only")
    return _by_mode(call, mode, ws)


def _outside(name: str, outside: tuple[str, ...], ws: Workspace, mode: str) -> Decision:
    verb = "Reading" if name in READ_TOOLS else "Writing" if name in EDIT_TOOLS else "Running"
    kind = "Read" if name in READ_TOOLS else "Edit"
    shown = ", ".join(outside)
    suggestion = None if name == "Bash" else path_rule(kind, outside[0])
    reason = (
        f"{shown} is outside the workspace ({', '.join(ws.roots)}). "
        f"{verb} it needs an allow rule such as {suggestion}"
        if name != "Bash"
        else f"The command touches {shown}, outside the workspace ({', '.join(ws.roots)})"
    )
    return _ask_or_deny(reason, mode, suggestion, outside)


def _protected(name: str, protected: tuple[str, ...], mode: str) -> Decision:
    suggestion = path_rule("Edit", protected[0])
    reason = (
        f"{', '.join(protected)} is a protected path (in {', '.join(sorted(PROTECTED_DIRS))}, "
        "or a shell or git configuration file: other programs run what it says), which no "
        f"permission mode writes unasked. {name} on it needs an allow rule naming it, such "
        f"as {suggestion}"
    )
    return _ask_or_deny(reason, mode, suggestion)


def path_rule(kind: str, path: str) -> str:
    """The rule naming one absolute path and nothing else: `Read(//tmp/data\\[1\\].csv)`,
    its pattern characters escaped, since a rule's path is a gitignore-style pattern."""
    escaped = re.sub(r"([][*?{}\\])", r"\\\1", path)
    return f"{kind}(/{escaped})"


def _ask_or_deny(
    reason: str, mode: str, suggestion: str | None = None, outside: tuple[str, ...] = ()
) -> Decision:
    if mode == "dontAsk":
        return Decision(
            "deny",
            f"{reason}; permission mode dontAsk denies what is not allowed.",
            outside=outside,
        )
    return Decision("ask", reason, suggestion=suggestion, outside=outside)


def _by_mode(call: CallFacts, mode: str, ws: Workspace) -> Decision:
    name = call.tool
    if name in READ_TOOLS:
        return Decision("allow", "reads inside the workspace")
    if name == "Bash":
        if all(is_read_only(s) for s in call.subcommands):
            return Decision("allow", "read-only command")
        if (
            mode == "acceptEdits"
            and not call.protected
            and all(
                (words(strip_wrappers(s)) or [""])[0] in ACCEPT_EDITS_COMMANDS
                and not _has_write_syntax(s)
                and not _has_expansion(s)
                for s in call.subcommands
            )
        ):
            return Decision("allow", "acceptEdits mode: file commands inside the workspace")
        if mode == "plan":
            return Decision(
                "deny",
                "Plan mode is on: only read-only commands may run. Present a plan instead.",
            )
        suggestion = bash_suggestion((call.subcommands or ("",))[0])
        return _ask_or_deny(
            f"Running `{call.input.get('command', '')}` needs approval", mode, suggestion
        )
    if name in EDIT_TOOLS:
        if mode == "acceptEdits":
            return Decision("allow", "acceptEdits mode: edits inside the workspace")
        if mode == "plan":
            return Decision("deny", "Plan mode is on: files may not be changed. Present a plan.")
        return _ask_or_deny(f"{name} on {call.paths[0] if call.paths else '?'} needs approval",
                            mode, suggestion="Edit(./**)")  # fmt: skip
    if mode == "plan":
        return Decision("deny", f"Plan mode is on: {name} may not run.")
    return _ask_or_deny(f"{name} needs approval", mode, suggestion=name)


def rule_covers_call(rule: Rule, tool: str, tool_input: Mapping[str, Any], place: Place) -> bool:
    """Whether one rule, read as a hook's `if`, covers a call: the tool, then its
    command (any part of a compound one) or its path (`file_path`, or Glob/Grep's `path`)."""
    if not rule.covers_tool(tool):
        return False
    if rule.content is None:
        return True
    facts = call_facts(
        tool, tool_input, Workspace(place.cwd, place.home), default_resolve(place.cwd)
    )
    if tool == "Bash":
        return any(bash_rule_matches(rule, sub) for sub in facts.subcommands)
    return bool(facts.paths) and all(
        path_rule_matches(rule, p, place, "allow") for p in facts.paths
    )


def read_denied(settings: PermissionSettings, ws: Workspace) -> Callable[[str], bool] | None:
    """Whether a Read deny rule covers a file, for Glob and Grep to leave it out of results.

    Claude Code applies Read rules to the tools that read files "best effort";
    judging only their search path would let `Grep` over `.` show a denied
    `.env`. None when no scoped Read deny rule exists (nothing to filter).
    """
    denying = rules_of(settings, "deny")
    rules = [r for r in denying if r.content is not None and r.covers_tool("Read")]
    if not rules:
        return None
    place = Place(ws.cwd, ws.home)

    def denied(path: str) -> bool:
        real = os.path.realpath(path)
        return any(path_rule_matches(r, real, place, "deny") for r in rules)

    return denied


def removed_tools(settings: PermissionSettings) -> frozenset[str]:
    """Tools a bare deny rule (`Bash`, `Bash(*)`) takes out of the model's tool list."""
    return frozenset(r.tool for r in rules_of(settings, "deny") if r.content is None)
