"""The built-in tools the model can call, under Claude Code's names and input schemas.

The tool modules load on first use: `fsm_agent.core.globs` and `.base` are
imported by the engine and permissions, and importing them must not load
every tool (a replay runs none).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsm_agent.core.tool import Tool
    from fsm_agent.tools.bash import BashTool
    from fsm_agent.tools.edit import EditTool
    from fsm_agent.tools.glob import GlobTool
    from fsm_agent.tools.grep import GrepTool
    from fsm_agent.tools.read import ReadTool
    from fsm_agent.tools.write import WriteTool

_HOMES = {
    "BashTool": "bash",
    "EditTool": "edit",
    "GlobTool": "glob",
    "GrepTool": "grep",
    "ReadTool": "read",
    "WriteTool": "write",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"fsm_agent.tools.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_tools() -> dict[str, Tool]:
    """A fresh set of the built-in tools, keyed by the name the model uses."""
    from fsm_agent.tools.bash import BashTool
    from fsm_agent.tools.edit import EditTool
    from fsm_agent.tools.glob import GlobTool
    from fsm_agent.tools.grep import GrepTool
    from fsm_agent.tools.read import ReadTool
    from fsm_agent.tools.write import WriteTool

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
