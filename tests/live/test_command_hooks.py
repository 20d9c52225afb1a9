"""Claude Code command hooks, run unchanged: real shell scripts reading stdin JSON."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import arun_scenario, replay, run_scenario
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import CommandHook, HookMatcher
from fsm_agent.hooks.commands import HookRun, interpret, matcher_matches, parse_hooks
from fsm_agent.hooks.outcomes import HookOutcome, merge
from fsm_agent.live.command_hooks import CommandHooks
from fsm_agent.live.scripted import Scenario
from fsm_agent.live.transcript_writer import transcript_path
from tests.support.cli import fsm
from tests.support.hooks import capture, results_by_id, script, tool_turn

# A hook as one would write it for Claude Code: no jq, python3 reads stdin.
GUARD = """\
input=$(cat)
echo "$input" > "$CLAUDE_PROJECT_DIR/pre-input.json"
cmd=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command", ""))')
case "$cmd" in
  *rm\\ -rf*) echo "Blocked: rm -rf is not allowed here" >&2; exit 2 ;;
esac
exit 0
"""


@pytest.mark.parametrize(
    ("matcher", "value", "hit"),
    [
        ("", "Bash", True),
        ("*", "Anything", True),
        ("Bash", "Bash", True),
        ("Bash", "BashX", False),
        ("Edit|Write", "Write", True),
        ("Edit, Write", "Write", True),
        ("Edit.*", "NotebookEdit", True),
        ("^Edit$", "NotebookEdit", False),
        ("mcp__.*__write", "mcp__fs__write", True),
        ("bash", "Bash", False),
    ],
)
def test_matchers(matcher: str, value: str, hit: bool) -> None:
    assert matcher_matches(matcher, value) is hit


def _run(ws: Path, data: dict[str, Any], tmp_path: Path, **kw: Any) -> Any:
    data = {"prompt": "go", **data}
    log = tmp_path / "run.jsonl"
    result = run_scenario(Scenario.parse(data), cwd=ws, log=log, **kw)
    replayed = replay(log)
    assert replayed.path == result.path
    return result


def test_pre_tool_use_hook_blocks_with_exit_2_and_gets_claude_code_stdin(
    workspace: Path, tmp_path: Path
) -> None:
    guard = script(tmp_path / "guard.sh", GUARD)
    settings = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]
        },
    }
    result = _run(
        workspace,
        {
            "settings": settings,
            "turns": [
                tool_turn(("t1", "Bash", {"command": "rm -rf build"})),
                tool_turn(("t2", "Bash", {"command": "echo fine"})),
                {"content": [{"type": "text", "text": "done"}]},
            ],
        },
        tmp_path,
    )
    results = results_by_id(result)
    assert results["t1"].is_error
    assert "Blocked: rm -rf is not allowed here" in results["t1"].text
    assert results["t2"].text == "fine"
    sent = json.loads((workspace / "pre-input.json").read_text())
    assert sent["hook_event_name"] == "PreToolUse"
    assert sent["tool_name"] == "Bash"
    assert sent["tool_input"] == {"command": "echo fine"}
    assert sent["tool_use_id"] == "t2"
    assert sent["cwd"] == str(workspace)
    assert sent["permission_mode"] == "default"
    assert sent["transcript_path"] == str(transcript_path(str(workspace), result.session_id))
    assert sent["session_id"] == result.session_id


def test_pre_tool_use_json_decisions_and_updated_input(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("A\n")
    (workspace / "b.txt").write_text("B\n")
    decide = script(
        tmp_path / "decide.sh",
        """input=$(cat)
case "$input" in
  *a.txt*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"a.txt is off limits"}}' ;;
  *c.txt*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"file_path":"b.txt"},"additionalContext":"redirected to b"}}' ;;
esac
""",
    )
    settings = {
        "hooks": {
            "PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": decide}]}]
        }
    }
    result = _run(
        workspace,
        {
            "settings": settings,
            "turns": [
                tool_turn(
                    ("t1", "Read", {"file_path": "a.txt"}), ("t2", "Read", {"file_path": "c.txt"})
                ),
                {"content": [{"type": "text", "text": "done"}]},
            ],
        },
        tmp_path,
    )
    r = results_by_id(result)
    assert r["t1"].is_error and "a.txt is off limits" in r["t1"].text
    assert "B" in r["t2"].text and not r["t2"].is_error
    assert "<system-reminder>\nredirected to b\n</system-reminder>" in r["t2"].text


@pytest.mark.parametrize(
    ("permissions", "refused_by"),
    [
        ({"deny": ["Bash(rm *)"]}, "Bash(rm *)"),
        # dontAsk denies what would be asked; the hook's allow skips the asking, so the
        # call runs (it was denied), while an ask rule, which allow does not skip, holds.
        ({"defaultMode": "dontAsk", "ask": ["Bash(rm *)"]}, "dontAsk"),
    ],
)
def test_hook_allow_skips_the_prompt_but_not_deny_or_ask_rules(
    workspace: Path, tmp_path: Path, permissions: dict[str, Any], refused_by: str
) -> None:
    allow = script(
        tmp_path / "allow.sh",
        """cat > /dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'
