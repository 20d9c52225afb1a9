"""The conversation of a log cut short (SIGKILL, OOM, a power loss): as an interrupt at
its end would have left it.

A killed run's log holds every record up to the kill and nothing after it:
often an assistant message whose `tool_use` calls were running, some of
them answered. `CutTape` replays the log as usual; where the log runs out,
it answers what the run asks next as a Ctrl-C at that moment would have:
every poll of the abort flag says aborted, a model stream that was never
recorded is empty, a tool call that never finished is interrupted, a hook
that never answered was interrupted. The engine then takes its own abort
path (Claude Code's `yieldMissingToolResultBlocks`): calls that finished
keep their recorded results, files they read stay read, and every call left
unanswered gets the interrupt's error result, so each `tool_use` is answered.
Nothing runs: no tool, no model, no file is touched.

A log that is damaged instead (a record the code did not ask for, a
transition that differs) still raises its `Divergence`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fsm_agent.tape.divergence import Divergence, LogEnded
from fsm_agent.tape.effects import EFFECTS
from fsm_agent.tape.matcher import ReplayTape

AFTER_THE_END = 1000
"""Steps an interrupt may take past the log's end before the replay gives up; the
abort paths end a run in a handful, so reaching it means a loop, not a long end."""

INTERRUPTED_ANSWERS: dict[str, Any] = {effect.name: effect.after_end for effect in EFFECTS}
"""What each effect answers past the log's end, in the recorded form `read_result` reads."""


class CutTape(ReplayTape):
    """A replay that, where a cut log runs out, goes on as if the user interrupted there.

    `cut_at` is the number of steps the log holds once the end is reached;
    None while it has not been (a log that reached its final state, its
    `result` summary torn or never written, is not cut: its conversation is
    whole).
    """

    cut_at: int | None = None

    def _reached_end(self, steps: int) -> None:
        if self.cut_at is None:
            self.cut_at = steps

    def _exhausted(self) -> bool:
        """Every record of the file has been answered: whatever is asked now comes after."""
        return (
            self.cut_short
            and self._expected is None
            and not self._ahead
            and not any(self._pending.values())
        )

    def _recorded(self, name: str, request: str) -> bool:
        """The log still holds this effect: a call that finished after another one of its
        batch was asked for, and found missing, keeps its recorded result."""
        return bool(self._pending.get((name, request))) or any(
            r["t"] == "effect" and r["name"] == name and r["request"] == request
            for r in self._ahead
        )

    def take(self, name: str, request: str, args: Any = None) -> Any:
        if self.cut_at is None or self._recorded(name, request):
            try:
                return super().take(name, request, args)
            except LogEnded as end:
                self._reached_end(end.matched)
        self.line = None
        return INTERRUPTED_ANSWERS[name]

    def polled(self, name: str, request: str) -> bool:
        if self.cut_at is None and name == "aborted" and self._exhausted():
            self._reached_end(self._recorded_steps)
        if self.cut_at is not None:
            return name == "aborted"
        return super().polled(name, request)

    def transition(self, record: dict[str, Any], state: Any = None) -> None:
        if self.cut_at is None:
            try:
                super().transition(record, state)
                return
            except LogEnded as end:
                self._reached_end(end.matched)
        if self.cut_at is not None and self.step > self.cut_at + AFTER_THE_END:
            raise Divergence(
                self.step, "transition past the log's end", "an end after the interrupt", record
            )
        self.step += 1

    def result(self, record: dict[str, Any]) -> None:
        if self.cut_at is not None:
            return
        with contextlib.suppress(LogEnded):  # only the `result` summary was lost
            super().result(record)
