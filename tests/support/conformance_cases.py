"""The conformance corpus: each case one edge, tool path, mode, rule or hook, with the
line saying why it is there. The runner is `tests/support/conformance.py`."""

from __future__ import annotations

from typing import Any

from tests.support.conformance import Case, Turn, hooks_on, raw_tool, say, use
from tests.support.messages_server import error
from tests.support.red_team import BASH_ESCAPES, SECRET

NOW = {"retry-after": "0"}
"""Retry at once: the CLI and the SDK both honour `retry-after`, so no case waits."""
API_ERROR_WORDS = {
    "output": "the API error's words: fsm-agent's name the status, the error's type and "
    "message and the request id; Claude Code's advise, and name the test server's port"
}
"""A run an API error ended answers with the error, in each tool's own words."""
ACCEPT = ("--permission-mode", "acceptEdits")
BYPASS = ("--permission-mode", "bypassPermissions")
SEARCH = ("--allowedTools", "Glob")
"""Claude Code 2.1.332 offers Glob and Grep only when the launch names one of them in
`--allowedTools` or `--tools` (its `searchToolsOptIn`); otherwise it searches through
Bash (`find`, `grep`) and answers "No such tool available: Glob". Neither
EMBEDDED_SEARCH_TOOLS (inlined at build time) nor CLAUDE_CODE_USE_NATIVE_FILE_SEARCH nor
USE_BUILTIN_RIPGREP changes that. Both sides get the flag: allowing Glob widens nothing
for a search inside the workspace, which Glob and Grep may read without asking."""
THINK = {"type": "thinking", "thinking": "let me look", "signature": "sig-1"}
"""A thinking block, signed, as a model with extended thinking sends it."""
SRC = {"app.py": "def add(a, b):\n    return a - b\n", "README.md": "# demo\nhello world\n"}
FILE_PATH = "import json,sys; print(json.load(sys.stdin)['tool_input']['file_path'])"
STOP_ONCE = """\
case "$input" in *'"stop_hook_active":true'*|*'"stop_hook_active": true'*) exit 0;; esac
"""


READ_FIRST = ("--model", "claude-sonnet-4-5-20250929")
"""A model Claude Code makes read a file before changing it, by a dated id."""
APPEND = "printf 'x = 1\\n' >> app.py"
REWRITE = "printf 'def add(a, b):\\n    return a * b\\n' > app.py"
TOUCH = "sleep 0.05; touch app.py"
"""Changes made behind the model's back: text added, the text replaced, the mtime only."""


