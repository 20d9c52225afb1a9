"""Which edges of the table a set of recorded sessions takes, and which none does.

A test suite's replays are a claim about the machine: `coverage` says how
much of it they exercise, edge by edge, so an untested edge shows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from attrs import frozen

from fsm_agent.engine.machine import EDGES, Continue, Terminal

EdgeKey = tuple[str, str, str]
REASONS = tuple(c.value for c in Continue) + tuple(t.value for t in Terminal)


@frozen
class Coverage:
    counts: Counter[EdgeKey]

    @classmethod
    def of(cls, steps: Iterable[EdgeKey]) -> Coverage:
        return cls(Counter(steps))

    def rows(self) -> list[tuple[EdgeKey, int]]:
        """Every edge of the table, in table order, with how often the logs take it."""
        return [((e.source.value, e.name, e.dest), self.counts[(e.source.value, e.name, e.dest)])
                for e in EDGES]  # fmt: skip

    @property
    def untaken(self) -> list[EdgeKey]:
        return [key for key, count in self.rows() if count == 0]

    @property
    def reasons_taken(self) -> set[str]:
        return {edge for _, edge, _ in self.counts} & set(REASONS)

    @property
    def unknown(self) -> list[EdgeKey]:
        """Edges in the logs that the table does not have (a log from another machine)."""
        known = {key for key, _ in self.rows()}
        return sorted(key for key in self.counts if key not in known)
