"""What happens before the loop's first step: SessionStart and UserPromptSubmit hooks.

In Claude Code these run in `processUserInput`, before `query()` is
called, so they are not states of the loop's machine either. Their hook
runs are effects of step 1 (recorded, replayed). A UserPromptSubmit hook
that blocks (exit 2, or `decision: "block"`, or `continue: false`) erases
the prompt: the run ends `prompt_blocked` with no transition taken and no
model call. Context the hooks add (plain stdout, `additionalContext`) goes
to the model as meta user messages in a `<system-reminder>`: SessionStart's
before the conversation, UserPromptSubmit's after the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attrs import frozen

from fsm_agent.context import meta
from fsm_agent.hooks import NO_OPINION, consult
from fsm_agent.messages import Message

if TYPE_CHECKING:
    from fsm_agent.phases import Run

PROMPT_BLOCKED = "prompt_blocked"


@frozen
class Prelude:
    messages: tuple[Message, ...]
    blocked: str | None = None


def _reminder(texts: Sequence[str]) -> tuple[Message, ...]:
    return tuple(meta(f"<system-reminder>\n{t}\n</system-reminder>") for t in texts)


async def session_prelude(run: Run, messages: Sequence[Message]) -> Prelude:
    common = {"session_id": run.session_id, "cwd": run.config.cwd}
    start = submit = NO_OPINION
    if run.config.has_hooks("SessionStart"):
        start = await consult(
            run.effects.run_hooks,
            run.emit,
            "SessionStart",
            {
                "hook_event_name": "SessionStart",
                **common,
                "source": run.config.session_source,
                "model": run.config.model,
            },
        )
    prompt = messages[-1].text if messages and messages[-1].role == "user" else ""
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
        why = "; ".join(submit.blocking_errors) or submit.stop_reason or "no reason given"
        return Prelude(tuple(messages), f"The prompt was blocked by a UserPromptSubmit hook: {why}")
    return Prelude(
        (
            *_reminder(start.additional_context),
            *messages,
            *_reminder(submit.additional_context),
        )
    )
