"""Regenerate replays/<name>.jsonl from every replays/scenarios/<name>.json.

Each scenario runs in a fresh workspace under the temporary directory
(`<tmp>/fsm-agent-replays/<name>`, so tool results name the same paths on
every run) with effects that make the log the same every time: a fixed
session id and creation time, a clock that ticks one second per call,
counted ids, tool durations of 0 and read-file times (and the files' mtimes
with them) set to the clock's start. Tool results stored aside go to
`<tmp>/fsm-agent-replays/<name>-tool-results` rather than next to the log, so
nothing but the logs lands in replays/.
Those values are what the engine saw, so the logs replay exactly.

    python tools/regen_replays.py [NAME ...]     # default: every scenario

The test suite replays every shipped log with --check and fails when a
scenario has none, or when a log no longer takes the scenario's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from attrs import evolve

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsm_agent.app.session import arun
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.tool import Tool, ToolCall, ToolEnv, ToolOutcome
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedHooks, ScriptedModel
from fsm_agent.tools import default_tools
from fsm_agent.tools.bash import BashTool

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "replays" / "scenarios"
REPLAYS = ROOT / "replays"
EPOCH = 1764460800.0
CREATED = "2025-11-30T00:00:00+00:00"


class StableEffects(LiveEffects):
    """Live effects whose clock, ids, durations and file times repeat run after run."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._ticks = 0
        self._ids = 0

    def now(self) -> float:
        self._ticks += 1
        return EPOCH + self._ticks

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._ids:024d}"

    async def run_tool(self, call: ToolCall, env: ToolEnv) -> ToolOutcome:
        """The read times are the fixed date, and so are the files' own: a read time
        that matched no file on disk made the next Edit of it stale."""
        outcome = await super().run_tool(call, env)
        for path in outcome.read_files:
            with contextlib.suppress(OSError):
                os.utime(path, (EPOCH, EPOCH))
        return evolve(
            outcome,
            duration_s=0.0,
            read_files=dict.fromkeys(outcome.read_files, EPOCH),
        )


def workspace_path(name: str) -> Path:
    return Path(tempfile.gettempdir()) / "fsm-agent-replays" / name


def workspace_for(name: str) -> Path:
    ws = workspace_path(name)
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    return ws


def stable_tools() -> dict[str, Tool]:
    """The built-in tools, with Bash's description as no `BASH_*_TIMEOUT_MS` variable of
    the one regenerating the logs changes it."""
    return {**default_tools(), "Bash": BashTool({})}


HOME = "/home/user"
"""The home directory the shipped logs record, the same on every machine that writes them."""


async def regenerate(name: str, out: Path = REPLAYS) -> str:
    scenario = Scenario.load(SCENARIOS / f"{name}.json")
    workspace = workspace_for(name)
    blobs = workspace.with_name(f"{name}-tool-results")
    abort = AbortSignal()
    log = out / f"{name}.jsonl"
    # A log never overwrites a file; the shipped one is replaced on purpose (git keeps it).
    log.unlink(missing_ok=True)
    result = await arun(
        scenario.prompt or "",
        model=ScriptedModel(scenario, abort),
        config=scenario.run_config(RunConfig(cwd=str(workspace), home=HOME)),
        hooks=ScriptedHooks(scenario.hooks),
        abort=abort,
        log=log,
        session_id=f"replay-{name}",
        header_extra={"created": CREATED},
        live_effects=lambda *args, **kwargs: StableEffects(*args, **{**kwargs, "blob_dir": blobs}),
        tools=stable_tools(),
        claude_transcript=False,  # the shipped logs are the product, not the user's sessions
    )
    shutil.rmtree(workspace)
    shutil.rmtree(blobs, ignore_errors=True)
    return result.reason


def main(names: list[str]) -> None:
    names = names or sorted(p.stem for p in SCENARIOS.glob("*.json"))
    for name in names:
        reason = asyncio.run(regenerate(name))
        print(f"replays/{name}.jsonl  ({reason})")


if __name__ == "__main__":
    main(sys.argv[1:])
