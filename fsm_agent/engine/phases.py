"""What happens in each phase: compute facts, perform effects, never choose the next state.

A phase gets the loop state and the iteration's scratch, and returns the
scratch it filled in plus the `Facts` the machine's guards read. Every
effect goes through `run.effects`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from attrs import evolve

from fsm_agent.context.claude_md import matching_rules, nested_candidates
from fsm_agent.context.levels import (
    NOTHING_OLDER,
    budget_nudge,
    prepend_user_context,
    reactive_compaction,
)
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    AssistantMessage,
    BlockDelta,
    BlockStop,
    CallsDiscarded,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelCallError,
    ModelEvent,
    ResponseUsage,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseComplete,
)
from fsm_agent.core.limits import held_to_limit
from fsm_agent.core.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolUseBlock,
    Usage,
    reminder_text,
)
from fsm_agent.core.model import ModelRequest
from fsm_agent.engine.ports import model_failed
from fsm_agent.engine.preprocess import compact_hook, preprocess
from fsm_agent.engine.reasons import Phase
from fsm_agent.engine.run import Run
from fsm_agent.engine.state import (
    NO_FACTS,
    BudgetTracker,
    Facts,
    Iteration,
    LoopState,
    Permissions,
    facts,
)
from fsm_agent.engine.tool_executor import reads_of, seen_of
from fsm_agent.hooks.outcomes import NO_OPINION, consult

BUDGET_COMPLETION_THRESHOLD = 0.9
DIMINISHING_DELTA_TOKENS = 500


PhaseFn = Callable[[Run, LoopState, Iteration], Awaitable[tuple[Iteration, Facts]]]


OVER_LIMIT = Facts(over_hard_limit=True)
NO_USAGE = Usage()
STOP_HOOKS_INTERRUPTED = "interrupted while Stop hooks ran"
"""Ctrl-C while Stop hooks ran: as in Claude Code, the hooks prevent continuing."""
POST_TOOL_BATCH = "PostToolBatch"


async def blocking_limit_check(
    run: Run, state: LoopState, it: Iteration
) -> tuple[Iteration, Facts]:
    return it, OVER_LIMIT if it.token_count >= run.config.blocking_limit else NO_FACTS


CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"
CUT_STOP_REASONS = ("max_tokens", CONTEXT_WINDOW_EXCEEDED)
"""Stop reasons that cut the answer short. Claude Code recovers from a cut at the
model's context window as from one at `max_tokens`: either way the answer stopped
mid-way and the model is asked to go on."""


class _Assembler:
    """Builds the assistant message from stream events, and says what it saw."""

    def __init__(self, run: Run, on_tool_use: Callable[[ToolUseBlock], bool]) -> None:
        self.run = run
        self.on_tool_use = on_tool_use
        self.blocks: dict[int, ContentBlock] = {}
        self.invalid: dict[str, str] = {}
        self.message_id = ""
        self.model = ""
        self.usage = NO_USAGE
        self.stop_reason: str | None = None
        self.stopped = False
        self.started = False

    def feed(self, event: StreamEvent) -> bool:
        """Take one event; True when it started a tool call."""
        emit = self.run.emit
        emit(ModelEvent(event))
        if isinstance(event, MessageStart):
            self.message_id, self.model, self.usage = event.id, event.model, event.usage
            self.started = True
        elif isinstance(event, BlockDelta):
            if event.kind == "text":
                emit(TextDelta(event.delta))
            elif event.kind == "thinking":
                emit(ThinkingDelta(event.delta))
        elif isinstance(event, BlockStop):
            self.blocks[event.index] = event.block
            if isinstance(event.block, ToolUseBlock):
                if event.error is not None:
                    self.invalid[event.block.id] = event.error
                else:
                    emit(ToolUseComplete(event.block))
                    return self.on_tool_use(event.block)
        elif isinstance(event, MessageDelta):
            self.stop_reason = event.stop_reason
            self.usage = self.usage.updated_by(event.usage)
        elif isinstance(event, MessageStop):
            self.stopped = True
        return False

    def message(self) -> Message | None:
        content = tuple(self.blocks[i] for i in sorted(self.blocks))
        if self.stop_reason in CUT_STOP_REASONS and not self.run.config.cut_calls_answered:
            content = tuple(
                b for b in content if not (isinstance(b, ToolUseBlock) and b.id in self.invalid)
            )
        if not content and not self.stopped:
            return None
        return Message(
            "assistant",
            content,
            id=self.message_id or None,
            model=self.model or None,
            stop_reason=self.stop_reason,
            usage=self.usage,
        )


def max_tokens(config: RunConfig, state: LoopState, model: str) -> int:
    """What a request to `model` asks for: the override after an escalation, else the
    run's default (the cap, under the output cap), held to the model's output limit."""
    return held_to_limit(model, state.max_output_tokens_override or config.request_max_tokens)


def build_request(run: Run, state: LoopState, it: Iteration) -> ModelRequest:
    config = run.config
    return ModelRequest(
        model=it.model,
        system=run.system,
        messages=prepend_user_context(it.messages_for_query, config.user_context),
        tools=run.tool_specs,
        max_tokens=max_tokens(config, state, it.model),
        fallback_model=config.fallback_model if config.fallback_model != it.model else None,
    )


def _early_starter(run: Run, state: LoopState, it: Iteration) -> Callable[[ToolUseBlock], bool]:
    """Start concurrency-safe calls as their blocks complete, until an unsafe call is seen."""
    executor = run.executor
    blocked = not run.config.streaming_tools
    permissions = it.permissions or state.permissions

    def on_tool_use(block: ToolUseBlock) -> bool:
        nonlocal blocked
        if blocked or not executor.is_safe(block):
            blocked = True
            return False
        executor.start(block, state.tool_context.read_files, permissions,
                       seen=state.tool_context.seen)  # fmt: skip
        return True

    return on_tool_use


def session_change(run: Run, state: LoopState, it: Iteration) -> Iteration:
    """What the user changed since the last request (the Agent SDK's `set_model`, its
    `set_permission_mode`): this request goes to the model set, and this iteration's
    calls are judged in the mode set, as a hook's `setMode` holds from the next group."""
    change = run.effects.session_change()
    if change.model is not None:
        it = evolve(it, model=change.model)
    if change.permission_mode is not None:
        held = it.permissions or state.permissions
        mode = change.permission_mode
        it = evolve(it, permissions=Permissions(mode, mode, held.additional_directories))
    return it