def read(path: str = "{ws}/app.py", **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("Read", {"file_path": path, **extra})


def edit(old: str, new: str, path: str = "{ws}/app.py", **extra: Any) -> tuple[str, dict]:
    return ("Edit", {"file_path": path, "old_string": old, "new_string": new, **extra})


def write(text: str, path: str = "{ws}/new.txt") -> tuple[str, dict[str, Any]]:
    return ("Write", {"file_path": path, "content": text})


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": command, "description": "run it"})


def overloaded() -> Any:
    return error(529, "overloaded_error", "Overloaded", headers=NOW)


LOOP = [
    Case("text_only", "the simplest run: one request, one answer", "hi", (say("hello"),)),
    Case(
        "rate_limited_429",
        "a 429 is retried after retry-after and the run goes on",
        "hi",
        (error(429, "rate_limit_error", "Rate limited", headers=NOW), say("hello")),
    ),
    Case(
        "overloaded_529_once",
        "a 529 is retried",
        "hi",
        (overloaded(), say("hello")),
    ),
    Case(
        "overloaded_529_thrice_fallback",
        "three 529s in a row switch to the fallback model",
        "hi",
        (overloaded(), overloaded(), overloaded(), say("hello")),
        args=("--fallback-model", "claude-haiku-4-5"),
    ),
    Case(
        "overloaded_529_thrice_no_fallback",
        "without a fallback model three 529s are retried on the same model",
        "hi",
        (overloaded(), overloaded(), overloaded(), say("hello")),
    ),
    Case(
        "server_error_500_fallback",
        "with a fallback model a 5xx that is not a 529 switches models at once",
        "hi",
        (error(500, "api_error", "Internal server error", headers=NOW), say("hello")),
        args=("--fallback-model", "claude-haiku-4-5"),
    ),
    Case(
        "retry_after_past_a_minute",
        "a retry-after over 60 s is not waited for: the run ends on the error",
        "hi",
        (error(429, "rate_limit_error", "Rate limited", headers={"retry-after": "61"}), say("no")),
        known=API_ERROR_WORDS,
    ),
    Case(
        "server_error_500",
        "a 5xx is retried",
        "hi",
        (error(500, "api_error", "Internal server error", headers=NOW), say("hello")),
    ),
    Case(
        "stream_cut_in_tool_json",
        "the connection drops inside a tool_use's JSON: the request is sent again",
        "read it",
        (use(read(), fault="cut_in_tool_json"), use(read()), say("read")),
        files=SRC,
    ),
    Case(
        "stream_ends_without_message_stop",
        "a body that ends cleanly before message_stop is sent again",
        "hi",
        (say("partial", fault="no_message_stop"), say("hello")),
    ),
    Case(
        "stream_error_event",
        "an overloaded `event: error` in the middle of the stream is retried",
        "hi",
        (say("partial", fault="error_event"), say("hello")),
    ),
    Case(
        "prompt_too_long",
        "a prompt too long for the context window, with nothing to compact, ends the run",
        "hi",
        (
            error(
                400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
            ),
        ),
        known=API_ERROR_WORDS,
    ),
    Case(
        "max_tokens_in_text",
        "a reply cut at max_tokens in its text: the loop recovers and the model resumes",
        "write",
        (say("first half", stop_reason="max_tokens"), say("second half")),
    ),
    Case(
        "max_tokens_in_tool_input",
        "a tool call cut at max_tokens: its input is incomplete",
        "write",
        (raw_tool("Write", '{"file_path": "x', stop_reason="max_tokens"), say("giving up")),
    ),
    Case(
        "invalid_tool_json",
        "a tool call whose input is not JSON gets an error result, and the loop goes on",
        "read",
        # an emoji (two UTF-16 code units) and past the 200 Claude Code quotes back
        (raw_tool("Read", '{"file_path": "\U0001f600' + "x" * 250), say("sorry")),
        files=SRC,
        text=("toolu_01",),
    ),
    Case(
        "unknown_tool",
        "a call of a tool that does not exist is an error result",
        "go",
        (use(("Frobnicate", {"x": 1})), say("sorry")),
    ),
    Case(
        "tool_input_wrong_type",
        "a call whose input fails the tool's schema is an error result",
        "go",
        (use(("Read", {"file_path": 7})), say("sorry")),
    ),
    Case(
        "max_turns_1",
        "--max-turns ends the run once the turns are used",
        "read",
        (use(read()), say("never")),
        files=SRC,
        args=("--max-turns", "1"),
    ),
    Case(
        "max_turns_2_reached",
        "--max-turns 2 lets a tool round and its answer through",
        "read",
        (use(read()), say("done")),
        files=SRC,
        args=("--max-turns", "2"),
    ),
    Case(
        "two_tools_one_turn",
        "two read-only calls in one reply both run and both answer",
        "read both",
        (use(read(), read("{ws}/README.md")), say("done")),
        files=SRC,
    ),
    Case(
        "thinking_text_tool_one_turn",
        "a reply of thinking, text and a call: stream-json writes one assistant line a block",
        "read",
        (
            Turn((THINK, {"type": "text", "text": "Reading it."}, *use(read()).blocks)),
            Turn((THINK, {"type": "text", "text": "done"})),
        ),
        files=SRC,
    ),
]

TOOLS = [
    Case(
        "read_file",
        "Read's common path, its numbered text",
        "read",
        (use(read()), say("done")),
        files=SRC,
        text=("toolu_01",),
        known={"tool_text": "line numbers: Claude Code 2.1.x writes `1\\t`, fsm-agent `     1→`"},
    ),
    Case(
        "read_missing",
        "Read of a missing file is an error result",
        "read",
        (use(read("{ws}/nope.py")), say("done")),
        files=SRC,
    ),
    Case(
        "read_offset_limit",
        "Read with offset and limit",
        "read",
        (use(read(offset=2, limit=1)), say("done")),
        files=SRC,
    ),
    Case(
        "read_directory",
        "Read of a directory is an error result",
        "read",
        (use(read("{ws}/pkg")), say("done")),
        files={"pkg/a.py": "x = 1\n"},
    ),
    Case(
        "read_outside_workspace",
        "Read outside the workspace asks, and -p denies",
        "read",
        (use(read("{outside}/notes.txt")), say("done")),
        files=SRC,
    ),
    Case(
        "write_new_file",
        "Write creates a file in acceptEdits",
        "write",
        (use(write("fresh\n")), say("done")),
        args=ACCEPT,
    ),
    Case(
        "write_existing_unread",
        "Write over a file never read goes through: the model could Read it unasked",
        "write",
        (use(write("clobbered\n", "{ws}/app.py")), say("done")),
        files=SRC,
        args=ACCEPT,
    ),
    Case(
        "write_unread_read_first_model",
        "Write over a file never read is refused for a model on the read-first list (dated id)",
        "write",
        (use(write("clobbered\n", "{ws}/app.py")), say("done")),
        files=SRC,
        args=(*ACCEPT, *READ_FIRST),
    ),
    Case(
        "write_after_change",
        "Write over a file changed on disk since the read is refused",
        "write",
        (use(read()), use(bash(APPEND)), use(write("x = 2\n", "{ws}/app.py")), say("done")),
        files=SRC,
        args=BYPASS,
    ),
    Case(
        "write_after_touch",
        "Write over a file only touched since the read goes through: its text is unchanged",
        "write",
        (use(read()), use(bash(TOUCH)), use(write("x = 2\n", "{ws}/app.py")), say("done")),
        files=SRC,
        args=BYPASS,
    ),
    Case(
        "write_after_read",
        "Write over a file read first replaces it",
        "write",
        (use(read()), use(write("x = 2\n", "{ws}/app.py")), say("done")),
        files=SRC,
        args=ACCEPT,
    ),
    Case(
        "write_outside_workspace",
        "Write outside the workspace is refused even in acceptEdits",
        "write",
        (use(write("bad\n", "{outside}/new.txt")), say("done")),
        args=ACCEPT,
    ),
    Case(
        "write_default_mode",
        "Write in default mode asks, and -p denies",
        "write",
        (use(write("fresh\n")), say("done")),
    ),
    Case(
        "edit_after_read",
        "Edit's common path",
        "fix",
        (use(read()), use(edit("a - b", "a + b")), say("fixed")),
        files=SRC,
        args=ACCEPT,
    ),
    Case(
        "edit_unread",
        "Edit of a file never read applies: the model could Read it unasked",
        "fix",
        (use(edit("a - b", "a + b")), say("done")),
        files=SRC,
        settings={"hooks": hooks_on("PostToolUse", "post", "Edit")},
        hooks={"post": "exit 0\n"},
        args=ACCEPT,
    ),
    Case(
        "edit_unread_read_first_model",
        "Edit of a file never read is refused for a model on the read-first list",
        "fix",
        (use(edit("a - b", "a + b")), say("done")),
        files=SRC,
        args=(*ACCEPT, "--model", "claude-haiku-4-5"),
    ),
    Case(
        "edit_after_change",
        "Edit of a file changed since the read applies when old_string still does, with a note",
        "fix",
        (use(read()), use(bash(APPEND)), use(edit("a - b", "a + b")), say("fixed")),
        files=SRC,
        settings={"hooks": hooks_on("PostToolUse", "post", "Edit")},
        hooks={"post": "exit 0\n"},
        args=BYPASS,
        text=("toolu_03",),
    ),
    Case(
        "edit_after_change_old_string_gone",
        "Edit of a file changed since the read, whose old_string is gone, is refused",
        "fix",
        (use(read()), use(bash(REWRITE)), use(edit("a - b", "a + b")), say("done")),
        files=SRC,
        args=BYPASS,
        text=("toolu_03",),
    ),
    Case(
        "edit_old_string_missing",
        "Edit whose old_string is not in the file is an error",
        "fix",
        (use(read()), use(edit("a * b", "a + b")), say("done")),
        files=SRC,
        args=ACCEPT,
    ),
    Case(
        "edit_not_unique",
        "Edit whose old_string occurs twice, without replace_all, is an error",
        "fix",
        (use(read()), use(edit("x", "y")), say("done")),
        files={"app.py": "x = 1\nx = 2\n"},
        args=ACCEPT,
    ),
    Case(
        "edit_replace_all",
        "Edit with replace_all changes every occurrence",
        "fix",
        (use(read()), use(edit("x", "y", replace_all=True)), say("done")),
        files={"app.py": "x = 1\nx = 2\n"},
        args=ACCEPT,
    ),
    Case(
        "edit_same_strings",
        "Edit whose old and new strings are the same is an error",
        "fix",
        (use(read()), use(edit("a - b", "a - b")), say("done")),
        files=SRC,
        args=ACCEPT,
    ),
    Case(
        "edit_create_with_empty_old",
        "Edit with an empty old_string creates a new file",
        "fix",
        (use(edit("", "made\n", "{ws}/made.txt")), say("done")),
        args=ACCEPT,
    ),
    Case(
        "bash_echo",
        "Bash's common path, allowed by a rule",
        "run",
        (use(bash("echo hi")), say("done")),
        args=("--allowedTools", "Bash(echo:*)"),
        text=("toolu_01",),
    ),
    Case(
        "bash_exit_code",
        "a command that exits non-zero is an error result",
        "run",
        (use(bash("echo oops >&2; exit 3")), say("done")),
        args=BYPASS,
    ),
    Case(
        "bash_writes_file",
        "a command's effect on the workspace",
        "run",
        (use(bash("mkdir out && echo data > out/f.txt")), say("done")),
        args=BYPASS,
    ),
    Case(
        "bash_default_mode",
        "a command no rule allows asks in default mode, and -p denies",
        "run",
        (use(bash("touch made")), say("done")),
    ),
    Case(
        "bash_read_only_default",
        "a read-only command runs in default mode without asking",
        "run",
        (use(bash("ls")), say("done")),
        files=SRC,
    ),
    Case(
        "glob_match",
        "Glob's common path",
        "find",
        (use(("Glob", {"pattern": "**/*.py"})), say("done")),
        files={"a.py": "", "pkg/b.py": "", "c.txt": ""},
        args=SEARCH,
    ),
    Case(
        "glob_no_match",
        "Glob that matches nothing is no error",
        "find",
        (use(("Glob", {"pattern": "**/*.rs"})), say("done")),
        files=SRC,
        text=("toolu_01",),
        args=SEARCH,
    ),
    Case(
        "grep_files",
        "Grep's default output: the files that match",
        "find",
        (use(("Grep", {"pattern": "hello"})), say("done")),
        files=SRC,
        args=SEARCH,
    ),
    Case(
        "grep_content",
        "Grep's content mode",
        "find",
        (use(("Grep", {"pattern": "return", "output_mode": "content"})), say("done")),
        files=SRC,
        args=SEARCH,
    ),
    Case(
        "grep_no_match",
        "Grep that matches nothing is no error",
        "find",
        (use(("Grep", {"pattern": "zebra"})), say("done")),
        files=SRC,
        text=("toolu_01",),
        args=SEARCH,
    ),
]

MODES = [
    Case(
        "mode_plan_write",
        "plan mode refuses a Write",
        "write",
        (use(write("fresh\n")), say("done")),
        args=("--permission-mode", "plan"),
    ),
    Case(
        "mode_plan_read",
        "plan mode lets a Read run",
        "read",
        (use(read()), say("done")),
        files=SRC,
        args=("--permission-mode", "plan"),
    ),
    Case(
        "mode_accept_edits_bash",
        "acceptEdits does not allow a command that is not a file edit",
        "run",
        (use(bash("touch made")), say("done")),
        args=ACCEPT,
    ),
    Case(
        "mode_dont_ask",
        "dontAsk denies what no rule allows",
        "run",
        (use(bash("touch made")), say("done")),
        args=("--permission-mode", "dontAsk"),
    ),
    Case(
        "mode_bypass",
        "bypassPermissions runs what no rule allows",
        "run",
        (use(bash("touch made")), say("done")),
        args=BYPASS,
    ),
]

RULES = [
    Case(
        "rule_allow_bash_prefix",
        "an allow rule lets a matching command run in default mode",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"permissions": {"allow": ["Bash(touch:*)"]}},
    ),
    Case(
        "rule_deny_bash_in_bypass",
        "a deny rule wins over bypassPermissions",
        "run",
        (use(bash("rm -f app.py")), say("done")),
        files=SRC,
        settings={"permissions": {"deny": ["Bash(rm:*)"]}},
        args=BYPASS,
    ),
    Case(
        "rule_ask_in_bypass",
        "an ask rule asks even in bypassPermissions, and -p denies",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"permissions": {"ask": ["Bash(touch:*)"]}},
        args=BYPASS,
    ),
    Case(
        "rule_deny_read_path",
        "a Read deny rule refuses the file",
        "read",
        (use(read("{ws}/secrets/key.txt")), say("done")),
        files={"secrets/key.txt": "s3cret\n"},
        settings={"permissions": {"deny": ["Read(./secrets/**)"]}},
    ),
    Case(
        "rule_deny_read_vs_bash_cat",
        "a Read deny rule holds against a Bash command reading the file",
        "run",
        (use(bash("cat secrets/key.txt")), say("done")),
        files={"secrets/key.txt": "s3cret\n"},
        settings={"permissions": {"deny": ["Read(./secrets/**)"], "allow": ["Bash(cat:*)"]}},
    ),
    Case(
        "rule_deny_edit",
        "an Edit deny rule refuses the edit in acceptEdits",
        "fix",
        (use(read()), use(edit("a - b", "a + b")), say("done")),
        files=SRC,
        settings={"permissions": {"deny": ["Edit(./app.py)"]}},
        args=ACCEPT,
    ),
    Case(
        "flag_disallowed_tools",
        "--disallowedTools is a deny rule",
        "run",
        (use(bash("touch made")), say("done")),
        args=(*BYPASS, "--disallowedTools", "Bash(touch:*)"),
    ),
    Case(
        "flag_allowed_tools_write",
        "--allowedTools lets a Write run in default mode",
        "write",
        (use(write("fresh\n")), say("done")),
        args=("--allowedTools", "Write"),
    ),
]

