"""Which command hooks an event selects, judged without a process or a file: a hook's
`if` is a permission rule, its paths resolved by the function the runner passes."""

from __future__ import annotations

from fsm_agent.core.config import CommandHook, HookMatcher
from fsm_agent.hooks.commands import selected
from fsm_agent.policy.permissions import Place

PLACE = Place("/ws", "/home/u")
GUARD = CommandHook("guard", condition="Read(//secret/**)")
ALWAYS = CommandHook("always")
MATCHERS = (
    HookMatcher("PreToolUse", (GUARD, ALWAYS), "Read"),
    HookMatcher("PreToolUse", (ALWAYS,), "Bash"),
    HookMatcher("PostToolUse", (GUARD,), "Read"),
)


def read(path: str) -> dict[str, object]:
    return {"tool_name": "Read", "tool_input": {"file_path": path}}


def test_a_hooks_if_follows_the_path_the_resolver_gives() -> None:
    def into_secret(path: str) -> str:
        return "/secret/a" if path == "notes" else "/ws/" + path

    assert selected(MATCHERS, "PreToolUse", read("notes"), PLACE, into_secret) == [GUARD, ALWAYS]
    assert selected(MATCHERS, "PreToolUse", read("other"), PLACE, into_secret) == [ALWAYS]


def test_a_command_listed_twice_is_selected_once_and_other_events_not_at_all() -> None:
    bash = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert selected(MATCHERS * 2, "PreToolUse", bash, PLACE, str) == [ALWAYS]
    assert selected(MATCHERS, "Stop", {}, PLACE, str) == []
