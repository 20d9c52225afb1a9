"""Phase 1: the context pipeline, in Claude Code's order.

tool-result budget → snip → microcompact → context collapse → autocompact.
Each level is a pure function in `fsm_agent.context.levels`; this module runs them
in order, keeps the count up to date (the anchor's exact usage, less what each
level freed), performs the effects they need (`store_blob`, `count_tokens`,
the compaction request through `model_stream`) and reports what each did.
"""

from __future__ import annotations

from typing import Any

from attrs import evolve

from fsm_agent.context.collapse import CollapseStore
from fsm_agent.context.levels import (
    COMPACT_KEEP_ROUNDS,
    COMPACT_MAX_OUTPUT_TOKENS,
    COMPACT_SYSTEM_PROMPT,
    MAX_AUTOCOMPACT_FAILURES,
    TOOL_RESULT_MAX_CHARS,
    apply_compact_summary,
    apply_tool_result_budget,
    blob_name,
    compact_request_messages,
    count_tokens,
    estimate_tokens,
    keep_from,
    microcompact,
    oversized_results,
    parse_summary,
    prepend_user_context,
    project_collapses,
    snip,
    stage_collapse,
)
from fsm_agent.core.events import (
    BlockStop,
    ContextReport,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelCallError,
    ResponseUsage,
)
from fsm_agent.core.limits import held_to_limit
from fsm_agent.core.messages import TextBlock, Usage
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.prelude import reminders, session_start
from fsm_agent.engine.run import Run
from fsm_agent.engine.state import (
    NO_FACTS,
    AutoCompactTracking,
    Facts,
    Iteration,
    LoopState,
    facts,
)
from fsm_agent.hooks.outcomes import consult

NEAR_THRESHOLD = 0.8
NOT_COMPACTED = AutoCompactTracking()


def report(run: Run, level: str, before: int, after: int, detail: str) -> None:
    """Tell the user, and the session log, what a level did."""
    text = f"{level}: {detail} ({before:,} → {after:,} tokens)"
    run.emit(ContextReport("context", text, level, before, after))


PROMPT_REFUSED = facts(prompt_blocked=True)


async def preprocess(run: Run, state: LoopState, it: Iteration) -> tuple[Iteration, Facts]:
    if it.prompt_blocked is not None:  # nothing to prepare: no request will be sent
        return it, PROMPT_REFUSED
    config = run.config
    messages = await tool_result_budget(run, it.messages_for_query)
    count = await token_count(run, it, messages)

    if config.snip_threshold is not None and count > config.snip_threshold:
        messages, freed = snip(messages, count - config.snip_threshold)
        if freed:
            report(run, "snip", count, count - freed, f"dropped old rounds, {len(messages)} left")
            count -= freed

    if count > config.microcompact_threshold:
        messages, freed = microcompact(messages)
        if freed:
            report(run, "microcompact", count, count - freed, "cleared old tool results")
            count -= freed

    messages, collapse, freed = project_collapses(messages, it.collapse)
    if freed:
        report(run, "collapse", count, count - freed, "applied committed collapses")
        count -= freed
    if count > config.collapse_threshold:
        staged = stage_collapse(messages, collapse)
        if staged != collapse:
            span = staged.staged[-1]
            detail = f"staged {span.end - span.start} messages, drained on prompt-too-long"
            report(run, "collapse", count, count, detail)
        collapse = staged

    it = evolve(it, messages_for_query=messages, token_count=count, collapse=collapse)
    tracking = it.auto_compact_tracking or NOT_COMPACTED
    if (
        config.autocompact
        and count >= config.autocompact_threshold
        and tracking.consecutive_failures < MAX_AUTOCOMPACT_FAILURES
    ):
        it = await autocompact(run, it, tracking)
    return it, NO_FACTS


async def tool_result_budget(run: Run, messages: Transcript) -> Transcript:
    """Level 1: store each oversized result of the newest message, send a preview."""
    big = oversized_results(messages, TOOL_RESULT_MAX_CHARS)
    if not big:
        return messages
    stored: dict[str, str] = {}
    for block in big:
        path = await run.effects.store_blob(blob_name(block), block.text)
        if path is not None:
            stored[block.tool_use_id] = path
    after = apply_tool_result_budget(messages, TOOL_RESULT_MAX_CHARS, stored)
    if after is not messages:
        detail = f"stored {len(stored)} oversized result(s) in files"
        before_tokens, after_tokens = estimate_tokens(messages[-1]), estimate_tokens(after[-1])
        report(run, "tool_result_budget", before_tokens, after_tokens, detail)
    return after


