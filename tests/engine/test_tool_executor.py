"""Parallel and streaming tool execution, interrupts, input validation: through the engine."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import arun, arun_scenario, default_tools, replay, run_scenario
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    CallsDiscarded,
    DriverEvent,
    TextDelta,
    ToolFinished,
    ToolRefused,
    ToolStarted,
    ToolUseComplete,
    Transition,
)
from fsm_agent.core.messages import ToolResultBlock, ToolUseBlock
from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.engine.driver import LoopResult
from fsm_agent.engine.ports import INTERRUPTED, model_failed
from fsm_agent.engine.tool_executor import absolute_paths, partition
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tape.header import config_of
from fsm_agent.tape.log import SessionLog
from tests.conftest import SCENARIOS
from tests.support.cli import fsm
from tests.support.hooks import effect_records
from tests.support.logs import reseal


class Probe:
    """A concurrency-safe tool that reports how many probes ran at once."""

    name = "Probe"
    description = "probe"
    input_schema: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }

    def __init__(self, expect: int) -> None:
        self.expect = expect
        self.running = 0
        self.peak = 0
        self.all_in = asyncio.Event()

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        self.running += 1
        self.peak = max(self.peak, self.running)
        if self.running >= self.expect:
            self.all_in.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.all_in.wait(), 5)
        await asyncio.sleep(0.01 * (10 - input["n"]))
        self.running -= 1
        return ToolOutcome(f"probe {input['n']}")


def _turns(*blocks: dict[str, Any], after: str = "done") -> dict[str, Any]:
    return {
        "prompt": "go",
        "turns": [
            {"content": list(blocks)},
            {"content": [{"type": "text", "text": after}]},
        ],
    }


def _use(i: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": name, "input": input}


def _results(result: Any) -> list[ToolResultBlock]:
    return [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]


def _probe_run(tmp_path: Path, k: int, cap: int) -> tuple[Any, Probe]:
    probe = Probe(expect=min(k, cap))
    scenario = Scenario.parse(_turns(*(_use(f"p{n}", "Probe", n=n) for n in range(k))))
    config = RunConfig(
        cwd=str(tmp_path),
        model="scripted",
        concurrency_safe_tools=("Probe",),
        max_tool_concurrency=cap,
        permissions=PermissionSettings(allow=(RuleSource("Probe"),)),
    )
    result = asyncio.run(
        arun(
            "go",
            model=ScriptedModel(scenario),
            config=config,
            tools={"Probe": probe},
            log=tmp_path / "probe.jsonl",
        )
    )
    return result, probe


def test_safe_calls_run_together_and_keep_their_order(tmp_path: Path) -> None:
    result, probe = _probe_run(tmp_path, 6, 10)
    assert probe.peak == 6
    results = _results(result)
    assert [r.tool_use_id for r in results] == [f"p{n}" for n in range(6)]
    assert [r.text for r in results] == [f"probe {n}" for n in range(6)]
    assert replay(tmp_path / "probe.jsonl").path == result.path


def test_the_concurrency_cap_holds(tmp_path: Path) -> None:
    _, probe = _probe_run(tmp_path, 6, 2)
    assert probe.peak == 2


def test_unsafe_calls_split_the_groups() -> None:
    blocks = [ToolUseBlock(str(i), n, {}) for i, n in enumerate("RRBRGWR")]
    groups = partition(blocks, lambda b: b.name in "RG")
    assert [[b.name for b in g] for g in groups] == [["R", "R"], ["B"], ["R", "G"], ["W"], ["R"]]


def test_parallel_reads_replay_with_check(workspace: Path, tmp_path: Path) -> None:
    for n in range(5):
        (workspace / f"f{n}.txt").write_text(f"file {n}\n")
    data = _turns(
        *(_use(f"r{n}", "Read", file_path=f"f{n}.txt") for n in range(5)),
        _use("g", "Glob", pattern="*.txt"),
        _use("w", "Write", file_path="out.txt", content="x"),
        _use("r9", "Read", file_path="out.txt"),
    )
    data["config"] = {"permission_mode": "acceptEdits"}
    log = tmp_path / "par.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    texts = [r.text for r in _results(result)]
    assert [t.split("\n")[0].split("→")[-1] for t in texts[:5]] == [f"file {n}" for n in range(5)]
    assert "f4.txt" in texts[5]
    assert "x" in texts[7]
    proc = fsm("replay", "--check", str(log))
    assert proc.returncode == 0, proc.stderr
    assert "steps match the log" in proc.stdout


@pytest.mark.parametrize("delay", [0.001, 0])
def test_safe_calls_start_while_the_model_still_streams(
    workspace: Path, tmp_path: Path, delay: float
) -> None:
    """With no pause between events too: the engine yields when it starts a call."""
    (workspace / "a.txt").write_text("a\n")
    data = _turns(
        _use("r1", "Read", file_path="a.txt"),
        {"type": "text", "text": "Reading it while I keep talking. " * 12},
    )
    data["turns"][0]["event_delay"] = delay
    seen: list[DriverEvent] = []
    log = tmp_path / "stream.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log, on_event=seen.append)
    kinds = [type(e).__name__ for e in seen]
    started = kinds.index("ToolStarted")
    complete = kinds.index("ToolUseComplete")
    streamed = next(
        i for i, e in enumerate(seen) if isinstance(e, Transition) and e.edge == "streamed"
    )
    last_text = max(i for i, e in enumerate(seen[:streamed]) if isinstance(e, TextDelta))
    assert complete < started < last_text
    assert isinstance(seen[started], ToolStarted) and isinstance(seen[complete], ToolUseComplete)
    assert _results(result)[0].text.startswith("     1→a")
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_an_unsafe_call_stops_early_starts(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("old\n")
    data = _turns(
        _use("w", "Write", file_path="b.txt", content="new"),
        _use("r", "Read", file_path="b.txt"),
        {"type": "text", "text": "x" * 200},
    )
    data["config"] = {"permission_mode": "acceptEdits"}
    data["turns"][0]["event_delay"] = 0.001
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=tmp_path / "l.jsonl")
    assert _results(result)[1].text.endswith("new")


def test_model_error_after_an_early_start_gives_every_call_a_result(
    workspace: Path, tmp_path: Path
) -> None:
    """A call that ran while the model streamed keeps its answer; only the calls
    left unanswered get the error result, and each is shown as refused."""
    (workspace / "a.txt").write_text("a\n")
    data = _turns(
        _use("r1", "Read", file_path="a.txt"),
        _use("b1", "Bash", command="echo never"),
        {"type": "text", "text": "y" * 300},
    )
    data["turns"][0]["cut_after"] = 12
    data["turns"][0]["event_delay"] = 0.01  # the Read has long finished by the cut
    log = tmp_path / "err.jsonl"
    seen: list[DriverEvent] = []
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log, on_event=seen.append)
    assert result.reason == "model_error"
    read, bash = _results(result)
    assert (read.tool_use_id, read.is_error) == ("r1", False) and read.text.startswith("     1→a")
    assert bash.tool_use_id == "b1" and bash.is_error
    assert bash.text.startswith("Tool not run: the model call failed (connection")
    refused = [e for e in seen if isinstance(e, ToolRefused)]
    assert [(e.block.id, e.result) for e in refused] == [("b1", bash)]
    assert fsm("replay", "--check", str(log)).returncode == 0


def _interrupted_stream(
    workspace: Path, second: dict[str, Any], text: int, delay: float
) -> Scenario:
    """A Read of a.txt, a `second` call, then `text` characters; Ctrl-C halfway through."""
    (workspace / "a.txt").write_text("a\n")
    data = _turns(
        _use("r1", "Read", file_path="a.txt"), second, {"type": "text", "text": "z" * text}
    )
    data["turns"][0]["interrupt"] = "streaming"
    data["turns"][0]["event_delay"] = delay
    return Scenario.parse(data)


def test_interrupt_while_streaming_with_started_tools(workspace: Path, tmp_path: Path) -> None:
    """Every call gets one result, and the transcript holds what was shown: a call that
    finished keeps its answer; one that did not gets the interrupted result, shown as refused."""
    scenario = _interrupted_stream(workspace, _use("r2", "Glob", pattern="*"), 300, 0.001)
    log = tmp_path / "abort.jsonl"
    seen: list[DriverEvent] = []
    result = run_scenario(scenario, cwd=workspace, log=log, on_event=seen.append)
    assert result.reason == "aborted_streaming"
    results = {r.tool_use_id: r for r in _results(result)}
    assert set(results) == {"r1", "r2"}
    shown = {
        e.result.tool_use_id: e.result for e in seen if isinstance(e, ToolFinished | ToolRefused)
    }
    assert shown == results
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_interrupt_while_streaming_keeps_the_answer_of_a_call_that_finished(
    workspace: Path, tmp_path: Path
) -> None:
    """The Read starts when its block completes and has finished long before the
    interrupt; the Bash call after it never started."""
    scenario = _interrupted_stream(workspace, _use("b1", "Bash", command="echo never"), 2000, 0.01)
    result = run_scenario(scenario, cwd=workspace, log=tmp_path / "k.jsonl")
    assert result.reason == "aborted_streaming"
    read, bash = _results(result)
    assert not read.is_error and read.text.startswith("     1→a")
    assert bash.is_error and bash.text == INTERRUPTED


def _process_gone(pid: int) -> bool:
    """SIGKILL is delivered asynchronously: give the kernel a moment (up to 10 s, for a
    loaded machine) to finish it."""
    for _ in range(1000):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


def _aborted_run(
    workspace: Path,
    scenario: Scenario,
    abort: AbortSignal,
    log: Path,
    on_event: Callable[[DriverEvent], None],
) -> LoopResult:
    """`scenario` with the real tools in bypassPermissions mode, `abort` its Ctrl-C, which
    `on_event` sets."""
    config = RunConfig(cwd=str(workspace), model="scripted", permission_mode="bypassPermissions")
    return asyncio.run(
        arun(
            "go",
            model=ScriptedModel(scenario, abort),
            config=config,
            tools=default_tools(),
            abort=abort,
            log=log,
            on_event=on_event,
        )
    )


def test_ctrl_c_while_bash_runs_kills_it_and_ends_aborted_tools(
    workspace: Path, tmp_path: Path
) -> None:
    scenario = Scenario.parse(
        _turns(
            _use("b", "Bash", command="sleep 30 & jobs -p > pid; wait"),
            _use("r", "Read", file_path="pid"),
        )
    )
    abort = AbortSignal()
    log = tmp_path / "int.jsonl"

    def on_event(event: DriverEvent) -> None:
        if isinstance(event, ToolStarted) and event.block.name == "Bash":
            asyncio.get_running_loop().call_later(0.5, abort.set)

    result = _aborted_run(workspace, scenario, abort, log, on_event)
    assert result.reason == "aborted_tools"
    bash, read = _results(result)
    assert bash.is_error and "interrupted" in bash.text
    assert read.is_error and "interrupted" in read.text
    assert _process_gone(int((workspace / "pid").read_text()))
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_ctrl_c_while_bash_runs_keeps_what_it_printed(workspace: Path, tmp_path: Path) -> None:
    """Claude Code kills the command and the model reads what it printed before Ctrl-C
    (its ShellError: `Exit code 137`, the interrupt message, the output), not the bare
    interrupt message; the run still ends `aborted_tools`, and a replay runs nothing."""
    scenario = Scenario.parse(
        _turns(_use("b", "Bash", command="echo hi; : > started; sleep 30 & jobs -p > pid; wait"))
    )
    abort = AbortSignal()
    log = tmp_path / "int.jsonl"

    def on_event(event: DriverEvent) -> None:
        if not (isinstance(event, ToolStarted) and event.block.name == "Bash"):
            return
        loop = asyncio.get_running_loop()

        def poll() -> None:
            pid = workspace / "pid"
            if (workspace / "started").exists() and pid.exists() and pid.read_text().strip():
                abort.set()
            else:
                loop.call_later(0.02, poll)

        poll()

    result = _aborted_run(workspace, scenario, abort, log, on_event)
    assert result.reason == "aborted_tools"
    (bash,) = _results(result)
    assert bash.is_error
    assert bash.text == f"Exit code 137\n{INTERRUPTED}\nhi"
    assert _process_gone(int((workspace / "pid").read_text()))
    (workspace / "started").unlink()
    replayed = replay(log)
    assert replayed.messages == result.messages
    assert not (workspace / "started").exists()
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_invalid_input_is_refused_with_a_clear_message(workspace: Path, tmp_path: Path) -> None:
    data = _turns(
        _use("r1", "Read", file_path=3),
        _use("r2", "Read", path="x"),
        _use("r3", "Nope"),
    )
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=tmp_path / "v.jsonl")
    r1, r2, r3 = (r.text for r in _results(result))
    assert r1 == (
        "<tool_use_error>InputValidationError: Read failed due to the following issue:\n"
        "The parameter `file_path` type is expected as `string` but provided as `number`"
        "</tool_use_error>"
    )
    assert "The required parameter `file_path` is missing" in r2
    assert "No such tool available: Nope" in r3
    assert not os.listdir(workspace / ".fsm-agent") if (workspace / ".fsm-agent").exists() else True


def test_hooks_see_the_path_the_file_tool_uses() -> None:
    """A file tool expands `~`; a hook judging the call must see the same absolute path,
    with the run's recorded home, so a replay on another machine expands it alike."""
    assert absolute_paths("Read", {"file_path": "~/notes.txt"}, "/w", "/h")["file_path"] == (
        "/h/notes.txt"
    )
    assert absolute_paths("Read", {"file_path": "~"}, "/w", "/h")["file_path"] == "/h"
    assert absolute_paths("Read", {"file_path": "~x/a"}, "/w", "/h")["file_path"] == "/w/~x/a"
    assert (
        absolute_paths("Edit", {"file_path": "src/../a.py"}, "/w", "/h")["file_path"] == "/w/a.py"
    )
    assert absolute_paths("Bash", {"command": "ls ~"}, "/w", "/h") == {"command": "ls ~"}


