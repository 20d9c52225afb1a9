"""The run's MCP servers through the `mcp` SDK: real servers over stdio, streamable HTTP
and SSE, and every failure ending in an error that names the server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fsm_agent.core.mcp import McpError
from fsm_agent.core.mcp_config import McpServerConfig
from fsm_agent.core.tool import ToolEnv
from fsm_agent.live.mcp_servers import McpServers
from fsm_agent.tools.mcp import McpTool
from tests.support.mcp_fixtures import everything_command, git_repo, probe, pypi_server, served


async def _with(configs: list[McpServerConfig], cwd: Path, calls: list[tuple[str, str, dict]],
                **limits: Any) -> tuple[list[Any], list[Any]]:  # fmt: skip
    """The servers' states, then each call's answer (a result, or the McpError's text)."""
    answers: list[Any] = []
    async with McpServers(configs, str(cwd), **limits) as servers:
        states = list(await servers.states())
        by_name = {c.name: c for c in servers.connections}
        for server, tool, arguments in calls:
            try:
                answers.append(await by_name[server].call_tool(tool, arguments))
            except McpError as exc:
                answers.append(str(exc))
    return states, answers


def run(configs: list[McpServerConfig], cwd: Path, *calls: tuple[str, str, dict],
        **limits: Any) -> tuple[list[Any], list[Any]]:  # fmt: skip
    return asyncio.run(_with(configs, cwd, list(calls), **limits))


def test_the_pypi_time_and_git_servers_list_and_answer(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    configs = [
        McpServerConfig("time", "stdio", "project", command=pypi_server("time")),
        McpServerConfig(
            "git", "stdio", "user", command=pypi_server("git"), args=("--repository", str(repo))
        ),
    ]
    states, (now, status) = run(
        configs, tmp_path,
        ("time", "get_current_time", {"timezone": "Etc/UTC"}),
        ("git", "git_status", {"repo_path": str(repo)}),
    )  # fmt: skip
    assert [(s.name, s.status, s.source) for s in states] == [
        ("time", "connected", "project"), ("git", "connected", "user"),
    ]  # fmt: skip
    tools = {t.name: t for s in states for t in s.tools}
    assert tools["get_current_time"].read_only and not tools["git_commit"].read_only
    assert now["structuredContent"]["timezone"] == "Etc/UTC"
    assert "notes.txt" in status["content"][0]["text"]


def test_the_npm_everything_server_gives_every_result_type(tmp_path: Path) -> None:
    config = McpServerConfig("everything", "stdio", "project", command=everything_command(),
                             args=("stdio",))  # fmt: skip

    async def go() -> list[Any]:
        async with McpServers([config], str(tmp_path)) as servers:
            await servers.states()
            tools = {t.tool: t for t in servers.tools()}
            env = ToolEnv(str(tmp_path))
            return [
                (await tools[name].run(arguments, env)).content
                for name, arguments in [
                    ("get-structured-content", {"location": "Chicago"}),
                    ("get-tiny-image", {}),
                    ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
                    ("get-resource-links", {"count": 1}),
                ]
            ]

    structured, image, resource, links = asyncio.run(go())
    assert isinstance(structured, str) and '"conditions"' in structured
    assert [b.type for b in image][:2] == ["text", "image"]
    assert any(
        getattr(b, "text", "").startswith("[Resource from everything at demo://") for b in resource
    )
    assert any(getattr(b, "text", "").startswith("[Resource link: ") for b in links)


def test_streamable_http_and_sse_servers_answer(tmp_path: Path) -> None:
    for transport in ("http", "sse"):
        with served(transport) as url:
            config = McpServerConfig("web", transport, "dynamic", url=url)
            (state,), (answer,) = run([config], tmp_path, ("web", "hello", {"name": transport}))
        assert state.status == "connected", state
        assert answer["structuredContent"] == {"result": f"hello {transport}"}


def test_a_server_that_cannot_start_fails_with_why_and_the_others_run(tmp_path: Path) -> None:
    configs = [
        McpServerConfig("missing", "stdio", "user", command=str(tmp_path / "no-such-server")),
        McpServerConfig(
            "crash",
            "stdio",
            "user",
            command="sh",
            args=("-c", "echo 'cannot open the database' >&2; exit 1"),
        ),
        probe(),
    ]
    states, (answer, gone) = run(
        configs, tmp_path, ("probe", "hello", {"name": "x"}), ("missing", "x", {})
    )
    missing, crash, ok = states
    assert missing.status == "failed" and "No such file or directory" in (missing.error or "")
    assert crash.status == "failed" and "cannot open the database" in (crash.error or "")
    assert ok.status == "connected" and answer["content"][0]["text"] == "hello x"
    assert gone.startswith('MCP server "missing" is not connected: ')


def test_a_server_that_exits_mid_call_is_named_and_started_again(tmp_path: Path) -> None:
    _, (died, again) = run(
        [probe()], tmp_path, ("probe", "die", {}), ("probe", "hello", {"name": "back"})
    )
    assert died == 'MCP server "probe": Connection closed (it exited)'
    assert again["content"][0]["text"] == "hello back"


def test_a_call_past_mcp_tool_timeout_is_an_error_and_the_server_goes_on(tmp_path: Path) -> None:
    _, (late, ok) = run(
        [probe()], tmp_path, ("probe", "hang", {"seconds": 30}), ("probe", "hello", {"name": "y"}),
        call_timeout=1.0,
    )  # fmt: skip
    assert late == 'MCP server "probe" did not answer hang within 1 s (MCP_TOOL_TIMEOUT)'
    assert ok["content"][0]["text"] == "hello y"


def test_a_slow_start_past_mcp_timeout_fails_the_server(tmp_path: Path) -> None:
    (state,), _ = run([probe("slow", "--slow-start", "30")], tmp_path, start_timeout=1.0)
    assert (state.status, state.error) == ("failed", "did not start within 1 s (MCP_TIMEOUT)")


def test_a_server_that_does_not_speak_mcp_is_named(tmp_path: Path) -> None:
    (state,), _ = run([probe("noise", "--garbage")], tmp_path, start_timeout=20.0)
    assert state.status == "failed"
    assert (state.error or "").startswith("answered with something that is not MCP: ")


def test_a_tool_maps_its_servers_error_result(tmp_path: Path) -> None:
    async def go() -> Any:
        async with McpServers([probe()], str(tmp_path)) as servers:
            await servers.states()
            (tool,) = [t for t in servers.tools() if t.tool == "fails"]
            assert isinstance(tool, McpTool) and tool.name == "mcp__probe__fails"
            env = ToolEnv(str(tmp_path))
            return await tool.run({"x": 2}, env)

    outcome = asyncio.run(go())
    assert (outcome.content, outcome.is_error) == ("it broke (2)", True)
