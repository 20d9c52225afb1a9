"""Reading Claude Code's settings files once, at the start of a run.

`~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json` when that is set:
`fsm_agent.live.claude_home`), `.claude/settings.json`,
`.claude/settings.local.json` and the managed settings
(`/etc/claude-code/managed-settings.json`, then `managed-settings.d/*.json` in name
order) are merged, lowest precedence first: their `permissions` lists and their
`hooks` add up, the last `defaultMode` wins. What was loaded goes into `RunConfig`,
which the log header records, so a replay never reads a settings file.

Managed settings are the administrator's: nothing below them takes their rules or
hooks away, and with `allowManagedPermissionRulesOnly` / `allowManagedHooksOnly` they
are the only rules (but `--disallowed-tools`) and hooks of a run, as the real CLI
2.1.332 applies them (measured; docs/permissions-and-hooks.md).

A cloned repository's `.claude/settings.json` is not the user's: until the user
trusts the workspace (Claude Code's trust dialog, kept in `~/.claude.json`, or
`--trust`) its allow rules and `additionalDirectories` are left out, as the real
CLI leaves them out; what only narrows (deny, ask, a mode other than bypass) and
its hooks stay. No workspace file may start a run in bypassPermissions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from fsm_agent.core.config import HookMatcher
from fsm_agent.core.jsontext import decode_error, no_constant
from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.hooks.commands import HookSettingsError, parse_hooks
from fsm_agent.live.claude_home import STATE_FILE, UserFiles, read_for_rewrite, write_json
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
    flags: tuple[tuple[str, bool], ...] = ()
    """The boolean switches the file sets (`disableAllHooks`, and in managed settings
    `allowManagedPermissionRulesOnly`, `allowManagedHooksOnly`), as written: they
    decide the merge, so they are kept per file until then."""

    def flag(self, name: str) -> bool | None:
        return dict(self.flags).get(name)


MANAGED_DIR = Path("/etc/claude-code")
"""Where Claude Code on Linux reads the administrator's settings."""
MANAGED_DIR_VARIABLE = "FSM_AGENT_MANAGED_SETTINGS_DIR"
"""Another directory to read them from instead (a test's; /etc needs root to write)."""
MANAGED_FILE = "managed-settings.json"
MANAGED_DROP_INS = "managed-settings.d"
FLAGS = ("disableAllHooks", "allowManagedPermissionRulesOnly", "allowManagedHooksOnly")


def managed_dir(env: Mapping[str, str] | None = None) -> Path:
    """The managed settings' directory: `FSM_AGENT_MANAGED_SETTINGS_DIR` when it is set,
    else /etc/claude-code."""
    given = (os.environ if env is None else env).get(MANAGED_DIR_VARIABLE, "").strip()
    return Path(given) if given else MANAGED_DIR


