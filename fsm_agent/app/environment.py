"""The environment variables a command-line run reads, each checked where it is read.

Claude Code ignores a variable it cannot read; here one is a usage error naming it
(`ConfigError`), so a run never goes on with a limit the user did not set.
"""

from __future__ import annotations

import contextlib
import os
import re

from fsm_agent.tools.bash import DEFAULT_TIMEOUT_VARIABLE, MAX_TIMEOUT_VARIABLE

CONCURRENCY_VARIABLE = "CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY"
MAX_TURNS_VARIABLE = "CLAUDE_CODE_MAX_TURNS"
STOP_HOOK_CAP_VARIABLE = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
IDLE_NOTIFY_VARIABLE = "FSM_AGENT_IDLE_NOTIFY_MS"
API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
AT_LEAST_ONE = "a whole number of 1 or more"
IDLE_NOTIFY_S = 60.0
"""Claude Code's `messageIdleNotifThresholdMs`: the wait for the user's next message,
after an answer, past which Notification hooks hear `idle_prompt`."""


class ConfigError(Exception):
    """What was typed, set or read cannot make a run: one error line, exit 2."""


def whole_number_variable(name: str, words: str, least: int | None = 1) -> int | None:
    """The environment variable `name` as a whole number (ASCII digits, a sign when no
    `least` is set), None when it is unset or blank; anything else, or less than
    `least`, is a usage error naming the variable, saying it must be `words`."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    number = None
    if re.fullmatch(r"[0-9]+" if least is not None else r"-?[0-9]+", value):
        with contextlib.suppress(ValueError):  # more digits than Python converts
            number = int(value)
    if number is None or (least is not None and number < least):
        raise ConfigError(f"{name} must be {words}, not {value[:40]!r}")
    return number


def check_bash_timeouts() -> None:
    """Claude Code's Bash timeout variables, which the Bash tool reads: one it cannot
    read is a usage error here, where Claude Code ignores it (commands would stop at
    2 minutes, not at the time the user set)."""
    for name in (DEFAULT_TIMEOUT_VARIABLE, MAX_TIMEOUT_VARIABLE):
        whole_number_variable(name, "a whole number of milliseconds, 1 or more")


def concurrency_cap() -> int | None:
    """How many safe calls may run at once, if Claude Code's variable says."""
    return whole_number_variable(CONCURRENCY_VARIABLE, AT_LEAST_ONE)


def max_turns_variable() -> int | None:
    """`--max-turns` from Claude Code's variable, when the option is not given."""
    return whole_number_variable(MAX_TURNS_VARIABLE, AT_LEAST_ONE)


def stop_hook_block_cap() -> int | None:
    """How many Stop-hook blocks in a row send the model on, if Claude Code's variable
    says (0 or less: no cap)."""
    words = "a whole number (0 or less: no cap)"
    return whole_number_variable(STOP_HOOK_CAP_VARIABLE, words, least=None)


def idle_notify_s() -> float:
    """How long a chat's prompt waits after an answer before Notification hooks hear
    `idle_prompt` (Claude Code's `messageIdleNotifThresholdMs`, default a minute)."""
    words = "a whole number of milliseconds"
    number = whole_number_variable(IDLE_NOTIFY_VARIABLE, words, least=0)
    if number is None:
        return IDLE_NOTIFY_S
    try:
        return number / 1000
    except OverflowError:  # more seconds than a float holds
        shown = os.environ[IDLE_NOTIFY_VARIABLE].strip()[:40]
        raise ConfigError(f"{IDLE_NOTIFY_VARIABLE} must be {words}, not {shown!r}") from None


def api_key() -> str:
    """The API key, trimmed as Claude Code trims it: a key read from a file keeps its
    line break. Empty when unset."""
    return (os.environ.get(API_KEY_VARIABLE) or "").strip()


MCP_TIMEOUT_VARIABLE = "MCP_TIMEOUT"
MCP_TOOL_TIMEOUT_VARIABLE = "MCP_TOOL_TIMEOUT"
MCP_OUTPUT_VARIABLE = "MAX_MCP_OUTPUT_TOKENS"


def mcp_limits() -> tuple[float, float | None, int]:
    """Claude Code's MCP variables: how long a server may take to start (`MCP_TIMEOUT`,
    ms, default 30 s), a call to answer (`MCP_TOOL_TIMEOUT`, ms, default no limit), and
    how many tokens of a result the model reads (`MAX_MCP_OUTPUT_TOKENS`, 25 000)."""
    ms = "a whole number of milliseconds, 1 or more"
    start = whole_number_variable(MCP_TIMEOUT_VARIABLE, ms)
    call = whole_number_variable(MCP_TOOL_TIMEOUT_VARIABLE, ms)
    tokens = whole_number_variable(MCP_OUTPUT_VARIABLE, AT_LEAST_ONE)
    return (
        30.0 if start is None else start / 1000,
        None if call is None else call / 1000,
        25_000 if tokens is None else tokens,
    )
