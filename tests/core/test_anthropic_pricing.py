"""Claude list prices: matching model ids and costing one response's usage."""

from __future__ import annotations

import pytest

from fsm_agent.core.messages import Usage
from fsm_agent.core.pricing import PRICES, cost_usd, price_for


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5[1m]", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-6", "claude-opus-4-6"),
        ("claude-opus-5", "claude-opus-5"),
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet"),
        ("CLAUDE-SONNET-5", "claude-sonnet-5"),
        ("claude-fable-5-1", "claude-fable-5-1"),
        ("claude-fable-5", "claude-fable-5"),
        ("claude-mythos-5-1", "claude-mythos-5-1"),
    ],
)
def test_model_ids_match_by_prefix(model: str, key: str) -> None:
    assert price_for(model) is PRICES[key]


@pytest.mark.parametrize(
    "model", ["gpt-4o", "claude-opus-4-9", "claude-sonnet-5-7", "claude-3", "claude-test-1", ""]
)
def test_unknown_models_have_no_price(model: str) -> None:
    assert price_for(model) is None
    assert cost_usd(model, Usage(1000, 1000)) is None


def test_cost_counts_every_kind_of_token() -> None:
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        cache_creation_input_tokens=1_000_000,
        cache_read_input_tokens=1_000_000,
    )
    assert cost_usd("claude-opus-4-1", usage) == pytest.approx(15 + 75 + 18.75 + 1.50)
    assert cost_usd("claude-haiku-4-5", Usage(2_000, 500)) == pytest.approx(0.002 + 0.0025)


def test_family_generations_differ() -> None:
    usage = Usage(1_000_000, 0)
    assert cost_usd("claude-opus-4-20250514", usage) == pytest.approx(15.0)
    assert cost_usd("claude-opus-4-5-20251101", usage) == pytest.approx(5.0)
    assert cost_usd("claude-sonnet-5", usage) == pytest.approx(2.0)


def test_long_prompts_pay_the_long_rate_on_every_token() -> None:
    short = Usage(input_tokens=150_000, output_tokens=1_000, cache_read_input_tokens=50_000)
    long = Usage(input_tokens=150_000, output_tokens=1_000, cache_read_input_tokens=50_001)
    assert cost_usd("claude-sonnet-4-5", short) == pytest.approx(0.45 + 0.015 + 0.015)
    assert cost_usd("claude-sonnet-4-5", long) == pytest.approx(0.9 + 0.0225 + 50_001 * 0.6e-6)
    assert cost_usd("claude-sonnet-4-6", long) == pytest.approx(0.45 + 0.015 + 50_001 * 0.3e-6)


def test_fable_5_1_reads_its_cache_at_a_quarter_of_fable_5s_rate() -> None:
    read = Usage(cache_read_input_tokens=1_000_000)
    assert cost_usd("claude-fable-5", read) == pytest.approx(1.00)
    assert cost_usd("claude-fable-5-1", read) == pytest.approx(0.25)
    assert cost_usd("claude-fable-5-1", Usage(1_000_000, 1_000_000)) == pytest.approx(60.0)
