"""What a replay allows for in logs that older releases wrote: each rule is one thing
those logs lack, and how the replay answers in its place."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from attrs import evolve

from fsm_agent.core.config import RunConfig
from fsm_agent.core.limits import CAPPED_DEFAULT_MAX_TOKENS

LATER_EVENTS = frozenset({"PermissionRequest", "PostToolBatch"})
"""Hook events an older log may hold no record of although its settings had such a
hook: its writer did not ask them. The replay then gives those hooks no say."""


def hooks_had_no_say(event: str, hooked: Collection[str] | None) -> bool:
    """The recorded run asked no hooks about `event`: its header's `hooked_events`
    (absent from the oldest logs: None, every event may have been asked) leaves it out."""
    return hooked is not None and event not in hooked


def blocked_outside_the_machine(result: Mapping[str, Any], edge: str) -> bool:
    """A log from before `prompt_blocked` was an edge of the machine ended a blocked prompt
    with no transition (its result has no steps): the replay's first edge, that one, is
    what it recorded as the end."""
    return edge == "prompt_blocked" and result.get("reason") == edge and result.get("steps") == 0


OUTPUT_SETTINGS = ("max_output_tokens", "capped_output", "cut_calls_answered", "parsed_inputs")


def output_settings(config: RunConfig) -> dict[str, Any]:
    """Written in every header even at their defaults: a log whose header lacks them was
    written when requests asked the seeds' capped 8k (`with_output_cap`)."""
    return {name: getattr(config, name) for name in OUTPUT_SETTINGS}


def with_output_cap(config: Mapping[str, Any]) -> dict[str, Any]:
    """A header from before `capped_output` existed: its run had the output cap, and a
    `max_output_tokens` left out was the cap's 8k (the default then)."""
    if "capped_output" in config:
        return dict(config)
    return {"max_output_tokens": CAPPED_DEFAULT_MAX_TOKENS, **config, "capped_output": True}


def with_cut_calls_dropped(config: Mapping[str, Any]) -> dict[str, Any]:
    """A header from before `cut_calls_answered` existed: its run dropped a tool call
    that `max_tokens` cut, and asked the model to resume."""
    return {"cut_calls_answered": False, **config}


def with_inputs_as_sent(config: Mapping[str, Any]) -> dict[str, Any]:
    """A header from before `parsed_inputs` existed: its run gave each tool, hook and
    permission check a call's input as the model sent it."""
    return {"parsed_inputs": False, **config}


def poll_keys(key: str, where: str) -> tuple[str, ...]:
    """The records a poll's answer may be under: its place in the step (`where#2`), or,
    in a log that wrote every poll, each poll as `where`."""
    return (key,) if key == where else (key, where)


def with_home(config: RunConfig) -> RunConfig:
    """A log from before `home` was recorded expanded a model's `~/…` path with the home
    of the machine that replays it (its engine read the environment): so does this."""
    if config.home is not None:
        return config
    return evolve(config, home=os.path.expanduser("~"))
