"""The edge table itself: states, reasons, guards, and that nothing else can happen."""

from __future__ import annotations

import pytest
from attrs import evolve
from transitions import MachineError

from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import user
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.machine import (
    EDGES,
    FINAL_STATES,
    PROMPT_BLOCKED,
    Continue,
    LoopMachine,
    NoEdge,
    Phase,
    Terminal,
    edges_from,
)
from fsm_agent.engine.state import Facts, LoopState, ToolContext

STATE = LoopState(Transcript.of([user("hi")]), ToolContext("/ws", "m"))


def machine_at(state: str) -> LoopMachine:
    return LoopMachine(RunConfig(), initial=state)


def test_every_reason_is_an_edge_and_every_terminal_a_final_state() -> None:
    names = {e.name for e in EDGES}
    assert {c.value for c in Continue} <= names
    assert {t.value for t in Terminal} <= names
    assert set(FINAL_STATES) == {t.value for t in Terminal} | {PROMPT_BLOCKED}
    for edge in EDGES:
        if edge.name in {c.value for c in Continue}:
            assert edge.dest == Phase.PREPROCESS
        if edge.name in {t.value for t in Terminal}:
            assert edge.dest == edge.name


def test_a_blocked_prompt_is_the_first_edge_tried() -> None:
    """A refused prompt ends the run before anything else `preprocess` found out counts,
    and nowhere else can it end a run."""
    first, *_ = edges_from(Phase.PREPROCESS)
    assert (first.name, first.dest, first.kind) == (PROMPT_BLOCKED, PROMPT_BLOCKED, "terminal")
    assert [e for e in EDGES if e.dest == PROMPT_BLOCKED] == [first]
    machine = LoopMachine(RunConfig())
    assert machine.choose(STATE, Facts(prompt_blocked=True, over_hard_limit=True)) is first
    assert machine.choose(STATE, Facts(over_hard_limit=True)).name == "preprocessed"
    assert machine.fire(STATE, Facts(prompt_blocked=True)) is first
    assert machine.is_final


def test_no_auto_transitions() -> None:
    machine = LoopMachine(RunConfig())
    assert not hasattr(machine, "to_completed")


def test_final_states_have_no_way_out() -> None:
    machine = machine_at("completed")
    assert machine.is_final
    with pytest.raises(NoEdge):
        machine.fire(STATE, Facts())


def test_recovery_priority_is_table_order() -> None:
    order = [e.name for e in edges_from("recovery")]
    assert order == [
        "collapse_drain_retry",
        "reactive_compact_retry",
        "prompt_too_long",
        "image_error",
        "max_output_tokens_escalate",
        "max_output_tokens_recovery",
        "completed",
        "nothing_to_recover",
    ]


@pytest.mark.parametrize(
    ("state", "facts", "expected"),
    [
        (STATE, Facts(withheld="prompt_too_long"), "reactive_compact_retry"),
        (STATE, Facts(withheld="prompt_too_long", collapses_staged=1), "collapse_drain_retry"),
        (STATE, Facts(withheld="prompt_too_long", nothing_to_compact=True), "prompt_too_long"),
        (STATE, Facts(withheld="media", nothing_to_compact=True), "image_error"),
        (
            evolve(STATE, has_attempted_reactive_compact=True),
            Facts(withheld="prompt_too_long"),
            "prompt_too_long",
        ),
        (
            evolve(STATE, has_attempted_reactive_compact=True),
            Facts(withheld="media"),
            "image_error",
        ),
        (STATE, Facts(truncated=True), "max_output_tokens_recovery"),
        (STATE, Facts(truncated=True, at_output_limit=True), "max_output_tokens_recovery"),
        (
            evolve(STATE, max_output_tokens_override=64000),
            Facts(truncated=True),
            "max_output_tokens_recovery",
        ),
        (
            evolve(STATE, max_output_tokens_override=64000, max_output_tokens_recovery_count=3),
            Facts(truncated=True),
            "completed",
        ),
        (STATE, Facts(api_error="API Error"), "completed"),
        (STATE, Facts(), "nothing_to_recover"),
    ],
)
def test_recovery_guards(state: LoopState, facts: Facts, expected: str) -> None:
    assert machine_at("recovery").fire(state, facts).name == expected


def test_only_the_output_cap_escalates_a_cut_answer() -> None:
    """Claude Code 2.1.x asks a cut answer to resume at once; the seeds' escalated retry
    comes first only under the output cap."""
    capped = LoopMachine(RunConfig(capped_output=True), initial="recovery")
    assert capped.choose(STATE, Facts(truncated=True)).name == "max_output_tokens_escalate"
    assert capped.choose(STATE, Facts(truncated=True, at_output_limit=True)).name == (
        "max_output_tokens_recovery"
    )
    assert machine_at("recovery").choose(STATE, Facts(truncated=True)).name == (
        "max_output_tokens_recovery"
    )


def test_max_turns_guard_looks_at_the_next_turn() -> None:
    def at_continuation(config: RunConfig) -> LoopMachine:
        return LoopMachine(config, initial="continuation")

    assert at_continuation(RunConfig(max_turns=1)).fire(STATE, Facts()).name == "max_turns"
    assert at_continuation(RunConfig(max_turns=2)).fire(STATE, Facts()).name == "next_turn"
    assert at_continuation(RunConfig()).fire(STATE, Facts()).name == "next_turn"


def test_stop_hooks_order() -> None:
    both = Facts(hook_prevented=True, blocking_errors=("x",), budget_nudge="go on")
    assert machine_at("stop_hooks").fire(STATE, both).name == "stop_hook_prevented"
    nudge = Facts(blocking_errors=("x",), budget_nudge="go on")
    assert machine_at("stop_hooks").fire(STATE, nudge).name == "stop_hook_blocking"