def test_a_run_records_its_home_and_an_old_log_replays_with_this_machines(
    workspace: Path, tmp_path: Path
) -> None:
    """The home a `~` path means is part of the run's configuration (in the log's header),
    read once where the run is assembled; a log written before it was recorded gets the
    replaying machine's, as its engine read it then."""
    log = tmp_path / "s.jsonl"
    run_scenario(SCENARIOS / "tool_round.json", cwd=workspace, log=log)
    header = SessionLog(log).header
    assert header["config"]["home"] == os.path.expanduser("~")
    del header["config"]["home"]
    old = tmp_path / "old.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    old.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    reseal(old)
    assert config_of(SessionLog(old)).home == os.path.expanduser("~")


def test_sigterm_while_bash_runs_ends_the_run_as_ctrl_c_does(
    workspace: Path, tmp_path: Path
) -> None:
    """`timeout` or a supervisor sends SIGTERM: the run ends `aborted_tools` with its
    log whole (a result line, replayable) and the command's process killed."""
    import json
    import signal
    import subprocess
    import sys

    from fsm_agent.cli.main import EXIT_CODES

    scenario = tmp_path / "slow.json"
    scenario.write_text(
        json.dumps(_turns(_use("b", "Bash", command="sleep 30 & jobs -p > pid; wait")))
    )
    log = tmp_path / "term.jsonl"
    argv = ["run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log)]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsm_agent.cli",
            *argv,
            "--permission-mode",
            "bypassPermissions",
            "go",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pid_file = workspace / "pid"
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == EXIT_CODES["aborted_tools"], err
    result = json.loads(log.read_text().splitlines()[-1])
    assert (result["t"], result["reason"]) == ("result", "aborted_tools")
    assert _process_gone(int(pid_file.read_text()))
    assert fsm("replay", "--check", str(log)).returncode == 0


class Instant:
    """A concurrency-safe tool that answers without awaiting: started while the model
    streams, it has finished before the stream goes on."""

    name = "Instant"
    description = "instant"
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return ToolOutcome("instant answer", read_files={"/ws/seen.txt": 1.0})


def test_interrupt_when_tools_start_keeps_the_answer_of_a_call_that_finished(
    tmp_path: Path,
) -> None:
    """Ctrl-C as tool execution begins: a call that finished while the model streamed
    keeps its answer (and the files it read), shown once; only the call that never
    started is refused as interrupted."""
    data = _turns(_use("i1", "Instant"), _use("w1", "Write", file_path="x.txt", content="x"))
    data["turns"][0]["interrupt"] = "tools"
    scenario = Scenario.parse(data)
    abort = AbortSignal()
    config = RunConfig(
        cwd=str(tmp_path),
        model="scripted",
        concurrency_safe_tools=("Instant",),
        permission_mode="bypassPermissions",
    )
    seen: list[DriverEvent] = []
    log = tmp_path / "tools.jsonl"
    result = asyncio.run(
        arun(
            "go",
            model=ScriptedModel(scenario, abort),
            config=config,
            tools={**default_tools(), "Instant": Instant()},
            abort=abort,
            log=log,
            on_event=seen.append,
        )
    )
    assert result.reason == "aborted_tools"
    instant, write = _results(result)
    assert (instant.tool_use_id, instant.text, instant.is_error) == ("i1", "instant answer", False)
    assert (write.tool_use_id, write.text, write.is_error) == ("w1", INTERRUPTED, True)
    shown = [
        (type(e).__name__, e.result.tool_use_id)
        for e in seen
        if isinstance(e, ToolFinished | ToolRefused)
    ]
    assert shown == [("ToolFinished", "i1"), ("ToolRefused", "w1")]
    assert not (tmp_path / "x.txt").exists()
    assert result.read_files == {"/ws/seen.txt": 1.0}
    assert replay(log).messages == result.messages


class Waits:
    """A concurrency-safe tool that waits until it is cancelled, and says it was."""

    name = "Waits"
    description = "waits"
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self) -> None:
        self.cancelled = False

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolOutcome("never")


