"""Command hooks as Claude Code defines them: the `hooks` settings, which hooks an
event selects, and what a command's exit code and output mean (0 = fine, stdout
JSON honoured; 2 = block, stderr is the message; anything else = a non-blocking
error).

Pure, so a hook's contract is testable without a process: the runner
(`fsm_agent.live.command_hooks`) starts the commands and hands each one's
`HookRun` to `interpret`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from fsm_agent.core.config import CommandHook, HookMatcher
from fsm_agent.core.jsontext import MAX_DEPTH, deeper_than, strict_loads
from fsm_agent.core.permission_types import PermissionUpdate, UpdateError, read_updates
from fsm_agent.hooks.outcomes import HookOutcome
from fsm_agent.policy.permissions import (
    PermissionError_,
    Place,
    Resolve,
    Rule,
    os_string,
    rule_covers_call,
)

OTHER_HANDLER_TYPES = frozenset({"http", "prompt", "agent", "mcp_tool"})
"""Claude Code's handler types that fsm-agent does not run: skipped, as the docs say."""
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
MAX_OUTPUT_CHARS = 10_000
MAX_CAPTURE_BYTES = 4 * 1024 * 1024
"""What is kept of each of a hook's streams: room for a JSON answer whose `updatedInput`
is large, while a hook that prints without end cannot fill the memory until its timeout."""
_SIMPLE_MATCHER = r"[A-Za-z0-9_ ,|-]*"
"""Compiled by `re` on first use (and cached there), not at import: replay runs no hooks."""


class HookSettingsError(ValueError):
    """A `hooks` section that cannot be used; the message names the file and the entry."""


def _seconds(value: Any) -> float | None:
    """A hook's `timeout` as seconds, or None when it is no positive finite number (an
    integer too large for a float included)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def parse_hooks(section: Any, origin: str) -> tuple[HookMatcher, ...]:
    """The `hooks` object of one settings file. Handler types other than `command` are skipped."""
    if section is None:
        return ()
    if not isinstance(section, dict):
        raise HookSettingsError(f"{origin}: 'hooks' must be an object of event names")
    out: list[HookMatcher] = []
    for event, entries in section.items():
        if not isinstance(entries, list):
            raise HookSettingsError(f"{origin}: hooks.{event} must be a list")
        for n, entry in enumerate(entries):
            where = f"{origin}: hooks.{event}[{n}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
                raise HookSettingsError(f"{where} must be an object with a 'hooks' list")
            matcher = entry.get("matcher")
            matcher = "" if matcher is None else matcher
            if not isinstance(matcher, str):
                raise HookSettingsError(f"{where}.matcher must be a string")
            commands: list[CommandHook] = []
            for h in entry["hooks"]:
                if not isinstance(h, dict):
                    raise HookSettingsError(f"{where}: a hook must be an object with a 'type'")
                kind = h.get("type", "command")
                if isinstance(kind, str) and kind in OTHER_HANDLER_TYPES:
                    continue
                if kind != "command":
                    raise HookSettingsError(
                        f"{where}: unknown hook type {kind!r} (command, "
                        f"{', '.join(sorted(OTHER_HANDLER_TYPES))})"
                    )
                command = h.get("command")
                if not isinstance(command, str) or not command.strip():
                    raise HookSettingsError(f"{where}: a command hook needs a 'command' string")
                if not os_string(command):
                    raise HookSettingsError(
                        f"{where}: a command hook's 'command' holds a null byte or a lone "
                        "surrogate, which no shell can be given"
                    )
                timeout = h.get("timeout")
                if timeout is not None and _seconds(timeout) is None:
                    raise HookSettingsError(
                        f"{where}: 'timeout' must be a positive number of seconds"
                    )
                condition = h.get("if")
                if condition is not None:
                    if not isinstance(condition, str):
                        raise HookSettingsError(f"{where}: 'if' must be a permission rule string")
                    try:
                        Rule.parse(condition)
                    except PermissionError_ as exc:
                        raise HookSettingsError(f"{where}: 'if': {exc}") from None
                commands.append(
                    CommandHook(
                        h["command"], None if timeout is None else _seconds(timeout), condition
                    )
                )
            if commands:
                out.append(HookMatcher(event, tuple(commands), matcher, origin))
    return tuple(out)


def matcher_matches(matcher: str, value: str) -> bool:
    """Claude Code's matcher: `*`/empty = all; plain names (`|`/`,` lists) exact; else a regex."""
    if matcher in ("", "*"):
        return True
    if re.fullmatch(_SIMPLE_MATCHER, matcher):
        return value in {p.strip() for p in re.split(r"[|,]", matcher)}
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False


