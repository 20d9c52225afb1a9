"""What the engine and the session log know of permissions: the settings a run
records, the question asked through the effects door, and the verdict.

How a verdict is reached (rule syntax, Bash parsing, path patterns) is
`fsm_agent.policy`. Only a live run evaluates; a replay answers every permission
effect from its log, so it loads these classes and not the evaluator.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from attrs import field, frozen

Behavior = Literal["allow", "ask", "deny"]
_RULE_TEXT = re.compile(r"([A-Za-z0-9_\-*]+)(?:\((.*)\))?", re.DOTALL)


@frozen
class RuleSource:
    """One rule as written, and the directory its `/path` anchor starts from."""

    rule: str
    root: str = ""
    origin: str = ""


@frozen
class PermissionSettings:
    """The merged `permissions` of every settings file, plus the command line's lists.

    Recorded in the log header (inside `RunConfig`), so a replay never reads
    a settings file.
    """

    allow: tuple[RuleSource, ...] = ()
    ask: tuple[RuleSource, ...] = ()
    deny: tuple[RuleSource, ...] = ()
    additional_directories: tuple[str, ...] = ()
    default_mode: str | None = None
    sources: tuple[str, ...] = ()

    def merged(self, other: PermissionSettings) -> PermissionSettings:
        return PermissionSettings(
            allow=self.allow + other.allow,
            ask=self.ask + other.ask,
            deny=self.deny + other.deny,
            additional_directories=self.additional_directories + other.additional_directories,
            default_mode=other.default_mode or self.default_mode,
            sources=self.sources + other.sources,
        )


@frozen
class Decision:
    """The verdict on one call: what to do, why (for the model or the user), which rule.

    `grant` lists resolved paths outside the workspace that an allow rule or
    the user approved, so the tool's own confinement check lets them through.
    """

    behavior: Behavior
    reason: str = ""
    rule: str | None = None
    grant: tuple[str, ...] = ()
    suggestion: str | None = None
    outside: tuple[str, ...] = ()


@frozen
class PermissionRequest:
    """One call to judge: the tool, its (possibly hook-updated) input, the mode."""

    tool: str
    input: dict[str, Any] = field(factory=dict, hash=False)
    mode: str = "default"


@frozen
class PermissionAsk:
    """A question for the user: may this call run? `suggestion` is the rule "always" adds."""

    tool: str
    input: dict[str, Any] = field(factory=dict, hash=False)
    reason: str = ""
    suggestion: str | None = None
    outside: tuple[str, ...] = ()


ALLOW_ONCE, ALLOW_ALWAYS, DENY = "allow_once", "allow_always", "deny"
NO_TERMINAL = "no_terminal"
CANCELLED = "cancelled"
"""Not an answer: the question was withdrawn while it waited (the stream that started its
call failed), so the call is discarded and the user's answer, if one comes, is ignored."""


UPDATE_TYPES = ("addRules", "replaceRules", "removeRules", "setMode", "addDirectories",
                "removeDirectories")  # fmt: skip
RULE_UPDATES = ("addRules", "replaceRules", "removeRules")
DIRECTORY_UPDATES = ("addDirectories", "removeDirectories")
DESTINATIONS = ("userSettings", "projectSettings", "localSettings", "session", "cliArg")
PERSISTED = ("userSettings", "projectSettings", "localSettings")
"""Destinations Claude Code writes to a settings file; `session` and `cliArg` live in memory."""
BEHAVIORS = ("allow", "deny", "ask")
UPDATE_MODES = ("acceptEdits", "bypassPermissions", "default", "dontAsk", "plan", "auto")


class UpdateError(ValueError):
    """A permission update not of Claude Code's `PermissionUpdate` schema; says where."""


@frozen
class RuleValue:
    """One rule of an update, as Claude Code writes it: `{toolName, ruleContent?}`."""

    tool_name: str
    rule_content: str | None = None

    @classmethod
    def parse(cls, text: str) -> RuleValue:
        """A rule's text (`Tool` or `Tool(specifier)`) as its parts, `Tool(*)` as `Tool`,
        as `fsm_agent.policy.permissions.Rule.parse` reads it; a ValueError if it is
        not one."""
        m = _RULE_TEXT.fullmatch(text.strip())
        if m is None:
            raise ValueError(f"not a permission rule: {text!r}")
        content = m.group(2)
        if content is not None:
            content = content.strip()
        return cls(m.group(1), None if content in (None, "", "*") else content)

    def __str__(self) -> str:
        content = self.rule_content
        return self.tool_name if content is None else f"{self.tool_name}({content})"


