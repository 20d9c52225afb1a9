"""A PermissionRequest hook's `updatedPermissions` in a live run: applied with the
paths of this machine, and written to the settings files they name.

What an update does is decided in `fsm_agent.policy.permission_updates`; this
module gives it where each destination's settings file is and how paths resolve
here, and does the writing. Only a live run calls it, behind
`Effects.update_permissions`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fsm_agent.core.permission_types import PermissionSettings, PermissionUpdate
from fsm_agent.live.claude_home import read_for_rewrite, write_json
from fsm_agent.live.paths import default_resolve
from fsm_agent.live.settings import settings_files
from fsm_agent.policy.permission_updates import WHO, Destinations, applied, rewritten


def settings_file(
    destination: str, cwd: str, home: str, config_dir: Path | None = None
) -> tuple[Path, str]:
    """The settings file Claude Code writes a destination to, and the root its `/path`
    rules are anchored at (as `settings_files` reads them; the user's is in
    `config_dir`, `$CLAUDE_CONFIG_DIR`, when given)."""
    return _files(cwd, home, config_dir)[destination]


def _files(cwd: str, home: str, config_dir: Path | None) -> dict[str, tuple[Path, str]]:
    user, project, local = settings_files(cwd, home, config_dir)
    return {"userSettings": user, "projectSettings": project, "localSettings": local}


def destinations(cwd: str, home: str, config_dir: Path | None = None) -> Destinations:
    """Where the destinations of a run in `cwd` are on this machine."""
    files = {
        name: (str(path), root) for name, (path, root) in _files(cwd, home, config_dir).items()
    }
    return Destinations(os.path.realpath(cwd), files, os.path.realpath, default_resolve(cwd))


def apply_updates(
    settings: PermissionSettings,
    mode: str,
    updates: Sequence[PermissionUpdate],
    *,
    cwd: str,
    home: str,
    start_mode: str,
    config_dir: Path | None = None,
) -> tuple[PermissionSettings, str, list[str]]:
    """`applied` to a run in `cwd` with `home`: `settings` and `mode` with `updates`
    applied in order, and what to tell the user."""
    where = destinations(cwd, home, config_dir)
    return applied(settings, mode, updates, where, start_mode=start_mode)


def persist(update: PermissionUpdate, cwd: str, home: str, config_dir: Path | None = None) -> str:
    """Write one update of a settings-file destination to its file, as Claude Code's
    `persistPermissionUpdate` does (`rewritten`); what was done, for the user.

    A file that is there but not a JSON object is left alone: writing it would lose
    what it holds."""
    path = settings_file(update.destination, cwd, home, config_dir)[0]
    try:
        data = read_for_rewrite(path)
    except (OSError, ValueError, RecursionError) as exc:
        return f"{WHO}'s {update.type} was not written to {path}: cannot read it ({exc})"
    permissions = data.get("permissions", {}) if isinstance(data, dict) else None
    if not isinstance(permissions, dict):
        return (
            f"{WHO}'s {update.type} was not written to {path}: it is not a settings object "
            "with a 'permissions' object"
        )
    data["permissions"] = rewritten(permissions, update)
    try:
        write_json(path, data)
    except (OSError, ValueError) as exc:  # ValueError: text no file can hold
        return f"{WHO}'s {update.type} was not written to {path}: {exc}"
    return f"{WHO}'s {update.type} ({update.destination}) written to {path}"
