"""What happens before the loop's first step: SessionStart and UserPromptSubmit hooks.

In Claude Code these run in `processUserInput`, before `query()` is
called, so they are not states of the loop's machine either. Their hook
runs are effects of step 1 (recorded, replayed). A UserPromptSubmit hook
that blocks (exit 2, or `decision: "block"`) erases the prompt, one that
says `continue: false` keeps it: either way the first iteration carries the
block, and the machine's first edge, `preprocess -[prompt_blocked]->`, ends
the run with no model call; what Claude Code answers in place of the model
is the run's answer (a `success`, as `claude -p` reports it).
Context the hooks add (plain stdout, `additionalContext`) goes to the model as
meta user messages in a `<system-reminder>`: SessionStart's before the
conversation, UserPromptSubmit's after the prompt. SessionStart runs again, with
source `compact`, after an autocompaction (in `preprocess`), its context then put
before the summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import evolve, frozen

from fsm_agent.context.levels import meta
from fsm_agent.core.events import PromptBlocked
from fsm_agent.core.messages import Message, TextBlock, reminder_text
from fsm_agent.engine.run import Run
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome, consult


@frozen
class Prelude:
    messages: tuple[Message, ...]
    blocked: PromptBlocked | None = None


def blocked_by(submit: HookOutcome, prompt: str) -> PromptBlocked:
    """What Claude Code tells the user when a UserPromptSubmit hook ends the run, in its
    words: a block names the hook's errors and the erased prompt; `continue: false`
    only its stop reason."""
    if submit.blocking_errors:
        errors = "\n".join(submit.blocking_errors)
        text = f"UserPromptSubmit operation blocked by hook:\n{errors}\n\nOriginal prompt: {prompt}"
        return PromptBlocked("informational", text, errors.strip(), "blocked_by_hook")
    reason = submit.stop_reason or ""
    text = f"Operation stopped by hook: {reason}" if reason else "Operation stopped by hook"
    return PromptBlocked("informational", text, reason, "stopped_by_hook")


def typed_prompt(messages: Sequence[Message]) -> str:
    """The prompt of this run, as UserPromptSubmit gets it: the last text of the last user
    message, never the text of an unanswered prompt `history.follow_up` joined it to."""
    if not messages or messages[-1].role != "user":
        return ""
    texts = [block.text for block in messages[-1].content if isinstance(block, TextBlock)]
    return texts[-1] if texts else ""


def without_prompt(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The conversation as it was before the prompt a hook blocked, which is erased, never
    sent (the next message of a chat, a resume): the prompt is the last text of the last
    user message (`history.follow_up` may have joined it to tool results), and a message
    left with nothing goes."""
    if not messages or messages[-1].role != "user":
        return tuple(messages)
    *history, last = messages
    texts = [i for i, block in enumerate(last.content) if isinstance(block, TextBlock)]
    kept = tuple(b for i, b in enumerate(last.content) if not texts or i != texts[-1])
    return (*history, evolve(last, content=kept)) if kept else tuple(history)


def reminders(texts: Sequence[str]) -> tuple[Message, ...]:
    """Context a hook added, as the model gets it: a meta message each."""
    return tuple(meta(reminder_text(t)) for t in texts)


async def session_start(run: Run, source: str) -> HookOutcome:
    """SessionStart hooks, if any: `source` is `startup`, `clear` or `compact`."""
    if not run.config.has_hooks("SessionStart"):
        return NO_OPINION
    return await consult(
        run.effects.run_hooks,
        run.emit,
        "SessionStart",
        {
            "hook_event_name": "SessionStart",
            "session_id": run.session_id,
            "cwd": run.config.cwd,
            "source": source,
            "model": run.config.model,
        },
    )


async def session_prelude(run: Run, messages: Sequence[Message]) -> Prelude:
    common = {"session_id": run.session_id, "cwd": run.config.cwd}
    submit = NO_OPINION
    source = run.config.session_source
    start = NO_OPINION if source is None else await session_start(run, source)
    prompt = typed_prompt(messages)
    if run.config.has_hooks("UserPromptSubmit"):
        submit = await consult(
            run.effects.run_hooks,
            run.emit,
            "UserPromptSubmit",
            {
                "hook_event_name": "UserPromptSubmit",
                **common,
                "permission_mode": run.config.permission_mode,
                "prompt": prompt,
            },
        )
    if submit.blocking_errors or submit.prevent_continuation:
        blocked = blocked_by(submit, prompt)
        kept = tuple(messages) if blocked.prompt_kept else without_prompt(messages)
        return Prelude(kept, blocked)
    return Prelude(
        (
            *reminders(start.additional_context),
            *messages,
            *reminders(submit.additional_context),
        )
    )
