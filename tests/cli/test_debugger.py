"""The replay debugger: its commands driven directly, and once in a real terminal."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pexpect
import pytest

from fsm_agent.cli.debugger import Breakpoint, CommandError, Debugger
from fsm_agent.engine.driver import StepInfo
from fsm_agent.tape.divergence import LogEnded
from fsm_agent.tape.stepper import CACHE, LogIndex, Stepper
from tests.conftest import ROOT
from tests.support.cli import fsm
from tests.support.logs import reseal, write_log
from tests.support.pty import wrapped


@pytest.fixture
def tool_round(scenario, tmp_path: Path) -> Path:
    scenario("tool_round")
    return tmp_path / "tool_round.jsonl"


@pytest.fixture
def dbg(tool_round: Path):
    debugger = Debugger(tool_round)
    yield debugger
    debugger.stepper.close()


def test_step_back_and_goto(dbg: Debugger) -> None:
    assert dbg.text("n") == "step 1/20: preprocess -[preprocessed]-> blocking_limit_check  turn 1\n"
    assert dbg.text("s").startswith("step 2/20: blocking_limit_check -[under_limit]-> api_call")
    assert dbg.text("").startswith("step 3/20: api_call -[streamed]-> abort_check")
    assert dbg.text("back").startswith("step 2/20:")
    assert dbg.text("g 7").startswith("step 7/20: continuation -[next_turn]-> preprocess  turn 2")
    assert dbg.pos == 7
    assert dbg.text("g 20").startswith("step 20/20: stop_hooks -[completed]-> completed")
    assert "(end: completed)" in dbg.text("g 20")
    assert dbg.text("n") == "*** no step 21: the log has steps 0..20\n"
    assert dbg.pos == 20
    assert dbg.text("g 0").startswith("step 0/20: start, in preprocess")
    assert dbg.text("back") == "*** already at the start (step 0)\n"
    assert dbg.text("g two") == "*** usage: g N (a step number)\n"


def test_print_fields(dbg: Debugger) -> None:
    assert dbg.text("p turn_count") == "turn_count = 1\n"
    dbg.onecmd("g 14")
    assert dbg.text("p turn_count") == "turn_count = 3\n"
    assert dbg.text("p pending_tool_use_summary") == "pending_tool_use_summary = 'Read'\n"
    assert dbg.text("p transition") == "transition = 'next_turn'\n"
    assert dbg.text("p budget.continuation_count") == "budget.continuation_count = 0\n"
    usage = dbg.text("p usage").splitlines()
    assert usage[0] == "usage ="
    assert "    'output_tokens': 40," in usage
    assert "    'cache_read_input_tokens': 0" in usage
    messages = dbg.text("p messages")
    assert messages.splitlines()[0].startswith("5 messages, digest ")
    assert "   4 user: [tool_result      1→hello⏎     2→]" in messages
    assert dbg.text("p nope").startswith("*** no field 'nope' (LoopState fields: messages,")
    listing = dbg.text("p")
    assert "turn_count" in listing and "max_output_tokens_recovery_count" in listing


def test_printed_messages_keep_their_block_types(dbg: Debugger) -> None:
    """A message is shown as the log and the API hold it: each block with its `type`,
    nested in the iteration too, not as bare fields that hide a text from a tool_use."""
    first = dbg.text("p messages.0")
    assert "'role': 'user'" in first and "'type': 'text'" in first
    dbg.onecmd("g 3")
    asked = dbg.text("p it.assistant_messages")
    assert "'type': 'tool_use'" in asked and "'name': 'Write'" in asked
    dbg.onecmd("g 5")
    assert "'type': 'tool_result'" in dbg.text("p it.tool_results")


def test_breakpoints_on_edge_state_turn_and_condition(dbg: Debugger) -> None:
    assert dbg.text("break edge=next_turn") == "breakpoint 1: edge=next_turn\n"
    assert dbg.text("break state=tool_execution") == "breakpoint 2: state=tool_execution\n"
    assert dbg.text("c").startswith("step 4/20: abort_check -[tool_use]-> tool_execution")
    assert "breakpoint 2 (state=tool_execution)" in dbg.text("c") or dbg.pos == 7
    assert dbg.pos == 7
    assert dbg.text("clear") == "deleted 2 breakpoint(s)\n"
    assert dbg.text("break turn_count>2") == "breakpoint 3: turn_count>2\n"
    out = dbg.text("c")
    assert out.startswith("step 14/20: continuation -[next_turn]-> preprocess  turn 3")
    assert "breakpoint 3 (turn_count>2)" in out
    out = dbg.text("c")
    assert out.startswith("step 20/20") and "no breakpoint hit" in out
    dbg.onecmd("clear")
    dbg.onecmd("break turn=2")
    dbg.onecmd("g 0")
    assert dbg.text("c").startswith("step 7/20")
    assert dbg.text("clear 9") == "*** no breakpoint '9'\n"
    assert dbg.text("break") == " num  breakpoint \n 4    turn=2     \n"


def test_breakpoint_specs_are_checked() -> None:
    for spec, message in [
        ("state=nowhere", "no state 'nowhere'"),
        ("edge=jump", "no edge 'jump'"),
        ("bogus", "cannot read breakpoint 'bogus'"),
        ("turns>3", "no field 'turns'"),
    ]:
        with pytest.raises(CommandError, match=message):
            Breakpoint.parse(spec)
    assert Breakpoint.parse("edge=reactive_compact_retry").name == "reactive_compact_retry"
    assert Breakpoint.parse("stop_hook_active == true").value is True
    assert Breakpoint.parse("pending_tool_use_summary=Read").value == "Read"


def test_msgs_effects_diff_where(dbg: Debugger) -> None:
    dbg.onecmd("g 10")
    msgs = dbg.text("msgs").splitlines()
    assert msgs[0] == "model request: scripted (query), max_tokens 32000, 3 messages"
    assert msgs[1] == "   0 user: Create notes.txt saying hello, then check it."
    assert msgs[2].startswith("   1 assistant: I'll create the file. [tool_use Write")
    assert len(msgs) == 4
    streamed = dbg.text("effects").splitlines()
    assert (
        "#5   model        3 messages, last user: [blocks] → 7 events, stop_reason tool_use, "
        "tool_use Read" in streamed
    )
    # The Read started while the model streamed: its pipeline began in this step.
    assert any(line.startswith("#4   permission ") for line in streamed)
    dbg.onecmd("n")
    assert dbg.text("msgs") == "step 11 (abort_check) sent no model request\n"
    # The abort flag was polled and not set: that usual answer is not recorded.
    assert dbg.text("effects") == "step 11 has no effect records\n"
    dbg.onecmd("g 12")
    effects = streamed + dbg.text("effects").splitlines()
    assert '#6   tool         Read {"file_path":"notes.txt"} →      1→hello⏎     2→' in effects
    # No hook is configured, so no hook is asked and none is recorded.
    assert not any(" hooks " in line for line in effects)
    dbg.onecmd("g 7")
    diff = dbg.text("diff")
    assert diff.splitlines()[0] == "LoopState, step 6 → step 7:"
    assert "  messages: 1 → 3" in diff
    assert "  turn_count: 1 → 2" in diff
    assert "  pending_tool_use_summary: null → Write" in diff
    assert "  usage.output_tokens: 0 → 20" in diff
    assert dbg.text("diff 1 2") == "LoopState, step 1 → step 2:\n  (no difference)\n"
    where = dbg.text("where").splitlines()
    assert where[0] == "     1 preprocess -[preprocessed]-> blocking_limit_check  turn 1"
    assert where[6] == "→    7 continuation -[next_turn]-> preprocess  turn 2"
    assert where[7] == "now in preprocess"
    assert where[8].startswith("    -[prompt_blocked]-> prompt_blocked")
    assert where[9].startswith("  ▶ -[preprocessed]-> blocking_limit_check")


def test_help_quit_and_unknown(dbg: Debugger) -> None:
    text = dbg.text("help")
    for command in ("n, s", "back", "g N", "b, break", "clear", "p FIELD", "msgs", "diff", "where"):
        assert command in text
    assert dbg.text("frobnicate") == "*** unknown command 'frobnicate'; type help\n"
    assert not dbg.done
    dbg.onecmd("q")
    assert dbg.done


def test_a_divergent_log_stops_the_debugger_at_the_divergence(tool_round: Path) -> None:
    rows = [json.loads(line) for line in tool_round.read_text().splitlines()]
    target = next(r for r in rows if r.get("edge") == "next_turn")
    target["state"] = "0" * 16
    write_log(tool_round, rows)
    dbg = Debugger(tool_round)
    report = fsm("replay", "--check", str(tool_round)).stderr
    assert report.startswith("✗ diverged at step 7: transition\n  log:  {")
    assert "  diff (log → code):\n    state: 0000000000000000 → " in report
    assert dbg.text("g 6").startswith("step 6/20")
    # The same report as --check (docs/replay.md), after a line saying where it stopped.
    assert dbg.text("n") == "*** no step 7: the code no longer replays the log\n" + report
    assert dbg.pos == 6
    dbg.onecmd("g 0")
    assert dbg.text("c") == "*** stopped at step 6: the code no longer replays the log\n" + report
    assert dbg.pos == 6
    dbg.stepper.close()


def test_index_reads_steps_without_parsing_and_cache_is_bounded(tmp_path: Path) -> None:
    from tools.bench_replay import record

    log = tmp_path / "long.jsonl"
    record(150, log)
    stepper = Stepper(log)
    index = stepper.index
    assert index.steps == 150 * 7 + 6
    assert index.transition(7)["edge"] == "next_turn"
    assert [r["name"] for r in index.effects_of(3)] == ["model"]
    last = stepper.at(index.steps)
    assert last is not None and last.dest == "completed"
    assert len(stepper._cache) == CACHE
    again = stepper.at(3)
    assert again is not None and again.edge == "streamed"
    assert stepper.reached == 3
    stepper.close()
    assert LogIndex(stepper.log).steps == index.steps


def test_without_a_terminal_replay_prints_the_path(tool_round: Path) -> None:
    proc = fsm("replay", str(tool_round))
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == "preprocess -[preprocessed]-> blocking_limit_check"
    assert len(proc.stdout.splitlines()) == 20


def test_debugger_in_a_terminal(tool_round: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(TERM="dumb", NO_COLOR="1", COLUMNS="120")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "fsm_agent.cli", "replay", str(tool_round)],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    child.expect(wrapped("Type help for the commands."))  # after the log's path, however long
    child.expect_exact("step 0/20: start, in preprocess")
    child.expect_exact("(fsm) ")
    child.sendline("n")
    child.expect_exact("step 1/20: preprocess -[preprocessed]-> blocking_limit_check")
    child.expect_exact("(fsm) ")
    child.sendline("p turn_count")
    child.expect_exact("turn_count = 1")
    child.expect_exact("(fsm) ")
    child.sendline("where")
    child.expect_exact("now in blocking_limit_check")
    child.expect_exact("(fsm) ")
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_corrupt_line_stops_the_debugger_there(tool_round: Path) -> None:
    lines = tool_round.read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if '"step":9,' in line and "transition" in line)
    lines[i] = "{not json\n"
    tool_round.write_text("".join(lines))
    reseal(tool_round)
    dbg = Debugger(tool_round, width=len(str(tool_round)) + 200)  # the path's line unwrapped
    assert dbg.text("g 7").startswith("step 7/19")
    out = dbg.text("n")
    assert out.startswith("*** the replay stopped after step 7: "), "reads step 9 ahead"
    assert f"{tool_round}:{i + 1}: corrupt record" in out.replace("\n", "")
    dbg.stepper.close()


def test_completion_of_commands_fields_and_breakpoints(dbg: Debugger) -> None:
    assert "msgs" in dbg.completenames("ms")
    assert dbg.complete_p("turn") == ["turn_count"]
    assert "edge=reactive_compact_retry" in dbg.complete_break("edge=re")
    assert dbg.complete_break("state=tool") == ["state=tool_execution"]


def test_b_is_pdbs_break(dbg: Debugger) -> None:
    assert dbg.text("b edge=next_turn") == "breakpoint 1: edge=next_turn\n"
    assert dbg.text("c").startswith("step 7/20: continuation -[next_turn]-> preprocess")
    assert "edge=next_turn" in dbg.text("b")


def test_list_shows_the_edge_table_around_the_current_state(dbg: Debugger) -> None:
    dbg.onecmd("g 3")
    lines = dbg.text("l").splitlines()
    assert lines[0] == "now in abort_check"
    assert lines[1].startswith("    -[aborted_streaming]-> aborted_streaming   when interrupted")
    assert lines[2].startswith("  ▶ -[tool_use]-> tool_execution")
    assert dbg.text("l") == dbg.text("list")


def test_stepping_commands_take_a_count(dbg: Debugger) -> None:
    assert dbg.text("n 3").startswith("step 3/20: api_call -[streamed]-> abort_check")
    assert dbg.text("s 4").startswith("step 7/20: continuation -[next_turn]-> preprocess")
    assert dbg.text("back 2").startswith("step 5/20:")
    assert dbg.text("back 99").startswith("step 0/20: start")
    assert dbg.text("back") == "*** already at the start (step 0)\n"
    assert dbg.text("n 21").startswith("step 20/20: stop_hooks -[completed]-> completed  turn 3")
    dbg.onecmd("g 10")
    assert "the last step (no step 110)" in dbg.text("n 100").replace("\n", "")
    assert dbg.pos == 20
    assert dbg.text("n 2") == "*** no step 22: the log has steps 0..20\n"
    dbg.onecmd("g 0")
    assert dbg.text("n two") == "*** usage: n [COUNT] (a number of steps, 1 or more)\n"
    assert dbg.text("back 0") == "*** usage: back [COUNT] (a number of steps, 1 or more)\n"
    assert dbg.pos == 0


def test_a_bare_name_breaks_on_that_state_or_edge(dbg: Debugger) -> None:
    assert dbg.text("b tool_execution") == "breakpoint 1: state=tool_execution\n"
    assert dbg.text("b next_turn") == "breakpoint 2: edge=next_turn\n"
    assert dbg.text("b completed") == "breakpoint 3: state=completed\n"
    assert dbg.text("c").startswith("step 4/20: abort_check -[tool_use]-> tool_execution")
    assert dbg.text("c").startswith("step 7/20: continuation -[next_turn]-> preprocess")
    assert dbg.text("b nowhere").startswith("*** cannot read breakpoint 'nowhere': use a state")
    assert "tool_execution" in dbg.complete_b("tool_")
    assert "next_turn" in dbg.complete_break("next")


def test_tbreak_is_deleted_when_first_hit(dbg: Debugger) -> None:
    assert dbg.text("tbreak edge=next_turn") == "temporary breakpoint 1: edge=next_turn\n"
    assert [line.split() for line in dbg.text("b").splitlines()] == [
        ["num", "breakpoint"],
        ["1", "edge=next_turn", "(temporary)"],
    ]
    out = dbg.text("c")
    assert out.startswith("step 7/20: continuation -[next_turn]-> preprocess")
    assert "temporary breakpoint 1 (edge=next_turn), deleted" in out.replace("\n", "")
    assert dbg.text("b") == "no breakpoints\n"
    assert "no breakpoint hit" in dbg.text("c")
    assert dbg.text("tbreak") == "*** usage: tbreak SPEC (as for break)\n"


@pytest.mark.parametrize(
    "spec", ["turn_count>>3", "turn_count=>3", "turn_count<>3", "turn_count==!1"]
)
def test_a_condition_with_a_doubled_operator_is_refused(dbg: Debugger, spec: str) -> None:
    assert dbg.text(f"b {spec}") == (
        f"*** cannot read breakpoint {spec!r}: one operator, then a value\n"
    )
    assert dbg.breakpoints == {}


def test_return_runs_to_the_end_of_the_iteration(dbg: Debugger) -> None:
    assert dbg.text("r").startswith("step 7/20: continuation -[next_turn]-> preprocess  turn 2")
    dbg.onecmd("b state=tool_execution")
    out = dbg.text("return")
    assert out.startswith("step 11/20: abort_check -[tool_use]-> tool_execution")
    assert "breakpoint 1 (state=tool_execution)" in out
    dbg.onecmd("clear")
    assert dbg.text("r").startswith("step 14/20: continuation -[next_turn]-> preprocess  turn 3")
    assert dbg.text("r").startswith("step 20/20: stop_hooks -[completed]-> completed")
    assert "at the end" in dbg.text("r")
    assert dbg.pos == 20


def test_pdb_spellings_jump_and_pp(dbg: Debugger) -> None:
    assert dbg.text("j 7") == dbg.text("goto 7") == dbg.text("jump 7")
    assert dbg.pos == 7
    assert dbg.text("pp turn_count") == dbg.text("p turn_count") == "turn_count = 2\n"
    assert dbg.complete_pp("turn") == ["turn_count"]


def test_a_tool_breakpoint_stops_where_the_model_asks_for_that_tool(tool_round: Path) -> None:
    dbg = Debugger(tool_round)
    try:
        assert dbg.text("b tool=Read") == "breakpoint 1: tool=Read\n"
        out = dbg.text("c")
        assert out.startswith("step 10/20: api_call -[streamed]-> abort_check  turn 2")
        assert "breakpoint 1 (tool=Read)" in out
        assert "stop_reason tool_use, tool_use Read" in dbg.text("effects")
        assert "no breakpoint hit" in dbg.text("c")
        dbg.onecmd("clear")
        dbg.onecmd("g 0")
        dbg.onecmd("b tool=Write")
        assert dbg.text("c").startswith("step 3/20: api_call -[streamed]-> abort_check  turn 1")
        dbg.onecmd("clear")
        dbg.onecmd("g 0")
        dbg.onecmd("b tool=Bash")
        assert "no breakpoint hit" in dbg.text("c")
        assert dbg.complete_break("tool=W") == ["tool=Write"]
        assert dbg.text("b tool=").startswith("*** cannot read breakpoint 'tool='")
    finally:
        dbg.stepper.close()


def test_p_it_shows_the_iteration_the_step_filled_in(dbg: Debugger) -> None:
    """What the guards decided from: the model's tool calls, its stop reason, the results."""
    assert dbg.text("p it") == "*** no iteration at the start: step forward first\n"
    dbg.onecmd("g 3")
    assert dbg.text("p it.stop_reason") == "it.stop_reason = 'tool_use'\n"
    calls = dbg.text("p it.tool_use_blocks")
    assert "'name': 'Write'" in calls and "'id': 'toolu_01write'" in calls
    listing = dbg.text("p it")
    assert "tool_use_blocks" in listing and "assistant_messages" in listing
    assert dbg.text("p it.tool_results") == "it.tool_results = []\n"
    dbg.onecmd("g 5")
    results = dbg.text("p it.tool_results")
    assert "toolu_01write" in results and "File created successfully" in results
    unknown = dbg.text("p it.nope")
    assert unknown.startswith("*** no field 'it.nope' (it. fields: messages_for_query")
    assert dbg.text("p nope").endswith("; it.FIELD for the iteration)\n")
    assert "it.tool_use_blocks" in dbg.complete_p("it.tool")


