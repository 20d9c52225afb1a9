"""`fsm-agent replay --fork-at N` and `--edit-effect K FILE`: a recorded session
replayed up to a point, then gone on live, shown as a run is."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from fsm_agent.app.configure import load_scenario, real_model, refuse_existing_log
from fsm_agent.app.environment import ConfigError
from fsm_agent.app.fork import ForkError, ForkPoint, afork, replayed_steps
from fsm_agent.cli.launch import interruptibly
from fsm_agent.cli.plan import base_url_given_by
from fsm_agent.cli.recorded import warn_if_torn
from fsm_agent.cli.render import LiveRenderer
from fsm_agent.cli.run_console import RunConsole
from fsm_agent.cli.usage import EXIT_DIVERGED, exit_code, fail, say, stdout_lost, workspace
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.events import DriverEvent, Transition
from fsm_agent.core.jsontext import MAX_DEPTH, deeper_than, strict_loads
from fsm_agent.core.model import Model
from fsm_agent.live.scripted import ScriptedHooks, ScriptedModel
from fsm_agent.tape.divergence import Divergence, divergence_report
from fsm_agent.tape.log import LogError, SessionLog


def fork(
    parent: Path,
    fork_at: int | None,
    edit_effect: tuple[int, Path] | None,
    scripted: Path | None,
    model: str | None,
    base_url: str | None,
    cwd: str,
    log: Path | None,
    verbose: bool,
) -> None:
    if fork_at is not None and edit_effect is not None:
        fail("give --fork-at or --edit-effect, not both (an edit is itself the fork point)")
    if scripted is None and model is None:
        fail("a fork goes on live: give --scripted SCENARIO.json or --model MODEL")
    try:
        refuse_existing_log(log)
    except ConfigError as exc:
        fail(str(exc))
    point = ForkPoint(step=fork_at)
    if edit_effect is not None:
        number, file = edit_effect
        deep = f"{file}: cannot read the edited result: nested more than {MAX_DEPTH} levels deep"
        try:
            text = file.read_text(encoding="utf-8")
            result = strict_loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            fail(f"{file}: cannot read the edited result: {exc}")
        except RecursionError:
            fail(deep)
        except ValueError as exc:  # NaN, 1e400, or more digits than Python converts
            fail(f"{file}: cannot read the edited result: not valid JSON: {str(exc).split(';')[0]}")
        if deeper_than(result):
            fail(deep)
        point = ForkPoint(effect=number, result=result)
    abort = AbortSignal()
    changes: dict[str, Any] = {"cwd": workspace(cwd)}
    hooks = None
    try:
        if scripted is not None:
            scenario = load_scenario(scripted)
            the_model: Model = ScriptedModel(scenario, abort)
            hooks = ScriptedHooks(scenario.hooks)
        else:
            the_model = real_model(base_url, base_url_given_by())
    except ConfigError as exc:
        fail(str(exc))
    if model is not None:
        changes["model"] = model
    console = RunConsole()
    renderer = LiveRenderer(console, verbose=verbose)
    try:
        replayed = replayed_steps(SessionLog(parent), point)
    except (LogError, ForkError) as exc:
        fail(str(exc))
    warn_if_torn(parent)
    replaying = f"replaying {parent} up to step {replayed}, then live"
    console.print(replaying, style="dim", markup=False, highlight=False)
    if replayed == 0:
        console.rule("live from step 1", style="yellow")

    def on_event(event: DriverEvent) -> None:
        renderer(event)
        if isinstance(event, Transition) and event.step == replayed:
            console.rule(f"live from step {replayed + 1}", style="yellow")

    try:
        forked = afork(
            parent,
            point,
            model=the_model,
            hooks=hooks,
            config_changes=changes,
            log=log,
            on_event=on_event,
            abort=abort,
        )
        result = asyncio.run(interruptibly(abort, forked))
    except (LogError, ForkError) as exc:
        fail(str(exc))
    except Divergence as exc:
        say(divergence_report(exc))
        sys.exit(EXIT_DIVERGED)
    except OSError as exc:
        fail(f"cannot write the session log: {exc}")
    renderer.summary(result)
    if console.write_error is not None:
        stdout_lost(
            console.write_error, f"the fork ended {result.reason}; its log: {result.log_path}"
        )
    sys.exit(exit_code(result))