@frozen
class PermissionUpdate:
    """One of Claude Code's `PermissionUpdate`s (a PermissionRequest hook's
    `updatedPermissions`); read and written in its JSON shape (`update_json`), so a log
    and a scenario hold exactly what the hook said."""

    type: str
    destination: str
    rules: tuple[RuleValue, ...] = ()
    behavior: str | None = None
    mode: str | None = None
    directories: tuple[str, ...] = ()


_MISSING = object()


def _one_of(value: Any, known: tuple[str, ...], where: str) -> str:
    if isinstance(value, str) and value in known:
        return value
    shown = "missing" if value is _MISSING else f"got {value!r}"
    raise UpdateError(f"{where}: expected one of {', '.join(map(repr, known))} ({shown})")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UpdateError(f"{where}: expected a list of strings")
    return tuple(value)


def _rule(value: Any, where: str) -> RuleValue:
    if not isinstance(value, dict) or not isinstance(value.get("toolName"), str):
        raise UpdateError(f"{where}: expected an object with a 'toolName' string")
    content = value.get("ruleContent")
    if "ruleContent" in value and not isinstance(content, str):
        raise UpdateError(f"{where}.ruleContent: expected a string")
    return RuleValue(value["toolName"], content)


def read_update(value: Any, where: str = "update") -> PermissionUpdate:
    """One update checked as Claude Code's schema checks it (every field its type needs,
    of the values it allows; other keys ignored); `UpdateError` says what is wrong."""
    if not isinstance(value, dict):
        raise UpdateError(f"{where}: expected an object")
    kind = _one_of(value.get("type", _MISSING), UPDATE_TYPES, f"{where}.type")
    destination = _one_of(value.get("destination", _MISSING), DESTINATIONS, f"{where}.destination")
    if kind in RULE_UPDATES:
        rules = value.get("rules", _MISSING)
        if not isinstance(rules, list):
            raise UpdateError(f"{where}.rules: expected a list of rules")
        behavior = _one_of(value.get("behavior", _MISSING), BEHAVIORS, f"{where}.behavior")
        return PermissionUpdate(
            kind,
            destination,
            rules=tuple(_rule(r, f"{where}.rules[{n}]") for n, r in enumerate(rules)),
            behavior=behavior,
        )
    if kind == "setMode":
        mode = _one_of(value.get("mode", _MISSING), UPDATE_MODES, f"{where}.mode")
        return PermissionUpdate(kind, destination, mode=mode)
    directories = _strings(value.get("directories"), f"{where}.directories")
    return PermissionUpdate(kind, destination, directories=directories)


def read_updates(value: Any, where: str = "updatedPermissions") -> tuple[PermissionUpdate, ...]:
    if not isinstance(value, list):
        raise UpdateError(f"{where}: expected a list of permission updates")
    return tuple(read_update(v, f"{where}[{n}]") for n, v in enumerate(value))


def update_json(update: PermissionUpdate) -> dict[str, Any]:
    """`update` in Claude Code's JSON shape: what `read_update` reads back."""
    out: dict[str, Any] = {"type": update.type, "destination": update.destination}
    if update.type in RULE_UPDATES:
        out["rules"] = [
            {"toolName": r.tool_name}
            | ({} if r.rule_content is None else {"ruleContent": r.rule_content})
            for r in update.rules
        ]
        out["behavior"] = update.behavior
    elif update.type == "setMode":
        out["mode"] = update.mode
    else:
        out["directories"] = list(update.directories)
    return out


@frozen
class PermissionsUpdated:
    """What applying a hook's permission updates left: the mode later calls are judged
    in, the directories beyond the workspace the tools may use, and what to tell the
    user (a rule that could not be read, a settings file written or not). None: as
    before (a cut log's answer past its end)."""

    mode: str | None = None
    additional_directories: tuple[str, ...] | None = None
    messages: tuple[str, ...] = ()
