"""What stays fixed for a whole run, handed to every phase and every action.

Apart from the phases so that the modules of the phases (`preprocess`,
`prelude`) and the phases that call them can all import it.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import field, frozen

from fsm_agent.context.levels import append_system_context
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.mcp import McpTools
from fsm_agent.core.model import ToolSpec
from fsm_agent.core.tool import ToolOutputs
from fsm_agent.engine.ports import Effects
from fsm_agent.engine.tool_executor import ToolExecutor


@frozen
class Run:
    """What stays fixed for a whole run."""

    config: RunConfig
    effects: Effects
    tool_specs: tuple[ToolSpec, ...]
    emit: Callable[[DriverEvent], None]
    session_id: str
    executor: ToolExecutor = field(default=None)
    outputs: ToolOutputs | None = None
    """The tools' output shapes, for hooks that replace an output (the app's to give)."""
    mcp: McpTools = field(factory=McpTools)
    """The MCP servers' tools offered this run (their specs are in `tool_specs` too)."""
    system: tuple[str, ...] = field(init=False)
    """The system prompt with the system context appended: every request sends it."""

    def __attrs_post_init__(self) -> None:
        system = append_system_context(self.config.system_prompt, self.config.system_context)
        object.__setattr__(self, "system", system)
        if self.executor is None:
            executor = ToolExecutor(
                self.config,
                self.effects,
                self.tool_specs,
                self.emit,
                self.session_id,
                self.outputs,
                self.mcp,
            )
            object.__setattr__(self, "executor", executor)