def test_a_run_that_fails_in_a_batch_leaves_no_call_of_it_running(tmp_path: Path) -> None:
    """The caller's event callback fails when one call of a concurrent batch finishes:
    the run raises, and by then its other call has been cancelled, not left running on
    after the run (a Bash command would go on changing files no log records)."""
    waits = Waits()
    scenario = Scenario.parse(_turns(_use("i1", "Instant"), _use("w1", "Waits")))
    config = RunConfig(
        cwd=str(tmp_path),
        model="scripted",
        concurrency_safe_tools=("Instant", "Waits"),
        permission_mode="bypassPermissions",
        streaming_tools=False,
    )

    def on_event(event: DriverEvent) -> None:
        if isinstance(event, ToolFinished):
            raise RuntimeError("callback bug")

    _callback_bug_ends_the_run(scenario, config, {"Instant": Instant(), "Waits": waits}, on_event)
    assert waits.cancelled


def _callback_bug_ends_the_run(
    scenario: Scenario, config: RunConfig, tools: dict[str, Any], on_event: Any
) -> None:
    """The run raises the callback's error (within 30 s: a hang fails, not blocks)."""

    async def go() -> None:
        with pytest.raises(RuntimeError, match="callback bug"):
            await arun(
                "go",
                model=ScriptedModel(scenario),
                config=config,
                tools=tools,
                log=Path(config.cwd) / "fail.jsonl",
                on_event=on_event,
            )

    asyncio.run(asyncio.wait_for(go(), 30))


