"""The agent loop as data: states, edges, guards.

Read `EDGES` top to bottom against the seed's diagram. Edges out of one
state are tried in the order written and the first whose guard holds is
taken, so the order of the `recovery` rows *is* Claude Code's recovery
priority. Phases only compute facts; they never pick their successor.

`recovery` is split in two (`recovery`, then `stop_hooks`) so that stop
hooks, which run commands, only run when no error-recovery edge applies,
and the table stays the one place that states that priority.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from attrs import Factory, field, frozen
from transitions import Event, EventData, Machine, MachineError, State, Transition

from fsm_agent.core.config import MAX_STOP_HOOK_BLOCKS

if TYPE_CHECKING:
    from fsm_agent.engine.state import Facts, LoopState


class Phase(StrEnum):
    PREPROCESS = "preprocess"
    BLOCKING_LIMIT_CHECK = "blocking_limit_check"
    API_CALL = "api_call"
    ABORT_CHECK = "abort_check"
    RECOVERY = "recovery"
    STOP_HOOKS = "stop_hooks"
    TOOL_EXECUTION = "tool_execution"
    ATTACHMENTS = "attachments"
    CONTINUATION = "continuation"


class Continue(StrEnum):
    """Why an iteration went round again: `LoopState.transition`."""

    NEXT_TURN = "next_turn"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    COLLAPSE_DRAIN_RETRY = "collapse_drain_retry"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"


class Terminal(StrEnum):
    """Why the loop ended; each is also the name of a final state."""

    COMPLETED = "completed"
    BLOCKING_LIMIT = "blocking_limit"
    PROMPT_TOO_LONG = "prompt_too_long"
    IMAGE_ERROR = "image_error"
    MODEL_ERROR = "model_error"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    STOP_HOOK_PREVENTED = "stop_hook_prevented"
    HOOK_STOPPED = "hook_stopped"
    MAX_TURNS = "max_turns"


CONTINUE_REASONS = frozenset(c.value for c in Continue)
TERMINAL_REASONS = frozenset(t.value for t in Terminal)
MODEL_FALLBACK = "model_fallback"
MAX_OUTPUT_RECOVERY_LIMIT = 3
"""Claude Code's default cap on Stop-hook blocks in a row (`RunConfig.stop_hook_block_cap`)."""

Guard = Callable[["LoopState", "Facts"], bool]


def always(state: LoopState, facts: Facts) -> bool:
    return True


def _kind(edge: Edge) -> str:
    if edge.name in CONTINUE_REASONS:
        return "continue"
    if edge.dest in TERMINAL_REASONS:
        return "terminal"
    if edge.name == MODEL_FALLBACK:
        return "fallback"
    return "phase"


@frozen
class Edge:
    source: Phase
    name: str
    dest: str
    guard: Guard
    when: str
    kind: str = field(init=False, default=Factory(_kind, takes_self=True))
    """continue, terminal, fallback or phase: read at every step, so worked out once."""


def _edge(source: Phase, name: str, dest: str, when: str, guard: Guard = always) -> Edge:
    return Edge(source, str(name), str(dest), guard, when)


P, C, T = Phase, Continue, Terminal