def test_a_condition_on_the_iteration_breaks_where_it_turns_true(dbg: Debugger) -> None:
    assert dbg.text("b it.tool_use_blocks>0") == "breakpoint 1: it.tool_use_blocks>0\n"
    assert dbg.text("c").startswith("step 3/20: api_call -[streamed]-> abort_check  turn 1")
    assert dbg.text("c").startswith("step 10/20: api_call -[streamed]-> abort_check  turn 2")
    assert "no breakpoint hit" in dbg.text("c")
    assert dbg.text("b it.nope=1").startswith("*** no field 'it.nope'")
    assert dbg.text("b it=1").startswith("*** no field 'it'")


def test_help_names_one_command(dbg: Debugger) -> None:
    lines = dbg.text("help p").splitlines()
    assert len(lines) > 1 and all("msgs" not in line for line in lines)
    assert "p, print, pp FIELD" in lines[1]
    assert "n, s, next, step" in dbg.text("help next")
    assert dbg.text("help frob") == "*** no command 'frob'; type help for the list\n"


def test_the_session_shown_in_the_docs_is_what_the_debugger_prints() -> None:
    """docs/replay.md shows a debugger session on the shipped tool_round log."""
    docs = (ROOT / "docs" / "replay.md").read_text()
    block = re.search(r"```\n(\(fsm\) break edge=next_turn\n.*?)```", docs, re.S)
    assert block is not None
    shown = re.split(r"^\(fsm\) (.*)\n", block.group(1), flags=re.M)[1:]
    pairs = list(zip(shown[::2], shown[1::2], strict=True))
    assert len(pairs) >= 8
    dbg = Debugger(ROOT / "replays" / "tool_round.jsonl")
    try:
        for command, output in pairs:
            assert dbg.text(command) == output, command
    finally:
        dbg.stepper.close()


