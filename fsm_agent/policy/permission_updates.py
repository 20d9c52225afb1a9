"""A PermissionRequest hook's `updatedPermissions`, applied as Claude Code applies them.

Claude Code's `applyPermissionUpdate` changes the session's permission context: rules
are kept by destination (`session`, `cliArg`, each settings file), so `replaceRules` and
`removeRules` touch only the rules of the destination they name; `setMode` sets the
mode; `addDirectories`/`removeDirectories` change the directories beyond the workspace.
`persistPermissionUpdate` also writes the three settings-file destinations to their
file (`fsm_agent.live.permission_updates`). Here is what both decide, given where
each destination is (`Destinations`), so neither reads a file to decide it; a replay
answers the whole effect from its log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen

from fsm_agent.core.permission_types import (
    PERSISTED,
    RULE_UPDATES,
    PermissionSettings,
    PermissionUpdate,
    RuleSource,
    RuleValue,
)
from fsm_agent.policy.permissions import (
    UNSUPPORTED_MODES,
    PermissionError_,
    Resolve,
    Rule,
    os_string,
    unsupported_mode_warning,
)

SESSION = "this session"
"""The origin of the session's rules: an "always" answer's, and a hook's `session` ones."""
COMMAND_LINE = {"allow": "--allowed-tools", "deny": "--disallowed-tools", "ask": "the command line"}
WHO = "PermissionRequest hook"


@frozen
class Destinations:
    """Where a run's rules come from, resolved by the live side: the root of the
    session's and the command line's `/path` rules (the real cwd), each settings file
    with the root its `/path` rules use, and how a path resolves on this machine."""

    root: str
    files: Mapping[str, tuple[str, str]] = field(hash=False)
    """`userSettings`, `projectSettings`, `localSettings`: the file and its rules' root."""
    real: Resolve
    """A path as it really leads (`os.path.realpath`), to tell a settings file's rules."""
    directory: Resolve
    """A directory as written, resolved as settings files' are."""


def _in_destination(destination: str, kind: str, places: Destinations) -> Callable[[str], bool]:
    """Whether a rule's origin is of `destination`: Claude Code keeps its rules apart by
    where they came from."""
    if destination == "session":
        return lambda origin: origin == SESSION
    if destination == "cliArg":
        return lambda origin: origin == COMMAND_LINE[kind]
    path = places.real(places.files[destination][0])
    return lambda origin: places.real(origin) == path if origin else False


def _origin(destination: str, kind: str, places: Destinations) -> tuple[str, str]:
    """The origin and `/path` root of a rule a destination adds."""
    if destination == "session":
        return SESSION, places.root
    if destination == "cliArg":
        return COMMAND_LINE[kind], places.root
    return places.files[destination]


def _normal(rule: str) -> str:
    """A rule as Claude Code compares them: `Bash(*)` is `Bash`."""
    try:
        return str(Rule.parse(rule))
    except PermissionError_:
        return rule.strip()


def _readable(rules: Sequence[RuleValue], notes: list[str]) -> list[str]:
    """The rules as fsm-agent writes them; one that is no permission rule (Claude Code
    would keep it, and never match it) is dropped with a note."""
    out: list[str] = []
    for value in rules:
        text = str(value)
        try:
            Rule.parse(text)
        except PermissionError_ as exc:
            notes.append(f"{WHO}'s rule {text!r} is ignored: {exc}")
            continue
        out.append(text.strip())
    return out


