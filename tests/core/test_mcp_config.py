"""MCP configuration as Claude Code reads it: scopes, expansion, approvals (pure)."""

from __future__ import annotations

from fsm_agent.core.mcp import McpServerState, McpToolInfo, hook_response, mcp_tools, tool_name
from fsm_agent.core.mcp_config import Approvals, approvals_of, expand, merged, parse_servers
from fsm_agent.core.messages import ImageBlock, ImageSource, TextBlock

ENV = {"HOME": "/home/u", "TOKEN": "s3cret"}


def test_variables_expand_with_defaults_and_missing_ones_are_named() -> None:
    missing: list[str] = []
    text = expand("${HOME}/x ${REPO:-/srv/repo} ${NOPE} ${TOKEN:-unused}", ENV, missing)
    assert text == "/home/u/x /srv/repo ${NOPE} s3cret"
    assert missing == ["NOPE"]


def test_stdio_and_http_servers_are_read_with_every_field_expanded() -> None:
    servers, warnings = parse_servers(
        {
            "git": {"command": "${HOME}/bin/git-mcp", "args": ["--repo", "${REPO:-.}"],
                    "env": {"T": "${TOKEN}"}},
            "web": {"type": "http", "url": "https://${HOST:-mcp.example.com}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        },
        ".mcp.json", "project", ENV,
    )  # fmt: skip
    assert warnings == ()
    git, web, old = servers
    assert (git.transport, git.command, git.args, git.env) == (
        "stdio", "/home/u/bin/git-mcp", ("--repo", "."), {"T": "s3cret"}
    )  # fmt: skip
    assert (web.transport, web.url, web.headers) == (
        "http", "https://mcp.example.com/mcp", {"Authorization": "Bearer s3cret"}
    )  # fmt: skip
    assert (old.transport, old.source) == ("sse", "project")


def test_an_entry_that_cannot_be_used_is_left_out_with_a_warning_naming_it() -> None:
    servers, warnings = parse_servers(
        {"ok": {"command": "x"}, "bad": {"type": "ws", "url": "ws://x"}, "none": {},
         "args": {"command": "x", "args": "not a list"}, "unset": {"command": "${NOPE}"}},
        "/w/.mcp.json", "project", ENV,
    )  # fmt: skip
    assert [s.name for s in servers] == ["ok", "unset"]
    assert warnings == (
        "/w/.mcp.json: MCP server 'bad': type 'ws' is not one of stdio, http, sse; it is left out",
        "/w/.mcp.json: MCP server 'none': it has no command or type; it is left out",
        "/w/.mcp.json: MCP server 'args': args must be a list of strings; it is left out",
        "/w/.mcp.json: MCP server 'unset': missing environment variables: NOPE",
    )
    assert parse_servers(["x"], "f", "user", ENV)[1] == (
        "f: mcpServers must be an object of servers by name",
    )


def test_a_later_scope_wins_a_name() -> None:
    user, _ = parse_servers({"a": {"command": "u"}, "b": {"command": "u"}}, "u", "user", ENV)
    local, _ = parse_servers({"a": {"command": "l"}}, "l", "local", ENV)
    assert [(s.name, s.command, s.source) for s in merged(user, local)] == [
        ("b", "u", "user"), ("a", "l", "local"),
    ]  # fmt: skip


def test_project_servers_need_approval_and_a_refusal_wins() -> None:
    approvals = approvals_of(
        [{"enabledMcpjsonServers": ["a", "c"]}, {"disabledMcpjsonServers": ["c"]}]
    )
    assert [approvals.verdict(n) for n in "abc"] == [True, None, False]
    everything = approvals_of([{"enableAllProjectMcpServers": True}])
    assert everything.verdict("z") is True
    assert Approvals().verdict("a") is None


def test_tool_names_are_claude_codes_and_only_connected_servers_offer_tools() -> None:
    assert tool_name("my server", "get.time") == "mcp__my_server__get_time"
    states = (
        McpServerState("git", "stdio", "connected", "project", tools=(
            McpToolInfo("git_status", "Status", {"type": "object"}, read_only=True),
            McpToolInfo("git_commit", "Commit"),
        )),
        McpServerState("gone", "stdio", "failed", "user", "it crashed"),
    )  # fmt: skip
    tools = mcp_tools(states)
    assert [s.name for s in tools.specs] == ["mcp__git__git_status", "mcp__git__git_commit"]
    assert tools.read_only == {"mcp__git__git_status"}
    assert tools.servers["mcp__git__git_commit"] == {"name": "git", "source": "project"}
    assert tools.missing("mcp__gone__x") == "gone: failed: it crashed"
    assert tools.missing("mcp__git__nope") is None


def test_hooks_get_a_structured_result_as_text_and_blocks_as_blocks() -> None:
    assert hook_response('{"a":1}') == '{"a":1}'
    blocks = (TextBlock("hi"), ImageBlock(ImageSource("image/png", "AAAA")))
    assert hook_response(blocks) == [
        {"type": "text", "text": "hi"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
    ]
