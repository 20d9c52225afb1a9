"""A scripted model: a JSON file of model turns that drives the engine offline.

Each request takes the next turn. A turn streams its content blocks the way
the API would (text in several deltas, tool input as JSON pieces), or raises
an API error, or drops the connection, or interrupts the run. The format is
documented in docs/scenarios.md.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NewType

from attrs import Attribute, evolve, field, fields, frozen
from attrs.validators import ge, lt, optional

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.codec import CodecError, make_converter, structure
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    BlockDelta,
    BlockStart,
    BlockStop,
    ErrorKind,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelCallError,
    StreamEvent,
)
from fsm_agent.core.jsontext import MAX_DEPTH, decode_error, deeper_than, strict_loads
from fsm_agent.core.limits import MIN_CONTEXT_WINDOW
from fsm_agent.core.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.validation import unparsable_input
from fsm_agent.hooks.outcomes import NO_OPINION, PERMISSION_PRECEDENCE, HookOutcome
from fsm_agent.live.settings import SettingsError, parse_settings
from fsm_agent.policy.permissions import MODE_ALIASES, PermissionError_, check_mode

if TYPE_CHECKING:
    import cattrs

DELTA_CHARS = 16
StopReason = Literal[
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
]
"""The Messages API's stop reasons: a scenario may script any of them."""


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message says where."""


ScriptedOutcome = NewType("ScriptedOutcome", HookOutcome)
"""A hook outcome as a scenario scripts it: read refusing unknown keys, where a
session log's outcome (a plain `HookOutcome`) ignores them, as logs do."""

ScriptedEvent = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PostToolBatch",
    "Stop",
    "PreCompact",
    "PostCompact",
]
"""The hook events the loop asks (SessionEnd runs outside it): a misspelt one is
refused, or its outcomes would quietly never be used."""

ScriptedUsage = NewType("ScriptedUsage", Usage)
"""A turn's usage as a scenario scripts it: read refusing unknown keys, as above."""


@frozen
class ScriptedError:
    kind: ErrorKind
    message: str
    status: int | None = None


@frozen
class ScriptedTurn:
    content: tuple[ContentBlock, ...] = ()
    stop_reason: StopReason | None = None
    usage: ScriptedUsage = ScriptedUsage(Usage(input_tokens=100, output_tokens=20))
    error: ScriptedError | None = None
    delay: float = field(default=0.0, validator=[ge(0), lt(math.inf)])
    event_delay: float = field(default=0.0, validator=[ge(0), lt(math.inf)])
    cut_after: int | None = field(default=None, validator=optional(ge(0)))
    cut_tool_input: bool = False
    interrupt: Literal["streaming", "tools"] | None = None
    expect_model: str | None = None

    @property
    def resolved_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.content) else "end_turn"


def _known_mode(_: object, attribute: Attribute[str | None], mode: str | None) -> None:
    """A mode `--permission-mode` takes, checked where the file is read, so the error
    names the file rather than coming when the run starts."""
    if mode is not None:
        try:
            check_mode(mode)
        except PermissionError_ as exc:
            raise ValueError(f"'{attribute.name}': {exc}") from None


def _valid_settings(_: object, attribute: Attribute[Any], settings: dict[str, Any] | None) -> None:
    """Settings a run can use, checked where the file is read, as `_known_mode` is.
    Nothing in the check depends on the workspace, which only resolves paths."""
    if settings is not None:
        try:
            parse_settings(settings, attribute.name, ".", ".")
        except SettingsError as exc:
            raise ValueError(str(exc)) from None


@frozen
class ScenarioConfig:
    """The run options a scenario sets, within the limits the command line's own have."""

    model: str = "scripted"
    fallback_model: str | None = None
    max_turns: int | None = field(default=None, validator=optional(ge(1)))
    token_budget: int | None = field(default=None, validator=optional(ge(1)))
    context_window: int | None = field(default=None, validator=optional(ge(MIN_CONTEXT_WINDOW)))
    permission_mode: str | None = field(default=None, validator=_known_mode)
    autocompact: bool | None = None
    snip_threshold: int | None = field(default=None, validator=optional(ge(0)))
    capped_output: bool | None = None