def test_a_model_effect_line_says_the_request_was_retried() -> None:
    from fsm_agent.cli.debugger import effect_summary

    retry = {"event": "ModelRetry", "attempt": 1, "status": 429, "error": "rate_limit_error: x"}
    record = {
        "name": "model",
        "request": "d",
        "args": {"messages": 2, "last": "user: hi"},
        "result": {
            "events": [retry, {**retry, "attempt": 2, "status": 529}, {"event": "MessageStop"}],
            "error": None,
        },
    }
    assert effect_summary(record) == (
        "2 messages, last user: hi → retried after 429, 529; 3 events, stop_reason None"
    )


def test_a_torn_last_line_is_not_a_step(tool_round: Path) -> None:
    """A killed run tears its last line: the index stops before it, as replay does."""
    lines = tool_round.read_bytes().splitlines(keepends=True)
    tool_round.write_bytes(b"".join(lines[:20]) + lines[20][:40])
    reseal(tool_round)
    dbg = Debugger(tool_round)
    try:
        assert dbg.stepper.index.steps == 12
        out = dbg.text("g 12")
        assert out.startswith("step 12/12: tool_execution -[tools_done]-> attachments")
        assert "(end of the log: cut short, no result)" in out.replace("\n", "")
        assert "▶" not in dbg.text("w")
        assert "▶" not in dbg.text("l")
        assert dbg.text("n").startswith("*** no step 13: the log ends after step 12")
    finally:
        dbg.stepper.close()
    from fsm_agent.app.fork import ForkError, ForkPoint, check_point
    from fsm_agent.tape.log import SessionLog

    with pytest.raises(ForkError, match=r"no step 13: the log has steps 0\.\.12"):
        check_point(SessionLog(tool_round), ForkPoint(step=13))


