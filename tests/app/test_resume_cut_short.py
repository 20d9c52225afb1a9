"""`--resume` of a log cut short by a kill goes on; a damaged log is still refused.

A killed run's log ends mid-iteration: every record it holds is valid, it
just stops. Resuming takes the conversation as an interrupt at that point
would have left it (docs/cli.md, Resume): recorded tool results kept, every
call left unanswered answered with the interrupt's error result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.history import ResumeError, aresume
from fsm_agent.app.session import replay
from fsm_agent.core.messages import Message, ToolResultBlock, ToolUseBlock
from fsm_agent.engine.ports import INTERRUPTED
from fsm_agent.tape.divergence import LogEnded
from tests.conftest import ROOT
from tests.support.cli import fsm, one_error_line
from tests.support.logs import change_next_turn, cut, reseal, transitions_in

SHIPPED = sorted((ROOT / "replays").glob("*.jsonl"))
ANSWER = {"turns": [{"content": [{"type": "text", "text": "Going on."}]}]}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def api_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What the Messages API would refuse in a conversation: a `tool_use` not answered by a
    `tool_result` at the start of the very next (user) message, a `tool_result` that
    answers no `tool_use` of the message before it, two assistant messages in a row."""
    problems = []
    for i, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        before = messages[i - 1] if i else None
        asked = [
            b["id"]
            for b in (before["content"] if before and isinstance(before["content"], list) else [])
            if b["type"] == "tool_use"
        ]
        if message["role"] == "assistant" and before and before["role"] == "assistant":
            problems.append(f"{i}: two assistant messages in a row")
        if results and (message["role"] != "user" or set(results) - set(asked)):
            problems.append(f"{i}: tool_result for {sorted(set(results) - set(asked))}")
        if asked and (
            message["role"] != "user"
            or sorted(results) != sorted(asked)
            or [b["type"] for b in blocks[: len(asked)]] != ["tool_result"] * len(asked)
        ):
            problems.append(f"{i}: tool_use {asked} answered by {results}")
    last = messages[-1] if messages else None
    if (
        last
        and last["role"] == "assistant"
        and any(b["type"] == "tool_use" for b in last["content"])
    ):
        problems.append("the conversation ends with unanswered tool_use")
    return problems


def plain(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    from fsm_agent.core.codec import unstructure

    return [unstructure(m, Message) for m in messages]


# --- a real run, killed ---------------------------------------------------------------


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.05)


def _sessions(workspace: Path) -> dict[str, dict[str, Any]]:
    done = fsm("sessions", "--cwd", str(workspace), "--json")
    assert done.returncode == 0, done.stderr
    return {Path(s["path"]).name: s for s in json.loads(done.stdout)}