""",
    )
    settings = {
        "permissions": permissions,
        "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": allow}]}]},
    }
    result = _run(
        workspace,
        {
            "settings": settings,
            "turns": [
                tool_turn(
                    ("t1", "Bash", {"command": "touch made"}),
                    ("t2", "Bash", {"command": "rm made"}),
                ),
                {"content": [{"type": "text", "text": "done"}]},
            ],
        },
        tmp_path,
    )
    r = results_by_id(result)
    assert not r["t1"].is_error, r["t1"].text
    assert r["t2"].is_error and refused_by in r["t2"].text
    assert (workspace / "made").exists()


def test_post_tool_use_feedback_and_continue_false_stops_the_run_after_the_turns_calls(
    workspace: Path, tmp_path: Path
) -> None:
    """A PostToolUse hook's `continue: false` lets the turn's other calls run, then ends
    the run before the model is asked again, as Claude Code 2.1.332 does."""
    post = script(
        tmp_path / "post.sh",
        """cat > /dev/null
echo "lint says: add a newline" >&2
exit 2
""",
    )
    stop = script(
        tmp_path / "stop.sh",
        """cat > /dev/null
echo '{"continue": false, "stopReason": "quota reached"}'
""",
    )
    settings = {
        "hooks": {
            "PostToolUse": [
                {"matcher": "Write", "hooks": [{"type": "command", "command": post}]},
                {"matcher": "Edit", "hooks": [{"type": "command", "command": stop}]},
            ]
        }
    }
    result = _run(
        workspace,
        {
            "config": {"permission_mode": "acceptEdits"},
            "settings": settings,
            "turns": [
                tool_turn(("t1", "Write", {"file_path": "x.txt", "content": "x"})),
                tool_turn(("t2", "Edit", {"file_path": "x.txt", "old_string": "x", "new_string": "y"}),
                           ("t3", "Write", {"file_path": "z.txt", "content": "z"})),
            ],
        },
        tmp_path,
    )  # fmt: skip
    r = results_by_id(result)
    assert "PostToolUse hook feedback:\nlint says: add a newline" in r["t1"].text
    assert result.reason == "hook_stopped"
    assert result.error == "quota reached"
    assert not r["t3"].is_error
    assert (workspace / "z.txt").read_text() == "z"
    assert result.edges.count("streamed") == 2


def test_stop_hook_blocks_then_ends_after_8_consecutive_blocks(
    workspace: Path, tmp_path: Path
) -> None:
    counter = tmp_path / "count"
    stop = script(
        tmp_path / "stop.sh",
        f"""input=$(cat)
n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}
printf '%s' "$input" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["hook_event_name"]=="Stop" else 1)' || exit 1
echo '{{"decision": "block", "reason": "Run the tests first."}}'
""",
    )
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]}}
    turns = [{"content": [{"type": "text", "text": f"done {i}"}]} for i in range(10)]
    result = _run(workspace, {"settings": settings, "turns": turns}, tmp_path)
    assert result.reason == "completed"
    assert result.edges.count("stop_hook_blocking") == 8
    assert counter.read_text().strip() == "9"
    assert result.messages[-2].text == f"Stop hook feedback:\n[{stop}]: Run the tests first."


def test_stop_hook_exit_2_feeds_stderr_back(workspace: Path, tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    stop = script(
        tmp_path / "stop.sh",
        f"""cat > /dev/null
if [ -e {flag} ]; then exit 0; fi
touch {flag}
echo "tests are failing" >&2
exit 2
""",
    )
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]}}
    turns = [
        {"content": [{"type": "text", "text": "done"}]},
        {"content": [{"type": "text", "text": "fixed"}]},
    ]
    result = _run(workspace, {"settings": settings, "turns": turns}, tmp_path)
    assert result.edges.count("stop_hook_blocking") == 1
    assert result.text == "fixed"
    assert result.messages[-2].text == f"Stop hook feedback:\n[{stop}]: tests are failing"


def test_user_prompt_submit_exit_2_blocks_without_calling_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    block = script(
        tmp_path / "block.sh",
        """input=$(cat)
case "$input" in *password*) echo "Prompt contains a secret" >&2; exit 2 ;; esac
""",
    )
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": block}]}]}}
    data = {"prompt": "my password is hunter2", "settings": settings, "turns": []}
    result = _run(workspace, data, tmp_path)
    assert result.reason == "prompt_blocked"
    assert result.edges == ("prompt_blocked",), "the machine's first edge, no model call"
    assert not result.is_error, "Claude Code's `success`: the hook did its job"
    assert result.error == (  # what Claude Code 2.1.332 answers, to the character
        f"UserPromptSubmit operation blocked by hook:\n[{block}]: Prompt contains a secret\n"
        "\n\nOriginal prompt: my password is hunter2"
    )
    assert result.messages.items == (), "the blocked prompt is erased"


def test_user_prompt_submit_json_block_and_continue_false(workspace: Path, tmp_path: Path) -> None:
    """`decision: block` erases the prompt and names the hook's reason; `continue: false`
    keeps the prompt and says only the stop reason (both as the real CLI words them)."""
    for answer, text, kept in (
        ('{"decision":"block","reason":"json says no"}',
         "UserPromptSubmit operation blocked by hook:\njson says no\n\nOriginal prompt: hi", 0),
        ('{"continue":false,"stopReason":"halt now"}', "Operation stopped by hook: halt now", 1),
    ):  # fmt: skip
        hook = script(tmp_path / "answer.sh", f"cat > /dev/null\necho '{answer}'\n")
        settings = {
            "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]}
        }
        where = tmp_path / f"case{kept}"
        where.mkdir()
        result = _run(workspace, {"prompt": "hi", "settings": settings, "turns": []}, where)
        assert (result.reason, result.error, result.is_error) == ("prompt_blocked", text, False)
        assert len(result.messages.items) == kept


def test_session_start_and_prompt_submit_add_context(workspace: Path, tmp_path: Path) -> None:
    start = script(tmp_path / "start.sh", "cat > /dev/null\necho 'Branch: main, 3 open issues'\n")
    submit = script(
        tmp_path / "submit.sh",
        """cat > /dev/null
echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"Sprint ends Friday"}}'
""",
    )
    settings = {
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": start}]}
            ],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": submit}]}],
        }
    }
    data = {"settings": settings, "turns": [{"content": [{"type": "text", "text": "ok"}]}]}
    result = _run(workspace, data, tmp_path)
    texts = [m.text for m in result.messages if m.role == "user"]
    assert texts[0] == "<system-reminder>\nBranch: main, 3 open issues\n</system-reminder>"
    assert texts[1] == "go"
    assert texts[2] == "<system-reminder>\nSprint ends Friday\n</system-reminder>"


def test_hooks_run_in_parallel_and_duplicates_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    a = f"cat > /dev/null; echo a >> {log}; sleep 0.3; echo a-done >> {log}"
    b = f"cat > /dev/null; echo b >> {log}; sleep 0.3; echo b-done >> {log}"
    matchers = (
        HookMatcher("Stop", (CommandHook(a), CommandHook(b))),
        HookMatcher("Stop", (CommandHook(a),), origin="other file"),
    )
    hooks = CommandHooks(matchers, project_dir=str(tmp_path))
    asyncio.run(hooks.run("Stop", {"session_id": "s"}))
    lines = log.read_text().split()
    assert sorted(lines[:2]) == ["a", "b"]
    assert len(lines) == 4


def test_timeout_discards_the_hook(tmp_path: Path) -> None:
    hooks = CommandHooks(
        (HookMatcher("PreToolUse", (CommandHook("cat >/dev/null; sleep 30; exit 2", 0.2),)),),
        project_dir=str(tmp_path),
    )
    outcome = asyncio.run(hooks.run("PreToolUse", {"tool_name": "Bash"}))
    assert outcome.permission_decision is None
    assert "timed out" in outcome.messages[0]


def test_interpretation_of_exit_codes_and_json() -> None:
    assert interpret("PreToolUse", HookRun("c", 1, "", "boom\nmore")).messages == (
        "PreToolUse hook error: Failed with non-blocking status code 1: boom",
    )
    json_allow = '{"hookSpecificOutput":{"permissionDecision":"allow"}}'
    assert interpret("PreToolUse", HookRun("c", 2, json_allow, "no")).permission_decision == "deny"
    assert (
        interpret("PreToolUse", HookRun("c", 0, '{"decision":"approve"}', "")).permission_decision
        == "allow"
    )
    assert interpret(
        "UserPromptSubmit", HookRun("c", 0, "plain context", "")
    ).additional_context == ("plain context",)
    assert interpret("PreToolUse", HookRun("c", 0, "plain", "")) == HookOutcome()
    long = interpret("Stop", HookRun("c", 2, "", "x" * 20_000)).blocking_errors[0]
    assert len(long) < 10_100


def test_output_nested_too_deeply_for_json_is_plain_text_not_a_crash() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    outcome = interpret("PreToolUse", HookRun("c", 0, deep, ""))
    assert outcome.permission_decision is None and outcome.updated_input is None
    assert outcome.messages == (
        "PreToolUse hook `c`: its JSON output is nested more than 100 levels deep, too "
        "deeply to be recorded; ignored",
    )
    assert interpret("Stop", HookRun("c", 2, deep, "no")).blocking_errors == ("[c]: no",)


def test_every_output_string_is_capped_at_10000_characters() -> None:
    huge = "x" * 50_000
    out = json.dumps(
        {
            "systemMessage": huge,
            "stopReason": huge,
            "continue": False,
            "hookSpecificOutput": {"additionalContext": huge},
        }
    )
    outcome = interpret("PostToolUse", HookRun("c", 0, out, ""))
    for text in (*outcome.messages, outcome.stop_reason, *outcome.additional_context):
        assert text is not None
        assert text.startswith("x" * 10_000) and len(text) < 10_100


def test_precedence_deny_defer_ask_allow() -> None:
    outs = [HookOutcome(permission_decision=d) for d in ("allow", "ask", "defer")]
    assert merge(outs).permission_decision == "defer"
    assert merge([*outs, HookOutcome(permission_decision="deny")]).permission_decision == "deny"
    assert merge(outs[:2]).permission_decision == "ask"


def test_bad_hooks_section_is_a_clear_error() -> None:
    from fsm_agent.hooks.commands import HookSettingsError

    with pytest.raises(HookSettingsError, match=r"f.json: hooks.Stop\[0\] must be an object"):
        parse_hooks({"Stop": ["echo"]}, "f.json")
    for matcher in ([], ["Bash"], False, 0):
        with pytest.raises(HookSettingsError, match=r"hooks.Stop\[0\].matcher must be a string"):
            parse_hooks({"Stop": [{"matcher": matcher, "hooks": []}]}, "f.json")
    with pytest.raises(HookSettingsError, match="timeout"):
        parse_hooks(
            {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}, "f.json"
        )


@pytest.mark.parametrize(
    ("timeout", "refused"),
    [
        ("NaN", "not valid JSON: NaN is not a JSON number"),
        ("Infinity", "not valid JSON: Infinity is not a JSON number"),
        ("1e400", r"hooks.Stop\[0\]: 'timeout' must be a positive"),
    ],
)
def test_a_timeout_that_is_not_a_finite_number_is_refused(
    tmp_path: Path, timeout: str, refused: str
) -> None:
    """Python's json takes NaN and Infinity (and 1e400 is infinite); a NaN timeout
    made the hook time out at once, and the log header recorded it as null. NaN and
    Infinity are no JSON: the file is refused as such; 1e400 is, as a timeout."""
    from fsm_agent.live.settings import SettingsError, load_settings

    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", '
        f'"timeout": {timeout}}}]}}]}}}}'
    )
    with pytest.raises(SettingsError, match=refused):
        load_settings(str(tmp_path), str(tmp_path / "home"))


def test_stop_hook_continue_false_prevents_continuing(workspace: Path, tmp_path: Path) -> None:
    stop = script(
        tmp_path / "stop.sh",
        """cat > /dev/null
