"""`fsm-claude` driven by the real Claude Agent SDK over real subprocesses: `query()`,
`ClaudeSDKClient`, `can_use_tool`, hook callbacks, interrupts and mode changes, each
session's logs then replayed offline with `--check`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.agent_sdk import (
    ask,
    entry_point,
    of_type,
    one_response,
    options,
    prompts,
    replays,
    sdk,
    with_client,
)
from tests.support.cli import MODEL, costly_bash, fsm
from tests.support.messages_server import (
    MessagesServer,
    message,
    messages_server_fixture,  # noqa: F401
    text,
)


def bash(command: str, call_id: str = "toolu_1") -> Any:
    return message(
        [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}],
        stop_reason="tool_use",
    )


def results(messages: list[Any]) -> list[Any]:
    """The tool results the SDK parsed, in order."""
    return [
        block
        for m in of_type(messages, "UserMessage")
        if isinstance(m.content, list)
        for block in m.content
        if type(block).__name__ == "ToolResultBlock"
    ]


def test_query_with_one_tool_call_parses_and_replays(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(bash("echo hello"), text("It said hello."))
    opts = options(messages_server, workspace, tmp_path, allowed_tools=["Bash"])
    messages = ask("say hello", opts)
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "SystemMessage", "AssistantMessage", "UserMessage", "AssistantMessage", "ResultMessage",
    ]  # fmt: skip
    init, result = messages[0], messages[-1]
    assert init.subtype == "init" and init.data["cwd"] == str(workspace.resolve())
    assert results(messages)[0].content.strip() == "hello"
    assert messages[2].tool_use_result["stdout"].strip() == "hello"  # Bash's own output shape
    assert result.subtype == "success" and result.result == "It said hello."
    assert result.session_id == init.data["session_id"] and result.num_turns == 2
    assert len(replays(workspace)) == 1


def test_sdk_client_three_turns_is_one_session(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("one"), text("two"), text("three"))

    async def body(client: Any) -> list[list[Any]]:
        turns = []
        for prompt in ("first", "second", "third"):
            await client.query(prompt)
            turns.append(await one_response(client))
        return turns

    turns = with_client(options(messages_server, workspace, tmp_path), body)
    answers = [of_type(t, "ResultMessage")[0] for t in turns]
    assert [a.result for a in answers] == ["one", "two", "three"]
    assert len({a.session_id for a in answers}) == 1
    last = messages_server.bodies()[-1]["messages"]  # the third request holds the whole talk
    said = [b["text"] for m in last for b in m["content"]
            if b["type"] == "text" and not b["text"].startswith("<system-reminder>")]  # fmt: skip
    assert said == ["first", "one", "second", "two", "third"]
    [log] = replays(workspace)  # one session, one log: its three runs one after another
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0]["session_id"] == answers[0].session_id
    starts = [line for line in lines if line.get("t") == "start"]
    assert [s.get("run", 1) for s in starts] == [1, 2, 3]
    steps = [line["step"] for line in lines if line.get("t") == "transition"]
    assert steps == list(range(1, len(steps) + 1))  # numbered on across the runs
    check = fsm("replay", "--check", str(log))
    assert "of 3 runs" in check.stdout


def test_can_use_tool_allows_denies_and_rewrites(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        bash("touch allowed", "toolu_1"),
        bash("touch denied", "toolu_2"),
        bash("touch original", "toolu_3"),
        text("done"),
    )
    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append((name, tool_input))
        command = tool_input["command"]
        if command == "touch denied":
            return sdk.PermissionResultDeny(message="not this one")
        if command == "touch original":
            return sdk.PermissionResultAllow(updated_input={"command": "touch rewritten"})
        return sdk.PermissionResultAllow()

    opts = options(messages_server, workspace, tmp_path, can_use_tool=can_use_tool)
    messages = ask(prompts("run three commands"), opts)
    assert [i["command"] for _, i in asked] == ["touch allowed", "touch denied", "touch original"]
    out = results(messages)
    assert [r.is_error for r in out] == [False, True, False]
    assert "not this one" in out[1].content
    assert sorted(p.name for p in workspace.iterdir() if p.is_file()) == ["allowed", "rewritten"]
    result = of_type(messages, "ResultMessage")[0]
    assert [d["tool_use_id"] for d in result.permission_denials] == ["toolu_2"]
    replays(workspace)


def test_pre_and_post_tool_use_hook_callbacks(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(bash("echo blocked", "toolu_1"), bash("echo fine", "toolu_2"), text("ok"))
    seen: list[tuple[str, str]] = []

    async def pre(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append((data["hook_event_name"], data["tool_input"]["command"]))
        if data["tool_input"]["command"] == "echo blocked":
            decision = {"permissionDecision": "deny", "permissionDecisionReason": "no blocking"}
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **decision}}
        return {}

    async def post(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append((data["hook_event_name"], data["tool_response"]["stdout"].strip()))
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                "additionalContext": "the post hook saw it"}}  # fmt: skip

    hooks = {
        "PreToolUse": [sdk.HookMatcher(matcher="Bash", hooks=[pre])],
        "PostToolUse": [sdk.HookMatcher(matcher="Bash", hooks=[post])],
    }
    opts = options(messages_server, workspace, tmp_path, hooks=hooks, allowed_tools=["Bash"])
    messages = ask(prompts("two commands"), opts)
    assert seen == [("PreToolUse", "echo blocked"), ("PreToolUse", "echo fine"),
                    ("PostToolUse", "fine")]  # fmt: skip
    out = results(messages)
    assert out[0].is_error and "no blocking" in out[0].content
    sent = json.dumps(messages_server.bodies()[-1]["messages"])
    assert "the post hook saw it" in sent  # the model was shown the hook's context
    replays(workspace)


def test_interrupt_while_bash_runs(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    started = workspace / "started"
    messages_server.reply(bash(f"touch {started} && sleep 30"), text("after the interrupt"))

    async def body(client: Any) -> tuple[list[Any], list[Any]]:
        await client.query("run something slow")
        first: list[Any] = []
        async for m in client.receive_response():
            first.append(m)
            if type(m).__name__ == "AssistantMessage":
                while not started.exists():
                    await anyio.sleep(0.05)
                await client.interrupt()
        await client.query("and now?")
        return first, await one_response(client)

    first, second = with_client(
        options(messages_server, workspace, tmp_path, allowed_tools=["Bash"]), body
    )
    interrupted = of_type(first, "ResultMessage")[0]
    assert interrupted.subtype == "error_during_execution"
    assert interrupted.terminal_reason == "aborted_tools"
    assert of_type(second, "ResultMessage")[0].result == "after the interrupt"
    assert len(replays(workspace)) == 1  # the interrupted run and the next, in one log


def test_set_permission_mode_between_turns(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    write = {"file_path": str(workspace / "a.txt"), "content": "x"}
    messages_server.reply(
        message([{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": write}],
                stop_reason="tool_use"),
        text("could not"),
        message([{"type": "tool_use", "id": "toolu_2", "name": "Write", "input": write}],
                stop_reason="tool_use"),
        text("wrote it"),
    )  # fmt: skip

    async def body(client: Any) -> list[list[Any]]:
        await client.query("write a.txt")
        first = await one_response(client)
        await client.set_permission_mode("acceptEdits")
        await client.query("again")
        return [first, await one_response(client)]

    first, second = with_client(options(messages_server, workspace, tmp_path), body)
    assert results(first)[0].is_error  # default mode, no one to ask
    assert not results(second)[0].is_error
    assert (workspace / "a.txt").read_text() == "x"
    assert of_type(second, "SystemMessage")[0].data["permissionMode"] == "acceptEdits"
    replays(workspace)


def test_max_turns_ends_the_run(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(bash("echo 1"), bash("echo 2", "toolu_2"))
    opts = options(messages_server, workspace, tmp_path, allowed_tools=["Bash"], max_turns=1)
    with pytest.raises(sdk.ResultError) as caught:  # claude exits 1 after an error result
        ask("loop", opts)
    assert caught.value.data["subtype"] == "error_max_turns"
    replays(workspace)


def test_max_budget_usd_ends_the_run_after_the_response_that_reached_it(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(
        costly_bash("touch one", "toolu_1"), costly_bash("touch two", "toolu_2"), text("done")
    )
    opts = options(messages_server, workspace, tmp_path, allowed_tools=["Bash"], max_budget_usd=0.5)
    with pytest.raises(sdk.ResultError) as caught:  # an error result: claude exits 1
        ask("spend", opts)
    data = caught.value.data
    assert data["subtype"] == "error_max_budget_usd"
    assert data["terminal_reason"] == "budget_exhausted"
    assert data["errors"] == ["Reached maximum budget ($0.5)"]
    assert data["num_turns"] == 2 and data["stop_reason"] == "tool_use"
    assert len(messages_server.bodies()) == 2  # the second response reached it
    assert (workspace / "one").exists() and not (workspace / "two").exists()
    replays(workspace)


def test_include_partial_messages(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("streamed answer"))
    opts = options(messages_server, workspace, tmp_path, include_partial_messages=True)
    messages = ask("stream it", opts)
    events = [m.event["type"] for m in of_type(messages, "StreamEvent")]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    deltas = [m.event["delta"].get("text", "") for m in of_type(messages, "StreamEvent")
              if m.event["type"] == "content_block_delta"]  # fmt: skip
    assert "".join(deltas) == "streamed answer"
    replays(workspace)


@pytest.mark.parametrize(
    ("option", "flag"),
    [({"max_thinking_tokens": 1000}, "--max-thinking-tokens"),
     ({"effort": "high"}, "--effort")],
)  # fmt: skip
def test_a_flag_not_honoured_is_refused_by_name(
    messages_server: MessagesServer,
    workspace: Path,
    tmp_path: Path,
    option: dict[str, Any],
    flag: str,
) -> None:
    opts = options(messages_server, workspace, tmp_path, **option)
    with pytest.raises(Exception) as caught:
        ask("hi", opts)
    proc = subprocess.run(
        [str(entry_point(tmp_path)), flag, "1", "-p", "hi"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"fsm-agent: error: not supported by fsm-agent yet: {flag}"
    ]
    assert caught.value is not None
    assert messages_server.bodies() == []


def _session(tmp_path: Path, workspace: Path, server: MessagesServer, lines: list[str]) -> Any:
    """`fsm-claude` in stream-json mode fed `lines`, then stdin closed."""
    env = {
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "test-key",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [str(entry_point(tmp_path)), "--output-format", "stream-json", "--verbose",
         "--input-format", "stream-json", "--model", MODEL],
        input="".join(line + "\n" for line in lines), capture_output=True, text=True,
        cwd=workspace, env=env, timeout=60,
    )  # fmt: skip


def test_bad_stdin_gets_errors_never_a_traceback(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("still here"))
    user = {"type": "user", "message": {"role": "user", "content": "hello"}}
    proc = _session(tmp_path, workspace, messages_server, [
        "this is not json",
        json.dumps({"type": "mystery"}),
        json.dumps({"type": "control_request", "request": {"subtype": "interrupt"}}),
        json.dumps({"type": "control_request", "request_id": "r1", "request": {}}),
        json.dumps({"type": "control_request", "request_id": "r2", "request": {"subtype": "nope"}}),
        json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "image"}]}}),
        json.dumps(user),
    ])  # fmt: skip
    assert "Traceback" not in proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    errors = [o["response"] for o in out if o["type"] == "control_response"]
    assert [e["subtype"] for e in errors] == ["error", "error", "error"]
    assert errors[2] == {"subtype": "error", "request_id": "r2",
                         "error": "Unsupported control request subtype: nope"}  # fmt: skip
    results_ = [o for o in out if o["type"] == "result"]
    assert results_[0]["is_error"] and "'image' block" in results_[0]["errors"][0]
    assert results_[1]["result"] == "still here"
    said = proc.stderr.splitlines()
    assert len(said) == 2 and "not JSON" in said[0] and "'mystery'" in said[1]
    replays(workspace)


def test_stdin_closed_mid_turn_fails_the_pending_question(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """The SDK goes away before it answers `can_use_tool`: the question is denied (no
    one is left to ask), the turn ends with its result, and the log keeps it."""
    messages_server.reply(bash("touch never"), text("gave up"))
    user = {"type": "user", "message": {"role": "user", "content": "go"}}
    init = {"type": "control_request", "request_id": "i", "request": {"subtype": "initialize"}}
    proc = subprocess.run(
        [str(entry_point(tmp_path)), "--output-format", "stream-json", "--verbose",
         "--input-format", "stream-json", "--model", MODEL, "--permission-prompt-tool", "stdio"],
        input=json.dumps(init) + "\n" + json.dumps(user) + "\n", capture_output=True, text=True,
        cwd=workspace, timeout=60,
        env={"ANTHROPIC_BASE_URL": messages_server.url, "ANTHROPIC_API_KEY": "k",
             "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    result = [o for o in out if o["type"] == "result"][-1]
    assert result["result"] == "gave up"
    assert [d["tool_use_id"] for d in result["permission_denials"]] == ["toolu_1"]
    replays(workspace)


def test_a_prompt_blocked_by_a_hook_is_a_success_result(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    async def block(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return {"decision": "block", "reason": "not today"}

    hooks = {"UserPromptSubmit": [sdk.HookMatcher(hooks=[block])]}
    messages = ask(prompts("hello"), options(messages_server, workspace, tmp_path, hooks=hooks))
    result = of_type(messages, "ResultMessage")[0]
    assert result.subtype == "success"
    assert messages_server.bodies() == []
    replays(workspace)


def test_version_passes_the_sdks_check(tmp_path: Path) -> None:
    proc = subprocess.run([str(entry_point(tmp_path)), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    major = int(proc.stdout.split(".")[0])
    assert major >= 2 and "fsm-agent" in proc.stdout
    assert sys.executable  # the wrapper runs this interpreter


def test_a_message_sent_while_a_turn_runs_is_queued_for_it(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    # The Bash call runs while the second message is typed: a plain `sleep` (a loop on a
    # marker file is a command the Bash analysis cannot follow, so it would be asked about).
    messages_server.reply(bash("sleep 4; echo done"), text("saw both"))

    async def body(client: Any) -> list[Any]:
        await client.query("first")
        while not messages_server.bodies():
            await anyio.sleep(0.05)
        await anyio.sleep(0.5)  # the answer streamed; the command is running
        await client.query("also this")
        await client.get_mcp_status()  # answered after the line before it was read
        return await one_response(client)

    messages = with_client(
        options(messages_server, workspace, tmp_path, allowed_tools=["Bash"]), body
    )
    assert of_type(messages, "ResultMessage")[0].result == "saw both"
    second = json.dumps(messages_server.bodies()[1]["messages"][-1])
    assert "also this" in second  # the model got it in the same run
    assert len(replays(workspace)) == 1


def test_mode_and_model_set_mid_run_hold_from_the_next_request(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    write = {"file_path": str(workspace / "a.txt"), "content": "x"}
    messages_server.reply(
        bash("sleep 3; echo done"),
        message([{"type": "tool_use", "id": "toolu_2", "name": "Write", "input": write}],
                stop_reason="tool_use"),
        text("wrote it"),
    )  # fmt: skip

    async def body(client: Any) -> list[Any]:
        await client.query("sleep, then write a.txt")
        while not messages_server.bodies():
            await anyio.sleep(0.05)
        await anyio.sleep(0.5)  # the answer streamed; the command is running
        await client.set_permission_mode("acceptEdits")
        await client.set_model("claude-haiku-4-5")
        return await one_response(client)

    messages = with_client(
        options(messages_server, workspace, tmp_path, allowed_tools=["Bash"]), body
    )
    assert [r.is_error for r in results(messages)] == [False, False]  # Write: acceptEdits
    assert (workspace / "a.txt").read_text() == "x"
    assert [b["model"] for b in messages_server.bodies()] == [MODEL, *["claude-haiku-4-5"] * 2]
    [log] = replays(workspace)
    changes = [
        json.loads(line) for line in log.read_text().splitlines() if '"session_change"' in line
    ]
    assert [c["result"] for c in changes] == [
        {"permission_mode": "acceptEdits", "model": "claude-haiku-4-5"}
    ]


def test_set_model_and_context_usage(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("one", usage={"input_tokens": 1234}), text("two"))

    async def body(client: Any) -> dict[str, Any]:
        await client.query("first")
        await one_response(client)
        usage = await client.get_context_usage()
        await client.set_model("claude-haiku-4-5")
        await client.query("second")
        await one_response(client)
        return usage

    usage = with_client(options(messages_server, workspace, tmp_path), body)
    assert usage["totalTokens"] == 1234 and usage["maxTokens"] > 1234
    assert [b["model"] for b in messages_server.bodies()] == [MODEL, "claude-haiku-4-5"]
    replays(workspace)


def test_an_sdk_mcp_servers_tool_is_called_through_the_sdk(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    calls: list[dict[str, Any]] = []

    @sdk.tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    server = sdk.create_sdk_mcp_server("calc", tools=[add])
    call = {"type": "tool_use", "id": "toolu_1", "name": "mcp__calc__add",
            "input": {"a": 2, "b": 3}}  # fmt: skip
    messages_server.reply(message([call], stop_reason="tool_use"), text("5"))
    opts = options(messages_server, workspace, tmp_path, mcp_servers={"calc": server},
                   allowed_tools=["mcp__calc__add"])  # fmt: skip
    messages = ask(prompts("add 2 and 3"), opts)
    assert calls == [{"a": 2, "b": 3}]
    # Claude Code's shape (measured): the MCP content blocks, as for any MCP server's tool
    assert results(messages)[0].content == [{"type": "text", "text": "5"}]
    init = of_type(messages, "SystemMessage")[0].data
    assert "mcp__calc__add" in init["tools"]
    assert init["mcp_servers"] == [{"name": "calc", "status": "connected"}]
    offered = [t["name"] for t in messages_server.bodies()[0]["tools"]]
    assert "mcp__calc__add" in offered
    replays(workspace)


def test_structured_output_through_json_schema(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}},
              "required": ["answer"]}  # fmt: skip

    def structured(call_id: str, answer: Any) -> Any:
        block = {"type": "tool_use", "id": call_id, "name": "StructuredOutput",
                 "input": {"answer": answer}}  # fmt: skip
        return message([block], stop_reason="tool_use")

    messages_server.reply(
        text("It is four."),  # no structured answer: told to give one
        structured("toolu_1", "four"),  # the wrong shape: an error it can mend
        structured("toolu_2", 4),
        text("Done."),
    )
    opts = options(messages_server, workspace, tmp_path,
                   output_format={"type": "json_schema", "schema": schema})  # fmt: skip
    messages = ask(prompts("two plus two"), opts)
    result = of_type(messages, "ResultMessage")[0]
    assert result.structured_output == {"answer": 4}
    offered = {t["name"]: t for t in messages_server.bodies()[0]["tools"]}
    assert offered["StructuredOutput"]["input_schema"] == schema
    told = json.dumps(messages_server.bodies()[1]["messages"][-1])
    assert "StructuredOutput" in told
    assert [r.is_error for r in results(messages)] == [True, False]
    replays(workspace)


def test_resume_continues_a_several_run_session(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("one"), text("two"), text("three"))

    async def body(client: Any) -> str:
        for prompt in ("first", "second"):
            await client.query(prompt)
            answer = of_type(await one_response(client), "ResultMessage")[0]
        return str(answer.session_id)

    session_id = with_client(options(messages_server, workspace, tmp_path), body)
    messages = ask(prompts("third"), options(messages_server, workspace, tmp_path,
                                             resume=session_id))  # fmt: skip
    assert of_type(messages, "ResultMessage")[0].result == "three"
    said = [b["text"] for m in messages_server.bodies()[-1]["messages"] for b in m["content"]
            if b["type"] == "text" and not b["text"].startswith("<system-reminder>")]  # fmt: skip
    assert said == ["first", "one", "second", "two", "third"]
    assert len(replays(workspace)) == 2  # a log per process: the resumed one names its parent


def test_print_mode_takes_a_prompt_as_claude_p_does(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    messages_server.reply(text("printed"))
    env = {"ANTHROPIC_BASE_URL": messages_server.url, "ANTHROPIC_API_KEY": "k",
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    proc = subprocess.run(
        [str(entry_point(tmp_path)), "-p", "say it", "--output-format", "json", "--model", MODEL],
        capture_output=True, text=True, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["type"] == "result" and result["result"] == "printed"
    assert replays(workspace)