def applied(
    settings: PermissionSettings,
    mode: str,
    updates: Sequence[PermissionUpdate],
    places: Destinations,
    *,
    start_mode: str,
) -> tuple[PermissionSettings, str, list[str]]:
    """`settings` and `mode` with `updates` applied in order, and what to tell the user.

    `setMode` to `bypassPermissions` is refused unless the run started in it, as Claude
    Code refuses it when the session was not launched so; `auto` runs as `default`.
    Directories are resolved by `places.directory`, as settings files' are."""
    notes: list[str] = []
    for update in updates:
        if update.type == "setMode":
            wanted = update.mode or "default"
            if wanted in UNSUPPORTED_MODES:
                notes.append(unsupported_mode_warning(wanted, f"{WHO}'s setMode"))
                wanted = UNSUPPORTED_MODES[wanted]
            if refused(update, start_mode):
                notes.append(
                    f"{WHO}'s setMode 'bypassPermissions' is ignored: the run was not "
                    "started in bypassPermissions mode"
                )
                continue
            mode = wanted
        elif update.type in RULE_UPDATES:
            kind = update.behavior or "allow"
            ours = _in_destination(update.destination, kind, places)
            origin, root = _origin(update.destination, kind, places)
            named = _readable(update.rules, notes)
            rules: list[RuleSource] = list(getattr(settings, kind))
            if update.type == "removeRules":
                gone = {_normal(r) for r in named}
                rules = [r for r in rules if not (ours(r.origin) and _normal(r.rule) in gone)]
            else:
                if update.type == "replaceRules":
                    rules = [r for r in rules if not ours(r.origin)]
                rules += [RuleSource(r, root, origin) for r in named]
            settings = _with_rules(settings, kind, tuple(rules))
        else:
            named_dirs = [_directory(d, places, notes) for d in update.directories]
            dirs = settings.additional_directories
            if update.type == "addDirectories":
                dirs += tuple(d for d in dict.fromkeys(named_dirs) if d and d not in dirs)
            else:
                dirs = tuple(d for d in dirs if d not in named_dirs)
            settings = evolve(settings, additional_directories=dirs)
    return settings, mode, notes


def _directory(path: str, places: Destinations, notes: list[str]) -> str:
    """A directory resolved as settings files' are; "" for one no OS call takes."""
    if not os_string(path):
        notes.append(f"{WHO}'s directory {path!r} is ignored: no path can hold it")
        return ""
    return places.directory(path)


def _with_rules(
    settings: PermissionSettings, kind: str, rules: tuple[RuleSource, ...]
) -> PermissionSettings:
    if kind == "deny":
        return evolve(settings, deny=rules)
    return evolve(settings, ask=rules) if kind == "ask" else evolve(settings, allow=rules)


def rewritten(permissions: Mapping[str, Any], update: PermissionUpdate) -> dict[str, Any]:
    """A settings file's `permissions` object with one update written into it, as Claude
    Code's `persistPermissionUpdate` writes it: rules added once, a list replaced or
    filtered, `defaultMode` set; its other keys kept."""
    permissions = dict(permissions)
    ignored: list[str] = []
    if update.type in RULE_UPDATES:
        kind = update.behavior or "allow"
        named = _readable(update.rules, ignored)
        held = permissions.get(kind, [])
        held = [r for r in held if isinstance(r, str)] if isinstance(held, list) else []
        if update.type == "addRules":
            have = {_normal(r) for r in held}
            permissions[kind] = held + [r for r in named if _normal(r) not in have]
        elif update.type == "replaceRules":
            permissions[kind] = named
        else:
            gone = {_normal(r) for r in named}
            permissions[kind] = [r for r in held if _normal(r) not in gone]
    elif update.type == "setMode":
        permissions["defaultMode"] = update.mode
    else:
        held = permissions.get("additionalDirectories", [])
        held = [d for d in held if isinstance(d, str)] if isinstance(held, list) else []
        if update.type == "addDirectories":
            permissions["additionalDirectories"] = held + [
                d for d in dict.fromkeys(update.directories) if d not in held and os_string(d)
            ]
        else:
            permissions["additionalDirectories"] = [d for d in held if d not in update.directories]
    return permissions


def refused(update: PermissionUpdate, start_mode: str) -> bool:
    """A `setMode` to `bypassPermissions` in a run not started in it: Claude Code refuses
    it; so is its writing to a settings file here, which would start the next run so."""
    return (
        update.type == "setMode"
        and update.mode == "bypassPermissions"
        and start_mode != "bypassPermissions"
    )


def persisted(updates: Sequence[PermissionUpdate], start_mode: str) -> list[PermissionUpdate]:
    """The updates to write to a settings file."""
    return [u for u in updates if u.destination in PERSISTED and not refused(u, start_mode)]