def test_a_run_that_fails_while_the_model_streams_leaves_no_early_call_running(
    tmp_path: Path,
) -> None:
    """The callback fails on text streamed after a call started early: when the run
    raises, that call has been cancelled, not merely asked to stop."""
    waits = Waits()
    scenario = Scenario.parse(_turns(_use("w1", "Waits"), {"type": "text", "text": "more"}))
    config = RunConfig(
        cwd=str(tmp_path),
        model="scripted",
        concurrency_safe_tools=("Waits",),
        permission_mode="bypassPermissions",
    )

    def on_event(event: DriverEvent) -> None:
        if isinstance(event, TextDelta):
            raise RuntimeError("callback bug")

    _callback_bug_ends_the_run(scenario, config, {"Waits": waits}, on_event)
    assert waits.cancelled


ENV_CAP = "CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY"


def _run_instant(data: dict[str, Any], tmp_path: Path, log: Path, on_event: Any = None) -> Any:
    """Run `data` where the `Instant` tool may start while the model streams."""
    abort = AbortSignal()
    config = RunConfig(
        cwd=str(tmp_path), model="scripted", concurrency_safe_tools=("Instant",),
        permission_mode="bypassPermissions",
    )  # fmt: skip
    return asyncio.run(
        arun(
            "go",
            model=ScriptedModel(Scenario.parse(data), abort),
            config=config,
            tools={"Instant": Instant()},
            abort=abort,
            log=log,
            on_event=on_event,
        )
    )


