"""PostToolUse hooks replacing a tool's output (`updatedToolOutput`), as Claude Code does."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core.codec import unstructure
from fsm_agent.core.events import Notice
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome, close_tools
from fsm_agent.hooks.commands import HookRun, interpret
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario
from fsm_agent.tools import default_tools
from fsm_agent.tools.output import rendered, replacement_problem
from tests.support.cli import fsm
from tests.support.hooks import CALLS, PNG, hooked_run, script
from tests.support.tools import NoModel

REDACTED = {"stdout": "REDACTED", "stderr": "", "interrupted": False}


def _answering(tmp_path: Path, name: str, output: Any) -> str:
    """A hook command that answers PostToolUse with `output` as its updatedToolOutput."""
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": output}}
    (tmp_path / f"{name}.json").write_text(json.dumps(answer))
    return script(tmp_path / f"{name}.sh", f'cat > /dev/null\ncat "{tmp_path / name}.json"\n')


def _one_call_run(
    workspace: Path,
    tmp_path: Path,
    name: str,
    tool_input: dict[str, Any],
    commands: list[str],
    allow: tuple[str, ...] = (),
) -> tuple[Any, Path, list[Notice]]:
    """One call of `name`, its PostToolUse hooks `commands` in that order, then "Done.";
    the result, the log and the notices shown."""
    hooks = [{"type": "command", "command": c} for c in commands]
    settings: dict[str, Any] = {"hooks": {"PostToolUse": [{"matcher": name, "hooks": hooks}]}}
    if allow:
        settings["permissions"] = {"allow": list(allow)}
    call = {"type": "tool_use", "id": "t1", "name": name, "input": tool_input}
    data = {
        "prompt": "go",
        "settings": settings,
        "turns": [{"content": [call]}, {"content": "Done."}],
    }
    log = tmp_path / "run.jsonl"
    seen: list[Any] = []
    result = run_scenario(Scenario.parse(data), cwd=workspace, log=log, on_event=seen.append)
    return result, log, [e for e in seen if type(e) is Notice]


def _bash_run(
    workspace: Path, tmp_path: Path, *outputs: Any
) -> tuple[Any, list[dict[str, Any]], list[Notice]]:
    """`echo SECRET` through Bash, one hook per output, in that order; the result, the
    log's records and the notices shown."""
    commands = [_answering(tmp_path, f"h{n}", out) for n, out in enumerate(outputs)]
    result, log, notices = _one_call_run(
        workspace, tmp_path, "Bash", {"command": "echo SECRET"}, commands, allow=("Bash",)
    )
    assert result.reason == "completed"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return result, records, notices


def _sent_after_the_tool(result: Any, records: list[dict[str, Any]]) -> str:
    """The Bash call's tool_result in the request that followed it (its third message)."""
    requests = [r for r in records if r.get("name") == "model"]
    assert [r["args"]["messages"] for r in requests] == [1, 3]
    (block,) = [b for b in result.messages[2].content if isinstance(b, ToolResultBlock)]
    return json.dumps(unstructure(block))


def test_a_hooks_updated_tool_output_is_what_the_next_request_holds(
    workspace: Path, tmp_path: Path
) -> None:
    result, records, notices = _bash_run(workspace, tmp_path, REDACTED)
    sent = _sent_after_the_tool(result, records)
    assert "REDACTED" in sent
    assert "SECRET" not in sent
    tool = next(r for r in records if r.get("name") == "tool")
    assert tool["result"]["content"] == "SECRET"  # the tool's own outcome stays recorded
    assert notices == []
    again: list[Any] = []
    assert replay(tmp_path / "run.jsonl", on_event=again.append).path == result.path
    check = fsm("replay", str(tmp_path / "run.jsonl"), "--check")
    assert check.returncode == 0, check.stderr
    assert "steps match" in check.stdout


