"""Forks: replay the start of a log, go on live; edited effects for what-if runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pexpect
import pytest

from fsm_agent.app.fork import ForkError, ForkPoint, afork
from fsm_agent.app.session import replay
from fsm_agent.live.scripted import Scenario, ScriptedHooks, ScriptedModel
from fsm_agent.tape.log import SessionLog
from tests.conftest import SCENARIOS
from tests.support.cli import fsm
from tests.support.logs import reseal
from tests.support.pty import spawn

ALT = {
    "prompt": "unused: a fork keeps the parent's conversation",
    "turns": [{"content": [{"type": "text", "text": "Changed my mind."}]}],
}
TAIL = [
    "continuation -[next_turn]-> preprocess",
    "preprocess -[preprocessed]-> blocking_limit_check",
    "blocking_limit_check -[under_limit]-> api_call",
    "api_call -[streamed]-> abort_check",
    "abort_check -[no_tool_use]-> recovery",
    "recovery -[nothing_to_recover]-> stop_hooks",
    "stop_hooks -[completed]-> completed",
]


@pytest.fixture
def parent(scenario, tmp_path: Path) -> Path:
    scenario("tool_round")
    return tmp_path / "tool_round.jsonl"


@pytest.fixture
def alt(tmp_path: Path) -> Path:
    path = tmp_path / "alt.json"
    path.write_text(json.dumps(ALT))
    return path


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    ws = tmp_path / "fork-ws"
    ws.mkdir()
    return ws


def effects_of(log: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    return [r for r in rows if r["t"] == "effect"]


def fork(parent: Path, point: ForkPoint, cwd: Path, log: Path, scenario: dict = ALT) -> Any:
    script = Scenario.parse(scenario)
    return asyncio.run(
        afork(
            parent,
            point,
            model=ScriptedModel(script),
            hooks=ScriptedHooks(script.hooks),
            config_changes={"cwd": str(cwd)},
            log=log,
        )
    )


def test_fork_at_a_step_goes_on_with_another_scenario(
    parent: Path, alt: Path, elsewhere: Path, tmp_path: Path
) -> None:
    new = tmp_path / "fork.jsonl"
    proc = fsm(
        "replay", str(parent), "--fork-at", "6", "--scripted", str(alt),
        "--cwd", str(elsewhere), "--log", str(new),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Changed my mind." in proc.stdout
    out = proc.stdout
    assert out.index("I'll create the file.") < out.index("live from step 7") < out.index("Changed")
    header = SessionLog(new).header
    assert header["parent"] == {"log": str(parent), "step": 6}
    assert header["config"]["cwd"] == str(elsewhere)
    path = [str(s) for s in replay(new).path]
    assert path[:6] == [str(s) for s in replay(parent).path][:6]
    assert path[6:] == TAIL
    assert not (elsewhere / "notes.txt").exists(), "the replayed Write must not run again"
    check = fsm("replay", str(new), "--check")
    assert check.returncode == 0, check.stderr
    assert "13 steps match the log" in check.stdout


def test_fork_at_step_zero_runs_everything_live(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    result = fork(parent, ForkPoint(step=0), elsewhere, tmp_path / "f.jsonl")
    assert result.text == "Changed my mind."
    assert [str(s) for s in result.path] == TAIL[1:]
    assert replay(tmp_path / "f.jsonl").edges == result.edges


def test_forked_tools_run_live_in_the_new_workspace(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    scenario = json.loads((SCENARIOS / "tool_round.json").read_text())
    result = fork(parent, ForkPoint(step=9), elsewhere, tmp_path / "f.jsonl", scenario)
    assert result.reason == "completed"
    tools = [r for r in effects_of(tmp_path / "f.jsonl") if r["name"] == "tool"]
    assert [r["args"]["name"] for r in tools] == ["Write", "Write", "Read"]
    assert tools[-1]["result"]["content"] == "     1→hello\n     2→"
    assert str(elsewhere) in tools[1]["result"]["content"]
    assert (elsewhere / "notes.txt").read_text() == "hello\n"
    assert replay(tmp_path / "f.jsonl").edges == result.edges


def test_edited_model_turn_changes_the_path(parent: Path, elsewhere: Path, tmp_path: Path) -> None:
    effects = effects_of(parent)
    models = [i for i, r in enumerate(effects, 1) if r["name"] == "model"]
    final_answer = effects[models[-1] - 1]["result"]
    edit = tmp_path / "edit.json"
    edit.write_text(json.dumps(final_answer))
    new = tmp_path / "what-if.jsonl"
    proc = fsm(
        "replay", str(parent), "--edit-effect", str(models[0]), str(edit),
        "--scripted", str(SCENARIOS / "tool_round.json"),
        "--cwd", str(elsewhere), "--log", str(new),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = replay(new)
    assert [str(s) for s in result.path] == [
        "preprocess -[preprocessed]-> blocking_limit_check",
        "blocking_limit_check -[under_limit]-> api_call",
        *TAIL[3:],
    ]
    assert result.text == "notes.txt now says hello."
    assert SessionLog(new).header["parent"] == {"log": str(parent), "effect": models[0]}
    assert not (elsewhere / "notes.txt").exists()
    assert fsm("replay", str(new), "--check").returncode == 0


def test_edited_tool_result_is_what_the_model_sees(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    effects = effects_of(parent)
    number = next(
        i for i, r in enumerate(effects, 1) if r["name"] == "tool" and r["args"]["name"] == "Read"
    )
    edited = {"content": "     1\tgoodbye"}
    result = fork(parent, ForkPoint(effect=number, result=edited), elsewhere, tmp_path / "f.jsonl")
    assert result.text == "Changed my mind."
    sent = [r for r in effects_of(tmp_path / "f.jsonl") if r["name"] == "tool"]
    assert sent[-1]["result"]["content"] == "     1\tgoodbye"
    last_user = [m for m in result.messages if m.role == "user"][-1]
    assert last_user.content[0].content == "     1\tgoodbye"
    assert replay(tmp_path / "f.jsonl").edges == result.edges


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fork-at", "3"], "a fork goes on live: give --scripted"),
        (["--fork-at", "99", "--scripted", "ALT"], "no step 99: the log has steps 0..20"),
        (["--fork-at", "20", "--scripted", "ALT"], "step 20 ends the run (completed)"),
        (["--edit-effect", "99", "ALT", "--scripted", "ALT"], "no effect 99: the log has"),
        # effect 1 is the first model call (no hooks are configured, so none is asked)
        (["--edit-effect", "1", "ALT", "--scripted", "ALT"], "the edited"),
        (["--edit-effect", "1", "NOFILE", "--scripted", "ALT"], "cannot read the edited result"),
        (["--fork-at", "2", "--edit-effect", "1", "ALT", "--scripted", "ALT"], "not both"),
        (["--scripted", "ALT"], "--scripted is for a fork: give --fork-at N or --edit-effect"),
        (["--model", "m"], "--model is for a fork"),
        (["--check", "--log", "NOFILE"], "--log is for a fork"),
    ],
)
def test_bad_fork_requests_are_one_line_errors(
    parent: Path, alt: Path, elsewhere: Path, args: list[str], message: str
) -> None:
    args = [str(alt) if a == "ALT" else str(elsewhere / "none.json") if a == "NOFILE" else a
            for a in args]  # fmt: skip
    proc = fsm("replay", str(parent), *args, "--cwd", str(elsewhere))
    assert proc.returncode == 2
    assert proc.stderr.startswith("fsm-agent: error: ")
    assert message in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("depth", [400, 100_000])
def test_an_edited_result_nested_too_deeply_is_a_one_line_error(
    parent: Path, alt: Path, elsewhere: Path, tmp_path: Path, depth: int
) -> None:
    """400 levels parse but no log line holds them; 100,000 do not even parse: both
    once ended the fork in a RecursionError."""
    edited = tmp_path / "deep.json"
    edited.write_text('{"content": ' + "[" * depth + "]" * depth + "}")
    proc = fsm(
        "replay", str(parent), "--edit-effect", "1", str(edited), "--scripted", str(alt),
        "--cwd", str(elsewhere), "--log", str(tmp_path / "f.jsonl"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        f"fsm-agent: error: {edited}: cannot read the edited result: nested more than "
        "100 levels deep\n"
    )
    assert not (tmp_path / "f.jsonl").exists()


def test_fork_point_is_checked_before_anything_runs(parent: Path, elsewhere: Path) -> None:
    with pytest.raises(ForkError, match="no step -1"):
        fork(parent, ForkPoint(step=-1), elsewhere, elsewhere / "f.jsonl")
    assert not (elsewhere / "f.jsonl").exists()


def test_forked_log_matches_the_documented_schema(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    import jsonschema

    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    fork(parent, ForkPoint(step=6), elsewhere, tmp_path / "f.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "f.jsonl").read_text().splitlines()]
    assert lines[0]["parent"]["step"] == 6
    for record in lines:
        jsonschema.validate(record, schema)
    bad = {**lines[0], "parent": {"step": 6}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_a_fork_asks_the_hooks_of_its_live_part(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    """The parent had no hooks; the fork's scenario has a Stop hook, and it is asked."""
    scenario = {
        "hooks": {"Stop": [{"blocking_errors": ["Run the tests first."]}]},
        "turns": [
            {"content": [{"type": "text", "text": "Done."}]},
            {"content": [{"type": "text", "text": "Tests pass."}]},
        ],
    }
    new = tmp_path / "f.jsonl"
    result = fork(parent, ForkPoint(step=14), elsewhere, new, scenario)
    assert SessionLog(parent).header["config"]["hooked_events"] == []
    assert "stop_hook_blocking" in result.edges
    assert result.text == "Tests pass."
    assert replay(new).edges == result.edges