def request_for(run: Run, it: Iteration, messages: Transcript, purpose: str) -> ModelRequest:
    config = run.config
    return ModelRequest(
        model=it.model,
        system=run.system,
        messages=prepend_user_context(messages, config.user_context),
        tools=run.tool_specs,
        max_tokens=config.request_max_tokens,
        purpose=purpose,
    )


async def token_count(run: Run, it: Iteration, messages: Transcript) -> int:
    """The local count; the API's own count when no response anchors it and it is near a limit."""
    local = count_tokens(messages)
    if local.exact or local.tokens < NEAR_THRESHOLD * _lowest_threshold(run):
        return local.tokens
    counted = await run.effects.count_tokens(request_for(run, it, messages, "count_tokens"))
    return local.tokens if counted is None else counted


def _lowest_threshold(run: Run) -> int:
    config = run.config
    limits = [config.microcompact_threshold, config.collapse_threshold, config.blocking_limit]
    if config.autocompact:
        limits.append(config.autocompact_threshold)
    if config.snip_threshold is not None:
        limits.append(config.snip_threshold)
    return min(limits)


async def autocompact(run: Run, it: Iteration, tracking: AutoCompactTracking) -> Iteration:
    """Level 5: ask the model for a summary; on success it replaces the history.

    The request defines the run's tools: the API refuses tool_use and
    tool_result blocks in a request that defines none.

    A failure (an error, an empty or cut-off answer) leaves the history as it
    was and counts towards the limit of consecutive failures.
    """
    messages, before = it.messages_for_query, it.token_count
    blocked = await compact_hook(run, "PreCompact", {"custom_instructions": None})
    if blocked:
        report(run, "autocompact", before, before, f"blocked by a PreCompact hook: {blocked}")
        return it
    request = ModelRequest(
        model=it.model,
        system=(COMPACT_SYSTEM_PROMPT,),
        messages=compact_request_messages(messages),
        tools=run.tool_specs,
        max_tokens=held_to_limit(
            it.model, min(COMPACT_MAX_OUTPUT_TOKENS, run.config.escalated_max_output_tokens)
        ),
        purpose="compact",
    )
    text, usage, error = await _summary(run, request)
    if usage != Usage():
        run.emit(ResponseUsage(request.model, usage))
    it = evolve(it, usage=it.usage + usage)
    summary = parse_summary(text)
    if error is not None or not summary:
        failures = tracking.consecutive_failures + 1
        why = error or "the summary was empty"
        stop = " — giving up on autocompact" if failures >= MAX_AUTOCOMPACT_FAILURES else ""
        report(run, "autocompact", before, before, f"failed ({failures}): {why}{stop}")
        return evolve(it, auto_compact_tracking=evolve(tracking, consecutive_failures=failures))
    keep_tokens = run.config.effective_window // 10
    cut = keep_from(messages, keep_tokens, COMPACT_KEEP_ROUNDS)
    compacted = apply_compact_summary(messages, summary, cut)
    start = await session_start(run, "compact")
    if start.additional_context:
        compacted = Transcript.of((*reminders(start.additional_context), *compacted))
    after = await token_count(run, it, compacted)
    detail = f"summarised {cut} messages, kept {len(messages) - cut}"
    report(run, "autocompact", before, after, detail)
    await compact_hook(run, "PostCompact", {"compact_summary": summary})
    return evolve(
        it,
        messages_for_query=compacted,
        token_count=after,
        collapse=CollapseStore(),
        auto_compact_tracking=AutoCompactTracking(compacted=True),
        memory_forgotten=True,
    )


async def compact_hook(run: Run, event: str, fields: dict[str, Any]) -> str | None:
    """Run PreCompact or PostCompact hooks (trigger `auto`: every compaction here is
    automatic); what a blocking one said, or None."""
    if not run.config.has_hooks(event):
        return None
    payload = {
        "hook_event_name": event,
        "session_id": run.session_id,
        "cwd": run.config.cwd,
        "trigger": "auto",
        **fields,
    }
    outcome = await consult(run.effects.run_hooks, run.emit, event, payload)
    return "; ".join(outcome.blocking_errors) or None


async def _summary(run: Run, request: ModelRequest) -> tuple[str, Usage, str | None]:
    parts: list[str] = []
    usage = Usage()
    stopped = False
    try:
        async for event in run.effects.model_stream(request):
            if isinstance(event, MessageStart):
                usage = event.usage
            elif isinstance(event, BlockStop) and isinstance(event.block, TextBlock):
                parts.append(event.block.text)
            elif isinstance(event, MessageDelta):
                usage = usage.updated_by(event.usage)
            elif isinstance(event, MessageStop):
                stopped = True
    except ModelCallError as exc:
        return "".join(parts), usage, f"{exc.kind}: {exc.message}"
    if not stopped:
        return "".join(parts), usage, "the summary stream was cut off"
    return "".join(parts), usage, None
