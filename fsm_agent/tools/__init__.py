"""The built-in tools the model can call, under Claude Code's names and input schemas."""

from __future__ import annotations

from fsm_agent.tools.base import Tool
from fsm_agent.tools.bash import BashTool
from fsm_agent.tools.edit import EditTool
from fsm_agent.tools.glob import GlobTool
from fsm_agent.tools.grep import GrepTool
from fsm_agent.tools.read import ReadTool
from fsm_agent.tools.write import WriteTool


def default_tools() -> dict[str, Tool]:
    """A fresh set of the built-in tools, keyed by the name the model uses."""
    tools: list[Tool] = [ReadTool(), WriteTool(), EditTool(), BashTool(), GlobTool(), GrepTool()]
    return {tool.name: tool for tool in tools}


__all__ = [
    "BashTool",
    "EditTool",
    "GlobTool",
    "GrepTool",
    "ReadTool",
    "WriteTool",
    "default_tools",
]
