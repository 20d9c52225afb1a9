"""What a response cost, in US dollars, from its usage and model id.

Rates are Anthropic's published list prices in USD per million tokens
(checked November 2026). Cache writes are priced at the 5-minute rate, the
TTL of the `ephemeral` breakpoints the adapter sends. A model this table does
not know costs `None`, never a guess.
"""

from __future__ import annotations

import re

from attrs import frozen

from fsm_agent.core.messages import Usage


@frozen
class Price:
    """USD per million tokens. Prompts over `long_prompt_tokens` pay `long` on every token."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    long_prompt_tokens: int | None = None
    long: Price | None = None


_FABLE_5 = Price(10.0, 50.0, 12.50, 1.00)
_FABLE_5_1 = Price(10.0, 50.0, 12.50, 0.25)
_OPUS_4 = Price(15.0, 75.0, 18.75, 1.50)
_OPUS_4_5 = Price(5.0, 25.0, 6.25, 0.50)
_OPUS_5_5 = Price(4.0, 20.0, 5.0, 0.20)
_SONNET = Price(3.0, 15.0, 3.75, 0.30)
_SONNET_1M = Price(3.0, 15.0, 3.75, 0.30, 200_000, Price(6.0, 22.50, 7.50, 0.60))
_SONNET_5 = Price(2.0, 10.0, 2.50, 0.20)
_SONNET_5_5 = Price(2.0, 10.0, 2.50, 0.10)
_HAIKU_3 = Price(0.25, 1.25, 0.30, 0.03)
_HAIKU_3_5 = Price(0.80, 4.0, 1.0, 0.08)
_HAIKU_4_5 = Price(1.0, 5.0, 1.25, 0.10)
_HAIKU_5_5 = Price(0.10, 0.50, 0.125, 0.01, 100_000, Price(0.50, 2.50, 0.625, 0.05))

PRICES: dict[str, Price] = {
    "claude-fable-5-1": _FABLE_5_1,
    "claude-fable-5": _FABLE_5,
    "claude-mythos-5-1": _FABLE_5_1,
    "claude-mythos-5": _FABLE_5,
    "claude-opus-5-5": _OPUS_5_5,
    "claude-opus-5": _OPUS_4_5,
    "claude-opus-4-8": _OPUS_4_5,
    "claude-opus-4-7": _OPUS_4_5,
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-3-opus": _OPUS_4,
    "claude-sonnet-5-5": _SONNET_5_5,
    "claude-sonnet-5": _SONNET_5,
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET_1M,
    "claude-sonnet-4-0": _SONNET_1M,
    "claude-sonnet-4": _SONNET_1M,
    "claude-3-7-sonnet": _SONNET,
    "claude-3-5-sonnet": _SONNET,
    "claude-haiku-5-5": _HAIKU_5_5,
    "claude-haiku-4-5": _HAIKU_4_5,
    "claude-3-5-haiku": _HAIKU_3_5,
    "claude-3-haiku": _HAIKU_3,
}
"""Keyed by model-id prefix; the longest matching key wins."""

_MINOR_VERSION = re.compile(r"\d{1,2}(?:$|[-@:])")


def price_for(model: str) -> Price | None:
    """The price of `model`, matched by prefix after any provider prefix.

    `claude-sonnet-4-5-20250929`, `us.anthropic.claude-sonnet-4-5-20250929-v1:0`,
    `claude-sonnet-4-5@20250929` and `claude-sonnet-4-5[1m]` all match
    `claude-sonnet-4-5`. A minor version the table lacks (`claude-opus-4-9`)
    matches nothing rather than its family's oldest price.
    """
    name = model.lower()
    start = name.find("claude-")
    if start < 0:
        return None
    name = name[start:].split("[", 1)[0]
    for key in sorted(PRICES, key=len, reverse=True):
        if name == key:
            return PRICES[key]
        if name.startswith(key) and name[len(key)] in "-@:":
            if _MINOR_VERSION.match(name[len(key) + 1 :]):
                continue
            return PRICES[key]
    return None


def cost_usd(model: str, usage: Usage) -> float | None:
    """The list-price cost of one response's `usage`; None for an unknown model.

    Pass one response's usage, not a sum: long-prompt rates depend on the
    size of each request's prompt.
    """
    price = price_for(model)
    if price is None:
        return None
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    threshold = price.long_prompt_tokens
    if price.long is not None and threshold is not None and prompt > threshold:
        price = price.long
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / 1_000_000