@frozen
class Scenario:
    turns: tuple[ScriptedTurn, ...]
    description: str = ""
    prompt: str | None = None
    config: ScenarioConfig = ScenarioConfig()
    hooks: dict[ScriptedEvent, tuple[ScriptedOutcome, ...]] = field(factory=dict)
    settings: dict[str, Any] | None = field(default=None, validator=_valid_settings)

    def run_config(self, base: RunConfig) -> RunConfig:
        """`base` with the scenario's config over it (the scenario's model, `scripted`
        by default, always) and its settings' permissions and hooks added to `base`'s;
        their `defaultMode` is the mode unless the scenario's config names one.
        Options that should win over the scenario's are applied after: the command
        line's by cli.py, a Python caller's by `callers_choices` in `arun_scenario`."""
        chosen = {name: getattr(self.config, name) for name in SCENARIO_OPTIONS}
        named = chosen["permission_mode"]
        chosen["permission_mode"] = MODE_ALIASES.get(named, named) if named else None
        config = evolve(base, **{k: v for k, v in chosen.items() if v is not None})
        if self.settings is None:
            return config
        extra = parse_settings(self.settings, "scenario settings", config.cwd, config.cwd)
        mode = extra.permissions.default_mode
        return evolve(
            config,
            permissions=config.permissions.merged(extra.permissions),
            hooks=config.hooks + extra.hooks,
            permission_mode=config.permission_mode
            if mode is None or self.config.permission_mode is not None
            else mode,
        )

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        path = Path(path)
        try:
            data = strict_loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ScenarioError(f"{path}: no such scenario file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{path}: cannot read: {exc}") from None
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{path}:{decode_error(exc)}") from None
        except RecursionError:
            raise ScenarioError(f"{path}: not valid JSON: nested too deeply") from None
        except ValueError as exc:
            raise ScenarioError(f"{path}: not valid JSON: {exc}") from None
        return cls.parse(data, str(path))

    @classmethod
    def parse(cls, data: Any, where: str = "scenario") -> Scenario:
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
            raise ScenarioError(f"{where}: a scenario is an object with a 'turns' list")
        if deeper_than(data):
            raise ScenarioError(
                f"{where}: not a valid Scenario: nested more than {MAX_DEPTH} levels deep"
            )
        turns = [_text_shorthand(turn) for turn in data["turns"]]
        try:
            scenario: Scenario = structure({**data, "turns": turns}, cls, _scenario_converter())
        except CodecError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
        misfit = _misfit(scenario)
        if misfit is not None:
            raise ScenarioError(f"{where}: not a valid Scenario: {misfit}")
        return scenario


SCENARIO_OPTIONS = tuple(a.name for a in fields(ScenarioConfig))
"""The run options a scenario's `config` sets, each named as in `RunConfig`."""


def callers_choices(config: RunConfig) -> dict[str, Any]:
    """The options a scenario's config can set that `config` sets otherwise than
    `RunConfig`'s defaults: what a caller of `run_scenario(config=...)` chose, so
    they win over the scenario's. A value equal to the default is not told apart
    from leaving the option alone, so it does not win."""
    default = RunConfig()
    return {
        name: getattr(config, name)
        for name in SCENARIO_OPTIONS
        if getattr(config, name) != getattr(default, name)
    }


@functools.cache
def _scenario_converter() -> cattrs.Converter:
    """A scenario is written by hand: a misspelt key is refused, not quietly ignored.
    Made on first use: a run against a real model imports this module and reads no
    scenario (about 10 ms of its start)."""
    return make_converter(
        strict=(
            (HookOutcome, ScriptedOutcome),
            (Usage, ScriptedUsage),
            *((cls, cls) for cls in (ScriptedError, ScriptedTurn, ScenarioConfig, Scenario)),
        )
    )


ANSWER_BLOCKS = (TextBlock, ThinkingBlock, RedactedThinkingBlock, ToolUseBlock)
"""The blocks a model's answer holds; images and tool results come from the user's side."""


def _misfit(scenario: Scenario) -> str | None:
    """What the types let through but no API answer holds, placed as a type error is:
    a block from the user's side, a tool_use id used again in one turn (the engine
    tells a turn's calls apart by id: the second call got the first's result; a later
    turn may use it again, as a server may), a misspelt decision."""
    for t, turn in enumerate(scenario.turns):
        first: dict[str, str] = {}
        for b, block in enumerate(turn.content):
            at = f"$.turns[{t}].content[{b}]"
            if not isinstance(block, ANSWER_BLOCKS):
                known = ", ".join(cls.type for cls in ANSWER_BLOCKS)
                return f"a model's answer has no '{block.type}' block (its blocks: {known}) @ {at}"
            if isinstance(block, ToolUseBlock):
                if block.id in first:
                    return (
                        f"tool_use id {block.id!r} is used again in the turn (first "
                        f"@ {first[block.id]}; its calls are told apart by id) @ {at}"
                    )
                first[block.id] = at
    for event, outcomes in scenario.hooks.items():
        decisions = ("allow", "deny") if event == "PermissionRequest" else PERMISSION_PRECEDENCE
        for n, outcome in enumerate(outcomes):
            if outcome.permission_decision not in (None, *decisions):
                known = ", ".join(repr(d) for d in decisions)
                return (
                    f"invalid value, expected one of {known} or null "
                    f"@ $.hooks['{event}'][{n}].permission_decision"
                )
    return None