def managed_files(directory: Path) -> list[Path]:
    """`managed-settings.json`, then each `managed-settings.d/*.json` in name order, as
    the CLI takes them (a later one wins a key both set): names starting with a dot,
    and any not ending in `.json` (case counts), are not settings. Only those there."""
    found = [directory / MANAGED_FILE] if (directory / MANAGED_FILE).exists() else []
    drop_ins = directory / MANAGED_DROP_INS
    try:
        entries = sorted(os.scandir(drop_ins), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return found
    except OSError as exc:
        raise SettingsError(f"{drop_ins}: cannot list: {exc.strerror or exc}") from None
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(".json"):
            continue
        if entry.is_symlink() or entry.is_file(follow_symlinks=False):
            found.append(Path(entry.path))
    return found


CLAUDE_JSON = STATE_FILE
"""Claude Code's own state file in the home directory (or `$CLAUDE_CONFIG_DIR`), where
its trust dialog's answer is kept per project."""


def trusted_by_claude(cwd: str, home: str | Path, state_file: Path | None = None) -> bool:
    """Whether `~/.claude.json` (or `state_file`) has the trust dialog accepted for the
    workspace or for the git repository it is in (the key Claude Code keeps a project
    under). A parent directory's trust does not carry, as in the CLI. A file that cannot
    be read trusts nothing: the run goes on untrusted and says how to trust."""
    try:
        with open(state_file or Path(home) / CLAUDE_JSON, encoding="utf-8") as f:
            state = json.load(f, parse_constant=no_constant)
    except (OSError, ValueError, RecursionError):
        return False
    projects = state.get("projects") if isinstance(state, dict) else None
    if not isinstance(projects, dict):
        return False
    real = os.path.realpath(cwd)
    keys = {os.path.abspath(cwd), real}
    root = git_root(real)
    if root is not None:
        keys.add(root)
    return any(
        isinstance(projects.get(k), dict) and projects[k].get("hasTrustDialogAccepted") is True
        for k in keys
    )


def project_key(cwd: str) -> str:
    """The key Claude Code keeps a workspace's trust under in the state file: the git
    repository's root when the workspace is in one, else the workspace (resolved), as
    the CLI's trust dialog writes it (measured: accepted in `repo/sub`, it marks `repo`)."""
    real = os.path.realpath(cwd)
    return git_root(real) or real


def accept_trust(cwd: str, user: UserFiles) -> None:
    """Mark the workspace trusted in the state file, as accepting Claude Code's trust
    dialog does, keeping everything else the file holds; a file that is there but not a
    JSON object is left alone (SettingsError: writing it would lose what it holds)."""
    path = user.state_file
    try:
        data = read_for_rewrite(path)
    except (OSError, ValueError, RecursionError) as exc:
        raise SettingsError(f"{path}: cannot read it to record the trust: {exc}") from None
    projects = data.get("projects", {}) if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        raise SettingsError(f"{path}: not a state file with a 'projects' object; left alone")
    entry = projects.setdefault(project_key(cwd), {})
    if not isinstance(entry, dict):
        raise SettingsError(f"{path}: its entry for {project_key(cwd)} is not an object")
    entry["hasTrustDialogAccepted"] = True
    data["projects"] = projects
    try:
        write_json(path, data, 0o600)
    except (OSError, ValueError) as exc:
        raise SettingsError(f"{path}: cannot record the trust: {exc}") from None


def git_root(path: str) -> str | None:
    """The nearest directory at or above `path` holding a `.git` (a directory or a
    file), found without running git (whose config may name programs)."""
    here = path
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


def settings_files(
    cwd: str, home: str | Path, config_dir: Path | None = None
) -> list[tuple[Path, str]]:
    """Each settings file below the managed ones, lowest precedence first, with the root
    its `/path` rules use: resolved, as the paths they are matched against are (HOME may
    be a link). The user's is in `config_dir` (`$CLAUDE_CONFIG_DIR`), else `~/.claude`."""
    config_dir = config_dir if config_dir is not None else Path(home) / ".claude"
    user, project = os.path.realpath(config_dir), os.path.realpath(cwd)
    return [
        (config_dir / "settings.json", user),
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
    flags = []
    for name in FLAGS:
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise SettingsError(
                f"{origin}: {name} must be true or false (not {json.dumps(value)[:40]})"
            )
        flags.append((name, value))
    return Settings(
        permissions, hooks, warnings, origin if disable == "disable" else "", tuple(flags)
    )


def _read_settings(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}:{decode_error(exc)}") from None
    except RecursionError:
        raise SettingsError(f"{path}: not valid JSON: nested too deeply") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:  # NaN, or a number of more digits than Python converts
        raise SettingsError(f"{path}: not valid JSON: {str(exc).split(';')[0]}") from None


def load_settings(
    cwd: str,
    home: str | None = None,
    *,
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    add_dirs: Sequence[str] = (),
    trusted: bool | None = None,
    managed: Path | None = None,
    user: UserFiles | None = None,
) -> Settings:
    """The merged settings for a run in `cwd`, with the command line's rules added.

    `user`: the user's files; None: `home`'s, or, with no `home` either, as the CLI finds
    them (`UserFiles.of`: `$CLAUDE_CONFIG_DIR`, else `~`).
    `trusted`: whether the user trusts the workspace; None asks the state file.
    `managed`: the managed settings' directory; None: `managed_dir()`."""
    if user is None:
        user = UserFiles.at(home) if home is not None else UserFiles.of()
    if trusted is None:
        trusted = trusted_by_claude(cwd, "", user.state_file)
    root = os.path.realpath(cwd)
    below: list[Settings] = []
    for n, (path, file_root) in enumerate(settings_files(cwd, "", user.config_dir)):
        if not path.is_file():
            continue
        one = parse_settings(_read_settings(path), str(path), file_root, cwd)
        if n > 0:  # the workspace's own files
            one = _workspace_limits(one, path, cwd, user, trusted=trusted or n == 2)
        below.append(one)
    # The administrator's: `/path` rules are the project's, as the CLI anchors them;
    # no trust is asked of them.
    above = [
        parse_settings(_read_settings(path), str(path), root, cwd)
        for path in managed_files(managed if managed is not None else managed_dir())
    ]
    cli = PermissionSettings(
        allow=_rules(_split_flags(allowed_tools), "--allowed-tools: rule", root),
        deny=_rules(_split_flags(disallowed_tools), "--disallowed-tools: rule", root),
        additional_directories=tuple(os.path.realpath(os.path.join(cwd, d)) for d in add_dirs),
    )
    return _merged(below, above, cli)


def _last(settings: Sequence[Settings], name: str) -> bool:
    """A switch as the files set it: the last that says wins (a later drop-in may turn a
    managed switch off again, as in the CLI)."""
    said = [s.flag(name) for s in settings if s.flag(name) is not None]
    return bool(said[-1]) if said else False


def _merged(
    below: Sequence[Settings], above: Sequence[Settings], cli: PermissionSettings
) -> Settings:
    """User, project and local settings (`below`), the command line's lists, and the
    managed settings (`above`) on top of them all."""
    rules_only = _last(above, "allowManagedPermissionRulesOnly")
    hooks_only = _last(above, "allowManagedHooksOnly")
    all_off = _last(above, "disableAllHooks")
    theirs_off = _last(below, "disableAllHooks")
    permissions, warnings = PermissionSettings(), list[str]()
    hooks: tuple[HookMatcher, ...] = ()
    for one in below:
        p = one.permissions
        warnings += one.warnings
        dropped = len(p.allow) + len(p.ask) + len(p.deny)
        if rules_only:
            if dropped:
                warnings.append(_ignored(dropped, "permission rule", p.sources[0],
                                         "allowManagedPermissionRulesOnly"))  # fmt: skip
            p = evolve(p, allow=(), ask=(), deny=())
        permissions = permissions.merged(p)
        if one.hooks and hooks_only and not all_off:
            warnings.append(_ignored(len(one.hooks), "hook", p.sources[0], "allowManagedHooksOnly"))
        if not (hooks_only or theirs_off or all_off):
            hooks += one.hooks
    if rules_only and cli.allow:
        warnings.append(
            _ignored(len(cli.allow), "permission rule", "--allowed-tools",
                     "allowManagedPermissionRulesOnly")
        )  # fmt: skip
        cli = evolve(cli, allow=())
    permissions = permissions.merged(cli)
    for one in above:
        permissions = permissions.merged(one.permissions)
        warnings += one.warnings
        if not all_off:
            hooks += one.hooks
    disabled = [s.bypass_disabled for s in (*below, *above) if s.bypass_disabled]
    return Settings(
        permissions, hooks, tuple(warnings), disabled[-1] if disabled else "",
        (("allowManagedPermissionRulesOnly", rules_only), ("allowManagedHooksOnly", hooks_only),
         ("disableAllHooks", all_off)),
    )  # fmt: skip


def _ignored(count: int, what: str, where: str, switch: str) -> str:
    plural = what if count == 1 else f"{what}s"
    return f"Ignoring {count} {plural} from {where}: the managed settings set {switch}"


def _workspace_limits(
    one: Settings, path: Path, cwd: str, user: UserFiles, *, trusted: bool
) -> Settings:
    """What a workspace's settings file may not grant: bypassPermissions as its mode
    (the real CLI ignores it there, trusted or not, local file included), and, from an
    untrusted workspace's `.claude/settings.json`, allow rules and more directories
    (ignored with a line saying so, as the CLI says it)."""
    p, warnings = one.permissions, list(one.warnings)
    mode = p.default_mode
    if mode == "bypassPermissions":
        warnings.append(
            f"{path}: permissions.defaultMode bypassPermissions is ignored in a workspace's "
            "settings (pass --permission-mode bypassPermissions, or set it in "
            f"{user.settings})"
        )
        mode = None
    allow, dirs = p.allow, p.additional_directories
    if not trusted:
        how = (
            "this workspace has not been trusted. Accept Claude Code's trust dialog here once, "
            f'set projects["{os.path.realpath(cwd)}"].hasTrustDialogAccepted: true in '
            f"{user.state_file}, or pass --trust"
        )
        for key, given in (("allow", allow), ("additionalDirectories", dirs)):
            if given:
                entries = "entry" if len(given) == 1 else "entries"
                warnings.append(
                    f"Ignoring {len(given)} permissions.{key} {entries} from {path}: {how}"
                )
        allow, dirs = (), ()
    permissions = evolve(p, allow=allow, additional_directories=dirs, default_mode=mode)
    return evolve(one, permissions=permissions, warnings=tuple(warnings))


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
