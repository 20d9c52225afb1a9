"""The door's effects are declared once (`replay.effects.EFFECTS`): every port method
has its declaration, and recording, replay, a fork's switch and a cut log's interrupt
answer every declared effect."""

from __future__ import annotations

import inspect

from fsm_agent.app.fork import SwitchEffects
from fsm_agent.engine.ports import Effects
from fsm_agent.tape.cut_log import INTERRUPTED_ANSWERS
from fsm_agent.tape.effects import BY_NAME, EFFECTS, read_result
from fsm_agent.tape.matcher import ReplayEffects
from fsm_agent.tape.recording import RecordingEffects


def _port_methods() -> set[str]:
    ports = [c for c in Effects.__mro__ if c.__module__ == Effects.__module__]
    return {
        name
        for port in ports
        for name, value in vars(port).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def test_every_port_method_is_declared_once_and_every_declaration_is_a_port_method() -> None:
    declared = [effect.method for effect in EFFECTS]
    assert sorted(declared) == sorted(_port_methods())
    assert len(BY_NAME) == len(EFFECTS), "two effects share a name in the log"


def _kind(method: object) -> str:
    if inspect.isasyncgenfunction(method):
        return "stream"
    return "call" if inspect.iscoroutinefunction(method) else "sync"


def test_the_wrappers_answer_every_effect_as_its_port_is_called() -> None:
    for effect in EFFECTS:
        port = _kind(getattr(Effects, effect.method))
        assert port == effect.kind or (port, effect.kind) == ("sync", "stream"), effect.method
        for wrapper in (RecordingEffects, ReplayEffects, SwitchEffects):
            made = getattr(wrapper, effect.method, None)
            assert made is not None, (wrapper.__name__, effect.method)
            assert _kind(made) == effect.kind, (wrapper.__name__, effect.method)


def test_a_cut_log_answers_every_effect_with_a_result_replay_can_read() -> None:
    assert INTERRUPTED_ANSWERS.keys() == BY_NAME.keys()
    for name, answer in INTERRUPTED_ANSWERS.items():
        read_result(name, answer)
