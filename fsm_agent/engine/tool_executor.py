"""Running one turn's tool calls: each through its pipeline, safe ones together.

A call's pipeline is Claude Code's: input validation against the tool's
schema, PreToolUse hooks, the permission check (and if it asks, the
PermissionRequest hooks, then the user's answer), the tool itself,
PostToolUse hooks. Every step that touches the world
is an effect, so a replay answers it from the log.

Consecutive concurrency-safe calls (Read, Glob, Grep) run together, at most
`RunConfig.max_tool_concurrency` at once; any other call runs alone. Results
keep the order of the calls. A safe call may also start while the model is
still streaming (`start`), as soon as its block is complete; the executor
keeps such tasks by tool_use id, and `run_all` picks their results up.
If the stream then fails, such a call whose tool has not begun (it waited
for a slot, its PreToolUse hooks ran, or it waits for the user's answer) is
discarded, as Claude Code's streaming executor discards its queued calls:
it ends unanswered.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import os
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    Denier,
    DriverEvent,
    Notice,
    ToolFinished,
    ToolRefused,
    ToolStarted,
)
from fsm_agent.core.mcp import McpTools, hook_response
from fsm_agent.core.messages import (
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
    reminder_text,
)
from fsm_agent.core.model import ToolSpec
from fsm_agent.core.permission_types import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    CANCELLED,
    NO_TERMINAL,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionsUpdated,
    PermissionUpdate,
    RuleValue,
)
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome, ToolOutputs
from fsm_agent.core.validation import input_problem, os_string_problem, semantic_input
from fsm_agent.engine.ports import INTERRUPTED, Effects
from fsm_agent.engine.state import Permissions
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome, consult

FILE_PATH_TOOLS = frozenset({"Read", "Write", "Edit"})


@frozen
class CallResult:
    """What one call produced, and what it means for the loop."""

    result: ToolResultBlock
    name: str
    read_files: dict[str, float]
    stop_reason: str | None = None
    interrupted: bool = False
    duration_s: float = 0.0
    reported: bool = True
    """False for a call started early and cut short: whoever collects it reports it
    (`cancel` says why), so a live run and its replay word it the same."""
    discarded: bool = False
    """A call started early whose stream failed before its tool began: it went no
    further, and has no result of its own."""
    mode_update: str | None = None
    dirs_update: tuple[str, ...] | None = None
    """What a PermissionRequest hook's `updatedPermissions` left: the mode for the next
    group of calls, the directories from now on."""
    seen: dict[str, str] = field(factory=dict)
    """The digests of the files whose whole text the call left the model holding
    (`ToolOutcome.seen`)."""


@frozen
class Refusal:
    """Why a call does not run, for the model: denied (`denied_by` says who), stopped
    by a hook (`stop`), or cut by the user or a hook's interrupt (`interrupted`)."""

    text: str
    denied_by: Denier | None
    stop: str | None = None
    interrupted: bool = False


@frozen
class Grant:
    """A call may run: with `tool_input` (a PermissionRequest hook may have replaced it),
    reaching the paths outside the workspace in `paths`."""

    paths: tuple[str, ...]
    tool_input: dict[str, Any]


@frozen
class BatchResult:
    results: tuple[ToolResultBlock, ...]
    read_files: dict[str, float]
    aborted: bool
    stop_reason: str | None
    permissions: Permissions
    seen: dict[str, str] = field(factory=dict)


def with_text(content: ToolResultContent, extra: Sequence[str]) -> ToolResultContent:
    if not extra:
        return content
    if isinstance(content, str):
        return "\n\n".join([content, *extra]) if content else "\n\n".join(extra)
    return (*content, *(TextBlock(t) for t in extra))


def partition(blocks: Sequence[ToolUseBlock], safe: Callable[[ToolUseBlock], bool]) -> list[list]:
    """Consecutive safe calls form one group; every other call is a group of its own."""
    groups: list[list[ToolUseBlock]] = []
    for block in blocks:
        if safe(block) and groups and safe(groups[-1][0]):
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


