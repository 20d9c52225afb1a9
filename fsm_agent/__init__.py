"""fsm-agent: Claude Code's agent loop as an explicit state machine, with a replay debugger.

The package's face: what a script needs to run, replay and script a session. Each name
loads its layer on first use, so `import fsm_agent` (which every `fsm-agent` command
and the pytest plugin do) costs nothing until one is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsm_agent.app.replaying import areplay, replay
    from fsm_agent.app.session import arun, arun_scenario, run, run_scenario
    from fsm_agent.core.config import RunConfig
    from fsm_agent.engine.driver import LoopResult
    from fsm_agent.live.scripted import Scenario, ScriptedModel
    from fsm_agent.tape.divergence import Divergence

_HOMES = {
    "run": "fsm_agent.app.session",
    "arun": "fsm_agent.app.session",
    "replay": "fsm_agent.app.replaying",
    "areplay": "fsm_agent.app.replaying",
    "run_scenario": "fsm_agent.app.session",
    "arun_scenario": "fsm_agent.app.session",
    "RunConfig": "fsm_agent.core.config",
    "LoopResult": "fsm_agent.engine.driver",
    "Scenario": "fsm_agent.live.scripted",
    "ScriptedModel": "fsm_agent.live.scripted",
    "Divergence": "fsm_agent.tape.divergence",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Divergence",
    "LoopResult",
    "RunConfig",
    "Scenario",
    "ScriptedModel",
    "areplay",
    "arun",
    "arun_scenario",
    "replay",
    "run",
    "run_scenario",
]
