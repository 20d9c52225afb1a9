"""The built-in tools' output shapes as the engine takes them (`ToolOutputs`), loaded
when a hook first replaces an output.

`fsm_agent.tools.output` renders a replacement with each tool's own functions, so it
imports every built-in tool: a replay, which runs no tool, would pay for them at its
start. This class is what the app and the replay hand the engine instead.
"""

from __future__ import annotations

from typing import Any

from fsm_agent.core.messages import ToolResultContent


class BuiltinOutputs:
    """`ToolOutputs` for the built-in tools; any other tool's output is its text."""

    def problem(self, name: str, structured: bool, value: Any) -> str | None:
        from fsm_agent.tools.output import replacement_problem  # every built-in tool

        return replacement_problem(name, structured, value)

    def rendered(self, name: str, structured: bool, value: Any) -> ToolResultContent:
        from fsm_agent.tools.output import rendered  # every built-in tool

        return rendered(name, structured, value)

    def marked_error(self, name: str, structured: bool, value: Any) -> bool:
        from fsm_agent.tools.output import marked_error  # every built-in tool

        return marked_error(name, structured, value)


BUILTIN_OUTPUTS = BuiltinOutputs()
