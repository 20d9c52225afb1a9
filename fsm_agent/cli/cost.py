"""What a run cost, in US dollars, summed response by response.

Each response is priced on its own (`pricing.cost_usd`): long-prompt rates
depend on each request's prompt, so a run's summed usage cannot be priced.
"""

from __future__ import annotations

from fsm_agent.core.events import DriverEvent, ResponseUsage
from fsm_agent.core.messages import Usage
from fsm_agent.core.pricing import cost_usd


class CostMeter:
    """Adds up the cost of each response; unknown once any response has no price.

    `by_model` keeps the same sums for each model that answered (a fallback
    model, say): its usage, and its cost or None.
    """

    def __init__(self) -> None:
        self.usd: float | None = 0.0
        self.responses = 0
        self.by_model: dict[str, tuple[Usage, float | None]] = {}

    def __call__(self, event: DriverEvent) -> None:
        """Every response that reported usage, its message kept or not (a failed
        stream, a fallback's first try, a summary): so the sums match the run's usage."""
        if isinstance(event, ResponseUsage):
            self.add(event.model, event.usage)

    def add(self, model: str | None, usage: Usage | None) -> None:
        if usage is None:
            return
        self.responses += 1
        cost = cost_usd(model or "", usage)
        self.usd = None if cost is None or self.usd is None else self.usd + cost
        name = model or "unknown"
        total, spent = self.by_model.get(name, (Usage(), 0.0))
        self.by_model[name] = (
            total + usage,
            None if cost is None or spent is None else spent + cost,
        )

    @property
    def total(self) -> float | None:
        """`None` when a response's price is unknown: never a guess."""
        return self.usd if self.responses else 0.0

    def total_for(self, model: str | None) -> float | None:
        """`total`, but a run that got no response (interrupted, or its prompt blocked)
        costs what its model prices nothing at: 0 for a priced model, None for one
        without a price (a scripted model), as if it had answered."""
        return self.usd if self.responses else cost_usd(model or "", Usage())