def match_target(event: str, payload: Mapping[str, Any]) -> str | None:
    if event in TOOL_EVENTS:
        return str(payload.get("tool_name", ""))
    if event == "SessionStart":
        return str(payload.get("source", ""))
    if event in ("PreCompact", "PostCompact"):
        return str(payload.get("trigger", ""))
    if event == "SessionEnd":
        return str(payload.get("reason", ""))
    if event == "Notification":
        return str(payload.get("notification_type", ""))
    return None


def selected(
    matchers: Sequence[HookMatcher],
    event: str,
    payload: Mapping[str, Any],
    place: Place,
    resolve: Resolve,
) -> list[CommandHook]:
    """The hooks of `event` whose matcher takes `payload` and whose `if` covers its call
    (paths resolved by `resolve`), each command once."""
    target = match_target(event, payload)
    chosen: dict[str, CommandHook] = {}
    for m in matchers:
        if m.event != event:
            continue
        if target is not None and not matcher_matches(m.matcher, target):
            continue
        for hook in m.hooks:
            if hook.condition is not None and event in TOOL_EVENTS:
                tool_input = payload.get("tool_input") or {}
                rule = Rule.parse(hook.condition, place.cwd)
                if not _covers(rule, str(payload.get("tool_name", "")), tool_input, place, resolve):
                    continue
            chosen.setdefault(hook.command, hook)
    return list(chosen.values())


def _covers(
    rule: Rule, tool: str, tool_input: Mapping[str, Any], place: Place, resolve: Resolve
) -> bool:
    """A hook's `if` against a call; a path no OS call takes (a model's lone surrogate)
    cannot be judged, so the hook runs: its guard sees the call, which is then denied."""
    try:
        return rule_covers_call(rule, tool, tool_input, place, resolve)
    except ValueError:
        return True


@frozen
class HookRun:
    """What one command did: its exit code (None on timeout), stdout and stderr; or
    why the OS would not start it (`unstarted`)."""

    command: str
    code: int | None
    stdout: str
    stderr: str
    unstarted: str | None = None
    stdout_cut: int = 0
    """Bytes of stdout past `MAX_CAPTURE_BYTES`, dropped."""


