"""The engine reads a suggested rule with `RuleValue.parse` (a replay loads no policy);
it must read every rule as the policy's `Rule.parse` does."""

from __future__ import annotations

import pytest

from fsm_agent.core.permission_types import RuleValue
from fsm_agent.policy.permissions import PermissionError_, Rule


@pytest.mark.parametrize(
    "text",
    ["Bash", "Bash(npm test *)", "Bash(*)", "Bash()", " Read( src/** ) ", "mcp__x-y(a)",
     "Bash(a\nb)", "Edit(//etc/**)"],
)  # fmt: skip
def test_rule_value_reads_a_rule_as_the_policy_does(text: str) -> None:
    rule = Rule.parse(text)
    value = RuleValue.parse(text)
    assert (value.tool_name, value.rule_content) == (rule.tool, rule.content)
    assert str(value) == (rule.tool if rule.content is None else f"{rule.tool}({rule.content})")


@pytest.mark.parametrize("text", ["Bash Tool", "", "(x)"])
def test_what_is_no_rule_to_the_policy_is_none_to_rule_value(text: str) -> None:
    with pytest.raises(PermissionError_):
        Rule.parse(text)
    with pytest.raises(ValueError, match="not a permission rule"):
        RuleValue.parse(text)
