"""Tools of the Agent SDK's in-process MCP servers, offered as `mcp__<server>__<tool>`.

An SDK server (`create_sdk_mcp_server`, `--mcp-config` `{"type": "sdk"}`) lives in
the SDK's process; its JSON-RPC messages travel as `mcp_message` control requests.
The handshake and `tools/list` are made once, before the session's first run;
each call is a `tools/call`. Shapes are the `mcp` SDK's (`mcp.types`), validated
as they come. A call is a tool run, recorded as any other, so a replay needs no
SDK. Kept apart from the MCP servers fsm-agent starts itself (issue 29), which
reach the same `mcp__` names by another transport.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import mcp.types as mcp_types
from pydantic import ValidationError

from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.live.sdk_control import ControlChannel, ControlError

_ids = itertools.count(1)


class SdkServerError(Exception):
    """An SDK server that cannot be listed: its tools are not offered, and why is said."""


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


async def _send(channel: ControlChannel, server: str, message: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC message to `server`; for a request, its `result` (an `error` raises)."""
    answer = await channel.request(
        {"subtype": "mcp_message", "server_name": server, "message": message}
    )
    response = answer.get("mcp_response")
    if "id" not in message:
        return {}
    if not isinstance(response, dict):
        raise ControlError(f"the SDK's MCP server {server} gave no JSON-RPC response")
    if isinstance(response.get("error"), dict):
        raise ControlError(str(response["error"].get("message") or response["error"]))
    result = response.get("result")
    return result if isinstance(result, dict) else {}


async def _request(
    channel: ControlChannel, server: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    return await _send(channel, server, message)


class SdkMcpTool:
    """One tool of an SDK server, as fsm-agent's `Tool`: each run a `tools/call`."""

    def __init__(self, channel: ControlChannel, server: str, tool: mcp_types.Tool) -> None:
        self.channel = channel
        self.server = server
        self.tool = tool.name
        self.name = tool_name(server, tool.name)
        self.description = tool.description or ""
        self.input_schema: dict[str, Any] = dict(tool.input_schema)

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        try:
            result = await _request(
                self.channel, self.server, "tools/call", {"name": self.tool, "arguments": input}
            )
            called = mcp_types.CallToolResult.model_validate(result)
        except (ControlError, ValidationError) as exc:
            return ToolOutcome.error(f"<tool_use_error>{self.name} failed: {exc}</tool_use_error>")
        texts = [
            block.text if isinstance(block, mcp_types.TextContent) else f"[{block.type} content]"
            for block in called.content
        ]
        return ToolOutcome("\n".join(texts), is_error=bool(called.is_error))


async def sdk_tools(
    channel: ControlChannel, servers: Sequence[str], version: str
) -> tuple[dict[str, SdkMcpTool], dict[str, str]]:
    """Every tool of `servers`, by the name the model calls it, and each server's status
    (`connected`, or `failed: why`), after the MCP handshake with each."""
    tools: dict[str, SdkMcpTool] = {}
    status: dict[str, str] = {}
    params = mcp_types.InitializeRequestParams(
        protocol_version=mcp_types.LATEST_PROTOCOL_VERSION,
        capabilities=mcp_types.ClientCapabilities(),
        client_info=mcp_types.Implementation(name="fsm-agent", version=version),
    ).model_dump(by_alias=True, exclude_none=True, mode="json")
    for server in servers:
        try:
            await _request(channel, server, "initialize", params)
            await _send(channel, server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed: list[mcp_types.Tool] = []
            cursor: str | None = None
            while True:
                page = await _request(
                    channel, server, "tools/list", {"cursor": cursor} if cursor else {}
                )
                result = mcp_types.ListToolsResult.model_validate(page)
                listed += result.tools
                cursor = result.next_cursor
                if not cursor:
                    break
        except (ControlError, ValidationError) as exc:
            status[server] = f"failed: {exc}"
            continue
        status[server] = "connected"
        for tool in listed:
            adapter = SdkMcpTool(channel, server, tool)
            tools[adapter.name] = adapter
    return tools, status