def _cap(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n… [{len(text) - MAX_OUTPUT_CHARS} characters cut]"


def _json_output(stdout: str) -> tuple[dict[str, Any] | None, bool]:
    """The hook's JSON answer, if it gave one; and whether it was nested too deeply to
    be taken (then None, as an answer that does not parse)."""
    if not stdout.lstrip().startswith("{"):
        return None, False
    try:
        value = strict_loads(stdout)
    except RecursionError:
        return None, True
    except ValueError:  # JSONDecodeError, or NaN, Infinity, 1e400
        return None, False
    if not isinstance(value, dict):
        return None, False
    if deeper_than(value, MAX_DEPTH):
        return None, True
    return value, False


def interpret(event: str, run: HookRun) -> HookOutcome:
    """The meaning of one command's exit code and output, per Claude Code's hook contract.

    A Stop hook's block names its command, as Claude Code's feedback to the model
    does (`Stop hook feedback:\n[cmd]: reason`, in its transcripts)."""
    name = f"{event} hook"
    if run.unstarted is not None:
        return HookOutcome(
            messages=(f"{name} `{run.command}` could not be started: {run.unstarted}",)
        )
    if run.code is None:
        return HookOutcome(messages=(f"{name} `{run.command}` timed out; its output is ignored",))
    data, too_deep = _json_output(run.stdout)
    stderr = _cap(run.stderr.strip())
    specific = (data or {}).get("hookSpecificOutput") or {}
    if not isinstance(specific, dict):
        specific = {}
    if event == "PermissionRequest":
        return _requested(run, data, specific, stderr)
    reason = (data or {}).get("reason") or specific.get("permissionDecisionReason")
    messages: list[str] = []
    if data is None and run.stdout_cut and run.stdout.lstrip().startswith("{"):
        messages.append(
            f"{name} `{run.command}`: its output passed {MAX_CAPTURE_BYTES // 2**20} MB and "
            f"was cut ({run.stdout_cut} bytes), so its JSON answer is not read"
        )
    if too_deep:
        messages.append(
            f"{name} `{run.command}`: its JSON output is nested more than {MAX_DEPTH} "
            "levels deep, too deeply to be recorded; ignored"
        )
    blocking: list[str] = []
    context: list[str] = []
    decision = specific.get("permissionDecision")
    if data is not None and data.get("decision") in ("approve", "block") and event == "PreToolUse":
        decision = decision or {"approve": "allow", "block": "deny"}[data["decision"]]
    if run.code == 2:
        message = _cap(str(reason or stderr or f"{name} blocked this (exit 2)"))
        if event == "PreToolUse":
            decision = "deny"  # the model reads `[cmd]: stderr`, as in Claude Code 2.1.x
            reason = reason or (f"[{run.command}]: {_cap(run.stderr)}" if stderr else message)
        elif event == "SessionStart":
            messages.append(message)
        elif event == "UserPromptSubmit" and not reason and stderr:
            blocking.append(f"[{run.command}]: {_cap(run.stderr)}")  # Claude Code's words
        else:
            blocking.append(message)
    elif run.code != 0 and data is None:
        first = stderr.splitlines()[0] if stderr else ""
        messages.append(f"{name} error: Failed with non-blocking status code {run.code}: {first}")
    if data is not None:
        if data.get("decision") == "block" and event != "PreToolUse" and run.code != 2:
            blocking.append(_cap(str(data.get("reason") or f"blocked by {name}")))
        if isinstance(data.get("systemMessage"), str):
            messages.append(_cap(data["systemMessage"]))
        extra = specific.get("additionalContext")
        if isinstance(extra, str) and extra:
            context.append(_cap(extra))
    elif run.code == 0 and event in ("UserPromptSubmit", "SessionStart") and run.stdout.strip():
        context.append(_cap(run.stdout.strip()))
    stop = data is not None and data.get("continue") is False
    updated = specific.get("updatedInput")
    output = specific.get("updatedToolOutput") if event == "PostToolUse" else None
    if event == "Stop":
        blocking = [f"[{run.command}]: {b}" for b in blocking]
    return HookOutcome(
        blocking_errors=tuple(blocking),
        prevent_continuation=stop,
        stop_reason=(
            _cap(str(data.get("stopReason") or f"stopped by {name}")) if stop and data else None
        ),
        additional_context=tuple(context),
        permission_decision=decision if decision in ("allow", "deny", "ask", "defer") else None,
        permission_reason=_cap(str(reason)) if reason and decision else None,
        updated_input=updated if isinstance(updated, dict) and event == "PreToolUse" else None,
        updated_outputs=() if output is None else (output,),
        messages=tuple(messages),
    )


def _requested(
    run: HookRun, data: dict[str, Any] | None, specific: dict[str, Any], stderr: str
) -> HookOutcome:
    """A PermissionRequest hook's answer: `hookSpecificOutput.decision`, whose `behavior`
    is allow or deny; an allow may carry `updatedInput` and `updatedPermissions`, a deny a
    `message` for the model and `interrupt`. Claude Code reads nothing else as a decision:
    exit 2 decides nothing (a non-blocking error, as any other failing code), and the JSON
    is honoured whatever the exit code. An allow whose `updatedPermissions` do not fit
    Claude Code's schema fails its validation whole: the hook has no say."""
    name = "PermissionRequest hook"
    messages: list[str] = []
    if run.code != 0 and data is None:
        first = stderr.splitlines()[0] if stderr else ""
        messages.append(f"{name} error: Failed with non-blocking status code {run.code}: {first}")
    if data is None:
        return HookOutcome(messages=tuple(messages))
    if isinstance(data.get("systemMessage"), str):
        messages.append(_cap(data["systemMessage"]))
    decision = specific.get("decision")
    if not isinstance(decision, dict):
        decision = {}
    behavior = decision.get("behavior")
    behavior = behavior if behavior in ("allow", "deny") else None
    message = decision.get("message")
    updated = decision.get("updatedInput")
    updates: tuple[PermissionUpdate, ...] = ()
    if behavior == "allow" and "updatedPermissions" in decision:
        try:
            updates = read_updates(
                decision["updatedPermissions"], "hookSpecificOutput.decision.updatedPermissions"
            )
        except UpdateError as exc:  # Claude Code's schema refuses the whole answer
            return HookOutcome(
                messages=(f"{name} `{run.command}` error: JSON validation failed: {exc}",)
            )
    stop = data.get("continue") is False
    return HookOutcome(
        prevent_continuation=stop,
        stop_reason=_cap(str(data.get("stopReason") or f"stopped by {name}")) if stop else None,
        permission_decision=behavior,
        permission_reason=(
            _cap(message) if behavior == "deny" and isinstance(message, str) and message else None
        ),
        updated_input=updated if behavior == "allow" and isinstance(updated, dict) else None,
        messages=tuple(messages),
        interrupt=behavior == "deny" and decision.get("interrupt") is True,
        updated_permissions=updates,
    )


NO_PROMPT_ID = frozenset({"SessionStart", "SessionEnd"})
"""Events outside any prompt: Claude Code gives them no `prompt_id`."""
NO_PERMISSION_MODE = frozenset({"SessionStart"})
EVENT_FIELD_ORDER: dict[str, tuple[str, ...]] = {
    "PostToolUse": ("tool_name", "tool_input", "tool_response", "tool_use_id", "duration_ms"),
}
"""An event's own fields in the order Claude Code writes them, where the engine's differ
(hooks that compare stdin as text, or print it, see the same bytes)."""
STOP_EXTRAS: dict[str, Any] = {"background_tasks": [], "session_crons": []}
"""What Claude Code adds to a Stop hook's input: this engine runs no background tasks
and no scheduled prompts, so both are always empty."""


def hook_input(
    event: str,
    payload: Mapping[str, Any],
    *,
    transcript_path: str,
    cwd: str,
    permission_mode: str,
    prompt_id: str,
) -> dict[str, Any]:
    """The JSON a hook reads on stdin for the engine's `payload`, keys in Claude Code's
    order (measured on 2.1.332 by the conformance suite): `session_id`,
    `transcript_path`, `cwd`, `prompt_id`, `permission_mode`, `hook_event_name`, then the
    event's own. SessionStart has no `prompt_id`, `permission_mode` nor `model`;
    SessionEnd no `prompt_id`."""
    head: dict[str, Any] = {
        "session_id": payload.get("session_id", ""),
        "transcript_path": transcript_path,
        "cwd": payload.get("cwd", cwd),
    }
    if event not in NO_PROMPT_ID:
        head["prompt_id"] = prompt_id
    if event not in NO_PERMISSION_MODE:
        head["permission_mode"] = payload.get("permission_mode", permission_mode)
    head["hook_event_name"] = event
    rest = {k: v for k, v in payload.items() if k not in head and k != "permission_mode"}
    if event == "SessionStart":
        rest.pop("model", None)
    ordered = {k: rest.pop(k) for k in EVENT_FIELD_ORDER.get(event, ()) if k in rest}
    ordered.update(rest)
    if event == "Stop":
        ordered.update({k: v for k, v in STOP_EXTRAS.items() if k not in ordered})
    return {**head, **ordered}