def _text_shorthand(turn: Any) -> Any:
    """`"content": "text"` is one text block, as the Messages API reads a string content."""
    if isinstance(turn, dict) and isinstance(turn.get("content"), str):
        return {**turn, "content": [{"type": "text", "text": turn["content"]}]}
    return turn


class ScriptedModel:
    """Answers each request with the scenario's next turn.

    Each turn's events after `message_start` are built once, up front: a
    scripted model stands in for the network, and its own cost is not what
    a run (or the engine benchmark) should measure.
    """

    def __init__(self, scenario: Scenario, abort: AbortSignal | None = None) -> None:
        self.scenario = scenario
        self.name = scenario.config.model
        self.abort = abort or AbortSignal()
        self.calls = 0
        self._bodies = [_body_events(turn) for turn in scenario.turns]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        index = self.calls
        self.calls += 1
        if index >= len(self.scenario.turns):
            raise ModelCallError(
                "invalid_response",
                f"the scenario has no turn {index + 1} (it has {len(self.scenario.turns)})",
            )
        turn = self.scenario.turns[index]
        if turn.expect_model and turn.expect_model != request.model:
            raise ModelCallError(
                "invalid_response",
                f"turn {index + 1} expected model {turn.expect_model}, got {request.model}",
            )
        if turn.delay:
            await asyncio.sleep(turn.delay)
        events = _events(turn, index, request.model, self._bodies[index])
        if turn.interrupt == "tools":
            self.abort.arm("tools")
        for n, event in enumerate(events):
            if turn.cut_after is not None and n >= turn.cut_after:
                raise ModelCallError("connection", "connection dropped mid-stream")
            if turn.interrupt == "streaming" and n == len(events) // 2:
                self.abort.set()
            yield event
            if turn.event_delay:
                await asyncio.sleep(turn.event_delay)
        if turn.error is not None:
            raise ModelCallError(turn.error.kind, turn.error.message, turn.error.status)

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return None


def _events(
    turn: ScriptedTurn, index: int, model: str, body: list[StreamEvent]
) -> list[StreamEvent]:
    if turn.error is not None and not turn.content:
        return []
    usage = turn.usage
    start = MessageStart(
        id=f"msg_scripted_{index + 1:04d}",
        model=model,
        usage=Usage(
            input_tokens=usage.input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            output_tokens=1,
        ),
    )
    return [start, *body]


def _body_events(turn: ScriptedTurn) -> list[StreamEvent]:
    """Every event of the turn after `message_start`, which names the model asked."""
    events: list[StreamEvent] = []
    last_tool = max(
        (i for i, b in enumerate(turn.content) if isinstance(b, ToolUseBlock)), default=None
    )
    for i, block in enumerate(turn.content):
        events.extend(_block_events(i, block, cut=turn.cut_tool_input and i == last_tool))
    if turn.error is not None:
        return events
    usage = Usage(output_tokens=turn.usage.output_tokens)
    events.append(MessageDelta(turn.resolved_stop_reason, usage))
    events.append(MessageStop())
    return events


def _chunks(text: str) -> list[str]:
    return [text[i : i + DELTA_CHARS] for i in range(0, len(text), DELTA_CHARS)] or [""]


def _block_events(index: int, block: ContentBlock, *, cut: bool) -> list[StreamEvent]:
    if isinstance(block, TextBlock):
        deltas = [BlockDelta(index, "text", c) for c in _chunks(block.text)]
        return [BlockStart(index, TextBlock("")), *deltas, BlockStop(index, block)]
    if isinstance(block, ThinkingBlock):
        deltas = [BlockDelta(index, "thinking", c) for c in _chunks(block.thinking)]
        sig = [BlockDelta(index, "signature", block.signature)] if block.signature else []
        return [BlockStart(index, ThinkingBlock("")), *deltas, *sig, BlockStop(index, block)]
    if isinstance(block, ToolUseBlock):
        raw = json.dumps(block.input)
        if cut:
            raw = raw[: max(1, len(raw) // 2)]
        deltas = [BlockDelta(index, "input_json", c) for c in _chunks(raw)]
        stop = (
            BlockStop(
                index, ToolUseBlock(block.id, block.name, {}), unparsable_input(block.name, raw)
            )
            if cut
            else BlockStop(index, block)
        )
        return [BlockStart(index, ToolUseBlock(block.id, block.name, {})), *deltas, stop]
    if isinstance(block, RedactedThinkingBlock):
        return [BlockStart(index, block), BlockStop(index, block)]
    return [BlockStart(index, block), BlockStop(index, block)]


class ScriptedHooks:
    """Hook outcomes from the scenario, one per call of each event, in order."""

    def __init__(self, outcomes: Mapping[ScriptedEvent, Sequence[HookOutcome]]) -> None:
        self._queues: dict[str, list[HookOutcome]] = {e: list(o) for e, o in outcomes.items()}
        self.events = frozenset(outcomes)

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        queue = self._queues.get(event)
        return queue.pop(0) if queue else NO_OPINION
