"""What each edge does to the state: the one place a next `LoopState` is built.

Every Continue builder writes all of `LoopState`'s fields, as Claude Code's
continue sites write `state = { ... }` whole, so no edge can forget to reset
one. Only `stop_hook_blocking` counts up `stop_hook_blocks`; every other
continue sets it to 0, as each of Claude Code's sets `stopHookBlockingCount`,
so the cap is on Stop-hook blocks with nothing else in between. Terminal edges
build the final messages, filling in an error `tool_result` for every
`tool_use` left unanswered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from attrs import evolve, fields

from fsm_agent.context.collapse import CollapseStore
from fsm_agent.context.levels import (
    MAX_OUTPUT_RECOVERY_MESSAGE,
    drain_collapses,
    meta,
    reactive_compaction,
    token_count,
)
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    REACTIVE,
    AssistantMessage,
    ContextReport,
    Notice,
    SyntheticPrompt,
)
from fsm_agent.core.limits import held_to_limit
from fsm_agent.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, tool_results
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.phases import CONTEXT_WINDOW_EXCEEDED, drop_calls, max_tokens
from fsm_agent.engine.ports import INTERRUPTED, model_failed
from fsm_agent.engine.prelude import reminders
from fsm_agent.engine.preprocess import compact_hook
from fsm_agent.engine.reasons import PROMPT_BLOCKED, Continue, Terminal
from fsm_agent.engine.run import Run
from fsm_agent.engine.state import (
    AutoCompactTracking,
    BudgetTracker,
    Facts,
    Iteration,
    LoopState,
    ToolContext,
)

_STATE_FIELDS = frozenset(f.name for f in fields(LoopState))


def _whole(**values: Any) -> LoopState:
    """Build a `LoopState` from every one of its fields, or fail loudly."""
    missing = _STATE_FIELDS - values.keys()
    if missing:
        raise TypeError(
            f"a Continue edge must set every LoopState field; missing {sorted(missing)}"
        )
    return LoopState(**values)


def _tool_context(state: LoopState, it: Iteration) -> ToolContext:
    context = state.tool_context
    read = {**context.read_files, **it.read_files}
    kept = () if it.memory_forgotten else context.memory_checked
    checked = kept + it.memory_checked
    seen = {**context.seen, **it.seen}
    return evolve(context, model=it.model, read_files=read, memory_checked=checked, seen=seen)


def _tracking(it: Iteration) -> AutoCompactTracking | None:
    """The iteration's tracking (autocompact may have changed it), one turn older."""
    tracking = it.auto_compact_tracking
    if tracking is None or not tracking.compacted:
        return tracking
    return evolve(tracking, turn_counter=tracking.turn_counter + 1)


def _batch_summary(it: Iteration) -> str | None:
    if not it.tool_use_blocks:
        return None
    names = [b.name for b in it.tool_use_blocks]
    return ", ".join(
        f"{n} ×{names.count(n)}" if names.count(n) > 1 else n for n in dict.fromkeys(names)
    )


def _results_message(it: Iteration) -> Message:
    texts = tuple(TextBlock(text) for text in it.attachments)
    return Message("user", (*it.tool_results, *texts))


async def next_turn(run: Run, state: LoopState, it: Iteration, facts: Facts) -> LoopState:
    return _whole(
        messages=it.messages_for_query.extend((*it.assistant_messages, _results_message(it))),
        tool_context=_tool_context(state, it),
        auto_compact_tracking=_tracking(it),
        max_output_tokens_recovery_count=0,
        has_attempted_reactive_compact=False,
        max_output_tokens_override=None,
        pending_tool_use_summary=_batch_summary(it),
        stop_hook_active=state.stop_hook_active,
        stop_hook_blocks=0,
        turn_count=state.turn_count + 1,
        transition=Continue.NEXT_TURN,
        collapse=it.collapse,
        budget=state.budget,
        usage=state.usage + it.usage,
        permissions=it.permissions or state.permissions,
    )


async def max_output_tokens_escalate(
    run: Run, state: LoopState, it: Iteration, facts: Facts
) -> LoopState:
    asked = max_tokens(run.config, state, it.model)
    escalated = held_to_limit(it.model, run.config.escalated_max_output_tokens)
    if it.stop_reason == CONTEXT_WINDOW_EXCEEDED:
        said = f"answer cut at the context window; retrying with {escalated} output tokens"
    else:
        said = f"output cut at {asked} tokens; retrying with {escalated}"
    run.emit(Notice("retry", said))
    return _whole(
        messages=it.messages_for_query,
        tool_context=_tool_context(state, it),
        auto_compact_tracking=it.auto_compact_tracking,
        max_output_tokens_recovery_count=state.max_output_tokens_recovery_count,
        has_attempted_reactive_compact=state.has_attempted_reactive_compact,
        max_output_tokens_override=run.config.escalated_max_output_tokens,
        pending_tool_use_summary=None,
        stop_hook_active=state.stop_hook_active,
        stop_hook_blocks=0,
        turn_count=state.turn_count,
        transition=Continue.MAX_OUTPUT_TOKENS_ESCALATE,
        collapse=it.collapse,
        budget=state.budget,
        usage=state.usage + it.usage,
        permissions=it.permissions or state.permissions,
    )