def test_the_parents_command_hooks_run_in_the_live_part(
    workspace: Path, elsewhere: Path, tmp_path: Path
) -> None:
    from fsm_agent.app.session import run_scenario

    hook = tmp_path / "mark.sh"
    marks_file = '"$CLAUDE_PROJECT_DIR/marks.jsonl"'
    hook.write_text(f"#!/bin/sh\ncat >> {marks_file}; echo >> {marks_file}\n")
    hook.chmod(0o755)
    bash = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "echo hi"}}
    calls = {
        "settings": {
            "hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": str(hook)}]}]}
        },
        "turns": [{"content": [bash]}, {"content": [{"type": "text", "text": "ok"}]}],
    }
    parent = tmp_path / "p.jsonl"
    run_scenario(Scenario.parse({"prompt": "go", **calls}), cwd=workspace, log=parent)
    assert (workspace / "marks.jsonl").exists()
    fork(parent, ForkPoint(step=0), elsewhere, tmp_path / "f.jsonl", {"turns": calls["turns"]})
    marks = (elsewhere / "marks.jsonl").read_text().splitlines()
    assert [json.loads(m)["tool_use_id"] for m in marks] == ["b1"]


def test_edited_model_turn_with_a_tool_call_runs_it_live(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    """The call starts while the edited stream is read: it is live, not asked of the parent."""
    effects = effects_of(parent)
    models = [i for i, r in enumerate(effects, 1) if r["name"] == "model"]
    read_turn = effects[models[1] - 1]["result"]
    (elsewhere / "notes.txt").write_text("hi there\n")
    scenario = json.loads((SCENARIOS / "tool_round.json").read_text())
    new = tmp_path / "f.jsonl"
    result = fork(parent, ForkPoint(effect=models[0], result=read_turn), elsewhere, new, scenario)
    tools = [r for r in effects_of(new) if r["name"] == "tool"]
    assert [r["args"]["name"] for r in tools][:1] == ["Read"]
    assert tools[0]["result"]["content"] == "     1→hi there\n     2→"
    assert "tool_execution -[tools_done]-> attachments" in [str(s) for s in result.path]
    assert replay(new).edges == result.edges


def test_a_fork_of_a_log_that_holds_no_run_is_refused_and_writes_nothing(
    parent: Path, alt: Path, elsewhere: Path, tmp_path: Path
) -> None:
    header_only = tmp_path / "header.jsonl"
    header_only.write_text(parent.read_text().splitlines()[0] + "\n")
    new = tmp_path / "f.jsonl"
    proc = fsm(
        "replay", str(header_only), "--fork-at", "0", "--scripted", str(alt),
        "--cwd", str(elsewhere), "--log", str(new),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("fsm-agent: error: ") and "no `start` record" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stdout == ""
    assert not new.exists()


def test_a_fork_of_a_log_with_a_damaged_header_says_so_before_replaying(
    parent: Path, alt: Path, elsewhere: Path, tmp_path: Path
) -> None:
    lines = parent.read_text().splitlines()
    header = json.loads(lines[0])
    lines[0] = json.dumps({**header, "config": {**header["config"], "max_turns": "x"}})
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join(lines) + "\n")
    reseal(damaged)
    proc = fsm(
        "replay", str(damaged), "--fork-at", "3", "--scripted", str(alt),
        "--cwd", str(elsewhere), "--log", str(tmp_path / "f.jsonl"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"fsm-agent: error: {damaged}:1: the header's config: ")
    assert proc.stdout == ""


def test_a_fork_whose_parent_start_is_damaged_writes_no_log(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    from fsm_agent.tape.log import LogError

    lines = parent.read_text().splitlines()
    start = json.loads(lines[1])
    lines[1] = json.dumps({**start, "messages": "not a list"})
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join(lines) + "\n")
    reseal(damaged)
    with pytest.raises(LogError, match="the start messages"):
        fork(damaged, ForkPoint(step=3), elsewhere, tmp_path / "f.jsonl")
    assert not (tmp_path / "f.jsonl").exists()


def test_a_fork_of_a_torn_log_warns_as_replay_does(
    parent: Path, alt: Path, elsewhere: Path, tmp_path: Path
) -> None:
    lines = parent.read_text().splitlines(keepends=True)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("".join(lines[:20]) + lines[20][:40])
    reseal(torn)
    new = tmp_path / "f.jsonl"
    proc = fsm(
        "replay", str(torn), "--fork-at", "5", "--scripted", str(alt),
        "--cwd", str(elsewhere), "--log", str(new),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"fsm-agent: warning: {torn}: the last line is torn; read up to it\n"
    assert SessionLog(new).header["parent"] == {"log": str(torn), "step": 5}


def test_a_fork_replays_parallel_calls_with_hooks_asked_at_other_steps(
    workspace: Path, elsewhere: Path, tmp_path: Path
) -> None:
    """Replayed, the Reads finish at once: their PostToolUse hooks and the Bash call start
    while the model streams; live they came at `tool_execution`. The hooks recorded there
    are found by event, though the fork's payloads (cwd, session) differ from the parent's,
    and a hook of another event recorded at the step is not taken instead."""
    from fsm_agent.app.session import run_scenario

    read = {"type": "tool_use", "name": "Read"}
    turns = [
        {
            "content": [
                {**read, "id": "r1", "input": {"file_path": "a.txt"}},
                {**read, "id": "r2", "input": {"file_path": "b.txt"}},
                {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "echo hi"}},
            ]
        },
        {"content": "Done."},
    ]
    hooks = {"PreToolUse": [{}, {}, {}], "PostToolUse": [{}, {}, {}]}
    calls = {"config": {"permission_mode": "acceptEdits"}, "hooks": hooks}
    for ws in (workspace, elsewhere):
        (ws / "a.txt").write_text("A\n")
        (ws / "b.txt").write_text("B\n")
    parent = tmp_path / "p.jsonl"
    script = Scenario.parse({"prompt": "go", "turns": turns, **calls})
    run_scenario(script, cwd=workspace, log=parent)
    hooked_at = {r["step"] for r in effects_of(parent) if r["name"] == "hooks"}
    assert len(hooked_at) == 2  # the Bash call's hooks were asked at a later step
    steps = len(replay(parent).path)
    new = tmp_path / "f.jsonl"
    result = fork(parent, ForkPoint(step=steps - 1), elsewhere, new, {"turns": turns, **calls})
    assert result.reason == "completed"
    assert [str(s) for s in result.path][: steps - 1] == [
        str(s) for s in replay(parent).path[: steps - 1]
    ]
    assert replay(new).edges == result.edges


def test_an_edited_permission_answer_must_be_one_the_log_format_has(
    workspace: Path, elsewhere: Path, tmp_path: Path
) -> None:
    from fsm_agent.app.session import run_scenario

    bash = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "rm -f x"}}
    script = {
        "prompt": "go",
        "settings": {"permissions": {"ask": ["Bash(rm:*)"]}},
        "turns": [{"content": [bash]}, {"content": "ok"}],
    }
    parent = tmp_path / "p.jsonl"
    run_scenario(Scenario.parse(script), cwd=workspace, log=parent)
    number = next(i for i, r in enumerate(effects_of(parent), 1) if r["name"] == "ask_permission")
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"turns": script["turns"][1:]}))
    edit = tmp_path / "edit.json"

    def fork_with(answer: str) -> Any:
        edit.write_text(json.dumps(answer))
        return fsm(
            "replay", str(parent), "--edit-effect", str(number), str(edit),
            "--scripted", str(scenario), "--cwd", str(elsewhere),
            "--log", str(tmp_path / f"{answer}.jsonl"),
        )  # fmt: skip

    refused = fork_with("allow")
    assert refused.returncode == 2
    assert refused.stderr.startswith("fsm-agent: error: the edited ask_permission result")
    assert "allow_once" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert not (tmp_path / "allow.jsonl").exists()
    allowed = fork_with("allow_once")
    assert allowed.returncode == 0, allowed.stderr
    tool = [r for r in effects_of(tmp_path / "allow_once.jsonl") if r["name"] == "tool"]
    assert [r["args"]["name"] for r in tool] == ["Bash"]
    withdrawn = fork_with("cancelled")  # only a call started while streaming is withdrawn
    assert withdrawn.returncode == 0, withdrawn.stderr
    assert not [r for r in effects_of(tmp_path / "cancelled.jsonl") if r["name"] == "tool"]
    from fsm_agent.app.session import replay

    results = [b for m in replay(tmp_path / "cancelled.jsonl").messages for b in m.content]
    denied = [b for b in results if getattr(b, "tool_use_id", None) == "b1"]
    assert [b.text.split(" (")[0] for b in denied] == [
        "<tool_use_error>The user denied permission to use Bash"
    ]


