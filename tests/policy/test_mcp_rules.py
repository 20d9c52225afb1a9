"""Permission rules for MCP tools: `mcp__server`, `mcp__server__*`, `mcp__server__tool`."""

from __future__ import annotations

from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.policy.permissions import Rule, tool_removed


def test_a_server_rule_covers_each_of_its_tools_and_no_other_server() -> None:
    rule = Rule.parse("mcp__git")
    assert rule.covers_tool("mcp__git__git_status")
    assert not rule.covers_tool("mcp__github__list_issues")
    assert not rule.covers_tool("Bash")
    assert Rule.parse("mcp__git__*").covers_tool("mcp__git__git_log")
    assert not Rule.parse("mcp__git__git_status").covers_tool("mcp__git__git_log")


def test_a_bare_deny_rule_removes_a_server_or_one_tool() -> None:
    deny = PermissionSettings(deny=(RuleSource("mcp__time"), RuleSource("mcp__git__git_commit")))
    assert tool_removed(deny, "mcp__time__get_current_time")
    assert tool_removed(deny, "mcp__git__git_commit")
    assert not tool_removed(deny, "mcp__git__git_status")
    scoped = PermissionSettings(deny=(RuleSource("mcp__git__git_commit(x)"),))
    assert not tool_removed(scoped, "mcp__git__git_commit")
