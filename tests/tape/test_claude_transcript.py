"""Reading a Claude Code transcript: hand-made ones, each the smallest that shows a rule."""

from __future__ import annotations

import pytest

from fsm_agent.core.messages import TextBlock, ToolUseBlock
from fsm_agent.tape.claude_transcript import TranscriptError, read_transcript
from tests.support.transcripts import CALL, entry, jsonl, prompt, result, said


def test_a_response_s_lines_sharing_a_message_id_are_one_response() -> None:
    found = read_transcript(
        jsonl(
            prompt(1, "go"),
            said(2, "m1", {"type": "text", "text": "Listing."}),
            said(3, "m1", CALL),
            result(4, "t1", "a.txt"),
            said(5, "m2", {"type": "text", "text": "One file."}),
        )
    )
    (run,) = found.runs
    assert [r.message_id for r in run.responses] == ["m1", "m2"]
    assert run.responses[0].content == (
        TextBlock("Listing."),
        ToolUseBlock("t1", "Bash", {"command": "ls"}),
    )
    assert run.results["t1"].content == "a.txt"
    assert run.results["t1"].response == {"stdout": "a.txt"}
    assert found.session_id == "s-1" and found.cwd == "/ws" and found.model == "claude-x"


def test_what_a_transcript_does_not_record_is_assumed_once() -> None:
    found = read_transcript(
        jsonl(
            prompt(1, "a"),
            said(2, "m1", {"type": "text", "text": "x"}),
            prompt(3, "b"),
            said(4, "m2", {"type": "text", "text": "y"}),
        )
    )
    assert all(a.startswith("assumed: ") for a in found.assumptions)
    assert len(found.assumptions) == len(set(found.assumptions))
    assert any("max_tokens" in a for a in found.assumptions)
    assert any("stop_reason is null" in a for a in found.assumptions)
    assert [run.prompt for run in found.runs] == ["a", "b"]


def test_broken_lines_are_warnings_naming_them_and_the_rest_is_read() -> None:
    data = jsonl(prompt(1, "go"), "a bare string", 42, {"no": "type"}) + b"{not json\n"
    data += jsonl(said(6, "m1", {"type": "text", "text": "ok"}), prompt(1, "go"))
    found = read_transcript(data, "t.jsonl")
    assert [w.split(": ", 1)[0] for w in found.warnings] == [
        "t.jsonl:2",
        "t.jsonl:3",
        "t.jsonl:4",
        "t.jsonl:5",
        "t.jsonl:7",
    ]
    assert "not valid JSON" in found.warnings[3]
    assert "repeats the entry of line 1" in found.warnings[4]
    assert len(found.runs) == 1 and found.runs[0].responses[0].content == (TextBlock("ok"),)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "no user prompt"),
        (b'"just a string"\n[1]\n', "not a Claude Code transcript"),
        (b'{"format": "fsm-agent-session", "version": 2}\n', "an fsm-agent session log"),
        (jsonl(said(1, "m1", {"type": "text", "text": "x"})), "no user prompt"),
    ],
)
def test_a_file_with_no_run_in_it_is_one_clear_error(data: bytes, needle: str) -> None:
    with pytest.raises(TranscriptError, match=needle):
        read_transcript(data, "f.jsonl")


def test_a_sidechain_is_kept_apart() -> None:
    side = said(3, "ms", {"type": "text", "text": "subagent"})
    side["isSidechain"] = True
    found = read_transcript(
        jsonl(
            prompt(1, "go"),
            said(2, "m1", CALL),
            side,
            result(4, "t1", "done"),
            said(5, "m2", {"type": "text", "text": "x"}),
        )
    )
    assert [(s.first_line, s.entries) for s in found.sidechains] == [(3, 1)]
    assert [r.message_id for r in found.runs[0].responses] == ["m1", "m2"]


def test_a_subagent_s_own_transcript_is_its_run() -> None:
    """Claude Code 2.1 writes a subagent's lines (all `isSidechain`) to a file of their
    own: read as a subagent's, they are its run, the `agentId` kept."""
    lines = [
        prompt(1, "Say what notes.txt holds."),
        said(2, "ms1", CALL, stop="tool_use"),
        result(3, "t1", "hello"),
        said(4, "ms2", {"type": "text", "text": "It says hello."}, stop="end_turn"),
    ]
    for line in lines:
        line.update(isSidechain=True, agentId="a1")
    found = read_transcript(jsonl(*lines), subagent=True)
    assert found.agent_id == "a1" and found.sidechains == ()
    [run] = found.runs
    assert run.prompt == "Say what notes.txt holds."
    assert [r.message_id for r in run.responses] == ["ms1", "ms2"]
    with pytest.raises(TranscriptError, match="no user prompt"):
        read_transcript(jsonl(*lines))  # as a session's transcript it holds no main run


def test_stop_hooks_an_interrupt_and_retries_are_read() -> None:
    summary = entry(
        "system",
        3,
        subtype="stop_hook_summary",
        hookErrors=["[h]: more\n"],
        preventedContinuation=False,
        stopReason="",
    )
    feedback = entry(
        "user",
        4,
        isMeta=True,
        message={"role": "user", "content": "Stop hook feedback:\n[h]: more\n"},
    )
    retry = entry(
        "system",
        5,
        subtype="api_error",
        retryInMs=500,
        retryAttempt=1,
        maxRetries=10,
        error={"status": 529, "formatted": "529 Overloaded"},
    )
    interrupt = entry(
        "user",
        7,
        message={
            "role": "user",
            "content": [{"type": "text", "text": "[Request interrupted by user]"}],
        },
    )
    found = read_transcript(
        jsonl(
            prompt(1, "go"),
            said(2, "m1", {"type": "text", "text": "a"}),
            summary,
            feedback,
            retry,
            said(6, "m2", {"type": "text", "text": "b"}),
            interrupt,
        )
    )
    (run,) = found.runs
    assert [h.blocking_errors for h in run.stop_hooks] == [("[h]: more\n",)]
    assert run.responses[1].retries[0].status == 529
    assert run.responses[1].retries[0].delay_s == 0.5
    assert run.interrupted