def test_a_replacement_not_in_the_tools_shape_is_ignored_with_a_note(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code checks the replacement against the tool's output schema: a bare
    string for Bash is dropped, the original output kept, a warning noted."""
    result, records, notices = _bash_run(workspace, tmp_path, "REDACTED")
    sent = _sent_after_the_tool(result, records)
    assert "SECRET" in sent
    assert "REDACTED" not in sent
    assert [(n.kind, n.text) for n in notices] == [
        (
            "hook",
            "PostToolUse hook returned updatedToolOutput that does not match Bash's output "
            "shape (data must be object); using the original output",
        )
    ]
    again: list[Any] = []
    replay(tmp_path / "run.jsonl", on_event=again.append)
    assert [n for n in again if type(n) is Notice] == notices


def test_several_hooks_the_last_fitting_replacement_wins(workspace: Path, tmp_path: Path) -> None:
    """Hooks answer in the order they are listed; one that does not fit is skipped."""
    later = {**REDACTED, "stdout": "LATER"}
    missing = {"stdout": "BROKEN"}
    result, records, notices = _bash_run(workspace, tmp_path, REDACTED, later, missing)
    sent = _sent_after_the_tool(result, records)
    assert "LATER" in sent
    assert "REDACTED" not in sent and "BROKEN" not in sent and "SECRET" not in sent
    (note,) = [n.text for n in notices]
    assert note.startswith(
        "PostToolUse hook returned updatedToolOutput that does not match Bash's output shape"
    )
    assert "'interrupted'" in note
    assert note.endswith("; using another hook's replacement")
    check = fsm("replay", str(tmp_path / "run.jsonl"), "--check")
    assert check.returncode == 0, check.stderr


def test_updated_tool_output_is_taken_from_post_tool_use_only() -> None:
    out = json.dumps({"hookSpecificOutput": {"updatedToolOutput": REDACTED}})
    assert interpret("PostToolUse", HookRun("c", 0, out, "")).updated_outputs == (REDACTED,)
    for event in ("PreToolUse", "PostToolUseFailure", "Stop"):
        assert interpret(event, HookRun("c", 0, out, "")).updated_outputs == ()
    mcp = json.dumps({"hookSpecificOutput": {"updatedMCPToolOutput": REDACTED}})
    assert interpret("PostToolUse", HookRun("c", 0, mcp, "")).updated_outputs == ()


def test_each_tools_own_response_renders_as_the_tool_rendered_it(
    workspace: Path, tmp_path: Path
) -> None:
    """A hook that hands back the `tool_response` it got unchanged changes nothing the
    model reads: each tool's response fits its shape and renders to its own text."""
    _, _, log = hooked_run(workspace, tmp_path)
    tools = [json.loads(line) for line in log.read_text().splitlines() if '"name":"tool"' in line]
    assert [t["args"]["name"] for t in tools] == [name for name, _ in CALLS]
    for tool in tools:
        name, outcome = tool["args"]["name"], tool["result"]
        assert replacement_problem(name, True, outcome["response"]) is None, name
        assert rendered(name, True, outcome["response"]) == outcome["content"], name


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("Bash", {**REDACTED, "stderr": "warn\n", "interrupted": True},
         "REDACTED\nwarn\n<error>Command was aborted before completion</error>"),
        ("Bash", {"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
         "(Bash completed with no output)"),
        ("Bash", {"stdout": "\n \n  out  \n\n", "stderr": " warn \n", "interrupted": False},
         "  out\nwarn"),
        ("Read", {"type": "text", "file": {"filePath": "/w/a", "content": "x\ny\n",
                                           "numLines": 3, "startLine": 4, "totalLines": 9}},
         "     4→x\n     5→y\n     6→\n\n(Showing lines 4-6; the file continues. "
         "Use offset=7 to read more.)"),
        ("Glob", {"filenames": [], "durationMs": 1, "numFiles": 0, "truncated": False},
         "No files found"),
        ("Grep", {"mode": "count", "numFiles": 2, "filenames": [], "content": "a:1\nb:2",
                  "numMatches": 3}, "a:1\nb:2\n\nFound 3 matching lines in 2 files."),
        ("MyTool", "plain text", "plain text"),
    ],
)  # fmt: skip
def test_a_replacement_renders_as_its_tool_renders(name: str, value: Any, text: str) -> None:
    structured = not isinstance(value, str)
    assert replacement_problem(name, structured, value) is None
    assert rendered(name, structured, value) == text


