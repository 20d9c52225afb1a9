"""Permission rules and modes in Claude Code's syntax, evaluated as a pure function.

`evaluate` answers allow / ask / deny for one tool call from the loaded rules,
the permission mode and the workspace. What only the file system knows (where a
path really leads, what a glob matches, where links under a directory go) comes
in through the functions `call_facts` is given, so a live run passes real ones
(`fsm_agent.live.paths`), a test passes real temporary trees or plain functions,
and a replay answers the whole check from its log.

Order, as in Claude Code: deny rules, then ask rules, then the mode's
bypass, then allow rules, then the tool's own default; the first match wins.
Paths outside the workspace are never allowed by a mode: only by an allow
rule whose path pattern matches them, or by the user at a prompt.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import evolve, field, frozen

from fsm_agent.core.globs import split_literal, translate
from fsm_agent.core.permission_types import Behavior, Decision, PermissionSettings, RuleSource
from fsm_agent.policy.bash_analysis import (
    Part,
    analyse,
    cd_target,
    command_paths,
    command_words,
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
GitPrograms = Callable[[str], "tuple[str, ...]"]
"""The programs (settings naming them) the repository git finds from a directory runs."""


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
        if self.tool.startswith("mcp__") and self.tool.count("__") == 1:
            return tool.startswith(self.tool + "__")  # `mcp__server`: each of its tools
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


def is_read_only(command: str) -> bool:
    """Claude Code's built-in read-only set: never prompts (paths are checked separately).
    Only a command the analysis understood in full can be read-only."""
    analysis = analyse(command)
    return analysis.problem is None and all(part_read_only(p) for p in analysis.parts)


NEVER_READ_ONLY = frozenset({"env", "printenv", "set", "export", "declare", "typeset"})
"""Programs that print the environment, the API key in it among the rest."""


def part_read_only(part: Part) -> bool:
    """Whether one understood part only reads: no output redirection, no assignment
    (`GIT_DIR=…`, `LD_PRELOAD=…` change what runs) and a program of the read-only set."""
    if part.writes() or part.assignments:
        return False
    ws = part.unwrapped()
    if not ws:
        return True
    name, args = ws[0], ws[1:]
    if name in NEVER_READ_ONLY:
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
        return cd_target(part) != "-"
    return name in READ_ONLY_COMMANDS


def bash_pattern(content: str) -> re.Pattern[str]:
    """`npm test *` (or legacy `npm test:*`) as a regex over a whole command.

    A trailing ` *` also matches the bare command, keeping the word boundary:
    `ls *` matches `ls` and `ls -la` but not `lsof`; `ls*` matches `lsof`.
    A piece between two `*` takes its first occurrence, in an atomic group (the
    next `*` takes up whatever lies between), so `re` does not try every split of
    a long command.
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


def bash_suggestion(part: Part) -> str:
    """The rule "always" adds: the program, plus its subcommand for tools that have them."""
    ws = part.unwrapped()
    if not ws:
        return "Bash"
    keep = 2 if ws[0] in SUBCOMMAND_TOOLS and len(ws) > 1 and ws[1].isidentifier() else 1
    return f"Bash({' '.join(ws[:keep])} *)"


def bash_rule_matches(rule: Rule, part: Part) -> bool:
    """A rule matches a part as written, or as its words' values (quotes taken off, so
    `r"m" -rf` is `rm -rf` to a deny rule), with or without a wrapper in front."""
    if rule.content is None:
        return True
    pattern = bash_pattern(rule.content)
    candidates = (part.text, " ".join(part.words), " ".join(part.unwrapped()))
    return any(pattern.fullmatch(c) is not None for c in dict.fromkeys(candidates))


# --- paths -------------------------------------------------------------------


@frozen
class Place:
    """Where a rule's relative paths start: the cwd, home, and the rule's own root."""

    cwd: str
    home: str