def test_the_cap_comes_from_claude_codes_variable(workspace: Path, tmp_path: Path) -> None:
    """As in Claude Code, the variable sets how many safe calls run at once; the log's
    header keeps it, so the replay groups the calls as the run did."""
    import json

    log = tmp_path / "cap.jsonl"
    proc = fsm(
        "run", "--scripted", str(SCENARIOS / "tool_round.json"), "--cwd", str(workspace),
        "--log", str(log), env={ENV_CAP: "3"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(log.read_text().splitlines()[0])["config"]["max_tool_concurrency"] == 3
    assert fsm("replay", "--check", str(log)).returncode == 0


@pytest.mark.parametrize("value", ["0", "-2", "ten", "1.5", "²"])
def test_a_bad_cap_in_claude_codes_variable_is_a_usage_error(
    workspace: Path, tmp_path: Path, value: str
) -> None:
    proc = fsm(
        "run", "--scripted", str(SCENARIOS / "tool_round.json"), "--cwd", str(workspace),
        "--log", str(tmp_path / "bad.jsonl"), env={ENV_CAP: value},
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        f"fsm-agent: error: {ENV_CAP} must be a whole number of 1 or more, not {value!r}\n"
    )
    assert not (tmp_path / "bad.jsonl").exists()


@pytest.mark.parametrize("end", ["interrupt", "model_error"])
def test_a_call_that_finished_before_the_stream_ended_counts_its_reads(
    tmp_path: Path, end: str
) -> None:
    """The transcript keeps the answer of a call that finished while the model streamed,
    so the files it read count as read for the next run of the conversation (an Edit
    needs no re-read), as they do when tools run after the stream."""
    data = _turns(_use("i1", "Instant"), {"type": "text", "text": "and some words " * 20})
    if end == "interrupt":
        data["turns"][0]["interrupt"] = "streaming"
    else:
        data["turns"][0]["cut_after"] = 12
    log = tmp_path / "reads.jsonl"
    result = _run_instant(data, tmp_path, log)
    assert result.reason == ("aborted_streaming" if end == "interrupt" else "model_error")
    assert _results(result)[0].text == "instant answer"
    assert result.read_files == {"/ws/seen.txt": 1.0}
    assert replay(log).read_files == result.read_files


def test_a_call_started_early_that_fails_is_not_hidden_by_an_interrupt(tmp_path: Path) -> None:
    """The caller's callback fails as a call started while the model streamed begins:
    the run raises that error, whether the stream then ends normally or is interrupted,
    rather than filling the call in as if Ctrl-C had cut it."""
    data = _turns(_use("i1", "Instant"), {"type": "text", "text": "and some words " * 20})
    data["turns"][0]["interrupt"] = "streaming"

    def on_event(event: DriverEvent) -> None:
        if isinstance(event, ToolStarted):
            raise RuntimeError("callback bug")

    with pytest.raises(RuntimeError, match="callback bug"):
        _run_instant(data, tmp_path, tmp_path / "hidden.jsonl", on_event)


def _hooked_reads(
    workspace: Path, tmp_path: Path, data: dict[str, Any]
) -> tuple[Any, list[str], list[DriverEvent], Path]:
    """Run `data` with one call at a time and a PreToolUse command hook that writes the
    id of each call it sees to a file: the run, those ids, its events, its log."""
    import shlex
    import sys

    for name in ("a", "b"):
        (workspace / f"{name}.txt").write_text(f"{name}\n")
    calls = tmp_path / "pre-tool-use.txt"
    script = tmp_path / "record.py"
    script.write_text(
        "import json, sys\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    f.write(json.load(sys.stdin)['tool_use_id'] + '\\n')\n"
    )
    command = " ".join(shlex.quote(str(p)) for p in (sys.executable, script, calls))
    hook = {"matcher": "Read", "hooks": [{"type": "command", "command": command}]}
    data["settings"] = {"hooks": {"PreToolUse": [hook]}}
    log = tmp_path / "queued.jsonl"
    seen: list[DriverEvent] = []
    run = arun_scenario(
        Scenario.parse(data), cwd=workspace, log=log, on_event=seen.append,
        config=RunConfig(max_tool_concurrency=1),
    )  # fmt: skip
    result = asyncio.run(asyncio.wait_for(run, 60))  # a hang fails, not blocks
    proc = fsm("replay", "--check", str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return result, calls.read_text().split() if calls.exists() else [], seen, log


READ_A_AND_B = (_use("r1", "Read", file_path="a.txt"), _use("r2", "Read", file_path="b.txt"))


def test_a_call_queued_behind_the_cap_does_not_start_once_the_stream_failed(
    workspace: Path, tmp_path: Path
) -> None:
    """As Claude Code's streaming executor, discarded when the stream fails: a call that
    was waiting for a free slot (more calls than the cap) runs no PreToolUse hook, asks
    nothing and runs nothing; it ends with the error result every unanswered call gets.
    So does the call whose hook was running then: it goes no further than its hook."""
    data = _turns(*READ_A_AND_B)
    data["turns"][0]["error"] = {"kind": "connection", "message": "connection reset"}
    result, calls, seen, log = _hooked_reads(workspace, tmp_path, data)
    assert result.reason == "model_error"
    assert calls == ["r1"]
    failed = model_failed("connection: connection reset")
    r1, r2 = _results(result)
    assert [(r.tool_use_id, r.content, r.is_error) for r in (r1, r2)] == [
        ("r1", failed, True), ("r2", failed, True)
    ]  # fmt: skip
    assert not [e for e in seen if isinstance(e, ToolStarted)]
    assert [e.result for e in seen if isinstance(e, ToolRefused)] == [r1, r2]
    pipeline = ("hooks", "permission", "ask_permission", "tool", "discarded")
    ran = [(e["name"], e["request"]) for e in effect_records(log) if e["name"] in pipeline]
    assert [r if n == "discarded" else n for n, r in ran] == ["hooks", "1:r1:hooked", "2:r2"]


def test_a_call_queued_behind_the_cap_is_dropped_with_its_message_for_the_fallback(
    workspace: Path, tmp_path: Path
) -> None:
    """The stream fails over to the fallback model: the queued call of the dropped
    message never starts; the fallback's answer runs its own calls."""
    data = _turns(*READ_A_AND_B)
    data["config"] = {"fallback_model": "scripted-fallback"}
    data["turns"][0]["error"] = {"kind": "overloaded", "message": "busy", "status": 529}
    data["turns"].insert(1, {"content": list(READ_A_AND_B)})
    result, calls, _, log = _hooked_reads(workspace, tmp_path, data)
    assert result.reason == "completed"
    assert calls == ["r1", "r1", "r2"]
    assert [r.text.split("\n")[0].split("→")[-1] for r in _results(result)] == ["a", "b"]
    discarded = [e["request"] for e in effect_records(log) if e["name"] == "discarded"]
    assert discarded == ["1:r1:hooked", "2:r2"]


def test_ctrl_c_as_a_hook_of_a_call_started_early_starts_ends_the_run(
    workspace: Path, tmp_path: Path
) -> None:
    """Ctrl-C while the model streams, as the PreToolUse command hook of the call started
    early is being started: the run ends aborted_streaming (it hung for good, asyncio
    waiting on a child it had been told to forget); the queued call never starts."""
    data = _turns(*READ_A_AND_B, {"type": "text", "text": "z" * 300})
    data["turns"][0]["interrupt"] = "streaming"
    result, calls, _, _ = _hooked_reads(workspace, tmp_path, data)
    assert result.reason == "aborted_streaming"
    assert "r2" not in calls
    assert [(r.tool_use_id, r.text) for r in _results(result)] == [
        ("r1", INTERRUPTED), ("r2", INTERRUPTED)
    ]  # fmt: skip


def test_a_call_queued_behind_the_cap_does_not_start_after_an_interrupt(tmp_path: Path) -> None:
    """Ctrl-C while the model streams: the call waiting for a slot never runs."""
    ran: list[str] = []

    class Counted(Instant):
        async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
            ran.append("i2")
            return await super().run(input, env)

    data = _turns(_use("w1", "Waits"), _use("i2", "Instant"), {"type": "text", "text": "z" * 200})
    data["turns"][0]["interrupt"] = "streaming"
    abort = AbortSignal()
    config = RunConfig(
        cwd=str(tmp_path), model="scripted", concurrency_safe_tools=("Waits", "Instant"),
        permission_mode="bypassPermissions", max_tool_concurrency=1,
    )  # fmt: skip
    log = tmp_path / "abort.jsonl"
    tools = {"Waits": Waits(), "Instant": Counted()}
    model = ScriptedModel(Scenario.parse(data), abort)
    result = asyncio.run(arun("go", model=model, config=config, tools=tools, abort=abort, log=log))
    assert result.reason == "aborted_streaming"
    assert [(r.tool_use_id, r.text) for r in _results(result)] == [
        ("w1", INTERRUPTED), ("i2", INTERRUPTED)
    ]  # fmt: skip
    assert ran == []
    assert [e["args"]["id"] for e in effect_records(log) if e["name"] == "tool"] == ["w1"]
    assert fsm("replay", "--check", str(log)).returncode == 0


class _FailsOnceAsked:
    """A scripted model whose stream fails only once the user is being asked, so the
    question is on screen when the stream fails."""

    def __init__(self, inner: ScriptedModel, asked: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.asked = asked

    async def stream(self, request: Any) -> Any:
        from fsm_agent.core.events import ModelCallError

        try:
            async for event in self.inner.stream(request):
                yield event
        except ModelCallError:
            await asyncio.to_thread(self.asked.wait, 30)
            raise

    async def count_tokens(self, request: Any) -> int | None:
        return None


def test_a_question_still_waiting_for_the_user_is_withdrawn_when_the_stream_fails(
    workspace: Path, tmp_path: Path
) -> None:
    """The Python API's approval callback blocks; the stream fails while it waits. The
    wait is cancelled, the call ends as every unanswered call does, and the answer the
    callback gives later is recorded nowhere (the log says the question was cancelled)."""
    import threading

    from fsm_agent.core.permission_types import ALLOW_ONCE

    (workspace / "a.txt").write_text("a\n")
    data = _turns(_use("r1", "Read", file_path="a.txt"))
    data["turns"][0]["error"] = {"kind": "connection", "message": "connection reset"}
    asked, release = threading.Event(), threading.Event()
    answered: list[str] = []

    def prompter(question: Any) -> str:
        asked.set()
        release.wait(10)
        answered.append(ALLOW_ONCE)
        return ALLOW_ONCE

    config = RunConfig(
        cwd=str(workspace), model="scripted",
        permissions=PermissionSettings(ask=(RuleSource("Read"),)),
    )  # fmt: skip
    log = tmp_path / "asked.jsonl"
    seen: list[DriverEvent] = []

    async def go() -> Any:
        model = _FailsOnceAsked(ScriptedModel(Scenario.parse(data)), asked)
        try:
            return await arun(
                "go", model=model, config=config, log=log, prompter=prompter,
                on_event=seen.append,
            )  # fmt: skip
        finally:
            release.set()

    result = asyncio.run(go())
    assert result.reason == "model_error"
    assert asked.is_set() and answered == [ALLOW_ONCE]
    (r1,) = _results(result)
    assert (r1.content, r1.is_error) == (model_failed("connection: connection reset"), True)
    assert [e.result for e in seen if isinstance(e, ToolRefused)] == [r1]
    effects = effect_records(log)
    assert [e["result"] for e in effects if e["name"] == "ask_permission"] == ["cancelled"]
    assert not [e for e in effects if e["name"] == "tool"]
    proc = fsm("replay", "--check", str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _tool_effects(log: Path) -> list[str]:
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return [r["args"]["id"] for r in records if r.get("t") == "effect" and r["name"] == "tool"]


@pytest.mark.parametrize("kind", ["prompt_too_long", "media"])
def test_a_call_started_early_runs_once_when_the_stream_ends_withheld(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    """A withheld error after the calls streamed keeps the message and its calls, which
    go on to run: the call started early is collected there, not cut and run again."""
    (workspace / "a.txt").write_text("a\n")
    data = _turns(_use("r1", "Read", file_path="a.txt"))
    data["turns"][0].update(event_delay=0.01, error={"kind": kind, "message": "too long"})
    log = tmp_path / "withheld.jsonl"
    seen: list[DriverEvent] = []
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log, on_event=seen.append)
    assert result.reason == "completed"
    assert _tool_effects(log) == ["r1"]
    assert [e.result.tool_use_id for e in seen if isinstance(e, ToolFinished)] == ["r1"]
    assert _results(result)[0].text.startswith("     1→a")
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_calls_started_early_go_with_their_message_when_an_api_error_replaces_it(
    workspace: Path, tmp_path: Path
) -> None:
    """An `api` error answer replaces the streamed message, calls and all: a call started
    early is dropped as for a fallback, its result never shown for a call the
    conversation does not hold."""
    (workspace / "a.txt").write_text("a\n")
    data = _turns(_use("r1", "Read", file_path="a.txt"))
    data["turns"][0].update(event_delay=0.01, error={"kind": "api", "message": "bad"})
    log = tmp_path / "api.jsonl"
    seen: list[DriverEvent] = []
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log, on_event=seen.append)
    assert result.reason == "completed" and _results(result) == []
    assert [e.ids for e in seen if isinstance(e, CallsDiscarded)] == [("r1",)]
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_a_quoted_number_or_boolean_is_taken_by_a_built_in_tool(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code's semanticNumber/semanticBoolean: a model sometimes writes
    `"head_limit": "2"` or `"-i": "true"`; a decimal literal or `true`/`false` in a
    string is taken for the number or boolean the schema asks for, and anything else
    still refused. The log replays."""
    (workspace / "notes.txt").write_text("Alpha\nalpha\nALPHA\n")
    data = _turns(
        _use(
            "g1",
            "Grep",
            pattern="alpha",
            path="notes.txt",
            output_mode="content",
            **{"-i": "true", "head_limit": "2", "-n": "false"},
        ),
        _use("g2", "Grep", pattern="alpha", path="notes.txt", head_limit="two"),
        _use("g3", "Grep", pattern="alpha", path="notes.txt", **{"-i": "yes"}),
    )
    log = tmp_path / "semantic.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    first, bad_number, bad_boolean = _results(result)
    assert not first.is_error
    assert first.text.splitlines()[:2] == ["Alpha", "alpha"]
    assert bad_number.is_error and "`head_limit` type is expected as `integer`" in bad_number.text
    assert bad_boolean.is_error and "`-i` type is expected as `boolean`" in bad_boolean.text
    assert replay(log).path == result.path


def test_a_quoted_timeout_is_taken_by_bash(workspace: Path, tmp_path: Path) -> None:
    """The docs' Bash example: `"timeout": "5000"` is the number 5000."""
    data = _turns(_use("b1", "Bash", command="echo hi", timeout="5000"))
    data["config"] = {"permission_mode": "bypassPermissions"}
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=tmp_path / "b.jsonl")
    (only,) = _results(result)
    assert not only.is_error, only.text
    assert only.text == "hi"


def test_a_quoted_number_no_json_number_can_hold_is_refused_not_taken(
    workspace: Path, tmp_path: Path
) -> None:
    """A quoted number is taken only as Claude Code's ASCII `\\d` reads it, and only when
    it is a number a log can hold: 5,000 digits (past Python's conversion limit), one
    that overflows a double, or Arabic-Indic digits are the schema's to refuse, not a
    crash or an infinity the log cannot write."""
    (workspace / "notes.txt").write_text("alpha\n")
    data = _turns(
        _use("g1", "Grep", pattern="alpha", path="notes.txt", head_limit="9" * 5000),
        _use("g2", "Grep", pattern="alpha", path="notes.txt", head_limit="1" * 400 + ".5"),
        _use("g3", "Grep", pattern="alpha", path="notes.txt", head_limit="\u0663"),
    )
    log = tmp_path / "huge.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log)
    results = _results(result)
    assert [r.is_error for r in results] == [True, True, True]
    assert all("`head_limit` type is expected as `integer`" in r.text for r in results)
    assert replay(log).path == result.path


def _stopped_batch(ws: Path, tmp_path: Path, pre: dict[str, Any]) -> tuple[LoopResult, Path]:
    """Two Writes in one turn, the first call's PreToolUse hook saying `pre`, and an
    answer the model must never be asked for."""
    data = {
        "prompt": "go",
        "config": {"permission_mode": "acceptEdits"},
        "hooks": {"PreToolUse": [pre]},
        "turns": [
            {"content": [_use("w1", "Write", file_path="a.txt", content="a"),
                         _use("w2", "Write", file_path="b.txt", content="b")]},
            {"content": "never"},
        ],
    }  # fmt: skip
    log = tmp_path / "stopped.jsonl"
    return run_scenario(Scenario.parse(data), cwd=ws, log=log), log


def test_a_pre_tool_use_hooks_stop_lets_the_turns_calls_run_then_ends_the_run(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code 2.1.332: `continue: false` from PreToolUse does not refuse the call;
    it and every other call of the turn run, and the loop ends before the next model
    call (`hook_stopped`), a success whose answer is empty."""
    result, log = _stopped_batch(workspace, tmp_path, {"prevent_continuation": True,
                                                       "stop_reason": "halt"})  # fmt: skip
    assert (workspace / "a.txt").read_text() == "a"
    assert (workspace / "b.txt").read_text() == "b"
    assert [(r.tool_use_id, r.is_error) for r in _results(result)] == [
        ("w1", False),
        ("w2", False),
    ]
    assert result.reason == "hook_stopped"
    assert result.path[-1].edge == "hook_stopped"
    assert result.edges.count("streamed") == 1, "the model is not asked again"
    assert (result.error, result.is_error, result.stopped_by_hook) == ("halt", False, True)
    assert result.answer == ""
    again = replay(log)
    assert (again.path, again.messages) == (result.path, result.messages)


def test_a_pre_tool_use_hooks_deny_still_holds_when_it_also_stops_the_run(
    workspace: Path, tmp_path: Path
) -> None:
    """The same hook's deny still refuses its call; the stop ends the run after the
    turn's other calls, as Claude Code does."""
    pre = {"prevent_continuation": True, "stop_reason": "halt",
           "permission_decision": "deny", "permission_reason": "not that"}  # fmt: skip
    result, _ = _stopped_batch(workspace, tmp_path, pre)
    assert not (workspace / "a.txt").exists()
    assert (workspace / "b.txt").exists()
    results = {r.tool_use_id: r for r in _results(result)}
    assert results["w1"].is_error and "not that" in results["w1"].text
    assert not results["w2"].is_error
    assert (result.reason, result.is_error) == ("hook_stopped", False)
