"""MCP tools: a server's tool offered to the model as `mcp__<server>__<tool>`.

`McpTool` needs of its server only `McpClient.call_tool`, so whatever client stands
behind it (the `mcp` SDK's sessions, an SDK host's in-process servers) gives the same
tool. The result is mapped as Claude Code maps it: structured content as its JSON,
else each content block (text, images, resources, resource links); `isError` as an
error result; text past `MAX_MCP_OUTPUT_TOKENS` cut with Claude Code's note.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fsm_agent.core.mcp import McpClient, McpError, McpToolInfo, tool_name
from fsm_agent.core.messages import ImageBlock, ImageSource, TextBlock, ToolResultContent
from fsm_agent.core.tool import ToolEnv, ToolOutcome

MAX_OUTPUT_TOKENS = 25_000
"""Claude Code's default for `MAX_MCP_OUTPUT_TOKENS`."""
CHARS_PER_TOKEN = 4
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def truncation_note(limit: int) -> str:
    return (
        f"\n\n[OUTPUT TRUNCATED - exceeded {limit} token limit]\n\nThe tool output was "
        "truncated. If this MCP server provides pagination or filtering tools, use them to "
        "retrieve specific portions of the data. If pagination is not available, inform the "
        "user that you are working with truncated output and results may be incomplete."
    )


class McpTool:
    """One tool of one MCP server, under the name the model calls it by."""

    def __init__(
        self, server: str, info: McpToolInfo, client: McpClient, max_tokens: int = MAX_OUTPUT_TOKENS
    ) -> None:
        self.server = server
        self.tool = info.name
        self.name = tool_name(server, info.name)
        self.description = info.description
        self.input_schema = info.input_schema
        self.client = client
        self.max_tokens = max_tokens

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        try:
            result = await self.client.call_tool(self.tool, input)
        except McpError as exc:
            return ToolOutcome.error(str(exc))
        return outcome_of(self.server, result, self.max_tokens)


def outcome_of(
    server: str, result: dict[str, Any], max_tokens: int = MAX_OUTPUT_TOKENS
) -> ToolOutcome:
    """A `CallToolResult` (its wire shape) as the model reads it."""
    blocks = result.get("content") or []
    if result.get("isError"):
        text = "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        return ToolOutcome.error(text or f"The MCP server {server} reported an error")
    structured = result.get("structuredContent")
    content: ToolResultContent
    if structured is not None:
        content = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    else:
        content = tuple(b for block in blocks for b in _blocks(server, block))
    return ToolOutcome(_cut(content, max_tokens))


def _blocks(server: str, block: Any) -> Sequence[TextBlock | ImageBlock]:
    if not isinstance(block, dict):
        return ()
    kind = block.get("type")
    if kind == "text":
        return (TextBlock(str(block.get("text", ""))),)
    if kind == "image" and block.get("mimeType") in IMAGE_TYPES:
        return (ImageBlock(ImageSource(block["mimeType"], str(block.get("data", "")))),)
    if kind in ("image", "audio"):
        return (TextBlock(f"[{kind.title()} from {server}: {block.get('mimeType', '?')}]"),)
    if kind == "resource":
        resource = block.get("resource") or {}
        where = f"[Resource from {server} at {resource.get('uri', '?')}]"
        if "text" in resource:
            return (TextBlock(f"{where} {resource['text']}"),)
        mime = resource.get("mimeType") or "application/octet-stream"
        if mime in IMAGE_TYPES:
            return (TextBlock(where), ImageBlock(ImageSource(mime, str(resource.get("blob", "")))))
        return (TextBlock(f"{where} (binary content, {mime})"),)
    if kind == "resource_link":
        text = f"[Resource link: {block.get('name', '')}] {block.get('uri', '')}"
        if block.get("description"):
            text += f" ({block['description']})"
        return (TextBlock(text),)
    return (TextBlock(json.dumps(block, ensure_ascii=False)),)


def _cut(content: ToolResultContent, max_tokens: int) -> ToolResultContent:
    """Text past `max_tokens` (four characters a token, as Claude Code estimates) cut,
    with its note; images are kept."""
    limit = max_tokens * CHARS_PER_TOKEN
    if isinstance(content, str):
        return content if len(content) <= limit else content[:limit] + truncation_note(max_tokens)
    total = sum(len(b.text) for b in content if isinstance(b, TextBlock))
    if total <= limit:
        return content
    out: list[TextBlock | ImageBlock] = []
    left = limit
    for block in content:
        if isinstance(block, TextBlock):
            if left <= 0:
                continue
            block = TextBlock(block.text[:left])
            left -= len(block.text)
        out.append(block)
    return (*out, TextBlock(truncation_note(max_tokens).lstrip("\n")))