async def max_output_tokens_recovery(
    run: Run, state: LoopState, it: Iteration, facts: Facts
) -> LoopState:
    count = state.max_output_tokens_recovery_count + 1
    cause = (
        "answer cut at the context window"
        if it.stop_reason == CONTEXT_WINDOW_EXCEEDED
        else "output token limit hit"
    )
    run.emit(Notice("retry", f"{cause}; asking the model to resume ({count}/3)"))
    run.emit(SyntheticPrompt(MAX_OUTPUT_RECOVERY_MESSAGE))
    return _whole(
        messages=it.messages_for_query.extend(
            (*it.assistant_messages, meta(MAX_OUTPUT_RECOVERY_MESSAGE))
        ),
        tool_context=_tool_context(state, it),
        auto_compact_tracking=it.auto_compact_tracking,
        max_output_tokens_recovery_count=count,
        has_attempted_reactive_compact=state.has_attempted_reactive_compact,
        max_output_tokens_override=state.max_output_tokens_override,
        pending_tool_use_summary=None,
        stop_hook_active=state.stop_hook_active,
        stop_hook_blocks=0,
        turn_count=state.turn_count,
        transition=Continue.MAX_OUTPUT_TOKENS_RECOVERY,
        collapse=it.collapse,
        budget=state.budget,
        usage=state.usage + it.usage,
        permissions=it.permissions or state.permissions,
    )


async def reactive_compact_retry(
    run: Run, state: LoopState, it: Iteration, facts: Facts
) -> LoopState:
    """The compaction `recovery` found would change the request (its PreCompact hooks
    did not block it): made, then PostCompact, then the retry."""
    compacted, done = reactive_compaction(it.messages_for_query, images=it.withheld == "media")
    await compact_hook(run, "PostCompact", {"compact_summary": None})
    why = "an image was refused" if it.withheld == "media" else "context too long"
    text = f"{why}: {done}, retrying"
    after = token_count(compacted.items)
    run.emit(ContextReport("compact", text, REACTIVE, it.token_count, after))
    return _whole(
        messages=compacted,
        tool_context=_tool_context(state, evolve(it, memory_forgotten=True)),
        auto_compact_tracking=it.auto_compact_tracking,
        max_output_tokens_recovery_count=state.max_output_tokens_recovery_count,
        has_attempted_reactive_compact=True,
        max_output_tokens_override=state.max_output_tokens_override,
        pending_tool_use_summary=None,
        stop_hook_active=state.stop_hook_active,
        stop_hook_blocks=0,
        turn_count=state.turn_count,
        transition=Continue.REACTIVE_COMPACT_RETRY,
        collapse=CollapseStore(committed=it.collapse.committed),
        budget=state.budget,
        usage=state.usage + it.usage,
        permissions=it.permissions or state.permissions,
    )


async def collapse_drain_retry(
    run: Run, state: LoopState, it: Iteration, facts: Facts
) -> LoopState:
    drained = drain_collapses(it.collapse)
    run.emit(
        Notice(
            "collapse",
            f"context too long: committed {it.collapse.staged_count} staged "
            "collapse(s); the retry's projection applies them",
        )
    )
    return _whole(
        messages=it.messages_for_query,
        tool_context=_tool_context(state, it),
        auto_compact_tracking=it.auto_compact_tracking,
        max_output_tokens_recovery_count=state.max_output_tokens_recovery_count,
        has_attempted_reactive_compact=state.has_attempted_reactive_compact,
        max_output_tokens_override=state.max_output_tokens_override,
        pending_tool_use_summary=None,
        stop_hook_active=state.stop_hook_active,
        stop_hook_blocks=0,
        turn_count=state.turn_count,
        transition=Continue.COLLAPSE_DRAIN_RETRY,
        collapse=drained,
        budget=state.budget,
        usage=state.usage + it.usage,
        permissions=it.permissions or state.permissions,
    )


