"""MCP servers start in parallel: a run's first model request against its slowest start.

Three stdio servers (`mcp-server-time`, `mcp-server-git`, and a small `mcp` SDK server
that sleeps a second before it serves, to be plainly the slowest) are each started
alone a few times (the median time to a listed tool set), then all three by a
scripted run (`arun_scenario`), which notes when its first model request goes out.
The target: that request no later than the slowest server's own start plus 100 ms,
and well below the sum of the three (what starting them one after another costs).

    python tools/bench_mcp_start.py [REPEATS]
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from fsm_agent.app.session import arun
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import StreamEvent
from fsm_agent.core.mcp_config import McpServerConfig
from fsm_agent.core.model import ModelRequest
from fsm_agent.live.mcp_servers import McpServers
from fsm_agent.live.scripted import Scenario, ScriptedModel

BIN = Path(sys.executable).parent
SLOW_SERVER = """
import time
from mcp.server.mcpserver import MCPServer
time.sleep(1.0)
server = MCPServer("slow")
@server.tool()
def ping() -> str:
    "Answer pong."
    return "pong"
server.run()
"""


def servers(root: Path) -> list[McpServerConfig]:
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    slow = root / "slow_server.py"
    slow.write_text(SLOW_SERVER)
    return [
        McpServerConfig("time", "stdio", "dynamic", command=str(BIN / "mcp-server-time")),
        McpServerConfig(
            "git",
            "stdio",
            "dynamic",
            command=str(BIN / "mcp-server-git"),
            args=("--repository", str(repo)),
        ),
        McpServerConfig("slow", "stdio", "dynamic", command=sys.executable, args=(str(slow),)),
    ]


async def start_alone(config: McpServerConfig, cwd: str) -> float:
    started = time.perf_counter()
    async with McpServers([config], cwd) as mcp:
        (state,) = await mcp.states()
        took = time.perf_counter() - started
    assert state.status == "connected", state
    return took


class Timed(ScriptedModel):
    """The scripted model, noting when the first request reaches it."""

    first: float | None = None

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if Timed.first is None:
            Timed.first = time.perf_counter()
        return super().stream(request)


async def first_request(configs: list[McpServerConfig], cwd: str) -> float:
    scenario = Scenario.parse({"turns": [{"content": "hello"}]})
    Timed.first = None
    started = time.perf_counter()
    async with McpServers(configs, cwd) as mcp:
        model = Timed(scenario, AbortSignal())
        await arun("hi", model=model, config=RunConfig(cwd=cwd), keep_log=False, mcp=mcp)
    assert Timed.first is not None
    return Timed.first - started


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        configs = servers(root)
        cwd = str(root)
        alone = {
            c.name: statistics.median(
                asyncio.run(start_alone(c, cwd)) for _ in range(repeats)
            )
            for c in configs
        }  # fmt: skip
        together = statistics.median(
            asyncio.run(first_request(configs, cwd)) for _ in range(repeats)
        )
    slowest = max(alone.values())
    for name, took in alone.items():
        print(f"{name:>5} alone:        {took * 1000:7.0f} ms")
    print(f"sum of the three:   {sum(alone.values()) * 1000:7.0f} ms")
    print(f"first request:      {together * 1000:7.0f} ms  (median of {repeats} runs)")
    margin = (together - slowest) * 1000
    print(f"slowest + {margin:.0f} ms: {'within' if margin <= 100 else 'OVER'} the 100 ms target")


if __name__ == "__main__":
    main()
