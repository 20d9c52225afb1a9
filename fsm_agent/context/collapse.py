"""Context collapse's bookkeeping: the runs of messages staged and committed as summaries.

Claude Code keeps it outside the message array; here it is a field of the loop's state,
and the context levels read and rebuild it.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class Collapse:
    """A run of messages `[start, end)` to be shown as `summary` when committed.

    `first` and `after` are the digests of the message at `start` and at
    `end` (both assistant messages, which no level rewrites): a projection
    applies the collapse only where both still match, so projecting a view
    that already has it applied is a no-op.
    """

    start: int
    end: int
    summary: str
    first: str = ""
    after: str = ""
    applied: bool = False


@frozen
class CollapseStore:
    """Context-collapse bookkeeping: Claude Code keeps this outside the message array."""

    staged: tuple[Collapse, ...] = ()
    committed: tuple[Collapse, ...] = ()

    @property
    def staged_count(self) -> int:
        return len(self.staged)
