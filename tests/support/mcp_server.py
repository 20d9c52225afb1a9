"""A small MCP server written with the `mcp` SDK (its MCPServer, once FastMCP), for the
failure cases and every result type: run as a script, over stdio unless `--http PORT`
or `--sse PORT` says otherwise.

    python -m tests.support.mcp_server [--garbage] [--slow-start S] [--http PORT | --sse PORT]

`--garbage` writes a line that is not JSON-RPC to stdout before serving (a server
that does not speak MCP); `--slow-start S` sleeps S seconds before serving.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def build(name: str = "probe") -> Any:
    server = MCPServer(name)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def hello(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    @server.tool()
    def fails(x: int) -> CallToolResult:
        """Answer with an error result."""
        return CallToolResult(content=[TextContent(type="text", text=f"it broke ({x})")],
                              isError=True)  # fmt: skip

    @server.tool()
    def structured(x: int) -> dict[str, int]:
        """Answer with structured content."""
        return {"x": x, "double": 2 * x}

    @server.tool()
    def big(n: int) -> str:
        """Answer with n times 'abcd '."""
        return "abcd " * n

    @server.tool()
    def image() -> ImageContent:
        """Answer with a one-pixel PNG."""
        return ImageContent(type="image", data=PNG, mimeType="image/png")

    @server.tool()
    def resource() -> EmbeddedResource:
        """Answer with an embedded text resource."""
        contents = TextResourceContents(uri="file:///x.txt", mimeType="text/plain",
                                        text="resource text")  # fmt: skip
        return EmbeddedResource(type="resource", resource=contents)

    @server.tool()
    def die() -> str:
        """Exit in the middle of the call."""
        os._exit(3)

    @server.tool()
    def hang(seconds: float = 60) -> str:
        """Answer only after `seconds`."""
        time.sleep(seconds)
        return "late"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--slow-start", type=float, default=0.0)
    parser.add_argument("--http", type=int)
    parser.add_argument("--sse", type=int)
    options = parser.parse_args()
    if options.slow_start:
        time.sleep(options.slow_start)
    if options.garbage:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    server = build()
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    elif options.sse:
        server.run("sse", host="127.0.0.1", port=options.sse)
    else:
        server.run()


if __name__ == "__main__":
    main()
