"""StructuredOutput: the final answer in the shape `--json-schema` asks, and the nudge to give it.

As in Claude Code, `--json-schema` offers the model a `StructuredOutput` tool whose
input schema is the one asked for (the executor validates a call's input against
it, so a wrong shape is an error result the model can mend); the result's
`structured_output` is the input of the last call that succeeded. A model that
ends its turn without one is told to call it, as a Stop hook's block is told
(`StructuredOutputNudge`, a hooks source: what it says is recorded as any hook's,
so a replay needs no schema check), up to the run's Stop-block cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fsm_agent.core.messages import Message, ToolResultBlock, ToolUseBlock
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome

NAME = "StructuredOutput"
DESCRIPTION = (
    "Use this tool to give your final answer in the structured format the user asked for. "
    "Call it once, at the end, with the whole answer as its input."
)
NUDGE = (
    f"You MUST call the {NAME} tool to complete this request: give your final answer as "
    "its input. Call it now."
)
DONE = "Structured output provided successfully"


class StructuredOutputTool:
    """The tool itself: its input is the answer, so running it only acknowledges it."""

    name = NAME
    description = DESCRIPTION

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.input_schema: dict[str, Any] = dict(schema)

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return ToolOutcome(DONE, response=dict(input) if env.wants_response else None)


class StructuredOutputNudge:
    """A Stop hook of its own: blocks the end of a run in which no StructuredOutput call
    succeeded, with `NUDGE` as the feedback the model gets."""

    events = frozenset({"PostToolUse", "Stop"})

    def __init__(self) -> None:
        self.given = False

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        if event == "PostToolUse" and payload.get("tool_name") == NAME:
            self.given = True
        if event == "Stop" and not self.given:
            return HookOutcome(blocking_errors=(NUDGE,))
        return NO_OPINION


def structured_output(messages: Iterable[Message]) -> dict[str, Any] | None:
    """The input of the last StructuredOutput call whose result was no error, if any."""
    calls: dict[str, dict[str, Any]] = {}
    answer: dict[str, Any] | None = None
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock) and block.name == NAME:
                calls[block.id] = dict(block.input)
            elif (
                isinstance(block, ToolResultBlock)
                and block.tool_use_id in calls
                and not block.is_error
            ):
                answer = calls[block.tool_use_id]
    return answer