@pytest.mark.parametrize(
    ("name", "structured", "value"),
    [
        ("Read", True, {"type": "text", "file": {"filePath": "/w/a", "content": "x"}}),
        ("Write", True, {"type": "overwrite", "filePath": "/a", "content": "",
                         "structuredPatch": [], "originalFile": None}),
        ("Read", True, {"type": "image", "file": {"base64": "eA==", "type": "image/bmp",
                                                  "originalSize": 1}}),
        ("MyTool", False, {"text": "x"}),
        ("MyTool", True, {"text": "x"}),
    ],
)  # fmt: skip
def test_a_replacement_out_of_shape_is_refused(name: str, structured: bool, value: Any) -> None:
    assert replacement_problem(name, structured, value) is not None


def test_a_read_replaced_by_an_image_is_sent_as_one() -> None:
    from fsm_agent.core.messages import ImageBlock, ImageSource

    value = {"type": "image", "file": {"base64": "eA==", "type": "image/png", "originalSize": 1}}
    assert replacement_problem("Read", True, value) is None
    assert rendered("Read", True, value) == (ImageBlock(ImageSource("image/png", "eA==")),)


def test_a_projects_settings_hook_redacts_bash_output_in_a_cli_run(
    workspace: Path, tmp_path: Path
) -> None:
    """`.claude/settings.json` as a Claude Code project has it; stream-json's `user` line
    carries the replaced result and, as `tool_use_result`, the replacement."""
    hooks = workspace / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    redact = hooks / "redact.py"
    redact.write_text(
        "import json, sys\n"
        "response = json.load(sys.stdin)['tool_response']\n"
        "response['stdout'] = response['stdout'].replace('SECRET', '[redacted]')\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse',\n"
        "                                         'updatedToolOutput': response}}))\n"
    )
    hook = {"type": "command", "command": 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/redact.py'}
    settings = {
        "permissions": {"allow": ["Bash(echo *)"]},
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [hook]}]},
    }
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": 'echo a SEC""RET'}}
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps({"prompt": "p", "turns": [{"content": [call]}, {"content": "ok"}]})
    )
    log = tmp_path / "run.jsonl"
    proc = fsm(
        "run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log),
        "--output-format", "stream-json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (user,) = [x for x in map(json.loads, proc.stdout.splitlines()) if x["type"] == "user"]
    (block,) = user["message"]["content"]
    assert block["content"] == "a [redacted]"
    assert user["tool_use_result"]["stdout"] == "a [redacted]"
    assert "SECRET" not in proc.stdout
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr


def _own_runs(ws: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[ToolOutcome]:
    """Each of `calls` run by the built-in tool as the engine runs it, building its
    response, in one workspace (what a call reads, a later one may change)."""
    tools = default_tools()
    env = ToolEnv(cwd=str(ws), wants_response=True)
    outcomes = []
    try:
        for n, (name, tool_input) in enumerate(calls):
            effects = LiveEffects(NoModel(), tools)
            outcome = asyncio.run(effects.run_tool(ToolCall(f"t{n}", name, tool_input), env))
            assert not outcome.is_error, (name, tool_input, outcome.content)
            assert outcome.response is not None, (name, tool_input)
            env = evolve(env, read_files={**env.read_files, **outcome.read_files})
            outcomes.append(outcome)
    finally:
        close_tools(tools.values())
    return outcomes


def _files(ws: Path) -> None:
    (ws / "three.txt").write_text("a\nb\nc\n")
    (ws / "nl.txt").write_text("a\n")
    (ws / "empty.txt").write_text("")
    (ws / "crlf.txt").write_bytes(b"x\r\ny\r\n")
    (ws / "bare.txt").write_text("no newline")
    (ws / "long.txt").write_text("b" * 2500 + "\nend\n")
    (ws / "img.png").write_bytes(PNG)


OWN_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"file_path": "three.txt"}),
    ("Read", {"file_path": "three.txt", "limit": 1}),
    ("Read", {"file_path": "three.txt", "offset": 2, "limit": 1}),
    ("Read", {"file_path": "three.txt", "offset": 4}),
    ("Read", {"file_path": "three.txt", "offset": 9}),
    ("Read", {"file_path": "nl.txt", "offset": 2}),
    ("Read", {"file_path": "empty.txt"}),
    ("Read", {"file_path": "crlf.txt"}),
    ("Read", {"file_path": "bare.txt"}),
    ("Read", {"file_path": "long.txt"}),
    ("Read", {"file_path": "img.png"}),
    ("Write", {"file_path": "new.txt", "content": "n\n"}),
    ("Write", {"file_path": "three.txt", "content": "A\n"}),
    ("Edit", {"file_path": "crlf.txt", "old_string": "x", "new_string": "X"}),
    ("Edit", {"file_path": "made.txt", "old_string": "", "new_string": "m\n"}),
    ("Bash", {"command": "echo out; echo err >&2"}),
    ("Bash", {"command": "printf 'x\\n\\n\\n'"}),
    ("Bash", {"command": "true"}),
    ("Glob", {"pattern": "*.txt"}),
    ("Glob", {"pattern": "*.rs"}),
    ("Grep", {"pattern": "n"}),
    ("Grep", {"pattern": "zebra"}),
    ("Grep", {"pattern": "n", "output_mode": "content"}),
    ("Grep", {"pattern": "n", "output_mode": "content", "-C": 1, "path": "long.txt"}),
    ("Grep", {"pattern": "zebra", "output_mode": "content"}),
    ("Grep", {"pattern": "n", "output_mode": "count"}),
    ("Grep", {"pattern": "n", "output_mode": "count", "path": "new.txt"}),
    ("Grep", {"pattern": "zebra", "output_mode": "count"}),
]


