"""Tool execution speed: parallel safe calls, and how soon a streamed call starts.

1. K concurrency-safe calls that each take T seconds, through the whole
   engine (hooks, permission check, recording): wall time of the
   `tool_execution` phase with the default cap of 10, and with the cap at 1
   (sequential) for comparison. Target: about T, not K·T.
2. A Read whose tool_use block completes early in a streamed response
   (events every 5 ms): the time from the block's completion
   (`ToolUseComplete`) to the tool's start (`ToolStarted`), and whether it
   started before the response's last event. Target: < 5 ms, and before.

    python tools/bench_tools.py [K] [T]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from fsm_agent.app.session import arun, default_tools
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent, ToolStarted, ToolUseComplete, Transition
from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.live.scripted import Scenario, ScriptedModel


class Sleep:
    name = "Sleep"
    description = "Sleeps."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"s": {"type": "number"}},
    }

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        await asyncio.sleep(input["s"])
        return ToolOutcome("slept")


class Clock:
    """Timestamps of driver events, to time phases from outside the engine."""

    def __init__(self) -> None:
        self.events: list[tuple[float, DriverEvent]] = []

    def __call__(self, event: DriverEvent) -> None:
        self.events.append((time.perf_counter(), event))

    def at(self, kind: type, **match: Any) -> list[float]:
        return [
            t
            for t, e in self.events
            if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())
        ]


def scenario(content: list[dict[str, Any]], event_delay: float = 0.0) -> Scenario:
    return Scenario.parse(
        {
            "turns": [
                {"content": content, "event_delay": event_delay},
                {"content": [{"type": "text", "text": "done"}]},
            ]
        }
    )


async def parallel(k: int, t: float, cap: int, cwd: str) -> float:
    calls = [
        {"type": "tool_use", "id": f"s{n}", "name": "Sleep", "input": {"s": t}} for n in range(k)
    ]
    clock = Clock()
    config = RunConfig(
        cwd=cwd,
        model="scripted",
        concurrency_safe_tools=("Sleep",),
        max_tool_concurrency=cap,
        permissions=PermissionSettings(allow=(RuleSource("Sleep"),)),
    )
    await arun(
        "go",
        model=ScriptedModel(scenario(calls)),
        config=config,
        tools={"Sleep": Sleep()},
        keep_log=False,
        on_event=clock,
    )
    start = clock.at(Transition, edge="tool_use")[0]
    end = clock.at(Transition, edge="tools_done")[0]
    return end - start


async def streamed_start(cwd: str) -> tuple[float, float]:
    Path(cwd, "a.txt").write_text("a\n")
    content = [
        {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "a.txt"}},
        {"type": "text", "text": "Some more words while the read runs. " * 8},
    ]
    clock = Clock()
    await arun(
        "go",
        model=ScriptedModel(scenario(content, event_delay=0.005)),
        config=RunConfig(cwd=cwd, model="scripted"),
        tools=default_tools(),
        keep_log=False,
        on_event=clock,
    )
    complete = clock.at(ToolUseComplete)[0]
    started = clock.at(ToolStarted)[0]
    streamed = clock.at(Transition, edge="streamed")[0]
    return started - complete, streamed - started


def main() -> None:
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    t = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    with tempfile.TemporaryDirectory() as cwd:
        together = asyncio.run(parallel(k, t, 10, cwd))
        alone = asyncio.run(parallel(k, t, 1, cwd))
        print(f"{k} safe calls of {t:.3f} s each")
        print(f"  cap 10: {together:.3f} s  ({together / t:.2f}× t)")
        print(f"  cap 1:  {alone:.3f} s  ({alone / t:.2f}× t)")
        latencies, leads = [], []
        for _ in range(20):
            latency, lead = asyncio.run(streamed_start(cwd))
            latencies.append(latency * 1000)
            leads.append(lead * 1000)
        print("streamed Read: block complete → tool start")
        print(
            f"  median {statistics.median(latencies):.2f} ms, max {max(latencies):.2f} ms "
            f"(target < 5 ms); started {min(leads):.0f}–{max(leads):.0f} ms before the "
            f"response ended ({sum(x > 0 for x in leads)}/{len(leads)} runs before)"
        )


if __name__ == "__main__":
    main()
