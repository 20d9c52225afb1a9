"""The run's MCP servers, live: started together through the `mcp` SDK, stopped with the run.

Each server gets one `McpConnection`, a task that holds the SDK's transport (stdio,
streamable HTTP or SSE) and `ClientSession` open until the run ends; a call from any
task goes through that session. A server that does not start within `MCP_TIMEOUT`,
exits, hangs past `MCP_TOOL_TIMEOUT` or answers with something that is not MCP fails
the call with an error that names it (`McpError`), and the run goes on; a server
that exited is started again at its next call, as Claude Code reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Sequence
from typing import Any, TextIO, cast

import httpx2
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from fsm_agent.core.mcp import (
    CONNECTED,
    FAILED,
    NEEDS_APPROVAL,
    McpError,
    McpServerState,
    McpToolInfo,
)
from fsm_agent.core.mcp_config import McpServerConfig
from fsm_agent.tools.mcp import MAX_OUTPUT_TOKENS, McpTool

START_TIMEOUT_S = 30.0
"""Claude Code's default for `MCP_TIMEOUT` (30 000 ms)."""


def why(exc: BaseException) -> str:
    """The first real error inside an exception group (anyio's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, OSError | McpError) else f"{type(exc).__name__}: {text}"


class McpConnection:
    """One server's session, held open by its own task; implements `McpClient`."""

    def __init__(
        self,
        config: McpServerConfig,
        cwd: str,
        start_timeout: float = START_TIMEOUT_S,
        call_timeout: float | None = None,
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.session: ClientSession | None = None
        self.tools: tuple[McpToolInfo, ...] = ()
        self.error: str | None = None
        self.not_mcp: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[Exception | None] | None = None
        """Set once it started (None) or failed to (why): a result, never an exception,
        so a run that ends before asking leaves no unretrieved error behind."""
        self._stop: asyncio.Event | None = None
        self._stderr: TextIO | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready, self._stop = loop.create_future(), asyncio.Event()
        self.session, self.error, self.not_mcp = None, None, None
        self._task = asyncio.create_task(self._serve(), name=f"mcp server {self.name}")

    async def connected(self) -> McpServerState:
        """Its state once it has started, failed, or run out of `start_timeout`."""
        if self._task is None:
            self.start()
        assert self._ready is not None
        try:
            failed = await asyncio.wait_for(asyncio.shield(self._ready), self.start_timeout)
        except TimeoutError:
            self.error = f"did not start within {self.start_timeout:g} s (MCP_TIMEOUT)"
            await self.stop()
        else:
            if failed is not None:
                self.error = self._failure(failed)
        return self.state()

    def state(self) -> McpServerState:
        config = self.config
        if self.session is None:
            return McpServerState(config.name, config.transport, FAILED, config.source,
                                  self.error or "not connected")  # fmt: skip
        return McpServerState(config.name, config.transport, CONNECTED, config.source,
                              tools=self.tools)  # fmt: skip

    def _failure(self, exc: BaseException) -> str:
        if self.not_mcp is not None:
            return f"answered with something that is not MCP: {self.not_mcp}"
        text = why(exc)
        tail = self._stderr_tail()
        return f"{text} (stderr: {tail})" if tail else text

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
            return lines[-1][:200] if lines else ""
        return ""

    async def _serve(self) -> None:
        assert self._ready is not None and self._stop is not None
        ready, stop = self._ready, self._stop
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._message)
                )
                await session.initialize()
                listed = await session.list_tools()
                self.tools = tuple(_info(tool) for tool in listed.tools)
                self.session = session
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_result(exc if isinstance(exc, Exception) else McpError(why(exc)))
            elif self.error is None:
                self.error = self._failure(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None

    def _transport(self) -> Any:
        config = self.config
        if config.transport == "stdio":
            if self._stderr is None:  # kept past the transport: its last line says why it failed
                self._stderr = cast(TextIO, tempfile.TemporaryFile("w+", encoding="utf-8"))  # noqa: SIM115
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env or None,
                cwd=self.cwd,
            )  # fmt: skip
            return stdio_client(params, errlog=self._stderr)
        if config.transport == "sse":
            return sse_client(config.url, headers=config.headers, timeout=self.start_timeout)
        client = httpx2.AsyncClient(
            headers=config.headers, timeout=httpx2.Timeout(self.start_timeout, read=300.0)
        )
        return streamable_http_client(config.url, http_client=client)

    async def _message(self, message: Any) -> None:
        if isinstance(message, Exception) and self.not_mcp is None:
            self.not_mcp = why(message)[:200]
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(McpError(self.not_mcp))

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.session is None and self.error is not None and "MCP_TIMEOUT" not in self.error:
            await self.stop()
            await self.connected()  # it exited: start it again, as Claude Code reconnects
        session = self.session
        if session is None:
            raise McpError(f'MCP server "{self.name}" is not connected: {self.error}')
        try:
            result = await asyncio.wait_for(session.call_tool(tool, arguments), self.call_timeout)
        except TimeoutError:
            raise McpError(
                f'MCP server "{self.name}" did not answer {tool} within '
                f"{self.call_timeout:g} s (MCP_TOOL_TIMEOUT)"
            ) from None
        except MCPError as exc:
            if self.not_mcp is not None:
                raise McpError(
                    f'MCP server "{self.name}" answered with something that is not MCP: '
                    f"{self.not_mcp}"
                ) from None
            if exc.error.message == "Connection closed":
                self.error = "it exited"
                self.session = None
                raise McpError(f'MCP server "{self.name}": Connection closed (it exited)') from None
            raise McpError(f'MCP server "{self.name}": {exc.error.message}') from None
        except Exception as exc:
            raise McpError(f'MCP server "{self.name}": {why(exc)}') from None
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        stderr, self._stderr = self._stderr, None
        if self._stop is not None:
            self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), 5.0)
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if stderr is not None:
            stderr.close()


def _info(tool: Any) -> McpToolInfo:
    annotations = tool.annotations
    return McpToolInfo(
        tool.name,
        tool.description or "",
        tool.input_schema or {"type": "object"},
        bool(annotations is not None and annotations.read_only_hint),
    )


class McpServers:
    """The servers of a run (or a chat): started together, asked for their states once
    all have started or failed, stopped together. `unapproved` are `.mcp.json` servers
    the user has not approved: listed, never started."""

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        cwd: str,
        *,
        start_timeout: float = START_TIMEOUT_S,
        call_timeout: float | None = None,
        max_tokens: int = MAX_OUTPUT_TOKENS,
        unapproved: Sequence[McpServerConfig] = (),
    ) -> None:
        self.connections = [McpConnection(c, cwd, start_timeout, call_timeout) for c in configs]
        self.unapproved = tuple(unapproved)
        self.max_tokens = max_tokens
        self._states: tuple[McpServerState, ...] | None = None

    def start(self) -> None:
        """Start every server now, in parallel (needs a running loop)."""
        for connection in self.connections:
            if connection._task is None:
                connection.start()

    async def states(self) -> tuple[McpServerState, ...]:
        if self._states is None:
            self.start()
            states = await asyncio.gather(*(c.connected() for c in self.connections))
            why = "a project server (.mcp.json) not approved"
            waiting = tuple(
                McpServerState(c.name, c.transport, NEEDS_APPROVAL, c.source, why)
                for c in self.unapproved
            )
            self._states = tuple(states) + waiting
        return self._states

    def tools(self) -> list[McpTool]:
        return [
            McpTool(c.name, info, c, self.max_tokens)
            for c in self.connections
            if c.session is not None
            for info in c.tools
        ]

    async def close(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections))

    async def __aenter__(self) -> McpServers:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