# fmt: off
EDGES: tuple[Edge, ...] = (
    _edge(P.PREPROCESS, "preprocessed", P.BLOCKING_LIMIT_CHECK, "always"),

    _edge(P.BLOCKING_LIMIT_CHECK, T.BLOCKING_LIMIT, T.BLOCKING_LIMIT,
          "token count over the hard limit", lambda s, f: f.over_hard_limit),
    _edge(P.BLOCKING_LIMIT_CHECK, "under_limit", P.API_CALL, "otherwise"),

    _edge(P.API_CALL, MODEL_FALLBACK, P.API_CALL,
          "overloaded and a fallback model to switch to",
          lambda s, f: f.fallback_model is not None),
    _edge(P.API_CALL, T.MODEL_ERROR, T.MODEL_ERROR,
          "the call raised what recovery does not handle", lambda s, f: f.model_error is not None),
    _edge(P.API_CALL, "streamed", P.ABORT_CHECK, "otherwise"),

    _edge(P.ABORT_CHECK, T.ABORTED_STREAMING, T.ABORTED_STREAMING,
          "interrupted while streaming", lambda s, f: f.aborted),
    _edge(P.ABORT_CHECK, "tool_use", P.TOOL_EXECUTION,
          "needs_follow_up: tool_use blocks received", lambda s, f: f.needs_follow_up),
    _edge(P.ABORT_CHECK, "no_tool_use", P.RECOVERY, "otherwise"),

    _edge(P.RECOVERY, C.COLLAPSE_DRAIN_RETRY, P.PREPROCESS,
          "prompt-too-long withheld and collapses staged",
          lambda s, f: f.withheld == "prompt_too_long" and f.collapses_staged > 0),
    _edge(P.RECOVERY, C.REACTIVE_COMPACT_RETRY, P.PREPROCESS,
          "prompt-too-long or media error withheld, reactive compact not tried "
          "and it changes the request",
          lambda s, f: f.withheld is not None and not s.has_attempted_reactive_compact
          and not f.nothing_to_compact),
    _edge(P.RECOVERY, T.PROMPT_TOO_LONG, T.PROMPT_TOO_LONG,
          "prompt-too-long withheld, nothing left", lambda s, f: f.withheld == "prompt_too_long"),
    _edge(P.RECOVERY, T.IMAGE_ERROR, T.IMAGE_ERROR,
          "media error withheld, nothing left", lambda s, f: f.withheld == "media"),
    _edge(P.RECOVERY, C.MAX_OUTPUT_TOKENS_ESCALATE, P.PREPROCESS,
          "output truncated, no override yet, a higher limit to ask for",
          lambda s, f: f.truncated and s.max_output_tokens_override is None
          and not f.at_output_limit),
    _edge(P.RECOVERY, C.MAX_OUTPUT_TOKENS_RECOVERY, P.PREPROCESS,
          f"output truncated, fewer than {MAX_OUTPUT_RECOVERY_LIMIT} recoveries",
          lambda s, f: f.truncated
          and s.max_output_tokens_recovery_count < MAX_OUTPUT_RECOVERY_LIMIT),
    _edge(P.RECOVERY, T.COMPLETED, T.COMPLETED,
          "an API error, or output still truncated after every recovery (stop hooks skipped)",
          lambda s, f: f.api_error is not None or f.truncated),
    _edge(P.RECOVERY, "nothing_to_recover", P.STOP_HOOKS, "otherwise"),

    _edge(P.STOP_HOOKS, T.STOP_HOOK_PREVENTED, T.STOP_HOOK_PREVENTED,
          "a stop hook prevents continuing", lambda s, f: f.hook_prevented),
    _edge(P.STOP_HOOKS, C.STOP_HOOK_BLOCKING, P.PREPROCESS,
          "stop hooks returned blocking errors or context to go on with, fewer than the "
          f"block cap in a row ({MAX_STOP_HOOK_BLOCKS} by default; none if 0 or less)",
          lambda s, f: f.stop_blocked
          and (f.block_cap <= 0 or s.stop_hook_blocks < f.block_cap)),
    _edge(P.STOP_HOOKS, C.TOKEN_BUDGET_CONTINUATION, P.PREPROCESS,
          "token budget not spent, no stop hook blocked",
          lambda s, f: f.budget_nudge is not None and not f.stop_blocked),
    _edge(P.STOP_HOOKS, T.COMPLETED, T.COMPLETED,
          "otherwise (a block past the cap is overridden)"),

    _edge(P.TOOL_EXECUTION, T.ABORTED_TOOLS, T.ABORTED_TOOLS,
          "interrupted while tools ran", lambda s, f: f.aborted),
    _edge(P.TOOL_EXECUTION, T.HOOK_STOPPED, T.HOOK_STOPPED,
          "a hook stopped the run during tools", lambda s, f: f.hook_prevented),
    _edge(P.TOOL_EXECUTION, "tools_done", P.ATTACHMENTS, "otherwise"),

    _edge(P.ATTACHMENTS, "attached", P.CONTINUATION, "always"),

    _edge(P.CONTINUATION, T.MAX_TURNS, T.MAX_TURNS,
          "max_turns set and the next turn would pass it",
          lambda s, f: f.max_turns is not None and s.turn_count + 1 > f.max_turns),
    _edge(P.CONTINUATION, C.NEXT_TURN, P.PREPROCESS, "otherwise"),
)
# fmt: on

INITIAL = Phase.PREPROCESS.value
FINAL_STATES: tuple[str, ...] = tuple(t.value for t in Terminal)
STATES: tuple[str, ...] = tuple(p.value for p in Phase) + FINAL_STATES


class NoEdge(RuntimeError):
    """No edge out of the current state has a guard that holds: the table is incomplete."""