async def api_call(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    it = session_change(run, state, it)
    assembler = _Assembler(run, _early_starter(run, state, it))
    error: ModelCallError | None = None
    stream = run.effects.model_stream(build_request(run, state, it))
    try:
        async for event in stream:
            if assembler.feed(event):
                await asyncio.sleep(0)  # the call just started runs while the stream goes on
    except ModelCallError as exc:
        error = exc
    except BaseException:
        # Raised here (an event callback failed, the task was cancelled): close the stream
        # now, so it is recorded while the log is open, not when the loop shuts down.
        await stream.aclose()  # type: ignore[attr-defined]
        raise
    if assembler.started:  # counted and priced even if its message is dropped
        run.emit(ResponseUsage(assembler.model or it.model, assembler.usage))
    message = assembler.message()
    assistant = () if message is None else (message,)
    it = evolve(
        it,
        assistant_messages=assistant,
        tool_use_blocks=() if message is None else message.tool_uses,
        invalid_tool_inputs=assembler.invalid,
        stop_reason=assembler.stop_reason,
        usage=it.usage + assembler.usage,
    )
    if error is None and not assembler.stopped and not run.effects.aborted("streaming"):
        error = ModelCallError("incomplete_stream", "the stream ended without message_stop")
    if error is None and assembler.stop_reason == "refusal" and not it.tool_use_blocks:
        it = _refused(it)
    facts = NO_FACTS
    if error is not None:
        it, facts = await _classify(run, it, error, assembler)
    if it.model_error is None:  # a failed call's message waits for its edge's action
        for complete in it.assistant_messages:
            run.emit(AssistantMessage(complete))
    return it, facts


def streamed_calls(assembler: _Assembler) -> tuple[str, ...]:
    """The ids of every tool_use block the stream completed, valid or not."""
    return tuple(b.id for b in assembler.blocks.values() if isinstance(b, ToolUseBlock))


async def drop_calls(run: Run, it: Iteration, *, report: bool) -> Iteration:
    """Cut the calls the failed stream started. With `report` (a model error ends the
    run) the transcript keeps their answers, and what they read; without (the
    fallback's answer, or an API error's, replaces this message and its calls) they
    are discarded, and the user is told."""
    cut = await run.executor.cancel(reason=model_failed(it.model_error or ""), report=report)
    it = evolve(it, tool_results=tuple(c.result for c in cut))
    if report:
        return evolve(it, read_files=reads_of(cut), seen=seen_of(cut))
    run.emit(CallsDiscarded(it.streamed_calls))
    return it


REFUSAL = (
    "API Error: the model declined to answer (stop_reason refusal): the request appears "
    "to violate Anthropic's Usage Policy (https://www.anthropic.com/legal/aup). Try "
    "rephrasing the request or a different approach."
)


def _refused(it: Iteration) -> Iteration:
    """The API's classifiers stopped the answer: as in Claude Code, the run ends completed
    with the refusal as its error. What was streamed stays the answer; with nothing
    streamed, the refusal is the answer, as an API error's is. The conversation never
    holds an empty answer, nor two in a row, which the API refuses when it goes on."""
    if any(m.content for m in it.assistant_messages):
        return evolve(it, api_error=REFUSAL)
    note = Message("assistant", (TextBlock(REFUSAL),), model=it.model, stop_reason="refusal")
    return evolve(it, api_error=REFUSAL, assistant_messages=(note,))


async def _classify(
    run: Run, it: Iteration, error: ModelCallError, assembler: _Assembler
) -> tuple[Iteration, Facts]:
    """What the failed call means. A withheld error keeps the calls going (recovery
    may retry); an API error becomes the answer, its calls dropped; any other error
    is a model error, and which of its edges is taken (the fallback model, or the end)
    is the table's, whose actions cut the calls."""
    if error.kind in ("prompt_too_long", "media"):
        withheld = evolve(it, withheld=error.kind, withheld_message=error.message)
        return evolve(withheld, api_error_status=error.status), NO_FACTS
    text = f"{error.kind}: {error.message}"
    it = evolve(it, streamed_calls=streamed_calls(assembler))
    if error.kind == "api":
        api_text = f"API Error: {error.message}"
        note = Message(
            "assistant", (TextBlock(api_text),), model=it.model, stop_reason="stop_sequence"
        )
        cut = await drop_calls(run, evolve(it, model_error=text), report=False)
        it = evolve(it, tool_results=cut.tool_results)
        it = evolve(it, api_error=api_text, api_error_status=error.status)
        return evolve(it, assistant_messages=(note,), tool_use_blocks=()), NO_FACTS
    found = facts(model_error=text, overloaded=error.kind == "overloaded", model=it.model)
    return evolve(it, model_error=text, api_error_status=error.status), found


async def abort_check(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    aborted = run.effects.aborted("streaming")
    if aborted:
        cut = await run.executor.cancel()
        it = evolve(it, tool_results=tuple(c.result for c in cut), read_files=reads_of(cut),
                    seen=seen_of(cut))  # fmt: skip
    return it, facts(aborted=aborted, needs_follow_up=bool(it.tool_use_blocks))


async def recovery(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    """What the call withheld, or how its answer was cut."""
    escalated = held_to_limit(it.model, run.config.escalated_max_output_tokens)
    return it, facts(
        withheld=it.withheld,
        collapses_staged=it.collapse.staged_count,
        truncated=it.stop_reason in CUT_STOP_REASONS,
        at_output_limit=escalated <= max_tokens(run.config, state, it.model),
        api_error=it.api_error,
    )


async def compaction_check(
    run: Run, state: LoopState, it: Iteration, found: Facts
) -> tuple[Iteration, Facts]:
    """`reactive_compact_retry`'s confirmation, run when the table picks it: whether the
    compaction can change the request, PreCompact hooks asked then and only then."""
    why = await _why_not_compacted(run, it)
    if why is None:
        return it, found
    return evolve(it, not_compacted=why), evolve(found, nothing_to_compact=True)


async def _why_not_compacted(run: Run, it: Iteration) -> str | None:
    """Why reactive compaction would leave the refused request as it is, or None.

    A compaction that changes nothing runs no PreCompact hook: there is no
    compaction for it to allow or block.
    """
    media = it.withheld == "media"
    _, done = reactive_compaction(it.messages_for_query, images=media)
    if done is None:
        return f"{NOTHING_OLDER}, no image to strip" if media else NOTHING_OLDER
    blocked = await compact_hook(run, "PreCompact", {"custom_instructions": None})
    return None if blocked is None else f"compaction blocked by a PreCompact hook: {blocked}"


async def stop_hooks(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    outcome = NO_OPINION
    if run.config.has_hooks("Stop"):
        last = it.assistant_messages[-1].text if it.assistant_messages else ""
        outcome = await consult(
            run.effects.run_hooks,
            run.emit,
            "Stop",
            {
                "hook_event_name": "Stop",
                "session_id": run.session_id,
                "cwd": run.config.cwd,
                "stop_hook_active": state.stop_hook_active,
                "last_assistant_message": last,
            },
        )
    stop_reason = STOP_HOOKS_INTERRUPTED if outcome.interrupted else outcome.stop_reason
    return evolve(it, hook_stop_reason=stop_reason), facts(
        hook_prevented=outcome.prevent_continuation,
        aborted=outcome.interrupted,
        stop_reason=stop_reason,
        blocking_errors=tuple(outcome.blocking_errors),
        stop_context=tuple(outcome.additional_context),
        budget_nudge=token_budget_nudge(run.config, state, it),
    )


def token_budget_nudge(config: RunConfig, state: LoopState, it: Iteration) -> str | None:
    """Claude Code's budget check: keep going below 90% unless returns are diminishing."""
    budget = config.token_budget
    if not budget:
        return None
    spent = (state.usage + it.usage).output_tokens
    tracker: BudgetTracker = state.budget
    delta = spent - tracker.last_output_tokens
    diminishing = (
        tracker.continuation_count >= 3
        and delta < DIMINISHING_DELTA_TOKENS
        and tracker.last_delta_tokens < DIMINISHING_DELTA_TOKENS
    )
    if diminishing or spent >= BUDGET_COMPLETION_THRESHOLD * budget:
        return None
    return budget_nudge(spent, budget)


async def tool_execution(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    batch = await run.executor.run_all(
        it.tool_use_blocks, state.tool_context.read_files, it.invalid_tool_inputs,
        it.permissions or state.permissions, state.tool_context.seen,
    )  # fmt: skip
    aborted, stop = batch.aborted, batch.stop_reason
    if not (aborted or stop) and run.config.has_hooks(POST_TOOL_BATCH):
        aborted, stop = await post_tool_batch(run)
    it = evolve(it, tool_results=batch.results, read_files=batch.read_files, seen=batch.seen,
                hook_stop_reason=stop, permissions=batch.permissions)  # fmt: skip
    return it, facts(aborted=aborted, hook_prevented=stop is not None)


async def post_tool_batch(run: Run) -> tuple[bool, str | None]:
    """Claude Code's PostToolBatch hooks, once every call of the turn has its result:
    a block (exit 2, `decision: "block"`) or `continue: false` stops the loop before
    the next model call (`hook_stopped`, with the hook's reason); Ctrl-C while they
    run is Ctrl-C during tools."""
    payload = {"hook_event_name": POST_TOOL_BATCH, "session_id": run.session_id,
               "cwd": run.config.cwd}  # fmt: skip
    outcome = await consult(run.effects.run_hooks, run.emit, POST_TOOL_BATCH, payload)
    if outcome.interrupted:
        return True, None
    if outcome.prevent_continuation:
        return False, outcome.stop_reason or f"stopped by a {POST_TOOL_BATCH} hook"
    if outcome.blocking_errors:
        return False, "\n".join(outcome.blocking_errors)
    return False, None


async def attachments(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    """Queued user input; the CLAUDE.md files of directories first read from this turn,
    and the rules whose `paths:` a file read this turn matches, each shown once."""
    queued = run.effects.queued_input()
    notes, shown = await _memory_notes(run, state, it) if it.read_files else ((), ())
    if not (queued or shown):
        return it, NO_FACTS
    return evolve(it, attachments=(*notes, *queued), memory_checked=shown), NO_FACTS


async def _memory_notes(
    run: Run, state: LoopState, it: Iteration
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The reminders this turn's reads bring in, and every path now looked at."""
    checked = state.tool_context.memory_checked
    candidates = tuple(
        p for p in nested_candidates(run.config.workspaces, it.read_files) if p not in checked
    )
    found = await run.effects.nested_memory(candidates) if candidates else {}
    known = {*run.config.memory_paths, *checked}
    new = {path: text for path, text in found.items() if path not in known}
    rules = matching_rules(run.config.workspaces, run.config.path_rules, it.read_files, checked)
    texts = (*new.values(), *(r.text for r in rules))
    notes = tuple(reminder_text(text) for text in texts)
    imported = tuple(path for path in new if path not in candidates)
    return notes, (*candidates, *imported, *(r.path for r in rules))


async def continuation(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    """Nothing to find out: whether the next turn passes `max_turns` is the table's."""
    return it, NO_FACTS


PHASES: dict[str, PhaseFn] = {
    Phase.PREPROCESS: preprocess,
    Phase.BLOCKING_LIMIT_CHECK: blocking_limit_check,
    Phase.API_CALL: api_call,
    Phase.ABORT_CHECK: abort_check,
    Phase.RECOVERY: recovery,
    Phase.STOP_HOOKS: stop_hooks,
    Phase.TOOL_EXECUTION: tool_execution,
    Phase.ATTACHMENTS: attachments,
    Phase.CONTINUATION: continuation,
}

ConfirmFn = Callable[[Run, LoopState, Iteration, Facts], Awaitable[tuple[Iteration, Facts]]]

CONFIRMS: dict[str, ConfirmFn] = {
    "compaction_check": compaction_check,
}
"""The checks with effects an edge's row names (`Edge.confirm`), run only when the table
picks that edge."""
