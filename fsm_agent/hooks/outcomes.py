"""Hook outcomes, and the hook interface the engine calls through effects."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from attrs import frozen

from fsm_agent.core.events import DriverEvent, Notice
from fsm_agent.core.permission_types import PermissionAsk, PermissionUpdate

PERMISSION_PRECEDENCE = ("deny", "defer", "ask", "allow")


@frozen
class HookOutcome:
    """What the hooks for one event decided, merged.

    `blocking_errors` feed back to the model (Stop: `stop_hook_blocking`;
    PreToolUse: the call is refused; PostToolUse: shown next to the result;
    UserPromptSubmit: the prompt is blocked); `prevent_continuation` ends the
    run (`stop_hook_prevented`, or `hook_stopped` during tools).
    `permission_decision` is a PreToolUse hook's allow/deny/ask/defer, or a
    PermissionRequest hook's allow/deny (`decision.behavior`; its `message` is the
    `permission_reason`, its `interrupt` is `interrupt`: the run ends as if the user
    had pressed Ctrl-C; its allow's `updatedPermissions` are `updated_permissions`,
    applied to the run's permissions); `updated_input` replaces the tool's whole input;
    `updated_outputs` are the
    replacements of a tool's output PostToolUse hooks gave (`updatedToolOutput`), in
    the hooks' order: the last that fits the tool's output shape is what the model
    reads (the executor checks, as Claude Code does); `additional_context`
    goes to the model in a `<system-reminder>`; `messages` are for the user only.
    `interrupted`: Ctrl-C cut the hooks short (or came before they started), so
    they have no say and the loop ends as interrupted; recorded, so replay agrees.
    `files_changed` are the files a file tool's PostToolUse hooks rewrote (a
    formatter), each with its mtime after them: Claude Code takes the file as it is
    then for the model's view of it, so the next Edit is not refused as stale.
    """

    blocking_errors: tuple[str, ...] = ()
    prevent_continuation: bool = False
    stop_reason: str | None = None
    additional_context: tuple[str, ...] = ()
    permission_decision: str | None = None
    permission_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    updated_outputs: tuple[Any, ...] = ()
    messages: tuple[str, ...] = ()
    interrupted: bool = False
    interrupt: bool = False
    updated_permissions: tuple[PermissionUpdate, ...] = ()
    files_changed: tuple[tuple[str, float], ...] = ()


NO_OPINION = HookOutcome()
INTERRUPTED_HOOKS = HookOutcome(interrupted=True)


def strongest(decisions: Sequence[str | None]) -> str | None:
    """Claude Code's precedence when hooks disagree: deny > defer > ask > allow."""
    present = [d for d in decisions if d in PERMISSION_PRECEDENCE]
    return min(present, key=PERMISSION_PRECEDENCE.index) if present else None


def merge(outcomes: Sequence[HookOutcome]) -> HookOutcome:
    """One outcome for several hooks of the same event (they ran in parallel)."""
    if not outcomes:
        return NO_OPINION
    if len(outcomes) == 1:
        return outcomes[0]
    decision = strongest([o.permission_decision for o in outcomes])
    reasons = [
        o.permission_reason
        for o in outcomes
        if o.permission_decision == decision and o.permission_reason
    ]
    updated = [o.updated_input for o in outcomes if o.updated_input is not None]
    stop = [o.stop_reason for o in outcomes if o.prevent_continuation and o.stop_reason]
    return HookOutcome(
        blocking_errors=tuple(e for o in outcomes for e in o.blocking_errors),
        prevent_continuation=any(o.prevent_continuation for o in outcomes),
        stop_reason=stop[0] if stop else None,
        additional_context=tuple(c for o in outcomes for c in o.additional_context),
        permission_decision=decision,
        permission_reason="; ".join(reasons) or None,
        updated_input=updated[-1] if updated else None,
        updated_outputs=tuple(u for o in outcomes for u in o.updated_outputs),
        messages=tuple(m for o in outcomes for m in o.messages),
        interrupted=any(o.interrupted for o in outcomes),
        interrupt=any(o.interrupt for o in outcomes if o.permission_decision == "deny"),
        updated_permissions=tuple(
            u
            for o in outcomes
            if decision == o.permission_decision == "allow"
            for u in o.updated_permissions
        ),
        files_changed=tuple(f for o in outcomes for f in o.files_changed),
    )


async def consult(
    run_hooks: Callable[[str, dict[str, Any]], Awaitable[HookOutcome]],
    emit: Callable[[DriverEvent], None],
    event: str,
    payload: dict[str, Any],
) -> HookOutcome:
    """The hooks of `event`, asked through the effects door (`run_hooks`); what they
    say to the user (a timeout, a non-blocking failure, a `systemMessage`) is shown
    as a `hook` notice, as Claude Code shows it in the transcript."""
    outcome = await run_hooks(event, payload)
    for text in outcome.messages:
        emit(Notice("hook", text))
    return outcome


class Hooks(Protocol):
    """A source of hook outcomes.

    It may also have `events`, the events it answers: the engine then skips
    the hooks effect for every other event (a run with no hooks writes no
    hook records). Without it, every event is asked.
    """

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome: ...


def events_of(hooks: Hooks | None) -> frozenset[str] | None:
    """The events `hooks` answers, or None when it does not say."""
    if hooks is None:
        return frozenset()
    events = getattr(hooks, "events", None)
    return None if events is None else frozenset(events)


def hooked_events(
    *sources: frozenset[str] | tuple[str, ...] | None,
) -> tuple[str, ...] | None:
    """The events some source answers, sorted, for `RunConfig.hooked_events`;
    None when a source does not say (every event is then asked)."""
    if any(s is None for s in sources):
        return None
    return tuple(sorted(frozenset().union(*sources)))  # type: ignore[arg-type]


def joined(*sources: Hooks | None) -> Hooks | None:
    """The sources that are there, as one (None when none is)."""
    present = [s for s in sources if s is not None]
    if len(present) < 2:
        return present[0] if present else None
    return CombinedHooks(*present)


NOTIFICATION = "Notification"


def notifier(hooks: Hooks, session_id: str, cwd: str) -> Callable[[PermissionAsk], None]:
    """Claude Code's Notification hook (`permission_prompt`) for each question put to
    the user. It runs beside the question, not before it, so a slow notifier never
    holds the prompt back, and its output is ignored, as Claude Code ignores it. It
    runs inside the recorded `ask_permission` effect: a replay runs nothing."""
    running: set[asyncio.Task[HookOutcome]] = set()

    def finished(task: asyncio.Task[HookOutcome]) -> None:
        running.discard(task)
        if not task.cancelled():
            task.exception()

    def notify(question: PermissionAsk) -> None:
        payload = {
            "session_id": session_id,
            "cwd": cwd,
            "message": f"Claude needs your permission to use {question.tool}",
            "notification_type": "permission_prompt",
        }
        task = asyncio.ensure_future(hooks.run(NOTIFICATION, payload))
        running.add(task)
        task.add_done_callback(finished)

    return notify


class NoHooks:
    events: frozenset[str] = frozenset()

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        return NO_OPINION


class CombinedHooks:
    """Several hook sources (settings files, a scenario's script) for one run."""

    def __init__(self, *sources: Hooks) -> None:
        self.sources = sources

    @property
    def events(self) -> frozenset[str] | None:
        each = [events_of(s) for s in self.sources]
        return None if None in each else frozenset().union(*each)  # type: ignore[arg-type]

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        outcomes = await asyncio.gather(*(s.run(event, payload) for s in self.sources))
        return merge([o for o in outcomes if o != NO_OPINION])
