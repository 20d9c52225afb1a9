"""The `fsm-agent` command.

Imports stay inside the commands: `--help`, `graph` and `replay` must start
fast, and only a run against a real model pays for the `anthropic` SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from fsm_agent.config import RunConfig
    from fsm_agent.effects import AbortSignal
    from fsm_agent.model import Model

EXIT_USAGE = 2
EXIT_DIVERGED = 1
EXIT_CODES: dict[str, int] = {
    "completed": 0,
    "blocking_limit": 10,
    "prompt_too_long": 11,
    "image_error": 12,
    "model_error": 13,
    "aborted_streaming": 14,
    "aborted_tools": 15,
    "stop_hook_prevented": 16,
    "hook_stopped": 17,
    "max_turns": 18,
}


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"fsm-agent: error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fsm-agent")
def cli() -> None:
    """Claude Code's agent loop as an explicit state machine, with a replay debugger."""


def _workspace(cwd: str) -> str:
    return os.path.realpath(cwd)


def _load_scenario(path: Path) -> Any:
    from fsm_agent.scripted import Scenario, ScenarioError

    try:
        return Scenario.load(path)
    except ScenarioError as exc:
        fail(str(exc))


def _real_model(base_url: str | None) -> Model:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        fail(
            "ANTHROPIC_API_KEY is not set. Set it to run against a real model, or run "
            "offline: `fsm-agent run --scripted SCENARIO.json` (a scripted model) or "
            "`fsm-agent replay LOG` (a recorded session)."
        )
    from fsm_agent.anthropic_model import AnthropicModel

    return AnthropicModel(api_key=key, base_url=base_url)


def _context(cwd: str) -> tuple[dict[str, str], dict[str, str]]:
    """CLAUDE.md files, date, working directory, git status: read once, kept in the log header."""
    import datetime as dt

    from fsm_agent.claude_md import gather

    return gather(Path(cwd), Path.home(), dt.date.today().isoformat())


@cli.command()
@click.argument("prompt", required=False)
@click.option(
    "--scripted",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Drive the loop with a scenario file of model turns instead of a real model.",
)
@click.option(
    "--cwd",
    default=".",
    type=click.Path(exists=True, file_okay=False),
    help="The workspace: tools are confined to it. Default: the current directory.",
)
@click.option(
    "--log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the session log. Default: .fsm-agent/sessions/ in the workspace.",
)
@click.option("--max-turns", type=click.IntRange(min=1), help="End with max_turns past N turns.")
@click.option("--model", envvar="FSM_AGENT_MODEL", help="Model id (env FSM_AGENT_MODEL).")
@click.option("--fallback-model", help="Model to switch to when the main one is overloaded.")
@click.option("--base-url", envvar="ANTHROPIC_BASE_URL", help="A Messages API server.")
@click.option(
    "--context-window",
    type=click.IntRange(min=10_000),
    help="Override the model's context window (tokens). Default: from the model table.",
)
@click.option("-v", "--verbose", is_flag=True, help="Show every transition as it is taken.")
def run(
    prompt: str | None,
    scripted: Path | None,
    cwd: str,
    log: Path | None,
    max_turns: int | None,
    model: str | None,
    fallback_model: str | None,
    base_url: str | None,
    context_window: int | None,
    verbose: bool,
) -> None:
    """Run PROMPT through the loop, with real tools on the workspace's files."""
    from fsm_agent.config import DEFAULT_MODEL, RunConfig
    from fsm_agent.effects import AbortSignal
    from fsm_agent.models import context_window as window_of
    from fsm_agent.scripted import ScriptedHooks, ScriptedModel

    abort = AbortSignal()
    hooks = None
    workspace = _workspace(cwd)
    user_context, system_context = _context(workspace)
    config = RunConfig(cwd=workspace, user_context=user_context, system_context=system_context)
    if scripted is not None:
        scenario = _load_scenario(scripted)
        prompt = prompt or scenario.prompt
        config = config_with(
            scenario.run_config(config),
            model=model,
            fallback_model=fallback_model,
            max_turns=max_turns,
        )
        the_model: Model = ScriptedModel(scenario, abort)
        hooks = ScriptedHooks(scenario.hooks)
    else:
        config = config_with(
            config,
            model=model or DEFAULT_MODEL,
            fallback_model=fallback_model,
            max_turns=max_turns,
        )
        config = config_with(config, context_window=window_of(config.model))
        the_model = _real_model(base_url)
    config = config_with(config, context_window=context_window)
    if not prompt:
        fail("no prompt given (pass PROMPT, or a scenario with a 'prompt')")
    result = _run_live(prompt, the_model, config, hooks, log, abort, verbose)
    sys.exit(EXIT_CODES.get(result.reason, 1))