@functools.lru_cache(maxsize=256)
def rule_regex(rule: Rule, place: Place, kind: Behavior) -> re.Pattern[str]:
    """The gitignore-style path pattern of a Read/Edit rule, as a regex over absolute paths.
    Cached: a Read deny rule is matched against every file a command names."""
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


def os_string(text: str) -> bool:
    """Whether an OS call takes `text` (a command, a path): no null byte, and nothing
    the file-system encoding cannot hold (JSON's `"\\ud800"`); else subprocess raises."""
    if "\0" in text:
        return False
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return True


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
    parts: tuple[Part, ...] = ()
    unclear: str | None = None
    """Why a command is not understood in full (`Analysis.problem`): it is asked about."""
    named: tuple[str, ...] = ()
    """Where every word of a command leads (its files, for Read deny rules)."""
    written: tuple[str, ...] = ()
    """Where the words of a command's parts that are not read-only lead (for Edit deny rules)."""
    git_programs: tuple[str, ...] = ()
    """What the workspace's repository configures git to run (`core.fsmonitor`, …): its
    git commands are then not read-only."""


def call_facts(
    tool: str,
    input: Mapping[str, Any],
    ws: Workspace,
    resolve: Resolve,
    expand: Expand | None = None,
    links: Links | None = None,
    git: GitPrograms | None = None,
) -> CallFacts:
    """`resolve` turns a path as written into a real path; `expand` gives the paths a
    shell glob in a Bash word matches, so `cat l*/x` is judged by what it reads;
    `links` the targets of the symlinks under a directory, which `grep -R` follows;
    `git` what the repository found from a directory configures git to run.
    A command's paths are each listed once, without /dev/null (`ls > /dev/null`
    reaches nothing outside)."""
    paths: list[str] = []
    parts: tuple[Part, ...] = ()
    unclear: str | None = None
    named: list[str] = []
    written: list[str] = []
    git_programs: list[str] = []
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
        analysis = analyse(input["command"])
        parts, unclear = analysis.parts, analysis.problem
        heres = [ws.cwd]
        for sub in parts:
            said = (command_words(sub), command_paths(sub))
            for here in heres:
                reached, real = _bash_paths(*said, here, resolve, expand)
                paths += reached
                named += real
                if not part_read_only(sub):
                    written += real
                if links is not None and follows_links(sub):
                    paths += _followed(sub, here, links)
                if git is not None and sub.unwrapped()[:1] == ("git",):
                    git_programs += git(here)
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
    subcommands = tuple(p.text for p in parts)
    return CallFacts(
        tool, input, tuple(paths), subcommands, protected, parts, unclear,
        tuple(dict.fromkeys(named)), tuple(dict.fromkeys(written)),
        tuple(dict.fromkeys(git_programs)),
    )  # fmt: skip


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


UNCLEAR = "(a command not fully understood)"
"""What a question about such a command says it may reach: anything."""

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


def _followed(sub: Part, here: str, links: Links) -> list[str]:
    """Where the links lead that a command following them while recursing meets under
    its directory operands, or under `here` when none is a directory (`grep -R x`)."""
    found = [links(_at(here, w)) for w in command_words(sub)]
    if all(f is None for f in found):
        found = [links(here)]
    return [p for f in found if f is not None for p in f]


def follows_links(part: Part) -> bool:
    """Whether a read-only command recurses through directories following the symlinks
    it meets there, not only those it is given: `grep -R`, `find -L`/`-follow`,
    `diff -r` (GNU diff follows them unless `--no-dereference`), `du -L`, `ls -RL`,
    and `cp -rL`, which copies what they lead to into the workspace."""
    ws = part.unwrapped()
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


def _matching(rules: Iterable[Rule], call: CallFacts, place: Place, kind: Behavior) -> Rule | None:
    for rule in rules:
        if call.tool == "Bash" and kind != "allow" and _covers_bash_files(rule, call, place, kind):
            return rule
        if not rule.covers_tool(call.tool):
            continue
        if call.tool == "Bash" and rule.tool == "Bash":
            subs = call.parts or (Part(""),)
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