def test_each_tools_response_renders_to_its_own_text_for_every_layout(workspace: Path) -> None:
    """The renderer a replacement goes through is the tools' own: a hook that hands back
    the `tool_response` unchanged changes nothing, whichever way the text is laid out
    (paged and clipped reads, CRLF, images, a file Edit created, empty results…)."""
    _files(workspace)
    for (name, tool_input), outcome in zip(OWN_CALLS, _own_runs(workspace, OWN_CALLS), strict=True):
        assert replacement_problem(name, True, outcome.response) is None, (name, tool_input)
        assert rendered(name, True, outcome.response) == outcome.content, (name, tool_input)


def test_what_a_replacement_cannot_carry_is_left_out(workspace: Path) -> None:
    """What the response shape does not hold: a truncated Glob's total, Grep's paging,
    whether a read that filled its limit stopped at the file's end, whether an Edit
    with an empty `old_string` of an empty file created it."""
    _files(workspace)
    for n in range(101):
        (workspace / f"f{n}.py").write_text("n\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Glob", {"pattern": "*.py"}),
        ("Grep", {"pattern": "n", "glob": "*.py", "head_limit": 2}),
        ("Read", {"file_path": "three.txt", "limit": 3}),
        ("Read", {"file_path": "empty.txt"}),
        ("Edit", {"file_path": "empty.txt", "old_string": "", "new_string": "e\n"}),
    ]
    glob, grep, read, _, edit = _own_runs(workspace, calls)
    assert isinstance(glob.content, str) and isinstance(grep.content, str)
    assert glob.content.endswith(
        "\n(Results are truncated: showing 100 of 101 files. Use a more specific path or pattern.)"
    )
    assert rendered("Glob", True, glob.response) == glob.content.replace(
        ": showing 100 of 101 files", ""
    )
    shown = grep.content.splitlines()[1:3]
    assert grep.content.startswith("Found 101 files\n")
    assert grep.content.endswith("\n\n(Showing entries 1-2 of 101; use offset=2 to see more.)")
    assert rendered("Grep", True, grep.response) == "\n".join(["Found 2 files", *shown])
    assert read.content == "     1→a\n     2→b\n     3→c"
    assert rendered("Read", True, read.response) == (
        f"{read.content}\n\n(Showing lines 1-3; the file continues. Use offset=4 to read more.)"
    )
    path = os.path.join(os.path.realpath(workspace), "empty.txt")
    assert edit.content == f"The file {path} has been updated successfully."
    assert rendered("Edit", True, edit.response) == f"File created successfully at: {path}"


