"""A PermissionRequest hook's `updatedPermissions`, applied as Claude Code applies them.

Claude Code's `applyPermissionUpdate` changes the session's permission context: rules
are kept by destination (`session`, `cliArg`, each settings file), so `replaceRules` and
`removeRules` touch only the rules of the destination they name; `setMode` sets the
mode; `addDirectories`/`removeDirectories` change the directories beyond the workspace.
`persistPermissionUpdate` also writes the three settings-file destinations to their
file. Both happen only in a live run, behind `Effects.update_permissions`: a replay
answers that effect from its log and neither applies nor writes anything.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve

from fsm_agent.core.jsontext import no_constant
from fsm_agent.core.permission_types import PERSISTED, RULE_UPDATES, PermissionUpdate, RuleValue
from fsm_agent.live.command_hooks import os_string
from fsm_agent.policy.permissions import (
    UNSUPPORTED_MODES,
    PermissionError_,
    PermissionSettings,
    Rule,
    RuleSource,
    unsupported_mode_warning,
)

SESSION = "this session"
"""The origin of the session's rules: an "always" answer's, and a hook's `session` ones."""
COMMAND_LINE = {"allow": "--allowed-tools", "deny": "--disallowed-tools", "ask": "the command line"}
WHO = "PermissionRequest hook"


def settings_file(destination: str, cwd: str, home: str) -> tuple[Path, str]:
    """The settings file Claude Code writes a destination to, and the root its `/path`
    rules are anchored at (as `fsm_agent.live.settings.settings_files` reads them)."""
    from fsm_agent.live.settings import settings_files

    user, project, local = settings_files(cwd, home)
    return {"userSettings": user, "projectSettings": project, "localSettings": local}[destination]


def _in_destination(destination: str, kind: str, cwd: str, home: str) -> Callable[[str], bool]:
    """Whether a rule's origin is of `destination`: Claude Code keeps its rules apart by
    where they came from."""
    if destination == "session":
        return lambda origin: origin == SESSION
    if destination == "cliArg":
        return lambda origin: origin == COMMAND_LINE[kind]
    path = os.path.realpath(settings_file(destination, cwd, home)[0])
    return lambda origin: os.path.realpath(origin) == path if origin else False


def _origin(destination: str, kind: str, cwd: str, home: str) -> tuple[str, str]:
    """The origin and `/path` root of a rule a destination adds."""
    if destination == "session":
        return SESSION, os.path.realpath(cwd)
    if destination == "cliArg":
        return COMMAND_LINE[kind], os.path.realpath(cwd)
    path, root = settings_file(destination, cwd, home)
    return str(path), root


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


def apply_updates(
    settings: PermissionSettings,
    mode: str,
    updates: Sequence[PermissionUpdate],
    *,
    cwd: str,
    home: str,
    start_mode: str,
) -> tuple[PermissionSettings, str, list[str]]:
    """`settings` and `mode` with `updates` applied in order, and what to tell the user.

    `setMode` to `bypassPermissions` is refused unless the run started in it, as Claude
    Code refuses it when the session was not launched so; `auto` runs as `default`.
    Directories are resolved against `cwd`, as settings files' are."""
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
            ours = _in_destination(update.destination, kind, cwd, home)
            origin, root = _origin(update.destination, kind, cwd, home)
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
            named_dirs = [_directory(d, cwd, notes) for d in update.directories]
            dirs = settings.additional_directories
            if update.type == "addDirectories":
                dirs += tuple(d for d in dict.fromkeys(named_dirs) if d and d not in dirs)
            else:
                dirs = tuple(d for d in dirs if d not in named_dirs)
            settings = evolve(settings, additional_directories=dirs)
    return settings, mode, notes


def _directory(path: str, cwd: str, notes: list[str]) -> str:
    """A directory resolved as settings files' are; "" for one no OS call takes."""
    if not os_string(path):
        notes.append(f"{WHO}'s directory {path!r} is ignored: no path can hold it")
        return ""
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))


def _with_rules(
    settings: PermissionSettings, kind: str, rules: tuple[RuleSource, ...]
) -> PermissionSettings:
    if kind == "deny":
        return evolve(settings, deny=rules)
    return evolve(settings, ask=rules) if kind == "ask" else evolve(settings, allow=rules)


def persist(update: PermissionUpdate, cwd: str, home: str) -> str:
    """Write one update of a settings-file destination to its file, as Claude Code's
    `persistPermissionUpdate` does (rules added once, a list replaced or filtered,
    `defaultMode` set; the file's other keys kept); what was done, for the user.

    A file that is there but not a JSON object is left alone: writing it would lose
    what it holds."""
    path = settings_file(update.destination, cwd, home)[0]
    try:
        data: Any = (
            json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
            if path.exists()
            else {}
        )
    except (OSError, ValueError, RecursionError) as exc:
        return f"{WHO}'s {update.type} was not written to {path}: cannot read it ({exc})"
    permissions = data.get("permissions", {}) if isinstance(data, dict) else None
    if not isinstance(permissions, dict):
        return (
            f"{WHO}'s {update.type} was not written to {path}: it is not a settings object "
            "with a 'permissions' object"
        )
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
    data["permissions"] = permissions
    try:
        _write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except (OSError, ValueError) as exc:  # ValueError: text no file can hold
        return f"{WHO}'s {update.type} was not written to {path}: {exc}"
    return f"{WHO}'s {update.type} ({update.destination}) written to {path}"


def _write(path: Path, text: str) -> None:
    """The whole file or none of it: a run killed mid-write leaves the old one. A
    settings file that is a link (to a dotfiles repository, say) stays one: its target
    is written."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():  # nothing to lose: made as any new file, under the umask
        with path.open("x", encoding="utf-8") as new:
            new.write(text)
        return
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