async def stop_hook_blocking(run: Run, state: LoopState, it: Iteration, facts: Facts) -> LoopState:
    """A Stop hook's block goes to the model as its feedback; context a Stop hook adds
    instead (`additionalContext`), as a reminder: both make it go on."""
    prompts = [f"Stop hook feedback:\n{error}" for error in facts.blocking_errors]
    feedback = (*(meta(p) for p in prompts), *reminders(facts.stop_context))
    for text in (*facts.blocking_errors, *facts.stop_context):
        run.emit(Notice("hook", f"Stop hook: {text.strip()} (the model goes on)"))
    for prompt in prompts:
        run.emit(SyntheticPrompt(prompt))
    return _whole(
        messages=it.messages_for_query.extend((*it.assistant_messages, *feedback)),
        tool_context=_tool_context(state, it),
        auto_compact_tracking=it.auto_compact_tracking,
        max_output_tokens_recovery_count=0,
        has_attempted_reactive_compact=state.has_attempted_reactive_compact,
        max_output_tokens_override=None,
        pending_tool_use_summary=None,
        stop_hook_active=True,
        stop_hook_blocks=state.stop_hook_blocks + 1,
        turn_count=state.turn_count,
        transition=Continue.STOP_HOOK_BLOCKING,
        collapse=it.collapse,
        budget=state.budget,
        usage=state.usage + it.usage,
        permissions=it.permissions or state.permissions,
    )


async def token_budget_continuation(
    run: Run, state: LoopState, it: Iteration, facts: Facts
) -> LoopState:
    usage = state.usage + it.usage
    spent = usage.output_tokens
    assert facts.budget_nudge is not None
    budget = run.config.token_budget
    run.emit(Notice("budget", f"{spent:,} of the {budget:,} token budget used; the model goes on"))
    run.emit(SyntheticPrompt(facts.budget_nudge))
    return _whole(
        messages=it.messages_for_query.extend((*it.assistant_messages, meta(facts.budget_nudge))),
        tool_context=_tool_context(state, it),
        auto_compact_tracking=it.auto_compact_tracking,
        max_output_tokens_recovery_count=0,
        has_attempted_reactive_compact=False,
        max_output_tokens_override=None,
        pending_tool_use_summary=None,
        stop_hook_active=state.stop_hook_active,
        stop_hook_blocks=0,
        turn_count=state.turn_count,
        transition=Continue.TOKEN_BUDGET_CONTINUATION,
        collapse=it.collapse,
        budget=BudgetTracker(
            continuation_count=state.budget.continuation_count + 1,
            last_delta_tokens=spent - state.budget.last_output_tokens,
            last_output_tokens=spent,
        ),
        usage=usage,
        permissions=it.permissions or state.permissions,
    )


ContinueFn = Callable[[Run, LoopState, Iteration, Facts], Awaitable[LoopState]]

CONTINUE: dict[str, ContinueFn] = {
    "next_turn": next_turn,
    "max_output_tokens_escalate": max_output_tokens_escalate,
    "max_output_tokens_recovery": max_output_tokens_recovery,
    "reactive_compact_retry": reactive_compact_retry,
    "collapse_drain_retry": collapse_drain_retry,
    "stop_hook_blocking": stop_hook_blocking,
    "token_budget_continuation": token_budget_continuation,
}
"""The actions of the `continue` edges, which build the next `LoopState`, by the name
their row gives."""