def test_a_damaged_record_read_by_offset_names_its_line(tool_round: Path) -> None:
    from fsm_agent.tape.log import LogError, SessionLog

    lines = tool_round.read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if '"step":5,' in line and "transition" in line)
    lines[i] = lines[i][:60] + "\n"
    tool_round.write_text("".join(lines))
    reseal(tool_round)
    index = LogIndex(SessionLog(tool_round))
    assert index.steps == 20, "the damaged line keeps its place: later steps keep their numbers"
    with pytest.raises(LogError, match=rf"{re.escape(str(tool_round))}:{i + 1}: changed after"):
        index.transition(5)
    assert str(index.damage).startswith(f"{tool_round}:{i + 1}: ")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            "p tool_context.read_files.items",
            "*** no field 'items' in tool_context.read_files (keys:",
        ),
        ("p __class__", "*** no field '__class__' (LoopState fields: messages,"),
        ("p messages.__len__", "*** no field '__len__' in messages (3 items)"),
        ("p usage.total", "*** no field 'total' in usage (fields: input_tokens,"),
        ("p turn_count.real", "*** no field 'real' in turn_count (it has no fields)"),
        ("p it.tool_results.0.__dict__", "*** no field '__dict__' in it.tool_results.0 (fields:"),
        ("p it.__class__", "*** no field 'it.__class__' (it. fields:"),
    ],
)
def test_p_walks_data_fields_only(dbg: Debugger, command: str, message: str) -> None:
    """An attribute that is not data (a method, a dunder) has no value to show."""
    dbg.onecmd("g 12")
    assert dbg.text(command).replace("\n", "").startswith(message)


def test_p_indexes_lists_and_reads_keys_with_dots(dbg: Debugger) -> None:
    dbg.onecmd("g 12")
    assert dbg.text("p messages.1.role") == "messages.1.role = 'assistant'\n"
    (path,) = dbg.stepper.at(12).state.tool_context.read_files  # type: ignore[union-attr]
    assert path.endswith("/notes.txt")
    dbg.width = 1000
    assert dbg.text(f"p tool_context.read_files.{path}").startswith(
        f"tool_context.read_files.{path} = 1"
    )