HOOKS = [
    Case(
        "hook_pre_tool_use_exit_2",
        "a PreToolUse hook that exits 2 blocks the call; its stderr goes to the model",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"hooks": hooks_on("PreToolUse", "pre", "Bash")},
        hooks={"pre": "echo 'not here' >&2\nexit 2\n"},
        args=BYPASS,
        text=("toolu_01",),
    ),
    Case(
        "hook_pre_tool_use_json_deny",
        "a PreToolUse hook's JSON deny decision blocks the call",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"hooks": hooks_on("PreToolUse", "pre", "Bash")},
        hooks={
            "pre": 'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
            '"permissionDecision": "deny", "permissionDecisionReason": "no touching"}}\'\n'
        },
        args=BYPASS,
        text=("toolu_01",),
    ),
    Case(
        "hook_pre_tool_use_json_allow",
        "a PreToolUse hook's JSON allow lets a call run that would ask",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"hooks": hooks_on("PreToolUse", "pre", "Bash")},
        hooks={
            "pre": 'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
            '"permissionDecision": "allow"}}\'\n'
        },
    ),
    Case(
        "hook_pre_tool_use_payload",
        "PreToolUse's stdin payload, key by key",
        "read",
        (use(read()), say("done")),
        files=SRC,
        settings={"hooks": hooks_on("PreToolUse", "pre")},
        hooks={"pre": "exit 0\n"},
    ),
    Case(
        "hook_post_tool_use_exit_2",
        "a PostToolUse hook that exits 2 tells the model its stderr",
        "run",
        (use(bash("echo hi")), say("done")),
        settings={"hooks": hooks_on("PostToolUse", "post", "Bash")},
        hooks={"post": "echo 'lint failed' >&2\nexit 2\n"},
        args=BYPASS,
    ),
    Case(
        "hook_post_tool_use_payload",
        "PostToolUse's stdin payload, with the tool's response",
        "run",
        (use(bash("echo hi")), say("done")),
        settings={"hooks": hooks_on("PostToolUse", "post")},
        hooks={"post": "exit 0\n"},
        args=BYPASS,
    ),
    Case(
        "edit_after_formatter",
        "a PostToolUse formatter rewrites the file it edited; the model's next Edit applies",
        "fix",
        (
            use(read()),
            use(edit("a - b", "a  +  b")),
            use(edit("a + b", "b + a")),
            say("fixed"),
        ),
        files=SRC,
        settings={"hooks": hooks_on("PostToolUse", "fmt", "Edit")},
        hooks={
            "fmt": f'f=$(printf \'%s\' "$input" | python3 -c "{FILE_PATH}")\n'
            "sed -i 's/  */ /g' \"$f\"\n"
        },
        args=ACCEPT,
    ),
    Case(
        "hook_user_prompt_submit_block",
        "a UserPromptSubmit hook that exits 2 blocks the prompt",
        "hi",
        (say("never"),),
        settings={"hooks": hooks_on("UserPromptSubmit", "ups")},
        hooks={"ups": "echo 'not that' >&2\nexit 2\n"},
    ),
    Case(
        "hook_user_prompt_submit_context",
        "a UserPromptSubmit hook's stdout is added as context",
        "hi",
        (say("hello"),),
        settings={"hooks": hooks_on("UserPromptSubmit", "ups")},
        hooks={"ups": "echo 'the build is green'\n"},
    ),
    Case(
        "hook_stop_exit_2",
        "a Stop hook that exits 2 sends its stderr back and the loop goes on once",
        "hi",
        (say("done"), say("really done")),
        settings={"hooks": hooks_on("Stop", "stop")},
        hooks={"stop": STOP_ONCE + "echo 'run the tests first' >&2\nexit 2\n"},
    ),
    Case(
        "hook_stop_json_block",
        "a Stop hook's JSON block decision continues the loop",
        "hi",
        (say("done"), say("really done")),
        settings={"hooks": hooks_on("Stop", "stop")},
        hooks={"stop": STOP_ONCE + 'echo \'{"decision": "block", "reason": "more"}\'\n'},
    ),
    Case(
        "hook_stop_continue_false",
        "a Stop hook's continue:false ends the run",
        "hi",
        (say("done"),),
        settings={"hooks": hooks_on("Stop", "stop")},
        hooks={"stop": 'echo \'{"continue": false, "stopReason": "halt"}\'\n'},
    ),
    Case(
        "hook_pre_tool_use_continue_false",
        "a PreToolUse hook's continue:false lets the call run, then ends the run (success)",
        "run",
        (use(bash("touch made")), say("never")),
        settings={"hooks": hooks_on("PreToolUse", "pre", "Bash")},
        hooks={"pre": 'echo \'{"continue": false, "stopReason": "halt"}\'\n'},
        args=BYPASS,
        text=("toolu_01",),
    ),
    Case(
        "hook_session_start_context",
        "a SessionStart hook's stdout is context for the model",
        "hi",
        (say("hello"),),
        settings={"hooks": hooks_on("SessionStart", "start")},
        hooks={"start": "echo 'welcome'\n"},
    ),
    Case(
        "hook_pre_tool_use_updated_input",
        "a PreToolUse hook's updatedInput changes what the tool runs",
        "run",
        (use(bash("echo original")), say("done")),
        settings={"hooks": hooks_on("PreToolUse", "pre", "Bash")},
        hooks={
            "pre": 'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
            '"permissionDecision": "allow", "updatedInput": {"command": "echo changed"}}}\'\n'
        },
        text=("toolu_01",),
    ),
]

