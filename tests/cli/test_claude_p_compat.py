"""`--output-format json|stream-json` read as `claude -p`'s output is read: the fields
Claude Code's SDK types require (`SDKSystemMessage`, `SDKResultMessage`, `ModelUsage`,
`SDKAPIRetryMessage`), with the types and values Claude Code gives them."""

from __future__ import annotations

import io
import json
from importlib.metadata import version
from pathlib import Path

import pytest

from fsm_agent.app.session import replay
from fsm_agent.cli.headless import StreamJson
from fsm_agent.core.events import ModelEvent, ModelRetry
from fsm_agent.core.messages import ToolUseBlock
from tests.support.cli import MODEL, fsm, fsm_on_server, run_json, run_scripted, stream_lines
from tests.support.messages_server import (
    MessagesServer,
    messages_server_fixture,  # noqa: F401
    text,
)


def test_init_has_every_field_claude_codes_system_init_has(workspace: Path, tmp_path: Path) -> None:
    """`SDKSystemMessage` requires these; a consumer that validates it (the TypeScript
    SDK's schema, a wrapper reading `slash_commands`) would refuse a line without them."""
    init = stream_lines(workspace, tmp_path, "tool_round")[0]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["slash_commands"] == []
    assert init["apiKeySource"] == "none", "a scripted model uses no key"
    assert init["claude_code_version"] == version("fsm-agent")
    assert init["output_style"] == "default"
    assert (init["agents"], init["skills"], init["plugins"]) == ([], [], [])
    assert init["mcp_servers"] == []
    assert init["additional_directories"] == [] and init["original_cwd"] == init["cwd"]
    assert init["sandbox_enabled"] is False
    assert "capabilities" not in init, "no protocol extension of Claude Code's is spoken"
    assert list(init)[:8] == [
        "type",
        "subtype",
        "cwd",
        "session_id",
        "tools",
        "mcp_servers",
        "model",
        "permissionMode",
    ]
    assert list(init)[-1] == "uuid"
    json.dumps(init)


