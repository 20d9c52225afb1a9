import jsonschema
import pytest

from fsm_agent.core.config import RunConfig
from fsm_agent.policy.permissions import READ_TOOLS
from fsm_agent.tools import default_tools

# Claude Code's tool names and input properties (see the compatibility reference).
EXPECTED = {
    "Read": ({"file_path"}, {"file_path", "offset", "limit"}),
    "Write": ({"file_path", "content"}, {"file_path", "content"}),
    "Edit": (
        {"file_path", "old_string", "new_string"},
        {"file_path", "old_string", "new_string", "replace_all"},
    ),
    "Bash": (
        {"command"},
        {"command", "timeout", "description", "run_in_background", "dangerouslyDisableSandbox"},
    ),
    "Glob": ({"pattern"}, {"pattern", "path"}),
    "Grep": (
        {"pattern"},
        {
            "pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-o", "-A", "-B", "-C",
            "context", "head_limit", "offset", "multiline",
        },
    ),
}  # fmt: skip


def test_default_tools_are_keyed_by_their_names() -> None:
    tools = default_tools()
    assert set(tools) == set(EXPECTED)
    assert all(tool.name == name for name, tool in tools.items())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_schemas_match_claude_code(name: str) -> None:
    tool = default_tools()[name]
    required, properties = EXPECTED[name]
    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert set(tool.input_schema["required"]) == required
    assert set(tool.input_schema["properties"]) == properties
    assert 80 < len(tool.description) < 1500


def test_the_read_only_tools_and_only_they_run_in_parallel_by_default() -> None:
    """Claude Code runs read-only tools concurrently and the rest one at a time."""
    assert set(RunConfig().concurrency_safe_tools) == READ_TOOLS
    assert set(default_tools()) > READ_TOOLS


def test_each_call_gets_fresh_instances() -> None:
    assert default_tools()["Read"] is not default_tools()["Read"]