def _session(dbg: Debugger, monkeypatch: pytest.MonkeyPatch, *lines: str) -> str:
    """`interact` fed `lines` as typed; EOF (Ctrl-D) after them. What it printed."""
    import io

    from rich.console import Console

    typed = iter(lines)

    def fake_input(prompt: str) -> str:
        print(prompt, end="", file=out)
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    out = io.StringIO()
    monkeypatch.setattr("builtins.input", fake_input)
    dbg.interact(Console(file=out, width=100, color_system=None))
    return out.getvalue()


def test_an_unexpected_failure_is_a_line_and_the_session_goes_on(
    dbg: Debugger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pdb's habit: a command that fails prints `***`, it does not end the session."""

    def broken(arg: str) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(dbg, "do_msgs", broken)
    out = _session(dbg, monkeypatch, "msgs", "n")
    assert "(fsm) *** RuntimeError: a bug\n(fsm) step 1/20: preprocess" in out
    # Ctrl-D leaves on a line of its own, as pdb does.
    assert out.endswith("(fsm) \n")


def test_msgs_lists_the_messages_of_each_request_the_step_made() -> None:
    """A compaction request is sent the conversation before it is compacted, which no
    state holds; the query after it gets the compacted one."""
    dbg = Debugger(ROOT / "replays" / "autocompact.jsonl")
    try:
        dbg.onecmd("g 57")
        msgs = dbg.text("msgs").splitlines()
        assert msgs[0] == "model request: scripted (compact), max_tokens 20000, 18 messages"
        assert len(msgs) == 1 + 18
        assert msgs[1] == "   0 user: Set up the notes project and check it."
        assert msgs[18].startswith("  17 user: Your task is to create a detailed summary")
        dbg.onecmd("g 59")
        msgs = dbg.text("msgs").splitlines()
        assert msgs[0] == "model request: scripted (query), max_tokens 32000, 5 messages"
        assert len(msgs) == 1 + 5 and "This session is being continued" in msgs[1]
        dbg.stepper._restart()  # as going back past the cache does
        dbg.onecmd("g 57")  # states (and requests) rebuilt by replaying again
        assert len(dbg.text("msgs").splitlines()) == 1 + 18
    finally:
        dbg.stepper.close()


def test_p_messages_numbers_each_message_by_its_index() -> None:
    """As `diff` does: past ten messages, the first lines shown are not message 0."""
    dbg = Debugger(ROOT / "replays" / "autocompact.jsonl")
    try:
        dbg.onecmd("b messages>10")
        assert dbg.text("c").startswith("step 35/62")
        shown = dbg.text("p messages").splitlines()
        assert shown[0].startswith("11 messages, digest ")
        assert shown[1] == "     … 1 earlier (p messages.N shows one)"
        assert shown[2].startswith("   1 assistant: Creating the notes.")
        assert shown[-1].startswith("  10 user: [tool_result")
        assert shown[-1][4:] in dbg.text("diff")
        assert dbg.text("p messages.0.role") == "messages.0.role = 'user'\n"
    finally:
        dbg.stepper.close()


def test_a_blocked_prompt_shows_its_end_and_its_hook(workspace: Path, tmp_path: Path) -> None:
    """A prompt hook ends the run on the machine's first edge: step 1, its hook an effect
    of that step."""
    from fsm_agent.app.session import run_scenario

    scenario = tmp_path / "blocked.json"
    scenario.write_text(
        json.dumps(
            {
                "config": {"permission_mode": "acceptEdits"},
                "prompt": "hi",
                "hooks": {"UserPromptSubmit": [{"blocking_errors": ["no prompts today"]}]},
                "turns": [{"content": [{"type": "text", "text": "hi"}]}],
            }
        )
    )
    log = tmp_path / "blocked.jsonl"
    assert run_scenario(scenario, cwd=workspace, log=log).reason == "prompt_blocked"
    dbg = Debugger(log)
    try:
        assert dbg.text("g 0") == "step 0/1: start, in preprocess  turn 1\n"
        assert dbg.text("l").splitlines()[1].startswith("  ▶ -[prompt_blocked]-> prompt_blocked")
        assert dbg.text("n") == (
            "step 1/1: preprocess -[prompt_blocked]-> prompt_blocked  turn 1  "
            "(end: prompt_blocked)\n"
        )
        assert dbg.text("effects") == (
            '#1   hooks        UserPromptSubmit → {"blocking_errors":["no prompts today"]}\n'
        )
    finally:
        dbg.stepper.close()


def test_a_prompt_blocked_in_an_older_log_ends_before_step_1() -> None:
    """Logs from before the edge recorded no step for a blocked prompt: step 0 is its end."""
    dbg = Debugger(ROOT / "tests" / "fixtures" / "logs_v3" / "prompt_blocked.jsonl")
    try:
        assert dbg.text("g 0") == "step 0/0: start, in preprocess  turn 1  (end: prompt_blocked)\n"
        assert dbg.text("l").splitlines() == [
            "now in preprocess",
            "  the run ended prompt_blocked before its first edge",
        ]
    finally:
        dbg.stepper.close()


def test_help_knows_every_command_by_each_of_its_names(dbg: Debugger) -> None:
    names = dbg.get_names_plain()
    assert {"jump", "print", "cont", "cl", "bt", "exit", "h"} <= set(names)
    for name in names:
        assert not dbg.text(f"help {name}").startswith("***"), name


@pytest.mark.parametrize("command", ["g -1", "j -3", "diff -1 7", "diff -5 -3", "diff 3 -2"])
def test_a_negative_step_is_refused(dbg: Debugger, command: str) -> None:
    dbg.onecmd("g 10")
    assert dbg.text(command).startswith("*** no step -")
    assert dbg.text(command).endswith(": the log has steps 0..20\n")
    assert dbg.pos == 10


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("messages>abc", "> compares numbers (a list, compared by its length)"),
        ("turn_count>abc", "> compares numbers"),
        ("turn_count==abc", "turn_count is a number; 'abc' is not a number"),
        ("messages=abc", "messages is a list, compared by its length; 'abc' is not a number"),
        ("stop_hook_active==yes", "stop_hook_active is true or false"),
        ("turn=abc", "turn=N takes a turn number"),
        ("it.tool_use_blocks>x", "> compares numbers (a list, compared by its length)"),
        ("it.stop_reason>3", "it.stop_reason and 3 do not compare"),
    ],
)
def test_a_breakpoint_that_could_never_fire_is_refused(dbg: Debugger, spec: str, why: str) -> None:
    dbg.onecmd("g 3")
    assert dbg.text(f"b {spec}").replace("\n", "") == f"*** cannot read breakpoint {spec!r}: {why}"
    assert dbg.text(f"tbreak {spec}").replace("\n", "") == (
        f"*** cannot read breakpoint {spec!r}: {why}"
    )
    assert dbg.breakpoints == {}