def test_ctrl_c_in_the_live_part_ends_the_fork_as_it_ends_a_run(
    parent: Path, elsewhere: Path, tmp_path: Path
) -> None:
    """Ctrl-C interrupts the wait for the model: the fork ends aborted_streaming, its log whole."""
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"turns": [{"content": "too late", "delay": 60}]}))
    new = tmp_path / "f.jsonl"
    child = spawn(["replay", str(parent), "--fork-at", "9", "--scripted", str(slow),
                   "--cwd", str(elsewhere), "--log", str(new)], tmp_path)  # fmt: skip
    child.expect("live from step .*10")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 14
    assert json.loads(new.read_text().splitlines()[-1])["reason"] == "aborted_streaming"
    assert fsm("replay", str(new), "--check").returncode == 0


def test_a_forked_log_says_what_its_context_levels_did(
    scenario: Any, elsewhere: Path, tmp_path: Path
) -> None:
    """`context` records are for people reading the log: a fork's has them as a run's does."""
    scenario("autocompact")
    parent = tmp_path / "autocompact.jsonl"

    def contexts(log: Path) -> list[tuple[int, str, str]]:
        rows = [json.loads(line) for line in log.read_text().splitlines()[1:]]
        return [(r["step"], r["level"], r["text"]) for r in rows if r["t"] == "context"]

    last = contexts(parent)[-1][0]
    new = tmp_path / "f.jsonl"
    fork(parent, ForkPoint(step=last), elsewhere, new)
    assert len(contexts(parent)) == 3
    assert contexts(new) == contexts(parent)


