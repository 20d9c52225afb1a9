"""Tools of the Agent SDK's in-process MCP servers, offered as `mcp__<server>__<tool>`.

An SDK server (`create_sdk_mcp_server`, `--mcp-config` `{"type": "sdk"}`) lives in
the SDK's process; its JSON-RPC messages travel as `mcp_message` control requests.
The handshake and `tools/list` are made once, before the session's first run;
each call is a `tools/call`. Shapes are the `mcp` SDK's (`mcp.types`), validated
as they come. Each tool is the MCP tool class of the servers fsm-agent starts
itself (`fsm_agent.tools.mcp.McpTool`), over an `McpClient` that is this channel,
so its results are mapped as theirs are (structured content, images, `isError`,
the output cap). A call is a tool run, recorded as any other, so a replay needs
no SDK.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import mcp.types as mcp_types
from pydantic import ValidationError

from fsm_agent.core.mcp import McpError, McpToolInfo, tool_name
from fsm_agent.live.sdk_control import ControlChannel, ControlError
from fsm_agent.tools.mcp import McpTool

_ids = itertools.count(1)


class SdkServerError(Exception):
    """An SDK server that cannot be listed: its tools are not offered, and why is said."""


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


class SdkMcpClient:
    """An SDK server as the `McpClient` its tools call: each call a `tools/call` over the
    control channel, answered with the `CallToolResult`'s wire shape."""

    def __init__(self, channel: ControlChannel, server: str) -> None:
        self.channel = channel
        self.server = server

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await _request(
                self.channel, self.server, "tools/call", {"name": tool, "arguments": arguments}
            )
            mcp_types.CallToolResult.model_validate(result)
        except (ControlError, ValidationError) as exc:
            name = tool_name(self.server, tool)
            raise McpError(f"<tool_use_error>{name} failed: {exc}</tool_use_error>") from None
        return result


async def sdk_tools(
    channel: ControlChannel, servers: Sequence[str], version: str
) -> tuple[dict[str, McpTool], dict[str, str]]:
    """Every tool of `servers`, by the name the model calls it, and each server's status
    (`connected`, or `failed: why`), after the MCP handshake with each."""
    tools: dict[str, McpTool] = {}
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
        client = SdkMcpClient(channel, server)
        for tool in listed:
            hints = tool.annotations
            info = McpToolInfo(
                tool.name,
                tool.description or "",
                dict(tool.input_schema),
                read_only=bool(hints is not None and hints.read_only_hint),
            )
            adapter = McpTool(server, info, client)
            tools[adapter.name] = adapter
    return tools, status
