"""`fsm-agent mcp list`: each MCP server a run in the workspace would start, and its state.

Claude Code's `/mcp` and `claude mcp list`: the servers are started as a run starts
them (in parallel, within `MCP_TIMEOUT`), asked for their tools, and stopped.
"""

from __future__ import annotations

import asyncio
import json

import click
from attrs import asdict

from fsm_agent.app.configure import mcp_servers_in
from fsm_agent.app.environment import ConfigError
from fsm_agent.cli.usage import fail, say, workspace
from fsm_agent.core.mcp import McpServerState, describe, tool_name
from fsm_agent.live.mcp_files import McpSetup


@click.group()
def mcp() -> None:
    """The MCP servers a run in the workspace would start, and their state."""


@mcp.command("list")
@click.option(
    "--cwd",
    default=".",
    type=click.Path(exists=True, file_okay=False),
    help="The workspace. Default: the current directory.",
)
@click.option("--mcp-config", multiple=True, help="As `run --mcp-config` (repeatable).")
@click.option("--strict-mcp-config", is_flag=True, help="Only the servers of --mcp-config.")
@click.option("--json", "as_json", is_flag=True, help="Print the servers as JSON.")
def list_servers(cwd: str, mcp_config: tuple[str, ...], strict_mcp_config: bool,
                 as_json: bool) -> None:  # fmt: skip
    """Start each server, show its state and tools, and stop it."""
    try:
        setup = mcp_servers_in(workspace(cwd), mcp_config, strict_mcp_config, say)
    except ConfigError as exc:
        fail(str(exc))
    states = () if setup is None else asyncio.run(_states(setup))
    if as_json:
        click.echo(json.dumps([asdict(s) for s in states], indent=2))
        return
    if not states:
        click.echo(f"no MCP servers configured for {workspace(cwd)}")
        return
    for state in states:
        click.echo(f"{describe(state)}  [{state.transport}, {state.source}]")
        for tool in state.tools:
            click.echo(f"  {tool_name(state.name, tool.name)}{'  (read-only)' * tool.read_only}")


async def _states(setup: McpSetup) -> tuple[McpServerState, ...]:
    async with setup.open() as servers:
        return await servers.states()
