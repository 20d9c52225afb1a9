"""MCP server configuration as Claude Code reads it, as pure functions of the files' data.

Servers come from four scopes: `user` (`~/.claude.json`'s `mcpServers`), `project`
(the workspace's `.mcp.json`), `local` (`~/.claude.json`'s entry for the workspace)
and `dynamic` (`--mcp-config`); a later scope's server of the same name wins (local
over project over user, the command line over all). `${VAR}` and `${VAR:-default}`
are expanded in commands, args, env, URLs and headers from the environment given.
A project server runs only once the user approved it (`enableAllProjectMcpServers`,
`enabledMcpjsonServers`; `disabledMcpjsonServers` refuses it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

TRANSPORTS = {"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse"}
SCOPES = ("user", "project", "local", "dynamic")
_VARIABLE = re.compile(r"\$\{([^}:]+)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """An MCP configuration that cannot be read at all; the message names it."""


@frozen
class McpServerConfig:
    """One server as configured, its variables expanded."""

    name: str
    transport: str
    source: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(factory=dict, hash=False)
    url: str = ""
    headers: dict[str, str] = field(factory=dict, hash=False)


@frozen
class Approvals:
    """The settings that say which `.mcp.json` servers may run."""

    enable_all: bool = False
    enabled: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()

    def verdict(self, name: str) -> bool | None:
        """True: approved; False: refused; None: not decided (ask the user)."""
        if name in self.disabled:
            return False
        if self.enable_all or name in self.enabled:
            return True
        return None


def approvals_of(settings: Iterable[Mapping[str, Any]]) -> Approvals:
    """The approval keys of the settings objects given, lowest precedence first."""
    enable_all, enabled, disabled = False, set(), set()
    for data in settings:
        value = data.get("enableAllProjectMcpServers")
        if isinstance(value, bool):
            enable_all = value
        enabled |= _names(data.get("enabledMcpjsonServers"))
        disabled |= _names(data.get("disabledMcpjsonServers"))
    return Approvals(enable_all, frozenset(enabled), frozenset(disabled))


def _names(value: Any) -> set[str]:
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`${VAR}` and `${VAR:-default}` in `text`; a variable neither set nor defaulted is
    left as written and named in `missing`."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        missing.append(name)
        return match.group(0)

    return _VARIABLE.sub(one, text)


def parse_servers(
    servers: Any, origin: str, source: str, env: Mapping[str, str]
) -> tuple[tuple[McpServerConfig, ...], tuple[str, ...]]:
    """The servers of one `mcpServers` object, and a warning for each entry that cannot
    be used (it is left out; the others run, as in Claude Code)."""
    if servers is None:
        return (), ()
    if not isinstance(servers, dict):
        return (), (f"{origin}: mcpServers must be an object of servers by name",)
    out: list[McpServerConfig] = []
    warnings: list[str] = []
    for name, entry in servers.items():
        try:
            out.append(_server(name, entry, source, env, warnings, origin))
        except McpConfigError as exc:
            warnings.append(f"{origin}: MCP server {name!r}: {exc}; it is left out")
    return tuple(out), tuple(warnings)


def _server(
    name: str, entry: Any, source: str, env: Mapping[str, str], warnings: list[str], origin: str
) -> McpServerConfig:
    if not isinstance(entry, dict):
        raise McpConfigError("not an object")
    kind = entry.get("type", "stdio" if "command" in entry else None)
    if kind not in TRANSPORTS:
        raise McpConfigError(
            f"type {kind!r} is not one of stdio, http, sse" if kind else "it has no command or type"
        )
    transport = TRANSPORTS[kind]
    missing: list[str] = []
    if transport == "stdio":
        command = entry.get("command")
        args = entry.get("args", [])
        server_env = entry.get("env", {})
        if not isinstance(command, str) or not command:
            raise McpConfigError("a stdio server needs a command (a string)")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpConfigError("args must be a list of strings")
        config = McpServerConfig(
            name, transport, source,
            command=expand(command, env, missing),
            args=tuple(expand(a, env, missing) for a in args),
            env=_strings(server_env, "env", env, missing),
        )  # fmt: skip
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise McpConfigError(f"an {transport} server needs a url (a string)")
        config = McpServerConfig(
            name, transport, source,
            url=expand(url, env, missing),
            headers=_strings(entry.get("headers", {}), "headers", env, missing),
        )  # fmt: skip
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        warnings.append(f"{origin}: MCP server {name!r}: missing environment variables: {names}")
    return config


def _strings(value: Any, what: str, env: Mapping[str, str], missing: list[str]) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"{what} must be an object of strings")
    return {str(k): expand(v, env, missing) for k, v in value.items()}


def merged(*scopes: Sequence[McpServerConfig]) -> tuple[McpServerConfig, ...]:
    """The servers of each scope, lowest precedence first: a later one of the same name wins."""
    by_name: dict[str, McpServerConfig] = {}
    for scope in scopes:
        for server in scope:
            by_name.pop(server.name, None)
            by_name[server.name] = server
    return tuple(by_name.values())