def test_a_condition_on_a_field_that_is_null_for_now_is_kept(dbg: Debugger) -> None:
    assert dbg.text("b max_output_tokens_override>3") == (
        "breakpoint 1: max_output_tokens_override>3\n"
    )
    assert dbg.text("b it.stop_reason=max_tokens") == "breakpoint 2: it.stop_reason=max_tokens\n"


def test_a_reader_that_goes_away_is_not_a_divergence() -> None:
    """`replay LOG --path | head -1`: exit 1 means diverged, so a closed pipe is exit 0."""
    import subprocess

    log = str(ROOT / "replays" / "autocompact.jsonl")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsm_agent.cli", "replay", "--path", log],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""


def test_effects_numbers_each_effect_as_edit_effect_counts_them(dbg: Debugger) -> None:
    """#K is the K-th `"t": "effect"` line of the log, the K of `--edit-effect K`."""
    effect_lines = [
        json.loads(line) for line in dbg.path.read_text().splitlines() if '"t":"effect"' in line
    ]
    for step in range(1, dbg.stepper.index.steps + 1):
        dbg.onecmd(f"g {step}")
        for line in dbg.text("effects").splitlines():
            if line.startswith("#"):
                number, name = line[1:].split()[:2]
                assert effect_lines[int(number) - 1]["name"] == name
                assert effect_lines[int(number) - 1]["step"] == step


def test_a_divergence_found_after_its_step_says_why_the_steps_were_shown(tmp_path: Path) -> None:
    """A call started while the model streamed asks at step 10; its divergence surfaces
    when the calls are collected, after step 11, which the debugger had already shown."""
    rows = (ROOT / "replays" / "tool_round.jsonl").read_text().splitlines(keepends=True)
    second_model = [i for i, r in enumerate(rows) if '"name":"model"' in r][1]
    assert '"step":10' in rows[second_model] and "notes.txt" in rows[second_model]
    # The block and the deltas that build it, changed alike (the log checks one by the other).
    record = json.loads(rows[second_model])
    for event in record["result"]["events"]:
        if event["event"] == "BlockDelta":
            event["delta"] = ""
        if event["event"] == "BlockStop":
            event["block"]["input"]["file_path"] = "other.txt"
            first = next(e for e in record["result"]["events"] if e["event"] == "BlockDelta")
            first["delta"] = json.dumps(event["block"]["input"])
    rows[second_model] = json.dumps(record, separators=(",", ":")) + "\n"
    log = tmp_path / "early.jsonl"
    log.write_text("".join(rows))
    reseal(log)
    dbg = Debugger(log)
    try:
        assert dbg.text("g 11").startswith("step 11/")
        out = dbg.text("n")
        assert "diverged at step 10: effect permission" in out
        assert "asked for it at step 10" in out and "steps 10..11 were shown" in out
    finally:
        dbg.stepper.close()