class ToolExecutor:
    """One run's tool calls: their pipelines, the concurrency cap, calls started early."""

    def __init__(
        self,
        config: RunConfig,
        effects: Effects,
        specs: Sequence[ToolSpec],
        emit: Callable[[DriverEvent], None],
        session_id: str,
        outputs: ToolOutputs | None = None,
        mcp: McpTools | None = None,
    ) -> None:
        self.config = config
        self.mcp = mcp or McpTools()
        self.outputs = outputs
        self.effects = effects
        self.emit = emit
        self.session_id = session_id
        self.schemas = {s.name: s.input_schema for s in specs}
        self.wants_response = config.structured_results or config.has_hooks("PostToolUse")
        self._tasks: dict[str, asyncio.Task[CallResult]] = {}
        self._cancel: dict[str, AbortSignal] = {}
        self._slots: asyncio.Semaphore | None = None
        self._starts = itertools.count(1)

    # --- scheduling -----------------------------------------------------

    def is_safe(self, block: ToolUseBlock) -> bool:
        return block.name in self.config.concurrency_safe_tools or block.name in self.mcp.read_only

    def start(
        self,
        block: ToolUseBlock,
        read_files: Mapping[str, float],
        permissions: Permissions,
        invalid: str | None = None,
        seen: Mapping[str, str] | None = None,
    ) -> asyncio.Task[CallResult]:
        """Start a call now; its result is collected by `run_all` (or `cancel`)."""
        if block.id not in self._tasks:
            cancel = AbortSignal()
            self._cancel[block.id] = cancel
            key = f"{next(self._starts)}:{block.id}"
            self._tasks[block.id] = asyncio.ensure_future(
                self._limited(
                    block, dict(read_files), permissions, invalid, cancel, key, dict(seen or {})
                )
            )
        return self._tasks[block.id]

    async def _limited(
        self,
        block: ToolUseBlock,
        read_files: dict[str, float],
        permissions: Permissions,
        invalid: str | None,
        cancel: AbortSignal,
        key: str,
        seen: dict[str, str],
    ) -> CallResult:
        """The call once a slot is free, unless its stream failed meanwhile: then it is
        discarded before its hooks (whether it was is an effect: when the slot came
        is timing, which a replay does not reproduce)."""
        async with self._semaphore():
            if self.effects.discarded(key, cancel):
                return _discarded(block)
            return await self.call(block, read_files, permissions, invalid, cancel, key, seen)

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(1, self.config.max_tool_concurrency))
        return self._slots

    async def cancel(
        self, ids: Sequence[str] | None = None, *, reason: str | None = None, report: bool = True
    ) -> list[CallResult]:
        """Stop calls started early (the stream failed or was interrupted) and wait for them;
        what they ended with, finished or cut short.

        A cut call's result says `reason` (a model error) instead of the user
        interrupt; with `report` False (the message was discarded) it is not
        reported at all. Their pipelines still finish through the effects
        door, so every effect they began is recorded and the log stays whole.
        A call discarded before its tool began is left out: it is filled in as
        the calls never started are.
        """
        ids = list(self._tasks) if ids is None else [i for i in ids if i in self._tasks]
        for i in ids:
            self._cancel[i].set()
        done = await asyncio.gather(*(self._tasks[i] for i in ids), return_exceptions=True)
        for i in ids:
            self._tasks.pop(i, None)
            self._cancel.pop(i, None)
        failed = [e for e in done if isinstance(e, BaseException)]
        if failed:  # every call has stopped; the first failure goes on, as `run_all`'s would
            raise failed[0]
        calls: list[CallResult] = []
        for call in (c for c in done if isinstance(c, CallResult) and not c.discarded):
            if not call.reported:
                if reason is not None:
                    call = evolve(call, result=_reworded(call.result, reason))
                if report:
                    self.emit(ToolFinished(call.result, call.name, call.duration_s))
            calls.append(call)
        return calls

    async def _collect(self, block: ToolUseBlock, read_files: dict[str, float],
                       permissions: Permissions, invalid: str | None, *,
                       seen: dict[str, str], alone: bool = False) -> CallResult:  # fmt: skip
        """The result of a call started early, or of the call run here and now.

        A call not started early runs in this task with no cancel event:
        only `cancel` sets one, and it is never called while `run_all` runs.
        It takes a concurrency slot unless it is `alone`: a group of one runs
        after every call before it has finished, and no call after it has
        started (early starts stop at the first unsafe call).
        """
        task = self._tasks.get(block.id)
        if task is None:
            if alone:
                return await self.call(block, dict(read_files), permissions, invalid,
                                       seen=dict(seen))  # fmt: skip
            async with self._semaphore():
                return await self.call(block, dict(read_files), permissions, invalid,
                                       seen=dict(seen))  # fmt: skip
        try:
            call = await task
        finally:
            self._tasks.pop(block.id, None)
            self._cancel.pop(block.id, None)
        if not call.reported:
            self.emit(ToolFinished(call.result, call.name, call.duration_s))
        return call

    async def run_all(
        self,
        blocks: Sequence[ToolUseBlock],
        read_files: Mapping[str, float],
        invalid: Mapping[str, str],
        permissions: Permissions,
        seen: Mapping[str, str] | None = None,
    ) -> BatchResult:
        """Every call of the turn, in groups; one result per call, in the calls' order.
        A hook's permission updates are taken in the calls' order once their group is
        done: a mode holds from the next group, directories from the next call on.
        A hook's stop (`continue: false`) lets the rest of the turn's calls run, as
        Claude Code's does (measured on 2.1.332): the loop ends after the batch."""
        files = dict(read_files)
        held = dict(seen or {})
        results: list[ToolResultBlock] = []
        aborted = False
        stop: str | None = None
        for group in partition(blocks, self.is_safe):
            if not aborted and self.effects.aborted("tools"):
                aborted = True
            if aborted:
                # A call started while the model streamed may have finished: it keeps its answer.
                ran = {c.result.tool_use_id: c for c in await self.cancel([b.id for b in group])}
                text = INTERRUPTED
                for b in group:
                    if (call := ran.get(b.id)) is not None:
                        files.update(call.read_files)
                        held.update(call.seen)
                        results.append(call.result)
                        continue
                    results.append(result := ToolResultBlock(b.id, text, True))
                    self.emit(ToolRefused(b, result))
                continue
            perms = permissions
            if len(group) == 1:
                only = group[0]
                done = [
                    await self._collect(
                        only, files, perms, invalid.get(only.id), seen=held, alone=True
                    )
                ]
            else:
                done = await _together(
                    self._collect(b, files, perms, invalid.get(b.id), seen=held) for b in group
                )
            for call in done:
                permissions = permissions.updated(call.mode_update, call.dirs_update)
            permissions = permissions.next_group()
            for call in done:
                files.update(call.read_files)
                held.update(call.seen)
                results.append(call.result)
                aborted = aborted or call.interrupted
                stop = stop or call.stop_reason
        if not aborted and self.effects.aborted("tools"):
            aborted = True
        return BatchResult(tuple(results), files, aborted, stop, permissions, held)

    async def abandon(self) -> None:
        """The run ended by an exception (a replay that diverged, or whose log ran out):
        calls started early are cancelled, waited for, and their outcomes dropped, so
        none is left running, nor failed with nobody to read why."""
        tasks = list(self._tasks.values())
        self._tasks.clear()
        self._cancel.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- one call -------------------------------------------------------

    def _payload(
        self, event: str, block: ToolUseBlock, tool_input: dict[str, Any], mode: str
    ) -> dict:
        payload = {
            "hook_event_name": event,
            "session_id": self.session_id,
            "cwd": self.config.cwd,
            "permission_mode": mode,
            "tool_name": block.name,
            "tool_input": absolute_paths(block.name, tool_input, self.config.cwd, self.config.home),
            "tool_use_id": block.id,
        }
        server = self.mcp.servers.get(block.name)
        if server is not None:  # Claude Code names an MCP tool's server in its payloads
            payload["mcp_server"] = dict(server)
        return payload

    def _semantic(self, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        schema = self.schemas.get(name)
        if schema is None:
            return tool_input
        return semantic_input(name, schema, tool_input, defaults=self.config.parsed_inputs)

    def _validate(self, name: str, tool_input: dict[str, Any]) -> str | None:
        schema = self.schemas.get(name)
        if schema is None:
            down = self.mcp.missing(name)
            said = "" if down is None else f" (MCP server {down})"
            return f"<tool_use_error>Error: No such tool available: {name}{said}</tool_use_error>"
        if name in self.mcp.servers:  # Claude Code leaves an MCP tool's input to its server
            return None
        return input_problem(name, schema, tool_input) or os_string_problem(
            name, tool_input, hidden=self.config.parsed_inputs
        )

    async def call(
        self,
        block: ToolUseBlock,
        read_files: dict[str, float],
        permissions: Permissions,
        invalid: str | None = None,
        cancel: AbortSignal | None = None,
        key: str = "",
        seen: Mapping[str, str] | None = None,
    ) -> CallResult:
        """One call's pipeline. A call started early (`cancel`, `key`) whose stream fails
        before its tool starts is discarded: after its PreToolUse or PermissionRequest
        hooks if they were running, or while the user is asked."""

        parsed = block  # the call with its input as parsed (what permission_denials lists)

        def refused(
            text: ToolResultContent,
            stop: str | None = None,
            denied_by: Denier | None = None,
            interrupted: bool = False,
        ) -> CallResult:
            result = ToolResultBlock(block.id, text, True)
            self.emit(ToolRefused(parsed, result, denied_by))
            return CallResult(result, block.name, {}, stop, interrupted)

        if invalid is not None:
            return refused(f"<tool_use_error>{invalid}</tool_use_error>")
        tool_input = self._semantic(block.name, block.input)
        problem = self._validate(block.name, tool_input)
        if problem is not None:
            return refused(problem)
        parsed = evolve(block, input=tool_input)
        effects = self.effects
        pre = NO_OPINION
        if self.config.has_hooks("PreToolUse"):
            payload = self._payload("PreToolUse", block, tool_input, permissions.mode)
            pre = await consult(effects.run_hooks, self.emit, "PreToolUse", payload)
        if pre.interrupted:
            result = ToolResultBlock(block.id, INTERRUPTED, True)
            self.emit(ToolRefused(block, result))
            return CallResult(result, block.name, {}, interrupted=True)
        # `continue: false` does not refuse the call: Claude Code runs it (a decision the
        # same hook gave still applies), then ends the run once the turn's calls are done.
        stop = (
            pre.stop_reason or "stopped by a PreToolUse hook" if pre.prevent_continuation else None
        )
        if (  # the stream failed while the hooks ran
            cancel is not None
            and self.config.has_hooks("PreToolUse")
            and effects.discarded(f"{key}:hooked", cancel)
        ):
            return _discarded(block)
        if pre.updated_input is not None:
            tool_input = self._semantic(block.name, pre.updated_input)
            problem = self._validate(block.name, tool_input)
            if problem is not None:
                return refused(problem, stop)
            parsed = evolve(block, input=tool_input)
        verdict, updated = await self._permission(block, tool_input, pre, permissions, cancel, key)
        if verdict is None:
            return _with_updates(_discarded(block), updated)
        if isinstance(verdict, Refusal):
            return _with_updates(
                refused(
                    with_text(verdict.text, _reminders(pre)),
                    verdict.stop or stop,
                    verdict.denied_by,
                    verdict.interrupted,
                ),
                updated,
            )
        tool_input = verdict.tool_input
        dirs = permissions.additional_directories
        if updated is not None and updated.additional_directories is not None:
            dirs = updated.additional_directories
        self.emit(ToolStarted(block))
        env = ToolEnv(
            cwd=self.config.cwd,
            read_files=read_files,
            seen=dict(seen or {}),
            model=self.config.model,
            additional_dirs=dirs + verdict.paths,
            permission_mode=permissions.mode,
            cancel=cancel,
            wants_response=self.wants_response,
            session_env=self.config.session_env,
        )
        outcome = await effects.run_tool(ToolCall(block.id, block.name, tool_input), env)
        extra = _reminders(pre)
        stop = stop or outcome.stop_reason
        interrupted = outcome.interrupted
        content, response, is_error = outcome.content, outcome.response, outcome.is_error
        event = "PostToolUseFailure" if outcome.is_error else "PostToolUse"
        files = dict(outcome.read_files)
        held = dict(outcome.seen)
        if self.config.has_hooks(event):
            payload = self._payload(event, block, tool_input, permissions.mode)
            payload["duration_ms"] = round(outcome.duration_s * 1000)
            if outcome.is_error:
                payload["error"] = _response_text(outcome.content)
                payload["is_interrupt"] = outcome.interrupted
            elif block.name in self.mcp.servers:
                payload["tool_response"] = hook_response(outcome.content)
            elif outcome.response is not None:
                payload["tool_response"] = outcome.response
            else:
                payload["tool_response"] = _response_text(outcome.content)
            post = await consult(effects.run_hooks, self.emit, event, payload)
            if post.updated_outputs:
                content, response, is_error = self._replaced(
                    block.name, outcome, post.updated_outputs
                )
            extra += [f"{event} hook feedback:\n{e}" for e in post.blocking_errors]
            extra += _reminders(post)
            for path, changed in post.files_changed:
                if path in files:
                    files[path] = changed
                    held[path] = ""  # the hook's rewrite is not in the model's context
                    extra.append(reminder_text(REWRITTEN.format(tool=block.name, path=path)))
            if post.prevent_continuation:
                stop = stop or post.stop_reason or f"stopped by a {event} hook"
            interrupted = interrupted or post.interrupted
        result = ToolResultBlock(block.id, with_text(content, extra), is_error)
        reported = not (outcome.interrupted and cancel is not None)
        if reported:
            self.emit(ToolFinished(result, block.name, outcome.duration_s, response))
        call = CallResult(
            result, block.name, files, stop, interrupted, outcome.duration_s,
            reported, seen=held,
        )  # fmt: skip
        return _with_updates(call, updated)

    def _replaced(
        self, name: str, outcome: ToolOutcome, replacements: Sequence[Any]
    ) -> tuple[ToolResultContent, dict[str, Any] | None, bool]:
        """The output the model reads after PostToolUse hooks replaced it, and whether it
        is an error: the last replacement that fits the tool's output shape, rendered as
        the tool renders its own; one that does not fit is ignored with a note, as Claude
        Code ignores it. A run given no output shapes takes none."""
        outputs = self.outputs
        structured = outcome.response is not None
        if outputs is None:
            problems: list[str | None] = ["cannot be checked (the run has no output shapes)"]
            problems *= len(replacements)
        else:
            problems = [outputs.problem(name, structured, value) for value in replacements]
        fitting = [v for v, p in zip(replacements, problems, strict=True) if p is None]
        kept = "another hook's replacement" if fitting else "the original output"
        for problem in filter(None, problems):
            self.emit(
                Notice(
                    "hook",
                    f"PostToolUse hook returned updatedToolOutput that {problem}; using {kept}",
                )
            )
        if not fitting:
            return outcome.content, outcome.response, outcome.is_error
        assert outputs is not None
        value = fitting[-1]
        content = outputs.rendered(name, structured, value)
        is_error = outputs.marked_error(name, structured, value)
        return content, value if structured else None, is_error

    async def _permission(
        self,
        block: ToolUseBlock,
        tool_input: dict[str, Any],
        pre: HookOutcome,
        permissions: Permissions,
        cancel: AbortSignal | None,
        key: str = "",
    ) -> tuple[Grant | Refusal | None, PermissionsUpdated | None]:
        """Whether the call may run, and with what; None if it was discarded while it
        waited for PermissionRequest hooks or the user (`cancel`: the stream failed).
        With it, what a PermissionRequest hook's `updatedPermissions` left, if any."""
        name = block.name
        if pre.permission_decision == "deny":
            why = pre.permission_reason or "no reason given"
            # Claude Code 2.1.x's words, unwrapped (measured)
            return Refusal(f"PreToolUse:{name} hook error: {why}", "pre_tool_use_hook"), None
        mode = permissions.mode
        # dontAsk is default with every question denied; a hook's allow skips the question
        # (deny and ask rules still hold), so the rules are asked as in default mode.
        judged = "default" if mode == "dontAsk" and pre.permission_decision == "allow" else mode
        decision: Decision = await self.effects.check_permission(
            PermissionRequest(name, tool_input, judged)
        )
        if decision.behavior == "deny":
            over_hook = pre.permission_decision == "allow"
            return Refusal(
                f"<tool_use_error>{decision.reason}</tool_use_error>",
                "rule_over_hook" if over_hook else "rule",
            ), None
        behavior = decision.behavior
        if pre.permission_decision in ("ask", "defer"):
            behavior = "ask"
        elif pre.permission_decision == "allow" and decision.rule is None and not decision.outside:
            behavior = "allow"
        if behavior == "allow":
            return Grant(decision.grant, tool_input), None
        reason = decision.reason
        if pre.permission_decision in ("ask", "defer") and pre.permission_reason:
            reason = pre.permission_reason
        if mode == "dontAsk":
            return Refusal(
                f"<tool_use_error>Permission to use {name} was denied: {reason}; permission "
                "mode dontAsk denies what is not allowed.</tool_use_error>",
                "mode",
            ), None
        if self.config.has_hooks("PermissionRequest"):
            settled, updated = await self._requested(
                block, tool_input, decision, judged, permissions.mode, cancel, key
            )
            if not isinstance(settled, Undecided):
                return settled, updated
            assert updated is None
        question = PermissionAsk(name, tool_input, reason, decision.suggestion, decision.outside)
        hooked = pre.permission_decision in ("ask", "defer")
        recheck = None if hooked else PermissionRequest(name, tool_input, judged)
        answer = await self.effects.ask_permission(question, cancel, recheck)
        if answer == CANCELLED and cancel is not None:
            return None, None
        if answer in (ALLOW_ONCE, ALLOW_ALWAYS):
            return Grant(decision.outside or decision.grant, tool_input), None
        if answer == NO_TERMINAL:
            hint = (
                f" To allow it, add a rule such as `{decision.suggestion}` to permissions.allow."
                if decision.suggestion
                else ""
            )
            return Refusal(
                f"<tool_use_error>Permission to use {name} was denied: {reason}, and there is "
                f"no terminal to ask the user (permission mode {mode}).{hint} Do not retry "
                "this call; do the task another way or say what is needed.</tool_use_error>",
                "no_terminal",
            ), None
        return Refusal(
            f"<tool_use_error>The user denied permission to use {name} ({reason}). "
            "Do not retry this call; ask the user how to proceed.</tool_use_error>",
            "user",
        ), None

    async def _requested(
        self,
        block: ToolUseBlock,
        tool_input: dict[str, Any],
        decision: Decision,
        mode: str,
        hook_mode: str,
        cancel: AbortSignal | None,
        key: str,
    ) -> tuple[Grant | Refusal | Undecided | None, PermissionsUpdated | None]:
        """The PermissionRequest hooks' answer to a call that would be asked, as Claude
        Code asks them where its permission dialog would show (and in `-p`, where
        none can): an allow stands for the user's yes, a deny for their no; with no
        opinion (`UNDECIDED`) the user is asked, or without a terminal the call is
        denied. An allow's `updatedInput` is validated and judged again: a deny rule
        still holds for what would actually run."""
        name = block.name
        payload = self._payload("PermissionRequest", block, tool_input, hook_mode)
        del payload["tool_use_id"]  # Claude Code's PermissionRequest input has none
        if decision.suggestion:
            payload["permission_suggestions"] = [_suggested(decision.suggestion)]
        outcome = await consult(self.effects.run_hooks, self.emit, "PermissionRequest", payload)
        changed: PermissionsUpdated | None = None
        if outcome.interrupted:
            return Refusal(INTERRUPTED, None, interrupted=True), None
        if outcome.prevent_continuation:
            reason = outcome.stop_reason or "stopped by a PermissionRequest hook"
            return Refusal(
                f"Execution stopped by PermissionRequest hook: {reason}", None, reason
            ), None
        if cancel is not None and self.effects.discarded(f"{key}:requested", cancel):
            return None, None
        if outcome.permission_decision == "deny":
            why = outcome.permission_reason or "no reason given"
            return Refusal(
                f"<tool_use_error>A PermissionRequest hook denied {name}: {why}</tool_use_error>",
                "permission_request_hook",
                interrupted=outcome.interrupt,
            ), None
        if outcome.permission_decision != "allow":
            return UNDECIDED, None
        if outcome.updated_permissions:
            changed = await self._update(outcome.updated_permissions)
        if outcome.updated_input is None:
            return Grant(decision.outside or decision.grant, tool_input), changed
        updated = self._semantic(name, outcome.updated_input)
        problem = self._validate(name, updated)
        if problem is not None:
            return Refusal(problem, None), changed
        again: Decision = await self.effects.check_permission(
            PermissionRequest(name, updated, mode)
        )
        if again.behavior == "deny":
            return Refusal(f"<tool_use_error>{again.reason}</tool_use_error>", "rule"), changed
        return Grant(again.outside or again.grant, updated), changed

    async def _update(self, updates: tuple[PermissionUpdate, ...]) -> PermissionsUpdated:
        """An allowing hook's `updatedPermissions`, applied through the effects door (a
        replay reads what they left from the log): later calls are judged by them."""
        updated = await self.effects.update_permissions(updates)
        for text in updated.messages:
            self.emit(Notice("hook", text))
        return updated


class Undecided(enum.Enum):
    """The PermissionRequest hooks did not decide: the question goes to the user."""

    UNDECIDED = "undecided"


UNDECIDED = Undecided.UNDECIDED


def _suggested(rule: str) -> dict[str, Any]:
    """The rule an "always" answer would add, as Claude Code suggests it to the hook: a
    `PermissionUpdate` adding it for the rest of the session (the run, here)."""
    parsed = RuleValue.parse(rule)
    value: dict[str, Any] = {"toolName": parsed.tool_name}
    if parsed.rule_content is not None:
        value["ruleContent"] = parsed.rule_content
    return {"type": "addRules", "rules": [value], "behavior": "allow", "destination": "session"}


def reads_of(calls: Iterable[CallResult]) -> dict[str, float]:
    """The files `calls` read, as the next run of the conversation counts them."""
    return {path: mtime for call in calls for path, mtime in call.read_files.items()}


def seen_of(calls: Iterable[CallResult]) -> dict[str, str]:
    """What `calls` left the model holding of the files they read (`ToolOutcome.seen`)."""
    return {path: text for call in calls for path, text in call.seen.items()}


async def _together(calls: Iterable[Coroutine[Any, Any, CallResult]]) -> list[CallResult]:
    """The calls' results, run at once; if one fails, the others are cancelled and waited
    for before the failure goes on, so no call runs on after the run has ended."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _with_updates(call: CallResult, updated: PermissionsUpdated | None) -> CallResult:
    """`call`, carrying what a PermissionRequest hook's permission updates left."""
    if updated is None:
        return call
    return evolve(call, mode_update=updated.mode, dirs_update=updated.additional_directories)


def _discarded(block: ToolUseBlock) -> CallResult:
    return CallResult(
        ToolResultBlock(block.id, INTERRUPTED, True), block.name, {}, reported=False,
        discarded=True,
    )  # fmt: skip


def _reworded(result: ToolResultBlock, reason: str) -> ToolResultBlock:
    """A cut call's result with `reason` in place of the user-interrupt text."""
    content = result.content
    if isinstance(content, str) and content.startswith(INTERRUPTED):
        return ToolResultBlock(result.tool_use_id, reason + content[len(INTERRUPTED) :], True)
    return result


REWRITTEN = (
    "PostToolUse:{tool} hook additional context: PostToolUse hook modified {path} after your "
    "edit (likely a formatter). Your next Edit will not fail with a stale-file error, but if "
    "its old_string targets a region the hook reformatted, Read the file first."
)
"""Claude Code's note to the model when a PostToolUse hook rewrote the file its tool
wrote: the file as the hook left it is what the model is taken to have seen."""


def _reminders(outcome: HookOutcome) -> list[str]:
    return [reminder_text(c) for c in outcome.additional_context]


def _response_text(content: ToolResultContent) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def absolute_paths(
    name: str, tool_input: dict[str, Any], cwd: str, home: str | None
) -> dict[str, Any]:
    """Hooks see file paths absolute, as Claude Code sends them, `~` expanded as the
    tools expand it (with the run's recorded `home`, so a replay expands it alike)."""
    path = tool_input.get("file_path")
    if name in FILE_PATH_TOOLS and isinstance(path, str):
        if home is not None and (path == "~" or path.startswith("~/")):
            path = home + path[1:]
        return {**tool_input, "file_path": os.path.normpath(os.path.join(cwd, path))}
    return tool_input