@pytest.mark.parametrize("where", ["elsewhere", "around"])
def test_a_fork_into_another_workspace_replays_its_parents_nested_memory(
    workspace: Path, elsewhere: Path, alt: Path, tmp_path: Path, where: str
) -> None:
    """The replayed part finds the subdirectory CLAUDE.md and the path rule the parent
    found in its own workspace; it diverged when it looked for them in the fork's, be
    it apart or one holding the parent's (where the parent's files sit deeper)."""
    if where == "around":
        elsewhere = workspace.parent
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "CLAUDE.md").write_text("Pkg rules.\n")
    (workspace / "pkg" / "a.py").write_text("a = 1\n")
    (workspace / ".claude" / "rules").mkdir(parents=True)
    (workspace / ".claude" / "rules" / "py.md").write_text("---\npaths: pkg/*.py\n---\nPy rule.\n")
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "pkg/a.py"}}
    scenario = tmp_path / "parent.json"
    scenario.write_text(
        json.dumps({"prompt": "look", "turns": [{"content": [read]}, {"content": "ok"}]})
    )
    parent = tmp_path / "parent.jsonl"
    run = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(parent))
    assert run.returncode == 0, run.stderr
    assert [r["name"] for r in effects_of(parent)].count("memory") == 1
    new = tmp_path / "fork.jsonl"
    proc = fsm(
        "replay", str(parent), "--fork-at", "7", "--scripted", str(alt),
        "--cwd", str(elsewhere), "--log", str(new),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = [b.text for m in replay(new).messages for b in m.content if hasattr(b, "text")]
    assert any("Pkg rules." in t for t in shown) and any("Py rule." in t for t in shown)
    assert replay(new).messages[:3] == replay(parent).messages[:3]
    check = fsm("replay", str(new), "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_always_answer_in_the_replayed_part_still_allows_in_the_live_part(
    workspace: Path, tmp_path: Path
) -> None:
    """ "[a] always" adds its rule for the rest of the run; a fork past the answer is that
    run going on, yet its live part judged without the rule: the Write the parent's run
    would have made unasked was denied (no terminal to ask)."""
    from fsm_agent.app.session import run_scenario
    from fsm_agent.live.approvals import ALLOW_ALWAYS

    def write(name: str) -> dict[str, Any]:
        call = {"file_path": f"{name}.txt", "content": name}
        return {"content": [{"type": "tool_use", "id": name, "name": "Write", "input": call}]}

    source = {"prompt": "Write.", "turns": [write("a"), write("b"), {"content": "Done."}]}
    path = tmp_path / "always.json"
    path.write_text(json.dumps(source))
    log = tmp_path / "always.jsonl"
    run_scenario(path, cwd=workspace, log=log, prompter=lambda question: ALLOW_ALWAYS)
    assert (workspace / "b.txt").read_text() == "b"
    after_first_round = 7
    forked = tmp_path / "forked.jsonl"
    script = {"turns": [write("c"), {"content": "Forked."}]}
    result = fork(log, ForkPoint(after_first_round), workspace, forked, script)
    assert result.reason == "completed"
    assert (workspace / "c.txt").read_text() == "c"
    assert fsm("replay", str(forked), "--check").returncode == 0