echo '{"continue": false, "stopReason": "out of budget"}'
""",
    )
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]}}
    data = {"settings": settings, "turns": [{"content": [{"type": "text", "text": "done"}]}]}
    result = _run(workspace, data, tmp_path)
    assert result.reason == "stop_hook_prevented"
    assert result.error == "out of budget"


def test_post_tool_use_failure_sees_the_error_and_its_feedback_reaches_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    failure = capture(tmp_path, "failure", 'echo "the file is in docs/" >&2; exit 2')
    success = capture(tmp_path, "success")
    settings = {
        "hooks": {
            "PostToolUseFailure": [
                {"matcher": "Read", "hooks": [{"type": "command", "command": failure}]}
            ],
            "PostToolUse": [{"hooks": [{"type": "command", "command": success}]}],
        }
    }
    result = _run(
        workspace,
        {
            "settings": settings,
            "turns": [
                tool_turn(("r1", "Read", {"file_path": "missing.txt"})),
                {"content": [{"type": "text", "text": "done"}]},
            ],
        },
        tmp_path,
    )
    text = results_by_id(result)["r1"].text
    assert "PostToolUseFailure hook feedback:\nthe file is in docs/" in text
    sent = json.loads((workspace / "failure.json").read_text())
    assert sent["hook_event_name"] == "PostToolUseFailure"
    assert sent["tool_name"] == "Read" and sent["tool_use_id"] == "r1"
    assert sent["error"].startswith("<tool_use_error>File does not exist.")
    assert sent["is_interrupt"] is False
    assert isinstance(sent["duration_ms"], int) and sent["duration_ms"] >= 0
    assert not (workspace / "success.json").exists()


def _rescued_by_autocompact(settings: dict[str, Any]) -> dict[str, Any]:
    """Past the hard limit after one round; only autocompact can save the run."""
    from tests.conftest import SCENARIOS

    data = json.loads((SCENARIOS / "blocking_limit.json").read_text())
    del data["config"]["autocompact"]
    data["turns"] += [
        {"content": [{"type": "text", "text": "<summary>The gist.</summary>"}]},
        {"content": [{"type": "text", "text": "Done."}]},
    ]
    return {**data, "settings": settings}


def test_a_blocking_pre_compact_hook_stops_the_compaction(workspace: Path, tmp_path: Path) -> None:
    block = capture(tmp_path, "pre", 'echo "keep everything" >&2; exit 2')
    settings = {
        "hooks": {
            "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": block}]}]
        }
    }
    seen: list[Any] = []
    result = _run(workspace, _rescued_by_autocompact(settings), tmp_path, on_event=seen.append)
    assert result.reason == "blocking_limit"
    reports = [e.text for e in seen if type(e).__name__ == "ContextReport"]
    assert any("blocked by a PreCompact hook: keep everything" in t for t in reports)
    sent = json.loads((workspace / "pre.json").read_text())
    assert sent["hook_event_name"] == "PreCompact" and sent["trigger"] == "auto"
    assert sent["custom_instructions"] is None


def test_post_compact_hook_gets_the_summary(workspace: Path, tmp_path: Path) -> None:
    pre, post = capture(tmp_path, "pre"), capture(tmp_path, "post")
    settings = {
        "hooks": {
            "PreCompact": [{"hooks": [{"type": "command", "command": pre}]}],
            "PostCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "false"}]},
                            {"matcher": "auto", "hooks": [{"type": "command", "command": post}]}],
        }
    }  # fmt: skip
    result = _run(workspace, _rescued_by_autocompact(settings), tmp_path)
    assert result.reason == "completed"
    sent = json.loads((workspace / "post.json").read_text())
    assert sent["hook_event_name"] == "PostCompact" and sent["trigger"] == "auto"
    assert sent["compact_summary"] == "The gist."


def test_session_start_runs_again_after_an_autocompaction_with_source_compact(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code fires SessionStart with source `compact` after a compaction; the
    context it adds comes before the summary, in every request from then on."""
    again = capture(tmp_path, "again", 'echo "re-read NOTES.md"')
    settings = {
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "false"}]},
                             {"matcher": "compact", "hooks": [{"type": "command", "command": again}]}],
        }
    }  # fmt: skip
    result = _run(workspace, _rescued_by_autocompact(settings), tmp_path)
    assert result.reason == "completed"
    sent = json.loads((workspace / "again.json").read_text())
    assert (sent["hook_event_name"], sent["source"]) == ("SessionStart", "compact")
    first, second = result.messages[0], result.messages[1]
    assert first.is_meta and first.text == "<system-reminder>\nre-read NOTES.md\n</system-reminder>"
    assert second.is_meta and "The gist." in second.text


