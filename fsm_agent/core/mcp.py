"""MCP servers as the loop knows them: each server's state and tools, and their names.

What a run is told of its MCP servers (the `mcp_servers` effect) is a tuple of
`McpServerState`, recorded and replayed like any effect, so a replay needs no
server. `McpClient` is all an MCP tool asks of its server (list and call), so
any client can stand behind it: the live side's `mcp` SDK sessions, or another
door to a server (an SDK host's in-process servers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from attrs import field, frozen

from fsm_agent.core.messages import ImageBlock, TextBlock, ToolResultContent
from fsm_agent.core.model import ToolSpec

PREFIX = "mcp__"
CONNECTED = "connected"
FAILED = "failed"
NEEDS_APPROVAL = "needs approval"
"""A project server (`.mcp.json`) the user has not approved: not started, as in Claude Code."""


class McpError(Exception):
    """An MCP call that did not give a result (the server exited, hung, spoke no MCP):
    the message is what the model reads, naming the server."""


@frozen
class McpToolInfo:
    """One tool as its server lists it. `read_only`: its `readOnlyHint` annotation,
    which makes its calls concurrency-safe, as Claude Code decides."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(factory=lambda: {"type": "object"}, hash=False)
    read_only: bool = False


@frozen
class McpServerState:
    """One configured server once the run's servers have started (or failed to)."""

    name: str
    transport: str
    status: str
    source: str = ""
    """Where it was configured: `project`, `user`, `local` or `dynamic` (`--mcp-config`),
    what Claude Code's hook payloads call `mcp_server.source`."""
    error: str | None = None
    tools: tuple[McpToolInfo, ...] = ()


class McpClient(Protocol):
    """What an MCP tool needs of its server; `call_tool` answers with the MCP wire shape
    of a `CallToolResult` (`content`, `structuredContent`, `isError`) or raises `McpError`."""

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


def normalized(name: str) -> str:
    """A server's or tool's name as Claude Code puts it in a tool name."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{normalized(server)}__{normalized(tool)}"


def is_mcp(name: str) -> bool:
    return name.startswith(PREFIX)


@frozen
class McpTools:
    """What the engine takes from the servers' states: the tools to offer the model, the
    calls that may run together, and which server each tool's hook payloads name."""

    specs: tuple[ToolSpec, ...] = ()
    read_only: frozenset[str] = frozenset()
    servers: dict[str, dict[str, str]] = field(factory=dict)
    down: dict[str, str] = field(factory=dict)
    """What each server that is not connected says (`failed: …`), by its tool prefix."""

    def missing(self, name: str) -> str | None:
        """Why a tool the model named is not there, when its server is down."""
        for prefix, why in self.down.items():
            if name.startswith(prefix):
                return why
        return None


def mcp_tools(states: Sequence[McpServerState]) -> McpTools:
    specs: list[ToolSpec] = []
    read_only: set[str] = set()
    servers: dict[str, dict[str, str]] = {}
    down: dict[str, str] = {}
    for state in states:
        if state.status != CONNECTED:
            down[tool_name(state.name, "")] = describe(state)
            continue
        for tool in state.tools:
            name = tool_name(state.name, tool.name)
            specs.append(ToolSpec(name, tool.description, tool.input_schema))
            servers[name] = {"name": state.name, "source": state.source}
            if tool.read_only:
                read_only.add(name)
    return McpTools(tuple(specs), frozenset(read_only), servers, down)


def describe(state: McpServerState) -> str:
    """A server's state in a line, as `mcp list` and a call to a server that is down say it."""
    if state.status == CONNECTED:
        return f"{state.name}: {CONNECTED} ({len(state.tools)} tools)"
    return f"{state.name}: {state.status}: {state.error or '?'}"


def hook_response(content: ToolResultContent) -> Any:
    """What PostToolUse hooks get as an MCP call's `tool_response`, as Claude Code sends
    it: the text of a structured result, else its content blocks."""
    if isinstance(content, str):
        return content
    return [_block_json(b) for b in content]


def _block_json(block: TextBlock | ImageBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    source = {"type": "base64", "media_type": block.source.media_type, "data": block.source.data}
    return {"type": "image", "source": source}