def test_a_run_killed_while_a_tool_ran_resumes_where_it_stopped(
    workspace: Path, tmp_path: Path
) -> None:
    """SIGKILL while Bash runs, after a Read of the same message finished: `--resume` goes on
    with the Read's recorded result, the Bash call answered as interrupted, the file still
    read. While the run goes, `sessions` says so and `--resume` refuses; after the kill,
    `sessions` says the log was cut short."""
    (workspace / "notes.txt").write_text("hello\n")
    scenario = tmp_path / "slow.json"
    scenario.write_text(
        json.dumps(
            {
                "prompt": "look, then wait",
                "turns": [
                    {
                        "content": [
                            {"type": "text", "text": "Reading, then waiting."},
                            {"type": "tool_use", "id": "r1", "name": "Read",
                             "input": {"file_path": "notes.txt"}},
                            {"type": "tool_use", "id": "b1", "name": "Bash",
                             "input": {"command": "sleep 60 & jobs -p > pid; wait"}},
                        ]
                    },
                    {"content": [{"type": "text", "text": "never reached"}]},
                ],
            }
        )
    )  # fmt: skip
    folder = workspace / ".fsm-agent" / "sessions"
    log = folder / "killed.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "fsm_agent.cli", "run", "--scripted", str(scenario),
            "--cwd", str(workspace), "--log", str(log), "--permission-mode", "bypassPermissions",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    pid_file = workspace / "pid"
    try:
        _wait_for(pid_file, proc)
        assert _sessions(workspace)["killed.jsonl"]["status"] == "running"
        busy = fsm("run", "--resume", str(log), "--scripted", str(scenario), "x")
        one_error_line(busy, "cannot resume: a run is still writing this log")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        # The command it ran lives on; it holds no lock on the log.
        assert _sessions(workspace)["killed.jsonl"]["status"] == "cut_short"
    finally:
        proc.kill()
        if pid_file.exists() and pid_file.read_text().strip():
            with_suppressed_kill(int(pid_file.read_text()))
    assert proc.returncode == -signal.SIGKILL
    rows = records(log)
    assert rows[-1].get("t") != "result"
    ran = [r["args"]["id"] for r in rows if r.get("t") == "effect" and r["name"] == "tool"]
    assert ran == ["r1"]
    listed = _sessions(workspace)["killed.jsonl"]
    assert (listed["status"], listed["turns"]) == ("cut_short", 1)
    table = fsm("sessions", "--cwd", str(workspace))
    assert "cut short" in table.stdout

    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    after = tmp_path / "after.jsonl"
    done = fsm(
        "run", "--resume", "killed", "--cwd", str(workspace), "--scripted", str(answer),
        "--log", str(after), "-q", "go on",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Going on.\n"
    steps = transitions_in(log)
    assert done.stderr == (
        f"fsm-agent: warning: {log}: the run was cut short after step {steps} (killed?); going "
        "on from where its log stops, with every call it left unanswered marked interrupted\n"
    )
    header, start = records(after)[:2]
    assert header["parent"] == {
        "log": str(log),
        "session_id": rows[0]["session_id"],
        "cut_short": steps,
    }
    messages = start["messages"]
    assert not api_problems(messages), api_problems(messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b.get("id") for b in messages[1]["content"]] == [None, "r1", "b1"]
    read, bash, prompt = messages[2]["content"]
    assert read["tool_use_id"] == "r1" and "hello" in read["content"]
    assert not read.get("is_error")
    assert bash == {
        "tool_use_id": "b1", "content": INTERRUPTED, "is_error": True, "type": "tool_result",
    }  # fmt: skip
    assert prompt == {"type": "text", "text": "go on"}
    assert list(start["read_files"]) == [str((workspace / "notes.txt").resolve())]
    check = fsm("replay", "--check", str(after))
    assert check.returncode == 0, check.stderr
    assert _sessions(workspace)["killed.jsonl"]["status"] == "cut_short"


def with_suppressed_kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


# --- every cut of every shipped log -----------------------------------------------------


@pytest.mark.parametrize("log", SHIPPED, ids=lambda p: p.stem)
def test_every_cut_of_a_shipped_log_resumes_with_every_call_answered(
    log: Path, tmp_path: Path
) -> None:
    """Cut after any of its records, a log resumes: the conversation it gives answers every
    call and keeps every tool result the cut log holds; whole, it is the run's own."""
    lines = len(log.read_bytes().splitlines())
    last_transition = max(
        i for i, line in enumerate(log.read_bytes().splitlines(), 1) if b'"t":"transition"' in line
    )
    for keep in range(2, lines + 1):
        part = cut(log, keep, tmp_path / f"{keep}.jsonl")
        resumed = asyncio.run(aresume(part))
        messages = plain(resumed.messages)
        assert not api_problems(messages), (keep, api_problems(messages))
        results = {
            b["tool_use_id"]: b
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_result"
        }
        for row in records(part)[2:]:
            if row["t"] == "effect" and row["name"] == "tool" and row["args"]["id"] in results:
                outcome = row["result"]
                kept = results[row["args"]["id"]]
                assert kept["content"] != INTERRUPTED or outcome["content"] == INTERRUPTED, keep
        assert (resumed.cut_short is None) == (keep >= last_transition), keep
        if resumed.cut_short is not None:
            assert resumed.cut_short == transitions_in(part), keep
    assert messages == plain(replay(log).messages.items)


def test_a_log_cut_right_after_a_tool_result_keeps_it(tmp_path: Path) -> None:
    """Killed after a call's result was written, before the loop went on: the resumed
    conversation has the call answered as recorded, and the files it read."""
    log = ROOT / "replays" / "tool_round.jsonl"
    rows = records(log)
    first_tool = next(i for i, r in enumerate(rows) if r.get("name") == "tool")
    part = cut(log, first_tool + 1, tmp_path / "part.jsonl")
    with pytest.raises(LogEnded):
        replay(part)
    resumed = asyncio.run(aresume(part))
    call = rows[first_tool]["args"]
    last = resumed.messages[-1]
    assert last.role == "user"
    (result,) = (b for b in last.content if isinstance(b, ToolResultBlock))
    assert result.tool_use_id == call["id"]
    assert result.content == rows[first_tool]["result"]["content"]
    uses = [b for b in resumed.messages[-2].content if isinstance(b, ToolUseBlock)]
    assert [u.id for u in uses] == [call["id"]]
    assert resumed.read_files == replay_read_files(part)


def replay_read_files(part: Path) -> dict[str, float]:
    """The files the cut log's tools read, from its records."""
    found: dict[str, float] = {}
    for row in records(part)[1:]:
        if row["t"] == "start":
            found.update(row.get("read_files", {}))
        if row["t"] == "effect" and row["name"] == "tool":
            found.update(row["result"].get("read_files", {}))
    return found


# --- damaged logs are still refused --------------------------------------------------


def test_a_cut_log_that_also_diverges_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut short and written by another machine (its steps do not replay): not resumed."""
    part = cut(ROOT / "replays" / "tool_round.jsonl", 20, tmp_path / "part.jsonl")
    change_next_turn(monkeypatch)
    with pytest.raises(ResumeError, match="cannot resume: the log does not replay to its end"):
        asyncio.run(aresume(part))


@pytest.mark.parametrize("damage", ["edge", "extra_effect", "corrupt_record"])
def test_a_damaged_cut_log_is_one_error_line(damage: str, tmp_path: Path) -> None:
    """A record that does not replay or does not parse, before the cut: exit 2, one line."""
    rows = (ROOT / "replays" / "tool_round.jsonl").read_bytes().splitlines(keepends=True)[:20]
    at = next(i for i, r in enumerate(rows) if b'"edge":"under_limit"' in r)
    if damage == "edge":
        rows[at] = rows[at].replace(b'"edge":"under_limit"', b'"edge":"over_limit"')
    elif damage == "extra_effect":
        step = json.loads(rows[at])["step"]
        rows.insert(at, b'{"t":"effect","step":%d,"name":"now","request":"","result":1.0}\n' % step)
    else:
        rows[at] = b'{"t":"transition",\n'
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"".join(rows))
    reseal(damaged)
    needle = "corrupt record" if damage == "corrupt_record" else "cannot resume"
    done = fsm("run", "--resume", str(damaged), "--scripted", str(tmp_path / "none.json"), "x")
    one_error_line(done, needle)


def test_a_log_torn_mid_record_resumes_as_cut_short(workspace: Path, tmp_path: Path) -> None:
    """Killed in the middle of writing a record: the torn line is dropped, the rest goes on."""
    log = tmp_path / "run.jsonl"
    done = fsm(
        "run", "--scripted", str(ROOT / "replays" / "scenarios" / "tool_round.json"),
        "--cwd", str(workspace), "--log", str(log),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = log.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[: len(data) * 2 // 3])
    assert not torn.read_bytes().endswith(b"\n")
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    after = tmp_path / "after.jsonl"
    done = fsm(
        "run", "--resume", str(torn), "--scripted", str(answer), "--log", str(after), "-q", "x"
    )
    assert done.returncode == 0, done.stderr
    assert "was cut short after step" in done.stderr
    header, start = records(after)[:2]
    assert header["parent"]["cut_short"] == transitions_in(torn)
    assert not api_problems(start["messages"])
    assert fsm("replay", "--check", str(after)).returncode == 0


def test_only_the_first_run_after_a_cut_parent_says_so(tmp_path: Path) -> None:
    """A chat resumed from a cut log: its first run's parent was cut short, the next run's
    parent (that first run) was not."""
    from fsm_agent.cli.launch import Plan
    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.config import RunConfig
    from fsm_agent.core.messages import user
    from fsm_agent.live.scripted import Scenario, ScriptedModel

    model = ScriptedModel(Scenario.parse({"turns": [{"content": "one"}, {"content": "two"}]}))
    plan = Plan(
        model=model, config=RunConfig(model="scripted", cwd=str(tmp_path)), hooks=None,
        abort=AbortSignal(), log=tmp_path / "c.jsonl", parent=tmp_path / "cut.jsonl",
        parent_session_id="p", parent_cut_short=7,
    )  # fmt: skip
    first = asyncio.run(plan.arun([user("hi")], None))
    second = asyncio.run(plan.arun([user("again")], None))
    assert records(Path(first.log_path or ""))[0]["parent"] == {
        "log": str(tmp_path / "cut.jsonl"), "session_id": "p", "cut_short": 7,
    }  # fmt: skip
    assert records(Path(second.log_path or ""))[0]["parent"] == {
        "log": first.log_path, "session_id": first.session_id,
    }  # fmt: skip


class Gate:
    """A concurrency-safe tool; call 1 waits until released, the others answer at once."""

    name = "Gate"
    description = "gate"
    input_schema: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def run(self, input: dict[str, Any], env: Any) -> Any:
        from fsm_agent.core.tool import ToolOutcome

        if input["n"] == 1:
            await self.release.wait()
        return ToolOutcome(f"answer {input['n']}")


def test_a_batch_cut_while_one_call_ran_keeps_the_others_answers(tmp_path: Path) -> None:
    """Three calls run together; the middle one is still running when the log is taken
    (as a kill leaves it): the first and the last keep their recorded answers, whatever
    order the replay asks in, and only the middle one is interrupted."""
    from fsm_agent.app.session import arun, default_tools
    from fsm_agent.core.config import RunConfig
    from fsm_agent.live.scripted import Scenario, ScriptedModel

    gate = Gate()
    uses = [
        {"type": "tool_use", "id": f"g{n}", "name": "Gate", "input": {"n": n}} for n in range(3)
    ]
    model = ScriptedModel(Scenario.parse({"turns": [{"content": uses}, {"content": "done"}]}))
    config = RunConfig(
        model="scripted",
        cwd=str(tmp_path),
        permission_mode="bypassPermissions",
        concurrency_safe_tools=("Read", "Glob", "Grep", "Gate"),
    )
    log, part = tmp_path / "run.jsonl", tmp_path / "part.jsonl"

    async def main() -> None:
        tools = {**default_tools(), "Gate": gate}
        run = asyncio.ensure_future(arun("go", model=model, config=config, tools=tools, log=log))
        while not log.exists() or log.read_bytes().count(b'"name":"tool"') < 2:
            assert not run.done()
            await asyncio.sleep(0.01)
        part.write_bytes(log.read_bytes())
        gate.release.set()
        await run

    asyncio.run(main())
    ran = [r["args"]["id"] for r in records(part)[1:] if r["t"] == "effect" and r["name"] == "tool"]
    assert sorted(ran) == ["g0", "g2"]
    resumed = asyncio.run(aresume(part))
    assert resumed.cut_short == transitions_in(part)
    messages = plain(resumed.messages)
    assert not api_problems(messages)
    answers = {b["tool_use_id"]: b["content"] for b in messages[-1]["content"]}
    assert answers == {"g0": "answer 0", "g1": INTERRUPTED, "g2": "answer 2"}