class _Transition(Transition):
    """A `transitions.Transition` that changes state directly when nothing is
    registered to run around it.

    The machine decides in `fire`, not through conditions, and registers no
    callbacks, so the library's `execute` would walk empty callback lists and
    log four debug lines on every trigger, a fifth of a trigger's cost.
    Anything registered on the transition or the machine sends it down the
    library's whole path. The state change runs the library's steps in the
    library's order (a test holds it to a plain `transitions.Machine`).
    """

    def execute(self, event_data: Any) -> bool:
        machine = event_data.machine
        if (
            self.prepare
            or self.conditions
            or self.before
            or self.after
            or machine.before_state_change
            or machine.after_state_change
        ):
            return super().execute(event_data)
        self._change_state(event_data)
        return True

    def _change_state(self, event_data: Any) -> None:
        """The library's state change (exit, set, update, enter, the final-state
        callbacks) with the states taken from the machine's own table: its
        `get_state`, `set_state` and `update` each look a name up again, check
        its type, and wrap the one model in a list, four times a trigger."""
        machine = event_data.machine
        states = machine.states
        states[self.source].exit(event_data)
        dest = states[self.dest]
        setattr(event_data.model, machine.model_attribute, dest.value)
        event_data.state = dest
        dest.enter(event_data)
        if dest.final:
            machine.callbacks(machine.on_final, event_data)


class _State(State):
    """A `transitions.State` that skips its enter and exit steps when no callback
    is registered for them: each step otherwise logs two lines around an empty
    callback list, on both ends of every trigger."""

    def enter(self, event_data: Any) -> None:
        if self.on_enter:
            super().enter(event_data)

    def exit(self, event_data: Any) -> None:
        if self.on_exit:
            super().exit(event_data)


class _Event(Event):
    """A `transitions.Event` that runs a trigger in place when nothing is
    registered around it.

    The library wraps each trigger in a partial for its event queue, then
    walks the machine's empty prepare and finalize lists and logs a debug
    line after each. With no queue, no prepare, finalize or exception
    callbacks, this checks the source and runs the transitions as the
    library would; with any of them, the library's own path runs.
    """

    def trigger(self, model: Any, *args: Any, **kwargs: Any) -> bool:
        machine = self.machine
        if (
            args
            or kwargs
            or machine.has_queue
            or machine.prepare_event
            or machine.finalize_event
            or machine.on_exception
        ):
            return super().trigger(model, *args, **kwargs)
        event_data = EventData(None, self, machine, model, args=args, kwargs=kwargs)
        event_data.state = machine.states[getattr(model, machine.model_attribute)]
        if self._is_valid_source(event_data.state):
            for transition in self.transitions[event_data.state.name]:
                event_data.transition = transition
                if transition.execute(event_data):
                    return True
        return False


class _Machine(Machine):
    transition_cls = _Transition
    state_cls = _State
    event_cls = _Event


class LoopMachine:
    """A `transitions.Machine` over `EDGES`, one trigger per named edge.

    `fire` reads the edges out of the current state in table order and
    triggers the first whose guard holds; `transitions` checks that the edge
    leaves the current state (a trigger from anywhere else raises) and moves.
    Guards are pure functions of the state and the facts, so deciding first
    and then triggering one edge is what conditions on a shared trigger would
    do, without a failed transition for every guard that does not hold.
    """

    def __init__(self, initial: str = INITIAL) -> None:
        initial = str(initial)
        self.state: str = initial
        self._machine = _Machine(
            model=self,
            states=[{"name": s, "final": s in FINAL_STATES} for s in STATES],
            initial=initial,
            auto_transitions=False,
            ignore_invalid_triggers=False,
        )
        for edge in EDGES:
            self._machine.add_transition(edge.name, edge.source.value, edge.dest)
        self._events = self._machine.events

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    def fire(self, state: LoopState, facts: Facts) -> Edge:
        """Take the first edge out of the current state whose guard holds."""
        source = self.state
        edge = first_edge(source, state, facts)
        try:
            moved = self._events[edge.name].trigger(self)
        except MachineError as exc:
            raise NoEdge(f"no edge {edge.name!r} out of {source!r}: {exc.value}") from None
        if not moved:
            raise NoEdge(f"edge {edge.name!r} out of {source!r} was refused by a condition")
        return edge


def first_edge(source: str, state: LoopState, facts: Facts) -> Edge:
    """The edge `fire` takes out of `source` on these facts, without taking it: a phase
    asks the table before an effect meant for one edge only (`recovery`'s PreCompact)."""
    for edge in _OUT.get(source, ()):
        if edge.guard(state, facts):
            return edge
    raise NoEdge(f"no edge out of {source!r} has a guard that holds")


def edges_from(source: str) -> tuple[Edge, ...]:
    return tuple(e for e in EDGES if e.source.value == source)


_OUT: dict[str, tuple[Edge, ...]] = {p.value: edges_from(p.value) for p in Phase}


def edge_names() -> tuple[str, ...]:
    """Every distinct edge name, in table order."""
    return tuple(dict.fromkeys(e.name for e in EDGES))
