"""The Agent SDK's hook callbacks and `can_use_tool`, run where Claude Code's command hooks run.

An SDK registers its hooks in `initialize` (`{event: [{matcher, hookCallbackIds,
timeout}]}`); each is asked with a `hook_callback` request carrying the event's JSON
(what a command hook gets on stdin), and its answer is the JSON a command hook
prints, read by the same `interpret`, so the payloads and outcomes are the same.
With `--permission-prompt-tool stdio`, the SDK's `can_use_tool` is asked where a
permission question would go to the user, as a PermissionRequest hook is: its
`{behavior, updatedInput, updatedPermissions, message, interrupt}` answer is that
hook's `decision`. Both go through the run's `hooks` effect, so a replay asks no SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from fsm_agent.core.config import CommandHook, HookMatcher
from fsm_agent.hooks.commands import HookRun, hook_input, interpret, selected
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome, merge
from fsm_agent.live.paths import default_resolve
from fsm_agent.live.sdk_control import ControlChannel, ControlError
from fsm_agent.policy.permissions import Place

PERMISSION_REQUEST = "PermissionRequest"
DEFAULT_TIMEOUT_S = 600.0
"""A hook callback's time when its matcher sets none (a command hook's default)."""


class RegistrationError(ValueError):
    """`initialize`'s `hooks` are not `{event: [{matcher, hookCallbackIds, timeout}]}`."""


def registered(hooks: Any) -> tuple[HookMatcher, ...]:
    """`initialize`'s hook registrations as matchers whose "commands" are callback ids."""
    if hooks is None:
        return ()
    if not isinstance(hooks, Mapping):
        raise RegistrationError("hooks is not an object of events")
    out: list[HookMatcher] = []
    for event, matchers in hooks.items():
        if not isinstance(matchers, list):
            raise RegistrationError(f"hooks.{event} is not a list")
        for entry in matchers:
            ids = entry.get("hookCallbackIds") if isinstance(entry, Mapping) else None
            if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
                raise RegistrationError(f"hooks.{event}: a matcher without hookCallbackIds")
            timeout = entry.get("timeout")
            seconds = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None
            matcher = entry.get("matcher")
            out.append(
                HookMatcher(
                    str(event),
                    tuple(CommandHook(i, seconds) for i in ids),
                    matcher if isinstance(matcher, str) else "",
                    "sdk",
                )
            )
    return tuple(out)


class SdkHooks:
    """The SDK's callbacks as a hooks source (`fsm_agent.hooks.outcomes.Hooks`)."""

    def __init__(
        self,
        channel: ControlChannel,
        matchers: Sequence[HookMatcher],
        *,
        can_use_tool: bool,
        transcript_path: str = "",
        permission_mode: str = "default",
    ) -> None:
        self.channel = channel
        self.matchers = tuple(matchers)
        self.can_use_tool = can_use_tool
        self.transcript_path = transcript_path
        self.permission_mode = permission_mode
        self.prompt_id = str(uuid.uuid4())
        """One run is one prompt: its hooks share the id, as Claude Code's do."""
        self.events = frozenset(
            {m.event for m in self.matchers} | ({PERMISSION_REQUEST} if can_use_tool else set())
        )

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        cwd = str(payload.get("cwd", "."))
        place = Place(cwd, os.path.realpath(os.path.expanduser("~")))
        hooks = selected(self.matchers, event, payload, place, default_resolve(cwd))
        asked = [self._callback(h, event, payload) for h in hooks]
        if event == PERMISSION_REQUEST and self.can_use_tool:
            asked.append(self._can_use_tool(payload))
        if not asked:
            return NO_OPINION
        return merge([o for o in await asyncio.gather(*asked) if o != NO_OPINION])

    def _input(self, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The event's JSON as a command hook reads it on stdin."""
        return hook_input(
            event,
            payload,
            transcript_path=self.transcript_path,
            cwd=".",
            permission_mode=self.permission_mode,
            prompt_id=self.prompt_id,
        )

    async def _callback(
        self, hook: CommandHook, event: str, payload: dict[str, Any]
    ) -> HookOutcome:
        request = {
            "subtype": "hook_callback",
            "callback_id": hook.command,
            "input": self._input(event, payload),
            "tool_use_id": payload.get("tool_use_id"),
        }
        name = f"SDK hook callback {hook.command}"
        try:
            answer = await self.channel.request(request, hook.timeout or DEFAULT_TIMEOUT_S)
        except TimeoutError:
            return interpret(event, HookRun(name, None, "", ""))
        except ControlError as exc:
            return interpret(event, HookRun(name, 1, "", str(exc)))
        return interpret(event, HookRun(name, 0, json.dumps(answer), ""))

    async def _can_use_tool(self, payload: dict[str, Any]) -> HookOutcome:
        request = {
            "subtype": "can_use_tool",
            "tool_name": payload.get("tool_name"),
            "input": payload.get("tool_input") or {},
            "permission_suggestions": payload.get("permission_suggestions") or [],
        }
        name = "the SDK's can_use_tool"
        try:
            answer = await self.channel.request(request)
        except ControlError as exc:
            return interpret(PERMISSION_REQUEST, HookRun(name, 1, "", str(exc)))
        decision = {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": answer}}
        return interpret(PERMISSION_REQUEST, HookRun(name, 0, json.dumps(decision), ""))
