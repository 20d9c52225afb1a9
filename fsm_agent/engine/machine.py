"""The agent loop as data: states, edges, guards, and the action each edge takes.

Read `EDGES` top to bottom against the seed's diagram. Each row gives the
source, the edge's name, the destination, its kind, its guard (a named pure
function of the state, the phase's facts and the run's configuration) and its
action (a name in `fsm_agent.engine.actions`). Edges out of one state are tried
in the order written and the first whose guard holds is taken, so the order of
the `recovery` rows *is* Claude Code's recovery priority. Phases only compute
facts; they never pick their successor.

`recovery` is split in two (`recovery`, then `stop_hooks`) so that stop
hooks, which run commands, only run when no error-recovery edge applies,
and the table stays the one place that states that priority.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attrs import frozen
from transitions import Event, EventData, Machine, MachineError, State, Transition

from fsm_agent.core.limits import MAX_STOP_HOOK_BLOCKS
from fsm_agent.engine.reasons import (
    CONTINUE_REASONS,
    MODEL_FALLBACK,
    PROMPT_BLOCKED,
    TERMINAL_REASONS,
    Continue,
    Kind,
    Phase,
    Terminal,
)

if TYPE_CHECKING:  # for annotations only: `fsm-agent graph` draws the table without them
    from fsm_agent.core.config import RunConfig
    from fsm_agent.engine.state import Facts, LoopState

__all__ = [
    "CONTINUE_REASONS",
    "MODEL_FALLBACK",
    "PROMPT_BLOCKED",
    "TERMINAL_REASONS",
    "Continue",
    "Kind",
    "Phase",
    "Terminal",
]

MAX_OUTPUT_RECOVERY_LIMIT = 3
"""How many times in a row the model is asked to resume a cut answer (Claude Code's)."""

Guard = Callable[["LoopState", "Facts", "RunConfig"], bool]
"""A guard reads the loop state, what the phase found out, and the run's configuration."""


# --- guards: each a named, pure function of (state, facts, config) ------------------


def always(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return True


def prompt_refused(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.prompt_blocked


def over_hard_limit(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.over_hard_limit


def fallback_available(s: LoopState, f: Facts, c: RunConfig) -> bool:
    """Overloaded, and the run names a fallback model other than the one that failed."""
    return f.overloaded and bool(c.fallback_model) and c.fallback_model != f.model


def model_failed(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.model_error is not None


def interrupted(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.aborted


def needs_follow_up(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.needs_follow_up


def collapses_to_drain(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.withheld == "prompt_too_long" and f.collapses_staged > 0


def compaction_untried(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return (
        f.withheld is not None
        and not s.has_attempted_reactive_compact
        and not (f.nothing_to_compact)
    )


def too_long_withheld(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.withheld == "prompt_too_long"


def media_withheld(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.withheld == "media"


def can_escalate(s: LoopState, f: Facts, c: RunConfig) -> bool:
    """Only under the output cap, as Claude Code escalates only while its cap gate is on."""
    return (
        f.truncated
        and c.capped_output
        and s.max_output_tokens_override is None
        and not f.at_output_limit
    )


def recoveries_left(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.truncated and s.max_output_tokens_recovery_count < MAX_OUTPUT_RECOVERY_LIMIT


def api_error_or_cut(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.api_error is not None or f.truncated


def stop_prevented(s: LoopState, f: Facts, c: RunConfig) -> bool:
    """A Stop hook prevents continuing, or Ctrl-C came while they ran (Claude Code counts
    the interrupt as the hooks preventing it)."""
    return f.hook_prevented or f.aborted


def stop_blocked_under_cap(s: LoopState, f: Facts, c: RunConfig) -> bool:
    cap = c.stop_hook_block_cap
    return f.stop_blocked and (cap <= 0 or s.stop_hook_blocks < cap)


def budget_left(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.budget_nudge is not None and not f.stop_blocked


def hook_stopped(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return f.hook_prevented


def past_max_turns(s: LoopState, f: Facts, c: RunConfig) -> bool:
    return c.max_turns is not None and s.turn_count + 1 > c.max_turns


@frozen
class Edge:
    """One row of the table: taken out of `source` when `guard` holds (and no row above
    it did), it moves to `dest`, and `action` (a name in `fsm_agent.engine.actions`)
    builds what comes next. `confirm` names a check with effects (in
    `fsm_agent.engine.phases.CONFIRMS`) run only when the table picks this edge: its
    facts then go to the table again, which may pick another.

    `when` is the guard in words, for the docs; the session log's header holds a
    digest of every row's source, name, destination and `when`
    (`machine_fingerprint`), so rewording one marks every earlier log as another
    machine's."""

    source: Phase
    name: str
    dest: str
    kind: Kind
    guard: Guard
    action: str
    when: str
    confirm: str | None = None


P, C, T, K = Phase, Continue, Terminal, Kind


def _edge(source: Phase, name: str, dest: str, kind: Kind, guard: Guard, action: str,
          when: str, confirm: str | None = None) -> Edge:  # fmt: skip
    return Edge(source, str(name), str(dest), kind, guard, action, when, confirm)


# fmt: off
EDGES: tuple[Edge, ...] = (
    # source, edge, destination, kind;
    #     guard, action;
    #     when (the guard in words)
    _edge(P.PREPROCESS, PROMPT_BLOCKED, PROMPT_BLOCKED, K.TERMINAL,
          prompt_refused, "block_prompt",
          "a UserPromptSubmit hook refused the prompt"),
    _edge(P.PREPROCESS, "preprocessed", P.BLOCKING_LIMIT_CHECK, K.PHASE,
          always, "proceed",
          "always"),

    _edge(P.BLOCKING_LIMIT_CHECK, T.BLOCKING_LIMIT, T.BLOCKING_LIMIT, K.TERMINAL,
          over_hard_limit, "end",
          "token count over the hard limit"),
    _edge(P.BLOCKING_LIMIT_CHECK, "under_limit", P.API_CALL, K.PHASE,
          always, "proceed",
          "otherwise"),

    _edge(P.API_CALL, MODEL_FALLBACK, P.API_CALL, K.RETRY,
          fallback_available, "switch_model",
          "overloaded and a fallback model to switch to"),
    _edge(P.API_CALL, T.MODEL_ERROR, T.MODEL_ERROR, K.TERMINAL,
          model_failed, "fail_model",
          "the call raised what recovery does not handle"),
    _edge(P.API_CALL, "streamed", P.ABORT_CHECK, K.PHASE,
          always, "proceed",
          "otherwise"),

    _edge(P.ABORT_CHECK, T.ABORTED_STREAMING, T.ABORTED_STREAMING, K.TERMINAL,
          interrupted, "end",
          "interrupted while streaming"),
    _edge(P.ABORT_CHECK, "tool_use", P.TOOL_EXECUTION, K.PHASE,
          needs_follow_up, "proceed",
          "needs_follow_up: tool_use blocks received"),
    _edge(P.ABORT_CHECK, "no_tool_use", P.RECOVERY, K.PHASE,
          always, "proceed",
          "otherwise"),

    _edge(P.RECOVERY, C.COLLAPSE_DRAIN_RETRY, P.PREPROCESS, K.CONTINUE,
          collapses_to_drain, "collapse_drain_retry",
          "prompt-too-long withheld and collapses staged"),
    _edge(P.RECOVERY, C.REACTIVE_COMPACT_RETRY, P.PREPROCESS, K.CONTINUE,
          compaction_untried, "reactive_compact_retry",
          "prompt-too-long or media error withheld, reactive compact not tried "
          "and it changes the request",
          confirm="compaction_check"),
    _edge(P.RECOVERY, T.PROMPT_TOO_LONG, T.PROMPT_TOO_LONG, K.TERMINAL,
          too_long_withheld, "end",
          "prompt-too-long withheld, nothing left"),
    _edge(P.RECOVERY, T.IMAGE_ERROR, T.IMAGE_ERROR, K.TERMINAL,
          media_withheld, "end",
          "media error withheld, nothing left"),
    _edge(P.RECOVERY, C.MAX_OUTPUT_TOKENS_ESCALATE, P.PREPROCESS, K.CONTINUE,
          can_escalate, "max_output_tokens_escalate",
          "output truncated under the output cap, no override yet, a higher limit to ask for"),
    _edge(P.RECOVERY, C.MAX_OUTPUT_TOKENS_RECOVERY, P.PREPROCESS, K.CONTINUE,
          recoveries_left, "max_output_tokens_recovery",
          f"output truncated, fewer than {MAX_OUTPUT_RECOVERY_LIMIT} recoveries"),
    _edge(P.RECOVERY, T.COMPLETED, T.COMPLETED, K.TERMINAL,
          api_error_or_cut, "surface_cut_output",
          "an API error, or output still truncated after every recovery (stop hooks skipped)"),
    _edge(P.RECOVERY, "nothing_to_recover", P.STOP_HOOKS, K.PHASE,
          always, "proceed",
          "otherwise"),

    _edge(P.STOP_HOOKS, T.STOP_HOOK_PREVENTED, T.STOP_HOOK_PREVENTED, K.TERMINAL,
          stop_prevented, "end",
          "a stop hook prevents continuing"),
    _edge(P.STOP_HOOKS, C.STOP_HOOK_BLOCKING, P.PREPROCESS, K.CONTINUE,
          stop_blocked_under_cap, "stop_hook_blocking",
          "stop hooks returned blocking errors or context to go on with, fewer than the "
          f"block cap in a row ({MAX_STOP_HOOK_BLOCKS} by default; none if 0 or less)"),
    _edge(P.STOP_HOOKS, C.TOKEN_BUDGET_CONTINUATION, P.PREPROCESS, K.CONTINUE,
          budget_left, "token_budget_continuation",
          "token budget not spent, no stop hook blocked"),
    _edge(P.STOP_HOOKS, T.COMPLETED, T.COMPLETED, K.TERMINAL,
          always, "override_stop_block",
          "otherwise (a block past the cap is overridden)"),

    _edge(P.TOOL_EXECUTION, T.ABORTED_TOOLS, T.ABORTED_TOOLS, K.TERMINAL,
          interrupted, "end",
          "interrupted while tools ran"),
    _edge(P.TOOL_EXECUTION, T.HOOK_STOPPED, T.HOOK_STOPPED, K.TERMINAL,
          hook_stopped, "end",
          "a hook stopped the run during tools"),
    _edge(P.TOOL_EXECUTION, "tools_done", P.ATTACHMENTS, K.PHASE,
          always, "proceed",
          "otherwise"),

    _edge(P.ATTACHMENTS, "attached", P.CONTINUATION, K.PHASE,
          always, "proceed",
          "always"),

    _edge(P.CONTINUATION, T.MAX_TURNS, T.MAX_TURNS, K.TERMINAL,
          past_max_turns, "end",
          "max_turns set and the next turn would pass it"),
    _edge(P.CONTINUATION, C.NEXT_TURN, P.PREPROCESS, K.CONTINUE,
          always, "next_turn",
          "otherwise"),
)
# fmt: on

INITIAL = Phase.PREPROCESS.value
FINAL_STATES: tuple[str, ...] = (*(t.value for t in Terminal), PROMPT_BLOCKED)
STATES: tuple[str, ...] = tuple(p.value for p in Phase) + FINAL_STATES


class NoEdge(RuntimeError):
    """No edge out of the current state has a guard that holds: the table is incomplete."""


class _Transition(Transition):
    """A `transitions.Transition` that changes state directly when nothing is
    registered to run around it.

    The machine decides in `fire`, not through conditions, and registers no
    callbacks, so the library's `execute` would only walk empty callback lists
    and log debug lines on a path taken at every step. Anything registered on
    the transition or the machine sends it down the library's whole path. The
    state change runs the library's steps in the library's order (a test holds
    it to a plain `transitions.Machine`).
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
    """A `transitions.Machine` over `EDGES`, one trigger per named edge, for one run.

    `choose` reads the edges out of the current state in table order and
    returns the first whose guard holds; `take` triggers it, and `transitions`
    checks that the edge leaves the current state (a trigger from anywhere else
    raises) and moves. Guards are pure functions of the state, the facts and
    the run's configuration, so deciding first and then triggering one edge is
    what conditions on a shared trigger would do, without a failed transition
    for every guard that does not hold.
    """

    def __init__(self, config: RunConfig, initial: str = INITIAL) -> None:
        initial = str(initial)
        self.config = config
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

    def choose(self, state: LoopState, facts: Facts) -> Edge:
        """The first edge out of the current state whose guard holds, not yet taken."""
        for edge in _OUT.get(self.state, ()):
            if edge.guard(state, facts, self.config):
                return edge
        raise NoEdge(f"no edge out of {self.state!r} has a guard that holds")

    def take(self, edge: Edge) -> Edge:
        source = self.state
        try:
            moved = self._events[edge.name].trigger(self)
        except MachineError as exc:
            raise NoEdge(f"no edge {edge.name!r} out of {source!r}: {exc.value}") from None
        if not moved:
            raise NoEdge(f"edge {edge.name!r} out of {source!r} was refused by a condition")
        return edge

    def fire(self, state: LoopState, facts: Facts) -> Edge:
        """Take the first edge out of the current state whose guard holds."""
        return self.take(self.choose(state, facts))


def edges_from(source: str) -> tuple[Edge, ...]:
    return tuple(e for e in EDGES if e.source.value == source)


_OUT: dict[str, tuple[Edge, ...]] = {p.value: edges_from(p.value) for p in Phase}


def edge_names() -> tuple[str, ...]:
    """Every distinct edge name, in table order."""
    return tuple(dict.fromkeys(e.name for e in EDGES))