def test_ctrl_c_during_a_command_stops_it_and_the_session_goes_on(
    dbg: Debugger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while `c` runs through the log: the replay in flight is dropped, the
    position stays, and the next commands replay again as needed."""
    seen = dbg.stepper._seen
    pressed = []

    async def ctrl_c_at_step_5(info: StepInfo) -> None:
        if info.step == 5 and not pressed:
            pressed.append(info.step)
            raise KeyboardInterrupt
        await seen(info)

    monkeypatch.setattr(dbg.stepper, "_seen", ctrl_c_at_step_5)
    out = _session(dbg, monkeypatch, "g 2", "c", "n", "g 20")
    assert "*** interrupted; still at step 2" in out
    assert "step 3/20: " in out and "step 20/20: " in out
    assert pressed == [5]


def test_a_breakpoint_on_a_file_read_names_the_file_by_its_path(dbg: Debugger) -> None:
    (path,) = dbg.stepper.at(12).state.tool_context.read_files  # type: ignore[union-attr]
    first = next(
        s
        for s in range(1, 13)
        if path in dbg.stepper.at(s).state.tool_context.read_files  # type: ignore[union-attr]
    )
    dbg.onecmd("g 0")
    assert dbg.text(f"b tool_context.read_files.{path}>0").startswith("breakpoint 1: ")
    assert dbg.text("c").startswith(f"step {first}/")


def test_a_divergence_from_another_machine_s_log_says_so_as_check_does(
    tool_round: Path,
) -> None:
    """The debugger's report is --check's (docs/replay.md), its note on the fingerprint too:
    the likeliest reason a log from another version stops replaying."""
    rows = [json.loads(line) for line in tool_round.read_text().splitlines()]
    rows[0]["fingerprint"] = "0123456789abcdef"
    next(r for r in rows if r.get("edge") == "next_turn")["state"] = "0" * 16
    write_log(tool_round, rows)
    report = fsm("replay", "--check", str(tool_round)).stderr
    assert "  note: the log was written by another machine" in report
    dbg = Debugger(tool_round, width=200)
    assert dbg.text("c") == "*** stopped at step 6: the code no longer replays the log\n" + report
    assert dbg.text("n") == "*** no step 7: the code no longer replays the log\n" + report
    dbg.stepper.close()


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("n ²", "*** usage: n [COUNT] (a number of steps, 1 or more)"),
        ("back ¹", "*** usage: back [COUNT] (a number of steps, 1 or more)"),
        ("b turn=²", "*** cannot read breakpoint 'turn=²': turn=N takes a turn number"),
        ("tbreak turn=³", "*** cannot read breakpoint 'turn=³': turn=N takes a turn number"),
    ],
)
def test_a_digit_that_is_no_number_is_a_usage_line(dbg: Debugger, command: str, usage: str) -> None:
    """`str.isdigit` takes superscripts, which `int` refuses: that ValueError was no
    usage line (the terminal loop showed `*** ValueError: invalid literal for int()`)."""
    dbg.onecmd("g 3")
    assert dbg.text(command) == usage + "\n"
    assert dbg.pos == 3 and not dbg.breakpoints


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("effects 3", "effects (no argument: this step's; g N first for step N's)"),
        ("msgs 3", "msgs (no argument: this step's; g N first for step N's)"),
        ("w 3", "w (no argument)"),
        ("bt 3", "bt (no argument)"),
        ("l 3", "l (no argument)"),
        ("c 2", "c (no argument)"),
        ("cont 2", "cont (no argument)"),
        ("r x", "r (no argument)"),
        ("diff 1 2 3", "diff [A B] (two step numbers)"),
    ],
)
def test_a_command_given_an_argument_it_does_not_take_refuses_it(
    dbg: Debugger, command: str, usage: str
) -> None:
    """`effects 3` showed step 10's effects as if they were step 3's, and `c 2` ran on
    as if 2 meant something: a usage line instead, and the position stays."""
    dbg.onecmd("g 10")
    assert dbg.text(command) == f"*** usage: {usage}\n"
    assert dbg.pos == 10


def test_what_the_model_and_tools_wrote_is_shown_not_obeyed(
    workspace: Path, tmp_path: Path
) -> None:
    """Text from the log is data: rich markup in it (`[/x]`, `[bold]`) was read as markup
    in `p`'s and `b`'s tables (`p it` failed with a MarkupError, `[bold]` vanished), and
    a terminal escape a tool printed (ESC [2J clears the screen) reached the terminal.
    Both are shown as written, the escapes left out, as the live renderer does."""
    from fsm_agent.app.session import run_scenario

    marked = "[/x] [bold]it[/bold]"
    write = {"file_path": "a.txt", "content": f"\x1b[2J{marked}\n"}
    scenario = tmp_path / "marked.json"
    scenario.write_text(
        json.dumps(
            {
                "config": {"permission_mode": "acceptEdits"},
                "prompt": f"go {marked}",
                "turns": [
                    {
                        "content": [
                            {"type": "text", "text": f"Writing {marked}"},
                            {"type": "tool_use", "id": "t1", "name": "Write", "input": write},
                        ]
                    },
                    {
                        "content": [
                            {"type": "tool_use", "id": "t2", "name": "Read",
                             "input": {"file_path": "a.txt"}}
                        ]
                    },
                    {"content": "done"},
                ],
            }
        )
    )  # fmt: skip
    log = tmp_path / "marked.jsonl"
    assert run_scenario(scenario, cwd=workspace, log=log).reason == "completed"
    dbg = Debugger(log, width=400)
    shown = []
    try:
        for step in range(dbg.stepper.index.steps + 1):
            dbg.onecmd(f"g {step}")
            for command in ("p", "p it", "msgs", "effects", "diff", "p messages"):
                out = dbg.text(command)
                assert "\x1b" not in out and "MarkupError" not in out, (step, command)
                shown.append(out)
        path = marked.replace(" ", "")
        assert dbg.text(f"b tool_context.read_files./{path}>0").endswith(f"/{path}>0\n")
        assert f"/{path}>0" in dbg.text("b")
    finally:
        dbg.stepper.close()
    everything = "".join(shown)
    assert f"Writing {marked}" in everything
    assert f"1→[2J{marked}" in everything


def test_a_count_past_a_divergence_stops_where_the_replay_stopped(tool_round: Path) -> None:
    """`n 10` from step 3 of a log that stops replaying at step 7 went nowhere; like `c`
    (and gdb's `next 10` into a crash), it goes as far as the replay went and says why."""
    rows = [json.loads(line) for line in tool_round.read_text().splitlines()]
    next(r for r in rows if r.get("edge") == "next_turn")["state"] = "0" * 16
    write_log(tool_round, rows)
    report = fsm("replay", "--check", str(tool_round)).stderr
    dbg = Debugger(tool_round, width=200)
    try:
        dbg.onecmd("g 3")
        stopped = "*** stopped at step 6: the code no longer replays the log\n" + report
        assert dbg.text("n 10") == stopped
        assert dbg.pos == 6
        assert dbg.text("n") == "*** no step 7: the code no longer replays the log\n" + report
        dbg.onecmd("g 3")
        assert dbg.text("n 3").startswith("step 6/20: attachments -[attached]-> continuation")
    finally:
        dbg.stepper.close()


def test_effects_at_the_end_of_a_log_cut_short_shows_the_unfinished_step_s(
    tool_round: Path,
) -> None:
    """A run killed while a tool ran leaves that step's first effects (the permission
    granted) and no transition for it: `effects` at the last step shows them, the
    only place the debugger can, numbered as --edit-effect counts them."""
    rows = tool_round.read_text().splitlines(keepends=True)
    killed = next(i for i, r in enumerate(rows) if '"name":"tool"' in r)
    tool_round.write_text("".join(rows[:killed]))
    reseal(tool_round)
    dbg = Debugger(tool_round, width=200)
    try:
        assert dbg.text("g 4").startswith("step 4/4: abort_check -[tool_use]-> tool_execution")
        lines = dbg.text("effects").splitlines()
        assert lines[:2] == [
            "step 4 has no effect records",
            "step 5, where the log ends (the run was killed in it), asked for:",
        ]
        assert lines[2].startswith("#2   permission   ")
        assert '"behavior":"allow"' in lines[2] and len(lines) == 3
        assert dbg.text("g 3").splitlines()[0].startswith("step 3/4")
        assert dbg.text("effects").startswith("#1   model ")
        assert "where the log ends" not in dbg.text("effects")
    finally:
        dbg.stepper.close()


def test_a_log_still_written_is_debugged_as_it_was_when_opened(tool_round: Path) -> None:
    """The index is of the log as opened; the replay read on as the run wrote more and
    went past it (`step 20/7`, then `w` failed with an IndexError). Both see the same
    records now: the steps there were, cut short after the last."""
    whole = tool_round.read_bytes()
    rows = whole.splitlines(keepends=True)
    seventh = next(i for i, r in enumerate(rows) if b'"step":7,"from"' in r)
    tool_round.write_bytes(b"".join(rows[: seventh + 1]) + rows[seventh + 1][:10])
    reseal(tool_round)
    dbg = Debugger(tool_round, width=200)
    try:
        tool_round.write_bytes(whole)  # the run goes on writing
        ended = "the log ends after step 7 without a result"
        assert dbg.text("c") == f"*** stopped at step 7: {ended}: {LogEnded.WHY}\n"
        assert dbg.pos == 7
        assert "→    7 continuation -[next_turn]-> preprocess  turn 2" in dbg.text("w")
        assert dbg.text("g 8").startswith(f"*** no step 8: {ended}")
        assert dbg.text("effects") == "step 7 has no effect records\n"
    finally:
        dbg.stepper.close()
    assert Debugger(tool_round).stepper.index.steps == 20


def test_a_tool_breakpoint_on_a_tool_the_session_lacks_says_so(tool_round: Path) -> None:
    """`b tool=read` (Read's name mistyped) was set without a word and never fired; it
    is still set (a model may ask for a tool it was not given), with a note saying so."""
    dbg = Debugger(tool_round, width=200)
    tools = ", ".join(spec.name for spec in dbg.stepper.specs)
    assert dbg.text("b tool=read") == (
        f"breakpoint 1: tool=read (this session has no tool 'read': {tools}; "
        "it fires only if the model asks for one anyway)\n"
    )
    assert dbg.text("tbreak tool=read").startswith("temporary breakpoint 2: tool=read (this")
    assert dbg.text("b tool=Read") == "breakpoint 3: tool=Read\n"
    assert "tool=read" in dbg.text("b")
    dbg.stepper.close()


@pytest.mark.parametrize("result", [{"events": 5}, {"events": [3]}, {"error": "lost"}, [1]])
def test_a_damaged_effect_of_the_step_a_run_was_killed_in_is_shown_as_recorded(
    tool_round: Path, result: object
) -> None:
    """The replay never reaches (so never checks) the effects of the step the run was
    killed in; `effects` shows them, a model result of the wrong shape as it is."""
    rows = [json.loads(line) for line in tool_round.read_text().splitlines()]
    model = next(i for i, r in enumerate(rows) if r.get("name") == "model")
    rows[model]["result"] = result
    write_log(tool_round, rows[: model + 1])
    dbg = Debugger(tool_round, width=200)
    try:
        assert dbg.text("g 2").startswith("step 2/2:")
        lines = dbg.text("effects").splitlines()
        assert lines[1] == "step 3, where the log ends (the run was killed in it), asked for:"
        assert lines[2].startswith("#1   model ") and json.dumps(result)[:5] in lines[2]
    finally:
        dbg.stepper.close()


def test_b_n_breaks_at_a_step_number(dbg: Debugger) -> None:
    """pdb's `b LINENO`: the debugger's positions are steps, and `b 5` was refused."""
    assert dbg.text("b 5") == "breakpoint 1: step=5\n"
    out = dbg.text("c")
    assert out.startswith("step 5/20:") and "breakpoint 1 (step=5)" in out
    assert dbg.text("c").startswith("step 20/20")
    assert dbg.text("b step=9") == "breakpoint 2: step=9\n"
    assert dbg.text("b 99") == "*** no step 99 to stop at: the log has steps 1..20\n"


def test_disable_and_enable_keep_a_breakpoint_but_stop_it_firing(dbg: Debugger) -> None:
    dbg.onecmd("b edge=next_turn")
    dbg.onecmd("b 12")
    assert dbg.text("disable 1") == "disabled breakpoint 1\n"
    assert "edge=next_turn (disabled)" in dbg.text("b")
    assert dbg.text("c").startswith("step 12/20:")
    assert dbg.text("enable 1") == "enabled breakpoint 1\n"
    assert dbg.text("c").startswith("step 14/20: continuation -[next_turn]->")
    assert dbg.text("disable") == "disabled breakpoints 1, 2\n"
    assert dbg.text("c").startswith("step 20/20")
    assert dbg.text("disable 7") == "*** no breakpoint '7'\n"


def test_until_runs_to_a_step_and_breakpoints_stop_it_first(dbg: Debugger) -> None:
    assert dbg.text("until 6").startswith("step 6/20:")
    assert dbg.text("until").startswith("step 7/20:")
    dbg.onecmd("b 10")
    out = dbg.text("unt 15")
    assert out.startswith("step 10/20:") and "breakpoint 1" in out
    assert dbg.text("until 3") == "*** step 3 is not ahead (at step 10): g 3 goes there\n"
    assert dbg.text("until 40") == "*** no step 40: the log has steps 0..20\n"
    assert dbg.text("until x") == "*** usage: until [N] (a step number)\n"


def test_ll_lists_the_whole_machine_with_the_current_state_marked(dbg: Debugger) -> None:
    dbg.onecmd("g 3")
    lines = dbg.text("ll").splitlines()
    assert "→ abort_check" in lines
    assert any(line.strip().startswith("▶ -[tool_use]-> tool_execution") for line in lines)
    assert "  preprocess" in lines and "  recovery" in lines
    assert dbg.text("ll") == dbg.text("longlist")
    assert len(lines) > len(dbg.text("l").splitlines())


def test_diff_lists_the_effects_between_two_steps_whose_states_agree() -> None:
    """`diff 0 7` on max_turns: its Glob ran in between, though the state changes only at
    the next turn; the diff says so rather than '(no difference)' alone."""
    debugger = Debugger(ROOT / "replays" / "max_turns.jsonl")
    try:
        shown = debugger.text("diff 0 7").splitlines()
    finally:
        debugger.stepper.close()
    assert shown[:2] == ["LoopState, step 0 → step 7:", "  (no difference)"]
    assert shown[2] == "effects of steps 1..7:"
    assert any(line.split()[1:3] == ["tool", "Glob"] for line in shown[3:]), shown


def test_a_ctrl_c_while_a_command_s_output_prints_leaves_the_console_writing(
    dbg: Debugger, monkeypatch: pytest.MonkeyPatch, ctrl_c_raises: None
) -> None:
    """A real SIGINT landing inside rich's print, just after it opened its buffer, used
    to leave the console buffering: every later command's output was kept unwritten."""
    import signal

    from rich.console import Console

    opened = Console._enter_buffer
    sent: list[bool] = []

    def enter_then_interrupt(self: Console) -> None:
        opened(self)
        if not sent and dbg.pos == 1:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(Console, "_enter_buffer", enter_then_interrupt)
    out = _session(dbg, monkeypatch, "n", "n")
    assert sent
    assert "step 1/20" in out and "step 2/20" in out
