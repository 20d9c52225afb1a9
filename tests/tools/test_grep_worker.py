"""Grep's search processes: reused between calls, replaced after a timeout, a
cancellation or a crash, and gone when the run (or the whole command) ends."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.replaying import areplay
from fsm_agent.app.session import arun
from fsm_agent.cli.main import EXIT_CODES
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent, Transition
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome
from fsm_agent.engine.ports import INTERRUPTED
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tools import grep as grep_module
from fsm_agent.tools.grep import GrepTool
from fsm_agent.tools.worker import KEEP_IDLE
from tests.support.tools import NoModel, text

needs_ps = pytest.mark.skipif(shutil.which("ps") is None, reason="needs ps")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("import os\ndef foo():\n    return os.getcwd()\n")
    (ws / "b.txt").write_text("bar\n")
    (ws / "aaa.txt").write_text("a" * 60 + "!\n")
    return ws


@pytest.fixture
def tool() -> Iterator[GrepTool]:
    tool = GrepTool()
    yield tool
    tool.close()


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[Any]]:
    """Every process started from now on (a Grep call's, however it starts one)."""
    started: list[subprocess.Popen[Any]] = []

    class Counted(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(subprocess, "Popen", Counted)
    return started


async def grep(
    tool: GrepTool, ws: Path, cancel: AbortSignal | None = None, **input: Any
) -> ToolOutcome:
    effects = LiveEffects(NoModel(), {"Grep": tool})
    return await effects.run_tool(ToolCall("t", "Grep", input), ToolEnv(cwd=str(ws), cancel=cancel))


def alive(pid: int) -> bool:
    """Whether `pid` is a process, zombie or not (a child not reaped counts)."""
    return subprocess.run(["ps", "-p", str(pid)], capture_output=True).returncode == 0


def _grep_twice(ws: Path, **options: Any) -> Any:
    """A scripted run in `ws` whose model greps twice, through `arun` with `options`."""
    model = ScriptedModel(Scenario.parse(GREP_TWICE))
    config = RunConfig(cwd=str(ws), model="scripted")
    return asyncio.run(arun("go", model=model, config=config, **options))


def test_a_later_call_reuses_the_search_process(
    ws: Path, tool: GrepTool, starts: list[subprocess.Popen[Any]]
) -> None:
    async def scenario() -> tuple[str, str, tuple[int, ...], tuple[int, ...]]:
        first = await grep(tool, ws, pattern="getcwd")
        pids = tool.workers.pids
        second = await grep(tool, ws, pattern="bar", output_mode="content")
        return text(first), text(second), pids, tool.workers.pids

    first, second, pids, later = asyncio.run(scenario())
    assert first == f"Found 1 file\n{ws}/a.py"
    assert second == f"{ws}/b.txt:1:bar"
    assert len(starts) == 1
    assert pids == later == (starts[0].pid,)


@needs_ps
def test_a_timeout_kills_the_search_process_and_the_next_call_gets_a_new_one(
    ws: Path, tool: GrepTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The short limit is for the stuck call only: starting a process may take longer."""

    async def scenario() -> tuple[ToolOutcome, ToolOutcome, int]:
        await grep(tool, ws, pattern="foo")
        (pid,) = tool.workers.pids
        monkeypatch.setattr(grep_module, "GREP_TIMEOUT_S", 0.5)
        stuck = await grep(tool, ws, pattern="(a+)+$", path="aaa.txt")
        monkeypatch.undo()
        assert tool.workers.pids == ()
        return stuck, await grep(tool, ws, pattern="getcwd"), pid

    stuck, after, pid = asyncio.run(scenario())
    assert stuck.is_error
    assert text(stuck).startswith("<tool_use_error>Grep timed out after 0.5 s. The pattern")
    assert not alive(pid)
    assert text(after) == f"Found 1 file\n{ws}/a.py"
    assert tool.workers.pids and tool.workers.pids != (pid,)


@needs_ps
def test_a_cancelled_call_kills_the_search_process_and_the_next_call_works(
    ws: Path, tool: GrepTool
) -> None:
    async def scenario() -> tuple[ToolOutcome, ToolOutcome, int]:
        await grep(tool, ws, pattern="foo")
        (pid,) = tool.workers.pids
        cancel = AbortSignal()
        asyncio.get_running_loop().call_later(0.3, cancel.set)
        stopped = await grep(tool, ws, cancel, pattern="(a+)+$", path="aaa.txt")
        return stopped, await grep(tool, ws, pattern="getcwd"), pid

    stopped, after, pid = asyncio.run(scenario())
    assert stopped.interrupted
    assert stopped.content == INTERRUPTED
    assert not alive(pid)
    assert text(after) == f"Found 1 file\n{ws}/a.py"


def test_a_search_process_killed_while_idle_is_replaced_without_a_word(
    ws: Path, tool: GrepTool
) -> None:
    async def scenario() -> tuple[ToolOutcome, int]:
        await grep(tool, ws, pattern="foo")
        (pid,) = tool.workers.pids
        os.kill(pid, signal.SIGKILL)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        return await grep(tool, ws, pattern="getcwd"), pid

    after, pid = asyncio.run(scenario())
    assert text(after) == f"Found 1 file\n{ws}/a.py"
    assert pid not in tool.workers.pids


def test_a_search_process_killed_mid_call_fails_that_call_only(ws: Path, tool: GrepTool) -> None:
    async def scenario() -> tuple[ToolOutcome, ToolOutcome]:
        call = asyncio.create_task(grep(tool, ws, pattern="(a+)+$", path="aaa.txt"))
        while not tool.workers.pids:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        os.kill(tool.workers.pids[0], signal.SIGKILL)
        return await call, await grep(tool, ws, pattern="getcwd")

    failed, after = asyncio.run(scenario())
    assert failed.is_error
    assert text(failed) == (
        "<tool_use_error>Grep failed: WorkerDied: the search process was killed by signal 9 "
        "before it answered</tool_use_error>"
    )
    assert text(after) == f"Found 1 file\n{ws}/a.py"


def test_concurrent_calls_each_get_their_own_answer(
    ws: Path, tool: GrepTool, starts: list[subprocess.Popen[Any]]
) -> None:
    """Calls at once never share a pipe: each takes a process of its own from the pool."""
    words = [f"word{n}" for n in range(KEEP_IDLE + 2)]
    for word in words:
        (ws / f"{word}.txt").write_text(f"{word}\n")

    async def scenario() -> list[ToolOutcome]:
        calls = [grep(tool, ws, pattern=f"^{w}$", output_mode="content") for w in words]
        return list(await asyncio.gather(*calls))

    outcomes = asyncio.run(scenario())
    assert [text(o) for o in outcomes] == [f"{ws}/{w}.txt:1:{w}" for w in words]
    first, idle = len(starts), len(tool.workers.pids)
    assert idle == min(first, KEEP_IDLE)
    again = asyncio.run(scenario())
    assert [text(o) for o in again] == [text(o) for o in outcomes]
    assert len(starts) - first <= len(words) - idle


def grep_turn(id: str, pattern: str) -> dict[str, Any]:
    return {
        "content": [{"type": "tool_use", "id": id, "name": "Grep", "input": {"pattern": pattern}}]
    }


GREP_TWICE = {
    "turns": [
        grep_turn("g1", "foo"),
        grep_turn("g2", "bar"),
        {"content": [{"type": "text", "text": "done"}]},
    ]
}


@needs_ps
def test_one_search_process_serves_a_run_and_ends_with_it(
    ws: Path, starts: list[subprocess.Popen[Any]]
) -> None:
    tool = GrepTool()
    result = _grep_twice(ws, tools={"Grep": tool}, keep_log=False)
    assert result.reason == "completed"
    results = [b for m in result.messages.items for b in m.content if b.type == "tool_result"]
    assert [r.content for r in results] == [f"Found 1 file\n{ws}/a.py", f"Found 1 file\n{ws}/b.txt"]
    assert len(starts) == 1
    assert tool.workers.pids == ()
    assert starts[0].returncode is not None
    assert not alive(starts[0].pid)


@needs_ps
def test_a_run_that_raises_still_ends_its_search_process(
    ws: Path, starts: list[subprocess.Popen[Any]]
) -> None:
    def fail_after_the_first_call(event: DriverEvent) -> None:
        if isinstance(event, Transition) and event.edge == "next_turn":
            raise RuntimeError("observer failed")

    with pytest.raises(RuntimeError, match="observer failed"):
        _grep_twice(ws, keep_log=False, on_event=fail_after_the_first_call)
    assert len(starts) == 1
    assert not alive(starts[0].pid)


def test_a_replay_starts_no_search_process(
    ws: Path, tmp_path: Path, starts: list[subprocess.Popen[Any]]
) -> None:
    log = tmp_path / "run.jsonl"
    _grep_twice(ws, log=log)
    assert len(starts) == 1
    replayed = asyncio.run(areplay(log))
    assert replayed.reason == "completed"
    assert len(starts) == 1


def workers_marked(marker: str) -> list[int]:
    """The pids of search processes whose environment holds `FSM_TEST_MARK=marker`."""
    ps = subprocess.run(["ps", "eww", "-e", "-o", "pid=,args="], capture_output=True, text=True)
    return [
        int(line.split()[0])
        for line in ps.stdout.splitlines()
        if "-m fsm_agent.tools.grep" in line and f"FSM_TEST_MARK={marker}" in line
    ]


@pytest.fixture
def marker() -> Iterator[str]:
    """A mark for the search processes of one test's command; any left are killed."""
    marker = uuid.uuid4().hex
    yield marker
    for pid in workers_marked(marker):
        os.kill(pid, signal.SIGKILL)


def cli(args: list[str], marker: str, **kwargs: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "FSM_TEST_MARK": marker}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "fsm_agent.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def stuck_scenario(tmp_path: Path, ws: Path) -> Path:
    scenario = tmp_path / "stuck.json"
    grep = {"pattern": "(a+)+$", "path": str(ws / "aaa.txt")}
    turns = [
        {"content": [{"type": "tool_use", "id": "g1", "name": "Grep", "input": grep}]},
        {"content": [{"type": "text", "text": "done"}]},
    ]
    scenario.write_text(json.dumps({"prompt": "go", "turns": turns}))
    return scenario


@needs_ps
def test_no_search_process_outlives_the_command(ws: Path, tmp_path: Path, marker: str) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"prompt": "go", **GREP_TWICE}))
    log = tmp_path / "run.jsonl"
    args = ["run", "--scripted", str(scenario), "--cwd", str(ws), "--log", str(log)]
    out, err = cli(args, marker).communicate(timeout=60)
    assert "done" in out, err
    assert workers_marked(marker) == []
    check = cli(["replay", str(log), "--check"], marker)
    out, err = check.communicate(timeout=60)
    assert check.returncode == 0, err
    assert "steps match the log" in out


@needs_ps
def test_sigterm_mid_search_ends_the_search_process_with_the_command(
    ws: Path, tmp_path: Path, marker: str
) -> None:
    scenario = stuck_scenario(tmp_path, ws)
    args = ["run", "--scripted", str(scenario), "--cwd", str(ws), "--log", str(tmp_path / "l")]
    proc = cli(args, marker)
    wait_for(lambda: workers_marked(marker), "the search did not start")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_CODES["aborted_tools"], err
    assert workers_marked(marker) == []


@needs_ps
def test_a_search_process_whose_command_is_killed_exits_by_itself(
    ws: Path, tmp_path: Path, marker: str
) -> None:
    """SIGKILL leaves the command no chance to clean up: a search stuck backtracking
    notices it has lost its parent and exits."""
    scenario = stuck_scenario(tmp_path, ws)
    args = ["run", "--scripted", str(scenario), "--cwd", str(ws), "--log", str(tmp_path / "l")]
    proc = cli(args, marker)
    wait_for(lambda: workers_marked(marker), "the search did not start")
    time.sleep(0.3)
    proc.kill()
    proc.communicate(timeout=60)
    wait_for(lambda: not workers_marked(marker), "the search process outlived its command")