def test_a_stop_hooks_additional_context_makes_the_model_go_on_with_it(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code: a Stop hook's `additionalContext`, instead of a block, continues
    the run as non-error feedback. Here through `stop_hook_blocking`, as a reminder."""
    once = script(
        tmp_path / "once.sh",
        'if [ ! -f "$CLAUDE_PROJECT_DIR/once" ]; then touch "$CLAUDE_PROJECT_DIR/once"\n'
        'echo \'{"hookSpecificOutput": {"hookEventName": "Stop", '
        '"additionalContext": "Run the tests too."}}\'; fi\n',
    )
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": once}]}]}}
    data = {"turns": [{"content": "Done."}, {"content": "Tests pass."}], "settings": settings}
    result = _run(workspace, data, tmp_path)
    assert result.reason == "completed"
    assert [s.edge for s in result.path].count("stop_hook_blocking") == 1
    reminder = "<system-reminder>\nRun the tests too.\n</system-reminder>"
    texts = [(m.role, m.text) for m in result.messages]
    assert texts[-3:] == [("assistant", "Done."), ("user", reminder), ("assistant", "Tests pass.")]


def test_a_hooks_if_rule_limits_it_to_the_calls_it_names(workspace: Path, tmp_path: Path) -> None:
    no_git = capture(tmp_path, "git", 'echo "no git here" >&2; exit 2')
    src = script(
        tmp_path / "src.sh",
        'cat >> "$CLAUDE_PROJECT_DIR/src.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/src.jsonl"\n',
    )
    settings = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": no_git, "if": "Bash(git *)"}],
                }
            ],
            "PostToolUse": [{"hooks": [{"type": "command", "command": src, "if": "Edit(src/**)"}]}],
        },
    }
    result = _run(
        workspace,
        {
            "settings": settings,
            "config": {"permission_mode": "acceptEdits"},
            "turns": [
                tool_turn(("b1", "Bash", {"command": "echo fine"})),
                tool_turn(("b2", "Bash", {"command": "cd . && git log"})),
                tool_turn(("w1", "Write", {"file_path": "notes.txt", "content": "x"})),
                tool_turn(("w2", "Write", {"file_path": "src/a.py", "content": "y"})),
                {"content": [{"type": "text", "text": "done"}]},
            ],
        },
        tmp_path,
    )
    results = results_by_id(result)
    assert results["b1"].text == "fine"
    assert results["b2"].is_error and "no git here" in results["b2"].text
    assert (
        json.loads((workspace / "git.json").read_text())["tool_input"]["command"]
        == "cd . && git log"
    )
    edits = [json.loads(line) for line in (workspace / "src.jsonl").read_text().splitlines()]
    assert [e["tool_use_id"] for e in edits] == ["w2"]


def test_a_hooks_if_must_be_a_permission_rule() -> None:
    from fsm_agent.hooks.commands import HookSettingsError

    def section(condition: Any) -> dict[str, Any]:
        return {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "if": condition}]}]}

    with pytest.raises(
        HookSettingsError, match=r"f.json: hooks.PreToolUse\[0\]: 'if': not a permission rule"
    ):
        parse_hooks(section("Bash(git *"), "f.json")
    with pytest.raises(HookSettingsError, match="'if' must be a permission rule string"):
        parse_hooks(section(["Bash"]), "f.json")
    [matcher] = parse_hooks(section("Bash(git *)"), "f.json")
    assert matcher.hooks[0].condition == "Bash(git *)"


def test_session_end_runs_once_after_a_cli_run(workspace: Path, tmp_path: Path) -> None:

    end = capture(tmp_path, "end")
    scenario = tmp_path / "s.json"
    settings = {
        "hooks": {
            "SessionEnd": [{"matcher": "other", "hooks": [{"type": "command", "command": end}]}]
        }
    }
    scenario.write_text(
        json.dumps(
            {
                "prompt": "hi",
                "settings": settings,
                "turns": [{"content": [{"type": "text", "text": "hello"}]}],
            }
        )
    )
    log = tmp_path / "run.jsonl"
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log))
    assert proc.returncode == 0, proc.stderr
    sent = json.loads((workspace / "end.json").read_text())
    header = json.loads(log.read_text().splitlines()[0])
    assert sent["hook_event_name"] == "SessionEnd" and sent["reason"] == "other"
    assert sent["session_id"] == header["session_id"]
    assert sent["transcript_path"] == str(transcript_path(str(workspace), header["session_id"]))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert not [r for r in rows if r.get("name") == "hooks"], "not part of the run: not recorded"


def test_leaving_a_chat_ends_the_session_with_prompt_input_exit(tmp_path: Path) -> None:
    from fsm_agent.cli.launch import Plan
    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.config import RunConfig
    from fsm_agent.core.messages import user
    from fsm_agent.live.scripted import ScriptedModel

    end = capture(tmp_path, "end")
    matchers = parse_hooks({"SessionEnd": [{"hooks": [{"type": "command", "command": end}]}]}, "s")
    config = RunConfig(model="scripted", cwd=str(tmp_path), hooks=matchers)
    model = ScriptedModel(Scenario.parse({"turns": [{"content": [{"type": "text", "text": "x"}]}]}))
    plan = Plan(
        model=model, config=config, hooks=None, abort=AbortSignal(), log=tmp_path / "c.jsonl"
    )
    plan.end("prompt_input_exit")
    assert not (tmp_path / "end.json").exists(), "no session to end before the first run"
    asyncio.run(plan.arun([user("hi")], None))
    plan.end("prompt_input_exit")
    assert json.loads((tmp_path / "end.json").read_text())["reason"] == "prompt_input_exit"


def test_pre_compact_can_block_the_reactive_compaction_too(workspace: Path, tmp_path: Path) -> None:
    """Blocked, the compaction leaves the messages as they are: the run ends
    `prompt_too_long` with what the hook said, rather than sending the request that was
    just refused again; PostCompact does not run, as nothing was compacted."""
    from tests.conftest import SCENARIOS

    block = capture(tmp_path, "pre", 'echo "no compaction" >&2; exit 2')
    post = capture(tmp_path, "post")
    data = json.loads((SCENARIOS / "reactive_compact.json").read_text())
    hooks = {
        "PreCompact": [{"hooks": [{"type": "command", "command": block}]}],
        "PostCompact": [{"hooks": [{"type": "command", "command": post}]}],
    }
    result = _run(workspace, {**data, "settings": {"hooks": hooks}}, tmp_path)
    assert "reactive_compact_retry" not in result.edges
    assert result.reason == "prompt_too_long"
    assert result.edges.count("streamed") == 3, "two rounds and the refused request"
    assert result.error.endswith("(compaction blocked by a PreCompact hook: no compaction)")
    assert json.loads((workspace / "pre.json").read_text())["trigger"] == "auto"
    assert not (workspace / "post.json").exists()


def test_pre_compact_is_asked_only_about_a_compaction_that_happens(
    workspace: Path, tmp_path: Path
) -> None:
    """Not when staged collapses drain first, not when there is nothing older than the
    last round to compact: the hook was told of a compaction that never came."""
    from tests.conftest import SCENARIOS

    pre = capture(tmp_path, "pre")
    hooks = {"PreCompact": [{"hooks": [{"type": "command", "command": pre}]}]}
    alone = {"turns": [{"error": {"kind": "prompt_too_long", "message": "too long"}}]}
    drain = json.loads((SCENARIOS / "collapse_drain.json").read_text())
    for n, data in enumerate((alone, drain)):
        (tmp_path / str(n)).mkdir()
        result = _run(workspace, {**data, "settings": {"hooks": hooks}}, tmp_path / str(n))
        assert "reactive_compact_retry" not in result.edges
        assert not (workspace / "pre.json").exists()


def test_post_compact_follows_the_reactive_compaction(workspace: Path, tmp_path: Path) -> None:
    from tests.conftest import SCENARIOS

    post = capture(tmp_path, "post")
    data = json.loads((SCENARIOS / "reactive_compact.json").read_text())
    hooks = {"PostCompact": [{"hooks": [{"type": "command", "command": post}]}]}
    result = _run(workspace, {**data, "settings": {"hooks": hooks}}, tmp_path)
    assert result.reason == "completed"
    sent = json.loads((workspace / "post.json").read_text())
    assert sent["trigger"] == "auto" and sent["compact_summary"] is None


def test_what_hooks_say_to_the_user_is_shown_live_and_on_replay(
    workspace: Path, tmp_path: Path
) -> None:
    """A timed-out hook, a hook that failed without blocking, a `systemMessage`: Claude
    Code shows each in the transcript. They were recorded, and shown nowhere."""
    from fsm_agent.core.events import Notice

    slow = script(tmp_path / "slow.sh", "sleep 5\n")
    failing = script(tmp_path / "failing.sh", 'echo "lint failed" >&2\nexit 1\n')
    said = script(tmp_path / "said.sh", 'echo \'{"systemMessage": "Remember the changelog"}\'\n')
    settings = {
        "hooks": {
            "PreToolUse": [{"hooks": [{"type": "command", "command": slow, "timeout": 1}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": failing}]}],
            "Stop": [{"hooks": [{"type": "command", "command": said}]}],
        }
    }
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.txt"}}
    (workspace / "a.txt").write_text("x\n")
    data = {"settings": settings, "turns": [{"content": [call]}, {"content": "Done."}]}
    seen: list[Any] = []
    _run(workspace, data, tmp_path, on_event=seen.append)
    notices = [(e.kind, e.text) for e in seen if type(e) is Notice]
    assert notices == [
        ("hook", f"PreToolUse hook `{slow}` timed out; its output is ignored"),
        ("hook", "PostToolUse hook error: Failed with non-blocking status code 1: lint failed"),
        ("hook", "Remember the changelog"),
    ]
    again: list[Any] = []
    replay(tmp_path / "run.jsonl", on_event=again.append)
    assert [(e.kind, e.text) for e in again if type(e) is Notice] == notices


@pytest.mark.parametrize(
    ("event", "reason", "error"),
    [
        ("PreToolUse", "aborted_tools", "interrupted while tools ran"),
        ("PostToolUse", "aborted_tools", "interrupted while tools ran"),
        ("Stop", "stop_hook_prevented", "interrupted while Stop hooks ran"),
    ],
)
def test_ctrl_c_kills_a_running_hook_and_ends_the_run_interrupted(
    workspace: Path, tmp_path: Path, event: str, reason: str, error: str
) -> None:
    """Ctrl-C during a slow hook: its process group is killed at once (its `sleep`
    never finishes), the run ends interrupted, and the log replays."""
    done = tmp_path / "hook_done"
    command = f"sleep 8; echo slept > {done}"
    settings = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {event: [{"matcher": "Bash" if event != "Stop" else "",
                           "hooks": [{"type": "command", "command": command}]}]},
    }  # fmt: skip
    turns = [{"content": [{"type": "text", "text": "all done"}]}]
    if event != "Stop":
        turns.insert(0, tool_turn(("t1", "Bash", {"command": "echo ran > ran.txt"})))
    scenario = Scenario.parse({"prompt": "go", "settings": settings, "turns": turns})
    log = tmp_path / "run.jsonl"
    abort = AbortSignal()

    async def main() -> Any:
        asyncio.get_running_loop().call_later(0.5, abort.set)
        return await arun_scenario(scenario, cwd=workspace, log=log, abort=abort)

    started = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - started < 5
    assert (result.reason, result.error) == (reason, error)
    if event == "PreToolUse":
        assert results_by_id(result)["t1"].text == "[Request interrupted by user for tool use]"
        assert not (workspace / "ran.txt").exists()
    elif event == "PostToolUse":
        assert (workspace / "ran.txt").exists()
        assert not results_by_id(result)["t1"].is_error
    else:
        assert result.messages[-1].role == "assistant"
    time.sleep(0.3)
    assert not done.exists()
    replayed = replay(log)
    assert (replayed.path, replayed.reason) == (result.path, result.reason)


def test_a_hook_that_writes_without_end_is_held_to_a_bounded_buffer(tmp_path: Path) -> None:
    """A hook printing 24 MiB (or `yes` until its timeout: 1.6 GB in five seconds)
    was read whole into memory; what is kept of each stream is now bounded, the
    rest drained, and the hook still finishes with its own exit code."""
    from fsm_agent.live.command_hooks import MAX_CAPTURE_BYTES, run_command

    hook = CommandHook("head -c 25165824 /dev/zero | tr '\\0' a; head -c 25165824 /dev/zero >&2")
    run = asyncio.run(run_command(hook, b"{}", str(tmp_path), {"PATH": "/usr/bin:/bin"}, 60.0))
    assert run.code == 0
    for text in (run.stdout, run.stderr):
        assert MAX_CAPTURE_BYTES <= len(text) < MAX_CAPTURE_BYTES + 100
        assert text.endswith(f"[{25165824 - MAX_CAPTURE_BYTES} bytes cut]")
    assert run.stdout.startswith("a" * 1000)


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        ('"./guard.sh"', r"hooks.PreToolUse\[0\]: a hook must be an object"),
        ('{"type": "comand", "command": "./guard.sh"}', r"unknown hook type 'comand'"),
        ('{"type": 1, "command": "./guard.sh"}', r"unknown hook type 1"),
        ('{"type": ["command"], "command": "./guard.sh"}', r"unknown hook type \['command'\]"),
    ],
)
def test_a_hook_that_is_not_a_handler_is_refused_not_skipped(
    tmp_path: Path, handler: str, message: str
) -> None:
    """A guard written as a bare string, or with its type misspelt, was skipped without
    a word, so it never ran; handler types Claude Code has and fsm-agent does not run
    (http, prompt, agent, mcp_tool) are still left out quietly, as the docs say."""
    from fsm_agent.live.settings import SettingsError, load_settings

    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.json"
    path.write_text(f'{{"hooks": {{"PreToolUse": [{{"matcher": "Bash", "hooks": [{handler}]}}]}}}}')
    with pytest.raises(SettingsError, match=message):
        load_settings(str(tmp_path), str(tmp_path / "home"))
    others = [{"type": t, "url": "x", "prompt": "x"} for t in ("http", "prompt", "agent")]
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [*others, {"type": "mcp_tool"}]}]}}))
    assert load_settings(str(tmp_path), str(tmp_path / "home")).hooks == ()


@pytest.mark.parametrize("command", ["echo a\\u0000b", "echo \\ud800"])
def test_a_command_no_os_call_takes_is_refused_naming_the_file(
    tmp_path: Path, command: str
) -> None:
    """A null byte or a lone surrogate (JSON's `"\\ud800"`) in a hook's command ended the
    run with a traceback from subprocess when the hook first ran."""
    from fsm_agent.live.settings import SettingsError, load_settings

    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "' + command + '"}]}]}}'
    )
    with pytest.raises(SettingsError, match=r"settings.json: hooks.Stop\[0\]: a command hook"):
        load_settings(str(tmp_path), str(tmp_path / "home"))


def test_session_end_hooks_share_one_budget_of_at_most_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's SessionEnd budget: 1.5 s, raised to the largest timeout a hook
    sets, up to 60 s, for every hook. A hook set to 600 s held the exit for ten
    minutes, and one with no timeout was cut at 1.5 s beside it. (The cap is 4 s here.)"""
    import fsm_agent.live.command_hooks as command_hooks

    monkeypatch.setattr(command_hooks, "SESSION_END_MAX_S", 4.0)
    slow = CommandHook("cat >/dev/null; sleep 10; echo late", 600)
    quick = CommandHook("""cat >/dev/null; sleep 1.6; echo '{"systemMessage": "saved"}'""")
    hooks = CommandHooks((HookMatcher("SessionEnd", (slow, quick)),), project_dir=str(tmp_path))
    outcome = asyncio.run(hooks.run("SessionEnd", {"reason": "other"}))
    assert sorted(outcome.messages) == [
        "SessionEnd hook `cat >/dev/null; sleep 10; echo late` timed out; its output is ignored",
        "saved",
    ]


def test_a_hooks_if_rule_under_home_holds_when_home_is_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`"if": "Read(~/notes/**)"` judged a resolved path against an unresolved HOME, so
    with HOME a link the hook never ran."""
    real = tmp_path / "real-home"
    (real / "notes").mkdir(parents=True)
    (real / "notes" / "a.md").write_text("x")
    home = tmp_path / "home"
    home.symlink_to(real)
    monkeypatch.setenv("HOME", str(home))
    hook = CommandHook("cat >/dev/null; echo noted >&2; exit 2", condition="Read(~/notes/**)")
    hooks = CommandHooks((HookMatcher("PreToolUse", (hook,)),), project_dir=str(tmp_path))
    payload = {"tool_name": "Read", "tool_input": {"file_path": str(home / "notes" / "a.md")}}
    outcome = asyncio.run(hooks.run("PreToolUse", payload))
    said = "[cat >/dev/null; echo noted >&2; exit 2]: noted\n"  # Claude Code's words
    assert (outcome.permission_decision, outcome.permission_reason) == ("deny", said)


def test_a_hook_that_cannot_be_started_is_a_non_blocking_error(tmp_path: Path) -> None:
    """The OS refusing to start a hook (its directory gone, a command too long for
    execve, no process left to fork) raised out of the run, which then ended with
    'cannot write the session log'; the hook now has no say and the user is told."""
    gone = tmp_path / "gone"
    hooks = CommandHooks(
        (HookMatcher("PreToolUse", (CommandHook("exit 2"),)),), project_dir=str(gone)
    )
    outcome = asyncio.run(hooks.run("PreToolUse", {"tool_name": "Bash"}))
    assert outcome.permission_decision is None
    assert outcome.messages == (
        f"PreToolUse hook `exit 2` could not be started: [Errno 2] No such file or "
        f"directory: '{gone}'",
    )


def test_a_path_no_os_call_takes_does_not_crash_a_hooks_if(tmp_path: Path) -> None:
    """A model's `file_path` or command holding a lone surrogate (JSON's `"\\ud800"`)
    raised out of the run while an `if` rule resolved it; the rule cannot judge it,
    so the hook runs (its guard sees the call), and the permission check denies it."""
    guard = CommandHook("cat >/dev/null; echo seen >&2; exit 2", condition="Edit(src/**)")
    bash = CommandHook("cat >/dev/null; echo seen >&2; exit 2", condition="Bash(ls *)")
    hooks = CommandHooks((HookMatcher("PreToolUse", (guard, bash)),), project_dir=str(tmp_path))
    for name, tool_input in (("Write", {"file_path": "a\ud800.txt"}),
                             ("Bash", {"command": "ls \ud800"})):  # fmt: skip
        payload = {"tool_name": name, "tool_input": tool_input}
        outcome = asyncio.run(hooks.run("PreToolUse", payload))
        said = "[cat >/dev/null; echo seen >&2; exit 2]: seen\n"
        assert (outcome.permission_decision, outcome.permission_reason) == ("deny", said)


def test_a_hook_answer_with_a_number_past_a_double_is_no_json(
    workspace: Path, tmp_path: Path
) -> None:
    """Python's reader takes `1e400` as infinity, which the log writes as null: the
    recorded input was not the one that ran, and the replay diverged. Such an answer is
    read as no JSON, as `NaN` is: the call runs as the model wrote it, and replays."""
    answer = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": {"command": "echo changed", "timeout": 12345},
            }
        }
    ).replace("12345", "1e400")
    hook = script(tmp_path / "pre.sh", f"cat > /dev/null\necho '{answer}'\n")
    data = {
        "config": {"permission_mode": "bypassPermissions"},
        "settings": {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook}]}]}},
        "turns": [tool_turn(("t1", "Bash", {"command": "echo as written"})), {"content": "ok"}],
    }
    result = _run(workspace, data, tmp_path)
    assert "as written" in results_by_id(result)["t1"].text
