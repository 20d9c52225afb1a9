"""What a run cost, in US dollars, summed response by response.

`response_cost` is the one place that prices a response. Until the pricing
table (`fsm_agent.pricing`, on the real-model branch) is merged it knows no
model and answers `None`; the integrator points it at `pricing.cost_usd`.
"""

from __future__ import annotations

from fsm_agent.events import AssistantMessage, DriverEvent
from fsm_agent.messages import Usage


def response_cost(model: str, usage: Usage) -> float | None:
    """USD for one response, or `None` for a model without a known price."""
    return None


class CostMeter:
    """Adds up the cost of each response; unknown once any response has no price."""

    def __init__(self) -> None:
        self.usd: float | None = 0.0
        self.responses = 0

    def __call__(self, event: DriverEvent) -> None:
        if isinstance(event, AssistantMessage):
            self.add(event.message.model, event.message.usage)

    def add(self, model: str | None, usage: Usage | None) -> None:
        if usage is None:
            return
        self.responses += 1
        cost = response_cost(model or "", usage)
        self.usd = None if cost is None or self.usd is None else self.usd + cost

    @property
    def total(self) -> float | None:
        """`None` when a response's price is unknown: never a guess."""
        return self.usd if self.responses else 0.0