def test_the_run_options_a_newer_transcript_records_are_read() -> None:
    """max_tokens from the loop's api-request lines (not a title's), --max-turns from
    the line Claude Code writes when the run ends at it."""
    asked = [
        {"type": "api-request", "querySource": "sdk", "params": {"max_tokens": 32000}},
        {"type": "api-request", "querySource": "title", "params": {"max_tokens": 512}},
        {"type": "api-request", "querySource": "sdk", "params": {"max_tokens": 64000}},
    ]
    ended = entry("attachment", 5, attachment={"type": "max_turns_reached", "maxTurns": 1})
    found = read_transcript(
        jsonl(prompt(1, "go"), *asked, said(4, "m1", CALL, stop="tool_use"), ended)
    )
    assert found.max_tokens == (32000, 64000)
    assert found.runs[0].max_turns == 1
    assert not any(a.startswith("assumed: max_tokens") for a in found.assumptions)


def test_a_call_whose_input_was_not_json_holds_the_raw_text() -> None:
    cut = {"type": "tool_use", "id": "t1", "name": "Read"}
    cut["input"] = {"__unparsedToolInput": {"raw": '{"file_path": ', "len": 14}}
    found = read_transcript(jsonl(prompt(1, "go"), said(2, "m1", cut, stop="tool_use")))
    (response,) = found.runs[0].responses
    assert response.content == (ToolUseBlock("t1", "Read", {}),)
    assert response.unparsed == (("t1", '{"file_path": '),)


def test_a_prompt_a_hook_blocked_is_a_run_the_hook_blocks() -> None:
    notice = entry(
        "system",
        1,
        subtype="informational",
        content="UserPromptSubmit operation blocked by hook:\n[ups.sh]: not that\n\n\n"
        "Original prompt: hi",
        promptSubmitEnding={"ending": {"kind": "blocked_by_hook", "reason": "not that"}},
    )
    (run,) = read_transcript(jsonl(notice)).runs
    assert run.prompt == "hi" and not run.responses
    assert run.prompt_hook is not None
    assert run.prompt_hook.blocking_errors == ("[ups.sh]: not that\n",)


def test_a_tool_hook_s_continue_false_is_read_as_the_run_s_stop_on_that_call() -> None:
    """Claude Code's `hook_stopped_continuation` attachment (measured, 2.1.x): the import
    answers that event's hooks for that call with the stop, so it ends where the CLI did."""
    stopped = entry(
        "attachment",
        4,
        attachment={"type": "hook_stopped_continuation", "message": "halt",
                    "hookName": "PreToolUse:Bash", "toolUseID": "t1", "hookEvent": "PreToolUse"},
    )  # fmt: skip
    stop_event = {"type": "hook_stopped_continuation", "hookEvent": "Stop", "toolUseID": "t1"}
    other = entry("attachment", 5, attachment=stop_event)
    data = jsonl(prompt(1, "go"), said(2, "m1", CALL, stop="tool_use"), result(3, "t1", "ok"),
                 stopped, other)  # fmt: skip
    (run,) = read_transcript(data).runs
    assert run.tool_hook_stops == {("PreToolUse", "t1"): "halt"}


def test_an_automatic_compaction_stays_in_its_run_and_kept_copies_are_read_once() -> None:
    boundary = entry(
        "system",
        4,
        subtype="compact_boundary",
        compactMetadata={"trigger": "auto", "preTokens": 30_000},
    )
    summary = entry(
        "user",
        5,
        isCompactSummary=True,
        message={
            "role": "user",
            "content": "This session is being continued from a previous conversation. "
            "The summary below covers the earlier portion of the conversation.\n\n"
            "Summary:\nListed the files.\n\nIf you need specific details, read the "
            "full transcript.",
        },
    )
    found = read_transcript(
        jsonl(
            prompt(1, "go"),
            said(2, "m1", CALL, stop="tool_use"),
            result(3, "t1", "a.txt"),
            boundary,
            summary,
            said(6, "m1", CALL, stop="tool_use"),  # kept by the compaction, written again
            result(7, "t1", "[Old tool result content cleared]"),
            said(8, "m2", {"type": "text", "text": "One file."}),
        )
    )
    (run,) = found.runs
    assert run.compactions == ("Listed the files.",)
    assert [r.message_id for r in run.responses] == ["m1", "m2"]
    assert run.results["t1"].content == "a.txt"
    assert found.compacted_at == (30_000,)
    assert not found.warnings


def test_a_compaction_of_another_trigger_starts_a_run_from_its_summary() -> None:
    boundary = entry("system", 3, subtype="compact_boundary", compactMetadata={"trigger": "manual"})
    summary = entry(
        "user", 4, isCompactSummary=True, message={"role": "user", "content": "Summary:\nx"}
    )
    found = read_transcript(
        jsonl(prompt(1, "go"), said(2, "m1", {"type": "text", "text": "a"}), boundary, summary)
    )
    assert [r.compacted for r in found.runs] == [True, True]
    assert any("a compaction's summary" in w for w in found.warnings)