CONTEXT = [
    Case(
        "claude_md_import",
        "CLAUDE.md with an @import: both are read into the context",
        "hi",
        (say("hello"),),
        files={"CLAUDE.md": "# rules\n@docs/style.md\n", "docs/style.md": "use tabs\n"},
    ),
    Case(
        "output_json_text",
        "--output-format json's one result object",
        "hi",
        (say("hello"),),
        output="json",
    ),
    Case(
        "output_json_tools",
        "--output-format json after a tool round",
        "read",
        (use(read()), say("done")),
        files=SRC,
        output="json",
    ),
    Case(
        "output_json_max_turns",
        "--output-format json when the run ends at --max-turns",
        "read",
        (use(read()), say("never")),
        files=SRC,
        args=("--max-turns", "1"),
        output="json",
    ),
    Case(
        "output_json_denied",
        "--output-format json lists a denied call in permission_denials",
        "write",
        (use(write("fresh\n")), say("done")),
        output="json",
    ),
]

TRUST = [
    Case(
        "trust_untrusted_allow_ignored",
        "an untrusted workspace's allow rule is ignored: a cloned repository cannot allow "
        "itself a command",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"permissions": {"allow": ["Bash(touch:*)"]}},
        trusted=False,
    ),
    Case(
        "trust_untrusted_additional_directory_ignored",
        "an untrusted workspace's additionalDirectories do not open the outside",
        "read",
        (use(read("{outside}/notes.txt")), say("done")),
        settings={"permissions": {"additionalDirectories": ["{outside}"]}},
        trusted=False,
    ),
    Case(
        "trust_trusted_additional_directory",
        "a trusted workspace's additionalDirectories open the outside to reading",
        "read",
        (use(read("{outside}/notes.txt")), say("done")),
        settings={"permissions": {"additionalDirectories": ["{outside}"]}},
    ),
    Case(
        "trust_untrusted_deny_holds",
        "an untrusted workspace's deny rule holds, in bypassPermissions too",
        "run",
        (use(bash("rm -f app.py")), say("done")),
        files=SRC,
        settings={"permissions": {"deny": ["Bash(rm:*)"]}},
        args=BYPASS,
        trusted=False,
    ),
    Case(
        "trust_untrusted_accept_edits",
        "an untrusted workspace's defaultMode acceptEdits applies",
        "write",
        (use(write("fresh\n")), say("done")),
        settings={"permissions": {"defaultMode": "acceptEdits"}},
        trusted=False,
    ),
    Case(
        "trust_project_bypass_mode_ignored",
        "a workspace's defaultMode bypassPermissions is ignored, trusted",
        "run",
        (use(bash("touch made")), say("done")),
        settings={"permissions": {"defaultMode": "bypassPermissions"}},
    ),
    Case(
        "trust_local_bypass_mode_ignored",
        "settings.local.json's defaultMode bypassPermissions is ignored too",
        "run",
        (use(bash("touch made")), say("done")),
        local_settings={"permissions": {"defaultMode": "bypassPermissions"}},
    ),
    Case(
        "trust_local_allow_untrusted",
        "settings.local.json, the user's own, allows in an untrusted workspace",
        "run",
        (use(bash("touch made")), say("done")),
        local_settings={"permissions": {"allow": ["Bash(touch:*)"]}},
        trusted=False,
    ),
    Case(
        "trust_untrusted_hooks_run",
        "an untrusted workspace's hooks run",
        "run",
        (use(bash("echo hi")), say("done")),
        settings={"hooks": hooks_on("PreToolUse", "pre", "Bash")},
        hooks={"pre": "exit 0\n"},
        trusted=False,
    ),
]

