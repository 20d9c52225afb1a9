"""The MCP configuration on disk, read once at the start of a run, as Claude Code reads it.

`~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json` when that is set (its
`mcpServers`: the user scope; its entry for the workspace: the local scope), the
workspace's `.mcp.json` (the project scope), each `--mcp-config`
(a file or a JSON string), and the approval keys of the settings files. What the
files mean is `fsm_agent.core.mcp_config`'s; the servers start in
`fsm_agent.live.mcp_servers`, loaded only when a run has one (the `mcp` SDK takes
seconds to import).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import evolve, frozen

from fsm_agent.core.jsontext import no_constant
from fsm_agent.core.mcp_config import (
    McpConfigError,
    McpServerConfig,
    approvals_of,
    merged,
    parse_servers,
)
from fsm_agent.live.claude_home import UserFiles
from fsm_agent.live.settings import (
    SettingsError,
    managed_dir,
    managed_files,
    settings_files,
    trusted_by_claude,
)

if TYPE_CHECKING:
    from fsm_agent.live.mcp_servers import McpServers


@frozen
class McpSetup:
    """The servers a run starts, the project servers awaiting the user's approval, and the
    time and size limits of `MCP_TIMEOUT`, `MCP_TOOL_TIMEOUT` and `MAX_MCP_OUTPUT_TOKENS`."""

    cwd: str
    servers: tuple[McpServerConfig, ...] = ()
    unapproved: tuple[McpServerConfig, ...] = ()
    start_timeout: float = 30.0
    call_timeout: float | None = None
    max_tokens: int = 25_000

    def approved(self, names: Sequence[str]) -> McpSetup:
        """The user said yes to `names` (of `unapproved`): they start with the rest."""
        yes = [s for s in self.unapproved if s.name in names]
        return evolve(
            self,
            servers=merged(self.servers, yes),
            unapproved=tuple(s for s in self.unapproved if s.name not in names),
        )

    def open(self) -> McpServers:
        """The servers, to start with a run (`async with`); this loads the `mcp` SDK."""
        servers = import_module("fsm_agent.live.mcp_servers")
        return servers.McpServers(
            self.servers, self.cwd, start_timeout=self.start_timeout,
            call_timeout=self.call_timeout, max_tokens=self.max_tokens,
            unapproved=self.unapproved,
        )  # fmt: skip

    def __bool__(self) -> bool:
        return bool(self.servers or self.unapproved)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise McpConfigError(f"{what} {path}: not valid JSON: {str(exc).split(';')[0]}") from None
    except OSError as exc:
        raise McpConfigError(f"{what} {path}: cannot read: {exc.strerror or exc}") from None


def _given(value: str, cwd: str) -> tuple[Any, str]:
    """One `--mcp-config`: a JSON string, or a file (relative to the workspace)."""
    text = value.strip()
    if text.startswith("{"):
        try:
            return json.loads(text, parse_constant=no_constant), "--mcp-config"
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            msg = str(exc).split(";")[0]
            raise McpConfigError(f"--mcp-config: not valid JSON: {msg}") from None
    path = Path(cwd, os.path.expanduser(text))
    if not path.is_file():
        raise McpConfigError(f"--mcp-config {value}: no such file")
    return _read_json(path, "--mcp-config"), str(path)


def _servers_of(data: Any, origin: str) -> Any:
    if not isinstance(data, dict):
        raise McpConfigError(f"{origin}: an MCP configuration is a JSON object")
    return data.get("mcpServers")


def load_mcp(
    cwd: str,
    home: str,
    env: Mapping[str, str],
    *,
    configs: Sequence[str] = (),
    strict: bool = False,
    start_timeout: float = 30.0,
    call_timeout: float | None = None,
    max_tokens: int = 25_000,
    trusted: bool | None = None,
) -> tuple[McpSetup, tuple[str, ...]]:
    """The run's MCP setup, and a warning for each server that cannot be used.

    `trusted`: whether the user trusts the workspace (None: as `~/.claude.json` says).
    `env` sets the servers' variables, and `CLAUDE_CONFIG_DIR` in it moves
    `~/.claude.json` and `~/.claude/settings.json` there, as in the CLI.
    An untrusted workspace's `.claude/settings.json` cannot approve the servers of its
    own `.mcp.json` (each would run a program the repository names): they wait for the
    user's approval as if it said nothing; what it disables stays disabled."""
    warnings: list[str] = []
    files = UserFiles.of(env, home)
    dynamic: list[McpServerConfig] = []
    for value in configs:
        data, origin = _given(value, cwd)
        found, said = parse_servers(_servers_of(data, origin), origin, "dynamic", env)
        dynamic += found
        warnings += said
    user: tuple[McpServerConfig, ...] = ()
    local: tuple[McpServerConfig, ...] = ()
    project: tuple[McpServerConfig, ...] = ()
    approval_data: list[Mapping[str, Any]] = []
    if not strict:
        claude_json = files.state_file
        state: Any = {}
        if claude_json.is_file():
            try:
                state = _read_json(claude_json, "the Claude config")
            except McpConfigError as exc:
                warnings.append(f"{exc}; its MCP servers are left out")
        if isinstance(state, dict):
            user, said = parse_servers(state.get("mcpServers"), str(claude_json), "user", env)
            warnings += said
            projects = state.get("projects")
            entry = projects.get(os.path.realpath(cwd)) if isinstance(projects, dict) else None
            if isinstance(entry, dict):
                local, said = parse_servers(entry.get("mcpServers"), str(claude_json), "local", env)
                warnings += said
                approval_data.append(entry)
        mcp_json = Path(cwd) / ".mcp.json"
        if mcp_json.is_file():
            origin = str(mcp_json)
            project, said = parse_servers(
                _servers_of(_read_json(mcp_json, "the project's"), origin), origin, "project", env
            )
            warnings += said
        if trusted is None:
            trusted = trusted_by_claude(cwd, home, claude_json)
        for n, (path, _root) in enumerate(settings_files(cwd, home, files.config_dir)):
            if path.is_file():
                try:
                    data = _read_json(path, "settings")
                except McpConfigError:
                    continue  # load_settings has said what is wrong with it
                if isinstance(data, dict) and n == 1 and not trusted:
                    data, ignored = _narrowing_only(data, path, project)
                    warnings += ignored
                if isinstance(data, dict):
                    approval_data.append(data)
        approval_data += _managed_approvals()
    approvals = approvals_of(approval_data)
    approved = [s for s in project if approvals.verdict(s.name)]
    waiting = tuple(s for s in project if approvals.verdict(s.name) is None)
    servers = merged(user, approved, local, dynamic)
    names = {s.name for s in servers}
    setup = McpSetup(
        os.path.realpath(cwd), servers, tuple(s for s in waiting if s.name not in names),
        start_timeout, call_timeout, max_tokens,
    )  # fmt: skip
    return setup, tuple(warnings)