def test_a_hook_answer_nested_too_deeply_for_the_log_is_ignored_with_a_note(
    workspace: Path, tmp_path: Path
) -> None:
    """JSON nested hundreds deep parses, but no log line can hold it: the run once died
    with a RecursionError writing the hooks effect. Now the answer is not taken as JSON
    (as one that does not parse), a note says why, and the run goes on and replays."""
    junk: list[Any] = []
    for _ in range(900):
        junk = [junk]
    result, records, notices = _bash_run(workspace, tmp_path, {**REDACTED, "junk": junk})
    sent = _sent_after_the_tool(result, records)
    assert "SECRET" in sent and "REDACTED" not in sent
    (note,) = [n.text for n in notices]
    assert "nested more than 100 levels deep" in note
    check = fsm("replay", str(tmp_path / "run.jsonl"), "--check")
    assert check.returncode == 0, check.stderr


def test_a_pre_tool_use_answer_nested_too_deeply_is_not_taken() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = {"k": deep}
    answer = {"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": deep}}
    outcome = interpret("PreToolUse", HookRun("c", 0, json.dumps(answer), ""))
    assert outcome.updated_input is None and outcome.permission_decision is None
    assert outcome.messages and "nested more than 100 levels" in outcome.messages[0]


def test_a_replacement_with_nan_or_infinity_is_not_json_and_the_run_replays(
    workspace: Path, tmp_path: Path
) -> None:
    """Python's json takes `NaN` and `Infinity`, which JSON (and Claude Code's
    JSON.parse) does not, and which the log writes as null: a Glob replacement with
    `"durationMs": Infinity` fitted live, not on replay, so the replay diverged. Such
    output is not JSON, as in Claude Code: no replacement, and the replay agrees."""
    (workspace / "a.txt").write_text("")
    out = '{"filenames": ["FAKE"], "durationMs": Infinity, "numFiles": 1, "truncated": false}'
    answer = '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": %s}}'
    (tmp_path / "answer.json").write_text(answer % out)
    hook = script(tmp_path / "h.sh", f'cat > /dev/null\ncat "{tmp_path / "answer.json"}"\n')
    result, log, _ = _one_call_run(workspace, tmp_path, "Glob", {"pattern": "*.txt"}, [hook])
    (block,) = [b for b in result.messages[2].content if isinstance(b, ToolResultBlock)]
    assert block.content == str(workspace / "a.txt")
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_replacement_past_the_capture_limit_is_not_taken_silently(
    workspace: Path, tmp_path: Path
) -> None:
    """A hook's stdout is kept up to 4 MB; a longer JSON answer, cut, no longer parses.
    It was dropped without a word, so a redacting hook's failure went unseen and the
    model read what it was to hide: a ⚠ line now says the answer was cut."""
    huge = {**REDACTED, "stdout": "R" * (5 * 1024 * 1024)}
    result, records, notices = _bash_run(workspace, tmp_path, huge)
    assert "SECRET" in _sent_after_the_tool(result, records)
    (note,) = [n.text for n in notices]
    assert note.startswith("PostToolUse hook `")
    assert "`: its output passed 4 MB and was cut (" in note
    assert note.endswith(" bytes), so its JSON answer is not read")


def test_a_bash_replacement_that_says_interrupted_is_an_error(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code marks Bash's result an error when it says `interrupted` (its
    `is_error: interrupted`), a hook's replacement too; one that does not stays a success."""
    aborted = {**REDACTED, "interrupted": True}
    result, _, _ = _bash_run(workspace, tmp_path, aborted)
    (block,) = [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert block.content == "REDACTED\n<error>Command was aborted before completion</error>"
    assert block.is_error
    again = tmp_path / "again"
    again.mkdir()
    result, _, _ = _bash_run(workspace, again, REDACTED)
    (block,) = [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert (block.content, block.is_error) == ("REDACTED", False)