def _covers_bash_files(rule: Rule, call: CallFacts, place: Place, kind: Behavior) -> bool:
    """A scoped Read deny or ask rule covers every file a command names (`cat`, `grep`,
    `cp` …: `Read(./secrets/**)` refuses `cat secrets/key.txt` whatever Bash rule allows
    it), an Edit one every file a part that is not read-only names."""
    if rule.content is None or rule.tool not in ("Read", "Edit"):
        return False
    files = call.named + call.paths if rule.tool == "Read" else call.written
    return any(path_rule_matches(rule, p, place, kind) for p in files)


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
    if name == "Bash" and call.unclear is not None:
        if mode == "plan":
            return Decision("deny", f"Plan mode is on: {call.unclear}.")
        return _ask_or_deny(call.unclear, mode, None, (UNCLEAR,))
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
    if name == "Bash" and len(call.parts) > 1:
        bash_rules = [r for r in allow_rules if r.covers_tool("Bash")]
        if all(
            _reads_only(call, sub) or any(bash_rule_matches(r, sub) for r in bash_rules)
            for sub in call.parts
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


def _reads_only(call: CallFacts, part: Part) -> bool:
    """A read-only part, unless it is git in a repository whose config runs programs."""
    if call.git_programs and part.unwrapped()[:1] == ("git",):
        return False
    return part_read_only(part)


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
        if all(_reads_only(call, s) for s in call.parts):
            return Decision("allow", "read-only command")
        if (
            mode == "acceptEdits"
            and not call.protected
            and all(
                (s.unwrapped() or ("",))[0] in ACCEPT_EDITS_COMMANDS
                and not s.writes()
                and not s.assignments
                for s in call.parts
            )
        ):
            return Decision("allow", "acceptEdits mode: file commands inside the workspace")
        if mode == "plan":
            return Decision(
                "deny",
                "Plan mode is on: only read-only commands may run. Present a plan instead.",
            )
        suggestion = bash_suggestion((call.parts or (Part(""),))[0])
        why = f"Running `{call.input.get('command', '')}` needs approval"
        if call.git_programs and all(part_read_only(s) for s in call.parts):
            why += (
                f": this repository's git configuration runs programs "
                f"({', '.join(call.git_programs)}), so its git commands are not read-only"
            )
        return _ask_or_deny(why, mode, suggestion)
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


def rule_covers_call(
    rule: Rule, tool: str, tool_input: Mapping[str, Any], place: Place, resolve: Resolve
) -> bool:
    """Whether one rule, read as a hook's `if`, covers a call: the tool, then its
    command (any part of a compound one) or its path (`file_path`, or Glob/Grep's `path`),
    resolved by `resolve` as the permission check resolves it."""
    if not rule.covers_tool(tool):
        return False
    if rule.content is None:
        return True
    facts = call_facts(tool, tool_input, Workspace(place.cwd, place.home), resolve)
    if tool == "Bash":
        return any(bash_rule_matches(rule, sub) for sub in facts.parts)
    return bool(facts.paths) and all(
        path_rule_matches(rule, p, place, "allow") for p in facts.paths
    )


def denied_reads(
    settings: PermissionSettings, ws: Workspace, real: Resolve
) -> Callable[[str], bool] | None:
    """Whether a Read deny rule covers a file (its real path by `real`), for Glob and Grep
    to leave it out of results.

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
        resolved = real(path)
        return any(path_rule_matches(r, resolved, place, "deny") for r in rules)

    return denied


def tool_removed(settings: PermissionSettings, tool: str) -> bool:
    """Whether a bare deny rule takes `tool` out of the model's tool list (`mcp__git`
    takes each of that server's tools, as in Claude Code)."""
    return any(r.covers_tool(tool) for r in rules_of(settings, "deny") if r.content is None)


def removed_tools(settings: PermissionSettings) -> frozenset[str]:
    """Tools a bare deny rule (`Bash`, `Bash(*)`) takes out of the model's tool list."""
    return frozenset(r.tool for r in rules_of(settings, "deny") if r.content is None)