RED_TEAM_WORLD: dict[str, Any] = {
    "files": {
        "sub/.keep": "",
        "paths.txt": "{outside}/secret.txt\n",
        "made.txt": "../outside/made-by-xargs\n",
    },
    "outside": {"secret.txt": f"{SECRET}\n", "hard.txt": "HARD LINKED\n"},
    "links": {"link": "{outside}/secret.txt", "linkdir": "{outside}"},
    "hard_links": {"hard.txt": "{outside}/hard.txt"},
}
"""tests/support/red_team.py's world, as a case's workspace and sentinel tree."""


def _slug(name: str) -> str:
    """A red-team escape's name in a case id: its letters and digits, `_` between."""
    return "_".join("".join(c if c.isalnum() else " " for c in name).split()).lower()


CLI_RUNS_IT = (
    "deliberate: Claude Code 2.1.332 runs it unasked in default mode and the outside secret "
    "reaches the model ({how}); fsm-agent judges where it leads and asks (denied in -p)"
)
CLI_ESCAPES = {
    "a glob through a link": "the shell expands `l*` through `linkdir`, a link to the outside",
    "--from-file=": "an option's value names the outside file",
    "grep -R follows links": "`grep -R` follows `linkdir` out of the workspace",
}
"""The red team's Bash escapes that the real CLI lets through, and how."""

CLI_ECHOES = {
    "cat $'\\u002e\\u002e'": (
        "deliberate: both refuse the call for its escape codes; Claude Code's stream-json and "
        "permission_denials echo its command with the `\\u002e` escapes decoded (`$'..'`), "
        "which is not the text its permission check judged; fsm-agent echoes the model's "
        "input as sent"
    ),
}
"""Red-team cases whose `-p` output differs only in how the refused call is echoed."""

RED_TEAM = [
    Case(
        f"red_team_bash_{n:02d}_{_slug(name)}".rstrip("_"),
        f"red team, in default mode: {name} (refused, as an escape)",
        "get out",
        (use(bash(command.replace("{out}", "{outside}"))), say("done")),
        **RED_TEAM_WORLD,
        known={"output": CLI_ECHOES[name]} if name in CLI_ECHOES else {},
        xfail=CLI_RUNS_IT.format(how=CLI_ESCAPES[name]) if name in CLI_ESCAPES else None,
    )
    for n, (name, command, _asking) in enumerate(BASH_ESCAPES, 1)
]

CASES: list[Case] = [*LOOP, *TOOLS, *MODES, *RULES, *HOOKS, *CONTEXT, *TRUST, *RED_TEAM]
