"""The machine in one place: every row of the table names an action that exists, every
phase and every reason has its edges, and every action and check is used by a row."""

from __future__ import annotations

import inspect

import pytest
from attrs import evolve

from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import user
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine import machine
from fsm_agent.engine.actions import CONTINUE, ON_EDGE
from fsm_agent.engine.machine import EDGES, FINAL_STATES, Edge, Kind, LoopMachine
from fsm_agent.engine.phases import CONFIRMS, PHASES
from fsm_agent.engine.reasons import MODEL_FALLBACK, Continue, Phase, Terminal
from fsm_agent.engine.state import Facts, LoopState, ToolContext


def missing(edges: tuple[Edge, ...], continue_actions: dict, edge_actions: dict) -> list[str]:
    """What the table lacks: an edge whose action does not exist for its kind, or whose
    check does not; a phase without a phase function or without edges; a reason
    without an edge; an action or check no edge names."""
    problems = []
    for e in edges:
        actions = continue_actions if e.kind is Kind.CONTINUE else edge_actions
        if e.action not in actions:
            problems.append(f"{e.source}-[{e.name}]: no {e.kind} action {e.action!r}")
        if e.confirm is not None and e.confirm not in CONFIRMS:
            problems.append(f"{e.source}-[{e.name}]: no check {e.confirm!r}")
    sources = {e.source for e in edges}
    for phase in Phase:
        if phase not in PHASES:
            problems.append(f"phase {phase} has no phase function")
        if phase not in sources:
            problems.append(f"phase {phase} has no edge out")
    names = {e.name for e in edges}
    for reason in (*Continue, *Terminal):
        if reason not in names:
            problems.append(f"reason {reason} has no edge")
    used = {(e.kind is Kind.CONTINUE, e.action) for e in edges}
    problems += [f"continue action {a!r} is no edge's" for a in continue_actions
                 if (True, a) not in used]  # fmt: skip
    problems += [f"action {a!r} is no edge's" for a in edge_actions if (False, a) not in used]
    confirms = {e.confirm for e in edges}
    problems += [f"check {c!r} is no edge's" for c in CONFIRMS if c not in confirms]
    return problems


def test_every_edge_phase_and_reason_has_an_action_and_every_action_an_edge() -> None:
    assert missing(EDGES, CONTINUE, ON_EDGE) == []


def test_an_edge_without_its_action_is_found() -> None:
    without = dict(ON_EDGE)
    del without["fail_model"]
    assert missing(EDGES, CONTINUE, without) == [
        "api_call-[model_error]: no terminal action 'fail_model'"
    ]


def test_an_action_no_edge_names_is_found() -> None:
    rows = tuple(e for e in EDGES if e.action != "switch_model")
    assert missing(rows, CONTINUE, ON_EDGE) == ["action 'switch_model' is no edge's"]


def test_a_reason_without_an_edge_is_found() -> None:
    rows = tuple(e for e in EDGES if e.name != Continue.TOKEN_BUDGET_CONTINUATION)
    assert missing(rows, CONTINUE, ON_EDGE) == [
        "reason token_budget_continuation has no edge",
        "continue action 'token_budget_continuation' is no edge's",
    ]


def test_a_phase_without_edges_is_found() -> None:
    rows = tuple(e for e in EDGES if e.source is not Phase.ATTACHMENTS)
    assert missing(rows, CONTINUE, ON_EDGE) == ["phase attachments has no edge out"]


@pytest.mark.parametrize("edge", EDGES, ids=lambda e: f"{e.source}-{e.name}")
def test_each_row_states_its_kind(edge: Edge) -> None:
    """The kind is written in the row; it agrees with what the names say."""
    if edge.name in {c.value for c in Continue}:
        assert edge.kind is Kind.CONTINUE
    elif edge.dest in FINAL_STATES:
        assert edge.kind is Kind.TERMINAL
    elif edge.name == MODEL_FALLBACK:
        assert edge.kind is Kind.RETRY
    else:
        assert edge.kind is Kind.PHASE


def test_the_two_completed_edges_have_their_own_actions() -> None:
    completed = [e for e in EDGES if e.name == Terminal.COMPLETED]
    assert len(completed) == 2
    assert len({e.action for e in completed}) == 2


def test_guards_are_named_functions_of_the_module_taking_the_config() -> None:
    for edge in EDGES:
        guard = edge.guard
        assert guard.__name__ != "<lambda>"
        assert getattr(machine, guard.__name__) is guard
        assert list(inspect.signature(guard).parameters) == ["s", "f", "c"]


STATE = LoopState(Transcript.of([user("hi")]), ToolContext("/ws", "m"))


@pytest.mark.parametrize(
    ("fallback", "facts", "edge"),
    [
        ("m2", Facts(overloaded=True, model="m1", model_error="overloaded: x"), "model_fallback"),
        ("m1", Facts(overloaded=True, model="m1", model_error="overloaded: x"), "model_error"),
        (None, Facts(overloaded=True, model="m1", model_error="overloaded: x"), "model_error"),
        ("m2", Facts(model="m1", model_error="connection: x"), "model_error"),
        ("m2", Facts(), "streamed"),
    ],
)
def test_the_fallback_is_the_tables_to_choose(
    fallback: str | None, facts: Facts, edge: str
) -> None:
    """Overloaded, and the run's fallback model is another: the table switches; the phase
    only says what happened."""
    machine = LoopMachine(RunConfig(fallback_model=fallback), initial="api_call")
    assert machine.fire(STATE, facts).name == edge


def test_ctrl_c_while_stop_hooks_run_is_its_own_fact() -> None:
    machine = LoopMachine(RunConfig(), initial="stop_hooks")
    assert machine.fire(STATE, Facts(aborted=True, blocking_errors=("x",))).name == (
        "stop_hook_prevented"
    )


def test_the_stop_hook_block_cap_is_the_configs() -> None:
    blocked = Facts(blocking_errors=("x",))
    at_cap = evolve(STATE, stop_hook_blocks=2)
    capped = LoopMachine(RunConfig(stop_hook_block_cap=2), initial="stop_hooks")
    assert capped.fire(at_cap, blocked).name == "completed"
    uncapped = LoopMachine(RunConfig(stop_hook_block_cap=0), initial="stop_hooks")
    assert uncapped.fire(at_cap, blocked).name == "stop_hook_blocking"