def _managed_approvals() -> list[Mapping[str, Any]]:
    """The managed settings' approval keys, above every other file's (the administrator
    may enable or disable a project's servers); a file that cannot be read has been
    refused by `load_settings` already."""
    try:
        paths = managed_files(managed_dir())
    except SettingsError:
        return []
    out: list[Mapping[str, Any]] = []
    for path in paths:
        try:
            data = _read_json(path, "managed settings")
        except McpConfigError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _narrowing_only(
    data: dict[str, Any], path: Path, project: Sequence[McpServerConfig]
) -> tuple[dict[str, Any], list[str]]:
    """An untrusted workspace's settings as far as they approve MCP servers: what they
    disable (or an `enableAllProjectMcpServers` of false), not what they enable."""
    kept: dict[str, Any] = {}
    if "disabledMcpjsonServers" in data:
        kept["disabledMcpjsonServers"] = data["disabledMcpjsonServers"]
    if data.get("enableAllProjectMcpServers") is False:
        kept["enableAllProjectMcpServers"] = False
    grants = data.get("enableAllProjectMcpServers") is True or bool(
        data.get("enabledMcpjsonServers")
    )
    said = []
    if grants and project:
        said.append(
            f"{path}: its approval of .mcp.json servers is ignored: this workspace has not "
            "been trusted (accept Claude Code's trust dialog here once, or pass --trust); "
            "they wait for your approval"
        )
    return kept, said