def test_an_edge_not_in_the_table_cannot_happen() -> None:
    machine = LoopMachine(RunConfig())
    with pytest.raises(AttributeError):
        machine.to_completed()  # type: ignore[attr-defined]
    with pytest.raises(MachineError, match="next_turn"):
        machine.trigger("next_turn")  # type: ignore[attr-defined]
    assert machine.state == "preprocess"
    machine.fire(STATE, Facts())
    assert machine.state == "blocking_limit_check"


def test_each_named_edge_is_a_trigger_of_the_transitions_machine() -> None:
    machine = LoopMachine(RunConfig())
    assert set(machine._machine.events) == {e.name for e in EDGES}
    for edge in EDGES:
        transitions = machine._machine.events[edge.name].transitions[edge.source.value]
        assert [t.dest for t in transitions] == [edge.dest]


def test_a_trigger_with_nothing_registered_changes_state_as_the_library_does() -> None:
    machine = LoopMachine(RunConfig())
    entered: list[str] = []
    machine._machine.get_state("blocking_limit_check").add_callback(
        "enter", lambda: entered.append("blocking_limit_check")
    )
    machine._machine.get_state("blocking_limit_check").add_callback(
        "exit", lambda: entered.append("left blocking_limit_check")
    )
    machine._machine.on_final.append(lambda: entered.append("final"))
    machine.fire(STATE, Facts())
    assert machine.state == "blocking_limit_check"
    assert entered == ["blocking_limit_check"]
    machine.fire(STATE, Facts(over_hard_limit=True))
    assert machine.state == "blocking_limit"
    assert entered == ["blocking_limit_check", "left blocking_limit_check", "final"]


def test_callbacks_see_what_a_plain_transitions_machine_shows_them() -> None:
    """Exit, enter and final callbacks get the event data the library's own
    state change gives them: the state they are in, the transition, the event."""
    from transitions import Machine

    def watch(machine: Machine, model: object, seen: list[tuple[str, ...]]) -> None:
        machine.send_event = True
        for name in ("blocking_limit_check", "blocking_limit"):
            for kind in ("enter", "exit"):
                machine.get_state(name).add_callback(
                    kind,
                    lambda e, kind=kind, name=name: seen.append(
                        (kind, name, e.state.name, e.transition.dest, e.event.name, e.model.state)
                    ),
                )
        machine.on_final.append(
            lambda e: seen.append(("final", e.state.name, e.transition.dest, e.event.name))
        )

    ours = LoopMachine(RunConfig())
    seen_ours: list[tuple[str, ...]] = []
    watch(ours._machine, ours, seen_ours)
    ours.fire(STATE, Facts())
    ours.fire(STATE, Facts(over_hard_limit=True))

    class Model:
        state = "preprocess"

    model = Model()
    plain = Machine(
        model=model,
        states=[{"name": s, "final": s in FINAL_STATES} for s in ours._machine.states],
        initial="preprocess",
        auto_transitions=False,
    )
    for edge in EDGES:
        plain.add_transition(edge.name, edge.source.value, edge.dest)
    seen_plain: list[tuple[str, ...]] = []
    watch(plain, model, seen_plain)
    plain.events["preprocessed"].trigger(model)
    plain.events["blocking_limit"].trigger(model)

    assert seen_ours == seen_plain
    assert [s[0] for s in seen_ours] == ["enter", "exit", "enter", "final"]


@pytest.mark.parametrize(
    "where",
    ["before", "after", "prepare", "conditions", "machine", "prepare_event", "finalize_event"],
)
def test_anything_registered_on_a_trigger_takes_the_library_s_whole_path(where: str) -> None:
    """The fast paths of `trigger` and `execute` are only for triggers with nothing
    to run around them."""
    machine = LoopMachine(RunConfig())
    ran: list[str] = []
    (transition,) = machine._machine.events["preprocessed"].transitions["preprocess"]

    def note() -> bool:
        ran.append(where)
        return True

    if where == "machine":
        machine._machine.before_state_change = [note]
    elif where in ("prepare_event", "finalize_event"):
        setattr(machine._machine, where, [note])
    elif where == "conditions":
        from transitions.core import Condition

        transition.conditions.append(Condition(note))
    else:
        transition.add_callback(where, note)
    machine.fire(STATE, Facts())
    assert machine.state == "blocking_limit_check"
    assert ran == [where]


def test_an_exception_callback_on_the_machine_sees_a_trigger_s_error() -> None:
    machine = LoopMachine(RunConfig())
    seen: list[str] = []
    machine._machine.on_exception = [lambda event_data: seen.append(str(event_data.error))]
    machine._machine.send_event = True
    (transition,) = machine._machine.events["preprocessed"].transitions["preprocess"]

    def fail(event_data: object) -> None:
        raise RuntimeError("boom")

    transition.add_callback("after", fail)
    with pytest.raises(NoEdge):
        machine.fire(STATE, Facts())
    assert seen == ["boom"]


def test_a_trigger_from_a_state_the_edge_does_not_leave_raises() -> None:
    machine = LoopMachine(RunConfig())
    with pytest.raises(MachineError, match="Can't trigger event tools_done from state preprocess"):
        machine._events["tools_done"].trigger(machine)
    assert machine.state == "preprocess"


def test_an_edge_a_condition_refuses_is_not_taken() -> None:
    from transitions.core import Condition

    machine = LoopMachine(RunConfig())
    (transition,) = machine._machine.events["preprocessed"].transitions["preprocess"]
    transition.conditions.append(Condition(lambda: False))
    with pytest.raises(NoEdge, match="'preprocessed' out of 'preprocess' was refused"):
        machine.fire(STATE, Facts())
    assert machine.state == "preprocess"
