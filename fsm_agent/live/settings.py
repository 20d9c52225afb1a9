"""Reading Claude Code's settings files once, at the start of a run.

`~/.claude/settings.json`, `.claude/settings.json` and
`.claude/settings.local.json` are merged: their `permissions` lists and
their `hooks` add up. What was loaded goes into `RunConfig`, which the log
header records, so a replay never reads a settings file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from fsm_agent.core.config import HookMatcher
from fsm_agent.core.jsontext import decode_error, no_constant
from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.hooks.commands import HookSettingsError, parse_hooks
from fsm_agent.policy.permissions import (
    MODES,
    UNSUPPORTED_MODES,
    PermissionError_,
    Rule,
    check_mode,
    os_string,
    unsupported_mode_warning,
)


class SettingsError(ValueError):
    """A settings file or flag that cannot be used; the message names it."""


@frozen
class Settings:
    permissions: PermissionSettings = PermissionSettings()
    hooks: tuple[HookMatcher, ...] = ()
    warnings: tuple[str, ...] = ()
    """What was read but cannot be honoured as written (a mode fsm-agent lacks)."""
    bypass_disabled: str = ""
    """The file whose `permissions.disableBypassPermissionsMode` is `"disable"` (the
    last that says so), or "": bypassPermissions may not be used in this run."""


def settings_files(cwd: str, home: str) -> list[tuple[Path, str]]:
    """Each settings file, lowest precedence first, with the root its `/path` rules use:
    resolved, as the paths they are matched against are (HOME may be a link)."""
    user, project = os.path.realpath(Path(home) / ".claude"), os.path.realpath(cwd)
    return [
        (Path(home) / ".claude" / "settings.json", user),
        (Path(cwd) / ".claude" / "settings.json", project),
        (Path(cwd) / ".claude" / "settings.local.json", project),
    ]


def _rules(value: Any, where: str, root: str) -> tuple[RuleSource, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{where} must be a list of rule strings")
    out = []
    for text in value:
        try:
            Rule.parse(text)
        except PermissionError_ as exc:
            raise SettingsError(f"{where}: {exc}") from None
        out.append(RuleSource(text.strip(), root, where.rsplit(":", 1)[0]))
    return tuple(out)


def parse_settings(data: Any, origin: str, root: str, cwd: str) -> Settings:
    if not isinstance(data, dict):
        raise SettingsError(f"{origin}: settings must be a JSON object")
    perms = data.get("permissions", {})
    if not isinstance(perms, dict | None):
        raise SettingsError(f"{origin}: 'permissions' must be an object")
    perms = perms or {}
    dirs = perms.get("additionalDirectories")
    dirs = [] if dirs is None else dirs
    if not isinstance(dirs, list) or not all(isinstance(d, str) and os_string(d) for d in dirs):
        raise SettingsError(f"{origin}: permissions.additionalDirectories must be a list of paths")
    mode = perms.get("defaultMode")
    if mode is not None and not isinstance(mode, str):
        raise SettingsError(
            f"{origin}: permissions.defaultMode must be a string, one of {', '.join(MODES)} "
            f"(not {json.dumps(mode)[:40]})"
        )
    warnings: tuple[str, ...] = ()
    if mode in UNSUPPORTED_MODES:
        warnings = (unsupported_mode_warning(mode, f"{origin}: permissions.defaultMode"),)
        mode = UNSUPPORTED_MODES[mode]
    if mode is not None:
        try:
            mode = check_mode(mode)
        except PermissionError_ as exc:
            raise SettingsError(f"{origin}: permissions.defaultMode: {exc}") from None
    disable = perms.get("disableBypassPermissionsMode")
    if disable is not None and disable != "disable":
        raise SettingsError(
            f'{origin}: permissions.disableBypassPermissionsMode must be "disable" '
            f"(not {json.dumps(disable)[:40]})"
        )
    permissions = PermissionSettings(
        allow=_rules(perms.get("allow"), f"{origin}: permissions.allow", root),
        ask=_rules(perms.get("ask"), f"{origin}: permissions.ask", root),
        deny=_rules(perms.get("deny"), f"{origin}: permissions.deny", root),
        additional_directories=tuple(
            os.path.realpath(os.path.join(cwd, os.path.expanduser(d))) for d in dirs
        ),
        default_mode=mode,
        sources=(origin,),
    )
    try:
        hooks = parse_hooks(data.get("hooks"), origin)
    except HookSettingsError as exc:
        raise SettingsError(str(exc)) from None
    return Settings(permissions, hooks, warnings, origin if disable == "disable" else "")


def load_settings(
    cwd: str,
    home: str | None = None,
    *,
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    add_dirs: Sequence[str] = (),
) -> Settings:
    """The merged settings for a run in `cwd`, with the command line's rules added."""
    home = home if home is not None else os.path.expanduser("~")
    merged = Settings()
    for path, root in settings_files(cwd, home):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
        except json.JSONDecodeError as exc:
            raise SettingsError(f"{path}:{decode_error(exc)}") from None
        except RecursionError:
            raise SettingsError(f"{path}: not valid JSON: nested too deeply") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{path}: cannot read: {exc}") from None
        except ValueError as exc:  # NaN, or a number of more digits than Python converts
            raise SettingsError(f"{path}: not valid JSON: {str(exc).split(';')[0]}") from None
        one = parse_settings(data, str(path), root, cwd)
        merged = Settings(
            merged.permissions.merged(one.permissions),
            merged.hooks + one.hooks,
            merged.warnings + one.warnings,
            one.bypass_disabled or merged.bypass_disabled,
        )
    root = os.path.realpath(cwd)
    cli = PermissionSettings(
        allow=_rules(_split_flags(allowed_tools), "--allowed-tools: rule", root),
        deny=_rules(_split_flags(disallowed_tools), "--disallowed-tools: rule", root),
        additional_directories=tuple(os.path.realpath(os.path.join(cwd, d)) for d in add_dirs),
    )
    return Settings(
        merged.permissions.merged(cli), merged.hooks, merged.warnings, merged.bypass_disabled
    )


def _split_flags(values: Sequence[str]) -> list[str]:
    """`--allowed-tools "Read,Bash(git log *)" Edit`: commas and spaces outside parentheses."""
    out: list[str] = []
    for value in values:
        depth, current = 0, ""
        for c in value:
            if c == "(":
                depth += 1
            elif c == ")":
                depth = max(0, depth - 1)
            if c in ", " and depth == 0:
                if current.strip():
                    out.append(current.strip())
                current = ""
            else:
                current += c
        if current.strip():
            out.append(current.strip())
    return out
