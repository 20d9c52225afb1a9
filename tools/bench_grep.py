"""Grep's cost per call: a search process kept between calls, against one started per call.

Each call searches a small tree (20 files) through `LiveEffects.run_tool`, as
the engine runs it. "kept" is a tool whose search process serves every call;
"started" closes the tool after each call, so every call starts a process (what
each Grep call cost before the processes were kept).

    python tools/bench_grep.py [CALLS]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fsm_agent.core.tool import ToolCall, ToolEnv
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tools.grep import GrepTool


async def per_call_ms(cwd: str, calls: int, keep: bool) -> list[float]:
    tool = GrepTool()
    effects = LiveEffects(ScriptedModel(Scenario.parse({"turns": []})), {"Grep": tool})
    env = ToolEnv(cwd=cwd)
    call = ToolCall("toolu_bench", "Grep", {"pattern": "def foo"})
    times: list[float] = []
    try:
        await effects.run_tool(call, env)
        for _ in range(calls):
            if not keep:
                tool.close()
            started = time.perf_counter()
            outcome = await effects.run_tool(call, env)
            times.append((time.perf_counter() - started) * 1000)
            assert not outcome.is_error, outcome.content
    finally:
        tool.close()
    return times


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as cwd:
        for n in range(20):
            Path(cwd, f"f{n}.py").write_text("def foo():\n    return 1\n" * 10)
        print(f"ms per Grep call over 20 small files, {calls} calls (median, max)")
        for label, keep in (("kept", True), ("started", False)):
            times = asyncio.run(per_call_ms(cwd, calls, keep))
            print(f"  {label:8} {statistics.median(times):7.2f}  {max(times):7.2f}")


if __name__ == "__main__":
    main()
