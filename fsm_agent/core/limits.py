"""Per-model facts the loop needs before a request: the context window and the
output limit.

Claude 4 models and older have a 200k window. Sonnet 4 and 4.5 accept 1M
only with the `context-1m` beta header, which this client does not send, so
they stay at 200k here. The 5 generation (Opus, Sonnet, Haiku, Fable and
Mythos 5 and 5.x) has 1M as standard (checked against platform.claude.com's
model pages, November 2026). `RunConfig.context_window` (`--context-window`)
overrides the table.

The output limit is the largest `max_tokens` the API takes for a model; a
request over it is refused (400 "max_tokens: 64000 > 32000, which is the
maximum allowed number of output tokens for …"). Models the table does not
list keep the loop's own defaults.
"""

from __future__ import annotations

import re
from functools import cache

DEFAULT_MAX_TOKENS = 32_000
"""What Claude Code 2.1.x asks for (measured): a cut answer is then asked to resume, with
no escalated retry first. This module stays light (`--help` imports it)."""
CAPPED_DEFAULT_MAX_TOKENS = 8_000
ESCALATED_MAX_TOKENS = 64_000
"""The seeds' output cap (`capped_output`, a feature gate that is off in Claude Code
2.1.x): requests go out at 8k, and a cut answer is retried once at 64k before the
model is asked to resume."""

DEFAULT_CONTEXT_WINDOW = 200_000
MIN_CONTEXT_WINDOW = 40_000
"""The smallest window a run takes: `--context-window`'s floor, which a scenario's
`config` keeps too, so a scenario cannot script a run the command line refuses.
It leaves room above the 20k summary reserve and the 13k autocompact margin
(`RunConfig`): a smaller window has thresholds at or below zero, and the run
would compact before its first request and end over its blocking limit."""

CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-opus-5", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-haiku-5", 1_000_000),
    ("claude-fable-5", 1_000_000),
    ("claude-mythos-5", 1_000_000),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-haiku", 200_000),
)

ONE_MILLION_BETA: tuple[str, ...] = ("claude-sonnet-4",)


def context_window(model: str, *, beta_1m: bool = False) -> int:
    """The window for `model`: by the longest matching id prefix, 200k when unknown."""
    if beta_1m and any(model.startswith(p) for p in ONE_MILLION_BETA):
        return 1_000_000
    matches = [(len(prefix), size) for prefix, size in CONTEXT_WINDOWS if model.startswith(prefix)]
    return max(matches)[1] if matches else DEFAULT_CONTEXT_WINDOW


MAX_OUTPUT_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-8", 128_000),
    ("claude-opus-4-7", 128_000),
    ("claude-opus-4-6", 128_000),
    ("claude-sonnet-4-6", 128_000),
    ("claude-opus-4-5", 64_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4-0", 32_000),
    ("claude-opus-4", 32_000),
    ("claude-sonnet-4-5", 64_000),
    ("claude-sonnet-4-0", 64_000),
    ("claude-sonnet-4", 64_000),
    ("claude-haiku-4-5", 64_000),
    ("claude-3-7-sonnet", 64_000),
    ("claude-3-5-sonnet", 8_192),
    ("claude-3-5-haiku", 8_192),
    ("claude-3-opus", 4_096),
    ("claude-3-haiku", 4_096),
)


_MINOR_VERSION = re.compile(r"-\d{1,2}(?:$|[-@:])")


def _of_family(model: str, prefix: str) -> bool:
    """`model` is `prefix` or a dated id of it, not a minor version the table lacks
    (`claude-opus-4-9` is not `claude-opus-4`, whose limit is older and smaller)."""
    return model.startswith(prefix) and not _MINOR_VERSION.match(model[len(prefix) :])


@cache
def output_limit(model: str) -> int | None:
    """The model's output limit, by the longest matching id prefix; None if not listed.
    Cached: every request asks it."""
    matches = [
        (len(prefix), size) for prefix, size in MAX_OUTPUT_TOKENS if _of_family(model, prefix)
    ]
    return max(matches)[1] if matches else None


def output_limits(model: str) -> tuple[int, int]:
    """`max_tokens` for a request and for the escalated retry, held to the model's limit;
    the loop's defaults for a model not listed."""
    limit = output_limit(model) or ESCALATED_MAX_TOKENS
    return min(DEFAULT_MAX_TOKENS, limit), min(ESCALATED_MAX_TOKENS, limit)


def held_to_limit(model: str, max_tokens: int) -> int:
    """`max_tokens` for a request to `model`, which may not be the one the run's limits
    were set for (a fallback model)."""
    limit = output_limit(model)
    return max_tokens if limit is None else min(max_tokens, limit)


MAX_STOP_HOOK_BLOCKS = 8
"""How many `stop_hook_blocking` continues in a row a run allows before the next block
is overridden (Claude Code's cap): a limit the loop runs under, as the window is."""