def config_with(config: RunConfig, **changes: Any) -> RunConfig:
    from attrs import evolve

    return evolve(config, **{k: v for k, v in changes.items() if v is not None})


def _run_live(
    prompt: str,
    model: Model,
    config: RunConfig,
    hooks: Any,
    log: Path | None,
    abort: AbortSignal,
    verbose: bool,
) -> Any:
    from rich.console import Console

    from fsm_agent.render import LiveRenderer
    from fsm_agent.session import arun

    renderer = LiveRenderer(Console(), verbose=verbose)

    async def go() -> Any:
        loop = asyncio.get_running_loop()

        def interrupt() -> None:
            if abort.is_set():
                raise KeyboardInterrupt
            abort.set()

        loop.add_signal_handler(signal.SIGINT, interrupt)
        try:
            return await arun(
                prompt,
                model=model,
                config=config,
                hooks=hooks,
                log=log,
                on_event=renderer,
                abort=abort,
            )
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    try:
        result = asyncio.run(go())
    except OSError as exc:
        fail(f"cannot write the session log: {exc}")
    renderer.summary(result)
    return result


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot"]),
    default="mermaid",
    show_default=True,
)
@click.option(
    "--highlight",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Mark the path a recorded session took.",
)
def graph(fmt: str, highlight: Path | None) -> None:
    """Print the state machine, every edge labelled with its name."""
    from fsm_agent.graph import RENDERERS, count_path

    taken = None
    if highlight is not None:
        taken = count_path((s["from"], s["edge"], s["to"]) for s in _recorded_path(highlight))
    click.echo(RENDERERS[fmt](taken), nl=False)


def _recorded_path(path: Path) -> list[dict[str, Any]]:
    from fsm_agent.log import LogError, SessionLog

    try:
        log = SessionLog(path)
        steps = [r for _, r in log.records() if r["t"] == "transition"]
    except LogError as exc:
        fail(str(exc))
    if log.torn:
        click.echo(f"fsm-agent: warning: {path}: the last line is torn; read up to it", err=True)
    return steps


@cli.command()
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--check", is_flag=True, help="Re-run the engine against the log; exit 1 on a divergence."
)
@click.option("--path", "show_path", is_flag=True, help="Print the recorded transition path.")
@click.option("--json", "as_json", is_flag=True, help="With --path: print it as JSON.")
def replay(log: Path, check: bool, show_path: bool, as_json: bool) -> None:
    """Replay a recorded session: no network, no API key, no file touched."""
    if check:
        _check(log)
        return
    steps = _recorded_path(log)
    if as_json:
        click.echo(
            json.dumps([{"from": s["from"], "to": s["to"], "edge": s["edge"]} for s in steps])
        )
        return
    for s in steps:
        click.echo(f"{s['from']} -[{s['edge']}]-> {s['to']}")


def _check(path: Path) -> None:
    from fsm_agent.log import LogError
    from fsm_agent.recording import Divergence
    from fsm_agent.session import areplay

    try:
        result = asyncio.run(areplay(path))
    except LogError as exc:
        fail(str(exc))
    except Divergence as exc:
        click.echo(f"✗ diverged at step {exc.step}: {exc.what}", err=True)
        click.echo(f"  expected: {exc.expected}", err=True)
        click.echo(f"  got:      {exc.got}", err=True)
        sys.exit(EXIT_DIVERGED)
    click.echo(f"✓ {len(result.path)} steps match the log; ends {result.reason}")


def main() -> None:
    try:
        cli.main(standalone_mode=False, prog_name="fsm-agent")
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("fsm-agent: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