async def proceed(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """A phase edge: the next phase takes the iteration as this one left it."""
    return it


async def end(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """A terminal edge with nothing of its own to do: the driver builds the final
    messages from the iteration and the reason (`final_messages`)."""
    return it


async def switch_model(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """The `model_fallback` self-edge: drop what the failed attempt streamed, and the
    calls it started, and retry on the run's fallback model."""
    fallback = run.config.fallback_model
    assert fallback is not None
    await drop_calls(run, it, report=False)
    run.emit(Notice("fallback", f"{it.model} is overloaded; switching to {fallback}"))
    return Iteration(
        messages_for_query=it.messages_for_query,
        model=fallback,
        collapse=it.collapse,
        token_count=it.token_count,
        auto_compact_tracking=it.auto_compact_tracking,
        usage=it.usage,
    )


async def fail_model(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """`model_error`: the calls the stream started are cut (what they finished and read
    is kept), then the user sees what the model had said."""
    it = await drop_calls(run, it, report=True)
    for complete in it.assistant_messages:
        run.emit(AssistantMessage(complete))
    return it


async def surface_cut_output(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """`recovery`'s `completed`: an API error, which is the answer already, or the output
    still cut after every recovery. Claude Code then shows the error it withheld (the
    last request's output limit, or the context window's), and the run is an error.
    The cut answer stays the conversation's last message (an error note after it would
    make two assistant messages in a row, which the API refuses when the conversation
    goes on)."""
    if facts.api_error is not None:
        return it
    if it.stop_reason == CONTEXT_WINDOW_EXCEEDED:
        return evolve(it, api_error="API Error: The model has reached its context window limit.")
    limit = max_tokens(run.config, state, it.model)
    return evolve(
        it, api_error=f"API Error: Claude's response exceeded the {limit} output token maximum."
    )


async def override_stop_block(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """`stop_hooks`' `completed`: the turn ends. If a Stop hook blocked, the table ended
    it because the hook blocked once too often in a row: Claude Code tells the user,
    as a warning, and its feedback does not reach the model."""
    if facts.stop_blocked:
        run.emit(
            Notice(
                "hook",
                f"Stop hook blocked the turn from ending {state.stop_hook_blocks + 1} "
                "consecutive times: overriding it and ending the turn (a Stop hook "
                "should check stop_hook_active in its input and let the turn end "
                "while it is true; CLAUDE_CODE_STOP_HOOK_BLOCK_CAP raises the limit)",
            )
        )
    return it


async def block_prompt(run: Run, state: LoopState, it: Iteration, facts: Facts) -> Iteration:
    """`prompt_blocked`: the user is told what the hook answered in the model's place."""
    assert it.prompt_blocked is not None
    run.emit(it.prompt_blocked)
    return it


OnEdgeFn = Callable[[Run, LoopState, Iteration, Facts], Awaitable[Iteration]]

PROCEED = "proceed"
"""The phase edges' action: the iteration as it is, which the driver hands on without
calling it (six edges an iteration)."""

ON_EDGE: dict[str, OnEdgeFn] = {
    PROCEED: proceed,
    "end": end,
    "switch_model": switch_model,
    "fail_model": fail_model,
    "surface_cut_output": surface_cut_output,
    "override_stop_block": override_stop_block,
    "block_prompt": block_prompt,
}
"""The actions of the edges that keep the iteration (every kind but `continue`), by the
name their row gives."""


def final_messages(reason: str, it: Iteration) -> Transcript:
    """The conversation as it stands when the loop ends for `reason`."""
    messages = it.messages_for_query.extend(it.assistant_messages)
    if reason in (Terminal.ABORTED_TOOLS, Terminal.HOOK_STOPPED, Terminal.MAX_TURNS):
        return messages.extend((_results_message(it),))
    if reason in (Terminal.ABORTED_STREAMING, Terminal.MODEL_ERROR) and it.tool_use_blocks:
        results = {r.tool_use_id: r for r in it.tool_results}
        results.update((b.id, r) for b, r in unanswered_results(reason, it))
        return messages.extend((tool_results(tuple(results[b.id] for b in it.tool_use_blocks)),))
    return messages


def unanswered_results(
    reason: str, it: Iteration
) -> tuple[tuple[ToolUseBlock, ToolResultBlock], ...]:
    """The error results filled in when a stream ends in an interrupt or a model error:
    one for each call it left unanswered (not started, or started and not finished).

    A call that was started while the model streamed and has an answer keeps
    it, as Claude Code's streaming executor hands over what it finished.
    """
    if reason not in (Terminal.ABORTED_STREAMING, Terminal.MODEL_ERROR):
        return ()
    text = (
        INTERRUPTED if reason == Terminal.ABORTED_STREAMING else model_failed(it.model_error or "")
    )
    answered = {r.tool_use_id for r in it.tool_results}
    return tuple(
        (b, ToolResultBlock(b.id, text, True)) for b in it.tool_use_blocks if b.id not in answered
    )


def terminal_error(reason: str, it: Iteration, config: RunConfig) -> str | None:
    """Why a run that ended short of `completed` ended, in words for the user (the
    summary line, the JSON result's `errors`), when no error text says so already."""
    if reason == PROMPT_BLOCKED and it.prompt_blocked is not None:
        return it.prompt_blocked.text
    if reason == Terminal.PROMPT_TOO_LONG:
        said = it.withheld_message or "prompt is too long"
        if it.not_compacted is not None:
            return f"{said} ({it.not_compacted})"
        return f"still too long after compaction: {said}"
    if reason == Terminal.IMAGE_ERROR:
        said = f"an image was refused: {it.withheld_message or 'image error'}"
        return said if it.not_compacted is None else f"{said} ({it.not_compacted})"
    if reason == Terminal.BLOCKING_LIMIT:
        return (
            f"the context is {it.token_count:,} tokens, over the blocking limit of "
            f"{config.blocking_limit:,}: compact it or start a new conversation"
        )
    if reason == Terminal.MAX_TURNS:
        return f"Reached maximum number of turns ({config.max_turns})"
    if reason == Terminal.ABORTED_STREAMING:
        return "interrupted while the model was answering"
    if reason == Terminal.ABORTED_TOOLS:
        return "interrupted while tools ran"
    return None