def test_init_names_the_key_a_real_model_uses(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """The key comes from `ANTHROPIC_API_KEY`, the source Claude Code names the same way."""
    messages_server.reply(text("Hi.", model=MODEL))
    proc = fsm_on_server(messages_server, workspace, "hi", "--output-format", "stream-json")
    assert proc.returncode == 0, proc.stderr
    init = json.loads(proc.stdout.splitlines()[0])
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["model"] == MODEL


def test_json_result_model_usage_has_max_output_tokens(workspace: Path, tmp_path: Path) -> None:
    """`ModelUsage.maxOutputTokens` is required in Claude Code's SDK types: the most a
    request of the run asks of the model (the escalated 64k, held to its output limit)."""
    result, _ = run_json(workspace, tmp_path, "tool_round")
    assert result["modelUsage"]["scripted"]["maxOutputTokens"] == 64_000


def test_model_usage_max_output_tokens_is_held_to_the_models_limit() -> None:
    from fsm_agent.cli.headless import RunTally
    from fsm_agent.core.events import ResponseUsage
    from fsm_agent.core.messages import Usage

    tally = RunTally()
    tally(ResponseUsage(model="claude-3-5-haiku-20241022", usage=Usage(input_tokens=1)))
    assert tally.model_usage()["claude-3-5-haiku-20241022"]["maxOutputTokens"] == 8_192


def _retry_line(retry: ModelRetry) -> dict:
    out = io.StringIO()
    StreamJson(out, "s")(ModelEvent(retry))
    (line,) = [json.loads(line) for line in out.getvalue().splitlines()]
    return line


@pytest.mark.parametrize(
    ("status", "text", "category"),
    [
        (429, "rate_limit_error: slow down", "rate_limit"),
        (529, "overloaded_error: Overloaded", "rate_limit"),
        (500, "overloaded_error: Overloaded", "rate_limit"),
        (401, "authentication_error: invalid x-api-key", "authentication_failed"),
        (403, "permission_error: no", "authentication_failed"),
        (408, "timeout", "server_error"),
        (500, "api_error: Internal server error", "server_error"),
        (400, "invalid_request_error: too long", "unknown"),
    ],
)
def test_api_retry_error_is_claude_codes_category(status: int, text: str, category: str) -> None:
    """`SDKAPIRetryMessage.error` is one of Claude Code's `SDKAssistantMessageError`
    values (`categorizeRetryableAPIError`), not free text; the words stay, as `error_message`."""
    line = _retry_line(ModelRetry(1, status, text, 0.5, 2))
    assert (line["type"], line["subtype"]) == ("system", "api_retry")
    assert line["error"] == category
    assert line["error_status"] == status
    assert line["error_message"] == text
    assert (line["attempt"], line["max_retries"], line["retry_delay_ms"]) == (1, 2, 500)


def test_api_retry_after_no_response_has_a_null_status() -> None:
    """A timeout or a lost connection had no HTTP response: Claude Code's `error_status`
    is null then (`error.status ?? null`), not 0, which no HTTP status is."""
    line = _retry_line(ModelRetry(2, 0, "no answer: a timeout or a lost connection", None, 2))
    assert line["error_status"] is None
    assert line["error"] == "unknown"


def test_a_max_turns_result_counts_the_turn_it_refused(workspace: Path, tmp_path: Path) -> None:
    """Claude Code's `error_max_turns` result carries the `max_turns_reached` turn count:
    the turn that would have started (`--max-turns 1`: 2), and its own words."""
    result, _ = run_json(workspace, tmp_path, "max_turns")
    assert result["subtype"] == "error_max_turns"
    assert result["num_turns"] == 2
    assert result["errors"] == ["Reached maximum number of turns (1)"]


def test_json_result_is_one_line(workspace: Path, tmp_path: Path) -> None:
    """`claude -p --output-format json` writes the result as one line of JSON
    (`jsonStringify(lastMessage) + "\\n"`): a reader that takes the first line, or
    splits stdout into lines as it does stream-json, gets the whole object."""
    proc = run_scripted("fix_bug", workspace, tmp_path / "l.jsonl", "--output-format", "json")
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and proc.stdout.endswith("\n")
    assert json.loads(lines[0])["result"].startswith("Fixed:")


def test_verbose_json_is_the_array_of_every_message(workspace: Path, tmp_path: Path) -> None:
    """`claude -p --output-format json --verbose` prints every message of the run as one
    JSON array (`jsonStringify(messages)`), the result last: the same objects stream-json
    prints one per line."""
    proc = run_scripted(
        "tool_round", workspace, tmp_path / "l.jsonl", "--output-format", "json", "--verbose"
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    messages = json.loads(line)
    assert isinstance(messages, list)
    assert (messages[0]["type"], messages[0]["subtype"]) == ("system", "init")
    assert messages[-1]["type"] == "result"
    assert messages[-1]["result"] == "notes.txt now says hello."
    again = tmp_path / "again"
    (again / "ws").mkdir(parents=True)
    streamed = stream_lines(again / "ws", again, "tool_round")
    assert [m["type"] for m in messages] == [m["type"] for m in streamed]
    assert len({m["session_id"] for m in messages}) == 1


def test_result_usage_has_the_fields_claude_codes_usage_has(
    messages_server: MessagesServer, workspace: Path
) -> None:
    """Claude Code's result `usage` is the API's usage summed (`NonNullableUsage`):
    `server_tool_use`, `service_tier` and the `cache_creation` split are there too.
    Every cache write here is the default five-minute one (no `ttl` is asked)."""
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 300}
    messages_server.reply(text("Hi.", usage=usage, model=MODEL))
    proc = fsm_on_server(messages_server, workspace, "hi", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["usage"]
    assert got == {
        "input_tokens": 10,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 300},
    }


FAILING_CALLS = {
    "prompt": "x",
    "config": {"permission_mode": "default"},
    "turns": [
        {
            "content": [
                {
                    "type": "tool_use",
                    "id": "t_rm",
                    "name": "Bash",
                    "input": {"command": "rm -rf b"},
                },
                {"type": "tool_use", "id": "t_bad", "name": "Read", "input": {}},
                {"type": "tool_use", "id": "t_unk", "name": "Nope", "input": {}},
                {
                    "type": "tool_use",
                    "id": "t_gone",
                    "name": "Read",
                    "input": {"file_path": "no.txt"},
                },
            ]
        },
        {"content": [{"type": "text", "text": "ok"}]},
    ],
}


def test_a_failed_call_s_tool_use_result_is_claude_codes_error_string(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code's `toolUseResult` for a call that failed or never ran is a string, the
    error the model got without its `<tool_use_error>` wrapper (`Error: …`; an input
    that fails the schema says `InputValidationError: …`), not an object."""
    scenario = tmp_path / "failing.json"
    scenario.write_text(json.dumps(FAILING_CALLS))
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace),
               "--log", str(tmp_path / "f.jsonl"), "--output-format", "stream-json")  # fmt: skip
    users = [json.loads(line) for line in proc.stdout.splitlines()]
    results = {
        u["message"]["content"][0]["tool_use_id"]: u["tool_use_result"]
        for u in users
        if u["type"] == "user"
    }
    assert results["t_rm"].startswith("Error: Permission to use Bash was denied")
    assert results["t_bad"].startswith("InputValidationError: Read failed")
    assert results["t_unk"] == "Error: No such tool available: Nope"
    assert results["t_gone"].startswith("Error: File does not exist.")
    assert not any("tool_use_error" in r for r in results.values())


def test_an_interrupted_call_s_tool_use_result_is_the_interrupt_message(
    workspace: Path, tmp_path: Path
) -> None:
    """As Claude Code's `yieldMissingToolResultBlocks` gives it: the message, no prefix."""
    proc = run_scripted(
        "aborted_streaming", workspace, tmp_path / "a.jsonl", "--output-format", "stream-json"
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    (user,) = [line for line in lines if line["type"] == "user"]
    assert user["tool_use_result"] == "[Request interrupted by user for tool use]"


def test_an_api_error_answer_s_assistant_line_has_a_message_id(
    workspace: Path, tmp_path: Path
) -> None:
    """The `API Error: …` message no API sent has no id of its own; Claude Code's
    synthetic messages get a fresh one (`createAssistantMessage`), so `message.id` is a
    string on every `assistant` line, as its type says."""
    proc = run_scripted(
        "api_error", workspace, tmp_path / "a.jsonl", "--output-format", "stream-json"
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    (assistant,) = [line for line in lines if line["type"] == "assistant"]
    assert isinstance(assistant["message"]["id"], str) and assistant["message"]["id"]
    assert assistant["message"]["content"][0]["text"].startswith("API Error: 401")


def test_json_lines_are_compact_as_claude_codes(workspace: Path, tmp_path: Path) -> None:
    """`claude -p` writes `JSON.stringify`'s compact JSON, no space after `:` or `,`:
    a script that greps stream-json for `"type":"result"`, or json for
    `"is_error":true`, finds it in ours too."""
    proc = run_scripted(
        "api_error", workspace, tmp_path / "a.jsonl", "--output-format", "stream-json"
    )
    lines = proc.stdout.splitlines()
    assert [line for line in lines if '"type":"result"' in line] == [lines[-1]]
    assert '"subtype":"init"' in lines[0]
    assert all(line == json.dumps(json.loads(line), separators=(",", ":")) for line in lines)
    proc = run_scripted("api_error", workspace, tmp_path / "b.jsonl", "--output-format", "json")
    assert '"is_error":true' in proc.stdout
    assert proc.stdout == json.dumps(json.loads(proc.stdout), separators=(",", ":")) + "\n"


def _pre_tool_use(decision: str) -> dict:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
              "permissionDecision": decision, "permissionDecisionReason": "policy"}}  # fmt: skip
    return {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": f"echo '{json.dumps(answer)}'"}],
    }


def test_permission_denials_lists_a_pre_tool_use_hook_s_deny(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code 2.1.x lists a PreToolUse hook's deny with the calls its permission
    check refused; a deny rule over a hook's allow stays out."""
    hooks = [_pre_tool_use("deny") | {"matcher": "Glob"}, _pre_tool_use("allow")]
    settings = {"permissions": {"deny": ["Bash(rm *)"]}, "hooks": {"PreToolUse": hooks}}
    calls = [
        {"type": "tool_use", "id": "t_hook", "name": "Glob", "input": {"pattern": "*"}},
        {"type": "tool_use", "id": "t_rule", "name": "Bash", "input": {"command": "rm -f x"}},
        {"type": "tool_use", "id": "t_plain", "name": "Write",
         "input": {"file_path": str(workspace / "w.txt"), "content": "x"}},
    ]  # fmt: skip
    out, _ = _json_run(workspace, tmp_path, settings, calls)
    assert [d["tool_use_id"] for d in out["permission_denials"]] == ["t_hook", "t_plain"]
    assert not (workspace / "w.txt").exists()


def _json_run(
    workspace: Path, tmp_path: Path, settings: dict, calls: list[dict]
) -> tuple[dict, Path]:
    """`run --output-format json` with the project's `settings`, one turn of `calls` and
    an answer; its result object and its log, which must replay with --check."""
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"turns": [{"content": calls}, {"content": "ok"}]}))
    log = tmp_path / "run.jsonl"
    proc = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log),
               "--output-format", "json", "go")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert fsm("replay", "--check", str(log)).returncode == 0
    return json.loads(proc.stdout), log


def test_a_tool_s_input_is_recorded_with_its_schema_defaults(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code 2.1.x parses a call's input before anything sees it: an Edit without
    `replace_all` reaches its hooks and `permission_denials` with `replace_all: false`.
    The model's own tool_use block stays as it was sent."""
    (workspace / "app.py").write_text("a - b\n")
    record = tmp_path / "payloads.jsonl"
    hook = {"type": "command", "command": f"cat >> {record}"}
    settings = {
        "permissions": {"deny": ["Edit(./app.py)"]},
        "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [hook]}]},
    }
    edit = {"file_path": str(workspace / "app.py"), "old_string": "a - b", "new_string": "a + b"}
    calls = [{"type": "tool_use", "id": "t_edit", "name": "Edit", "input": edit}]
    out, log = _json_run(workspace, tmp_path, settings, calls)
    (denial,) = out["permission_denials"]
    assert denial["tool_input"] == edit | {"replace_all": False}
    (payload,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert payload["tool_input"] == edit | {"replace_all": False}
    (sent,) = [b for m in replay(log).messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert sent.input == edit
