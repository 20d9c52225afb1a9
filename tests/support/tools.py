"""Running tools the way the engine does: through `LiveEffects.run_tool`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fsm_agent.core.events import StreamEvent
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.tool import Tool, ToolCall, ToolEnv, ToolOutcome
from fsm_agent.live.effects import LiveEffects


class NoModel:
    """Tool runs never reach the model; this only fills LiveEffects' model slot."""

    name = "no-model"

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise AssertionError("tools must not call the model")

    async def count_tokens(self, request: ModelRequest) -> int | None:
        raise AssertionError("tools must not call the model")


def call(tool: Tool, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
    """Schema validation and error wrapping included, exactly as in a live run."""
    effects = LiveEffects(NoModel(), {tool.name: tool})
    return asyncio.run(effects.run_tool(ToolCall("toolu_test", tool.name, input), env))


def make_env(
    cwd: Path, *, read: dict[str, float] | None = None, extra: tuple[Path, ...] = ()
) -> ToolEnv:
    return ToolEnv(
        cwd=str(cwd),
        read_files=dict(read or {}),
        additional_dirs=tuple(str(d) for d in extra),
    )


def after(env: ToolEnv, outcome: ToolOutcome) -> ToolEnv:
    """The env of the next call, with this outcome's reads merged as the engine merges them."""
    return ToolEnv(
        cwd=env.cwd,
        read_files={**env.read_files, **outcome.read_files},
        seen={**env.seen, **outcome.seen},
        model=env.model,
        additional_dirs=env.additional_dirs,
        permission_mode=env.permission_mode,
    )


def text(outcome: ToolOutcome) -> str:
    assert isinstance(outcome.content, str), outcome.content
    return outcome.content
