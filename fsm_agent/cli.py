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
    "prompt_blocked": 19,
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
    "--permission-mode",
    type=click.Choice(["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]),
    help="How calls without a matching rule are treated (default: settings' defaultMode).",
)
@click.option(
    "--allowed-tools",
    multiple=True,
    help='Allow rules, e.g. "Read,Bash(git log *)" (added to the settings files\' rules).',
)
@click.option("--disallowed-tools", multiple=True, help='Deny rules, e.g. "Bash(rm *)".')
@click.option("--add-dir", multiple=True, help="Another directory the tools may use.")
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
    permission_mode: str | None,
    allowed_tools: tuple[str, ...],
    disallowed_tools: tuple[str, ...],
    add_dir: tuple[str, ...],
    context_window: int | None,
    verbose: bool,
) -> None:
    """Run PROMPT through the loop, with real tools on the workspace's files.

    Permission rules and hooks are read from ~/.claude/settings.json,
    .claude/settings.json and .claude/settings.local.json, once, at the start.
    """
    from fsm_agent.config import DEFAULT_MODEL, RunConfig
    from fsm_agent.effects import AbortSignal
    from fsm_agent.models import context_window as window_of
    from fsm_agent.scripted import ScenarioError, ScriptedHooks, ScriptedModel
    from fsm_agent.settings import SettingsError, load_settings

    abort = AbortSignal()
    hooks = None
    workspace = _workspace(cwd)
    try:
        settings = load_settings(
            workspace,
            allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools,
            add_dirs=add_dir,
        )
    except SettingsError as exc:
        fail(str(exc))
    user_context, system_context = _context(workspace)
    config = RunConfig(
        cwd=workspace,
        user_context=user_context,
        system_context=system_context,
        permission_mode=settings.permissions.default_mode or "default",
        permissions=settings.permissions,
        hooks=settings.hooks,
    )
    if scripted is not None:
        scenario = _load_scenario(scripted)
        try:
            config = scenario.run_config(config)
        except ScenarioError as exc:
            fail(str(exc))
        prompt = prompt or scenario.prompt
        config = config_with(
            config,
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
    config = config_with(config, permission_mode=permission_mode)
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
    prompter = None
    if sys.stdin.isatty():
        from fsm_agent.approvals import terminal_prompter

        prompter = terminal_prompter()

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
                prompter=prompter,
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
@click.option(
    "--fork-at",
    type=int,
    metavar="N",
    help="Replay steps 1..N from the log, then go on live (needs --scripted or a model).",
)
@click.option(
    "--edit-effect",
    type=(int, click.Path(dir_okay=False, path_type=Path)),
    metavar="K FILE",
    help="Replay up to effect record K (1-based, in log order), answer it with the JSON "
    "result in FILE, then go on live.",
)
@click.option(
    "--scripted",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Fork: go on with this scenario's model turns and hooks.",
)
@click.option("--model", help="Fork: go on with this real model.")
@click.option("--base-url", envvar="ANTHROPIC_BASE_URL", help="Fork: a Messages API server.")
@click.option(
    "--cwd",
    default=".",
    type=click.Path(exists=True, file_okay=False),
    help="Fork: the workspace the live part's tools run in. Default: the current directory.",
)
@click.option(
    "--log",
    "fork_log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Fork: where to write the new log. Default: .fsm-agent/sessions/ in the workspace.",
)
@click.option("-v", "--verbose", is_flag=True, help="Fork: show every transition.")
def replay(
    log: Path,
    check: bool,
    show_path: bool,
    as_json: bool,
    fork_at: int | None,
    edit_effect: tuple[int, Path] | None,
    scripted: Path | None,
    model: str | None,
    base_url: str | None,
    cwd: str,
    fork_log: Path | None,
    verbose: bool,
) -> None:
    """Replay a recorded session: no network, no API key, no file touched.

    In a terminal, with neither --check nor --path, this opens the step
    debugger (type help there); otherwise it prints the recorded path.
    """
    if fork_at is not None or edit_effect is not None:
        _fork(log, fork_at, edit_effect, scripted, model, base_url, cwd, fork_log, verbose)
        return
    if check:
        _check(log)
        return
    if not (show_path or as_json) and sys.stdin.isatty():
        _debug(log)
        return
    steps = _recorded_path(log)
    if as_json:
        click.echo(
            json.dumps([{"from": s["from"], "to": s["to"], "edge": s["edge"]} for s in steps])
        )
        return
    for s in steps:
        click.echo(f"{s['from']} -[{s['edge']}]-> {s['to']}")


def _fork(
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
    from rich.console import Console

    from fsm_agent.effects import AbortSignal
    from fsm_agent.events import Transition
    from fsm_agent.fork import ForkError, ForkPoint, afork, replayed_steps
    from fsm_agent.log import LogError, SessionLog
    from fsm_agent.recording import Divergence
    from fsm_agent.render import LiveRenderer
    from fsm_agent.scripted import ScriptedHooks, ScriptedModel

    if fork_at is not None and edit_effect is not None:
        fail("give --fork-at or --edit-effect, not both (an edit is itself the fork point)")
    if scripted is None and model is None:
        fail("a fork goes on live: give --scripted SCENARIO.json or --model MODEL")
    point = ForkPoint(step=fork_at)
    if edit_effect is not None:
        number, file = edit_effect
        try:
            result = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            fail(f"{file}: cannot read the edited result: {exc}")
        point = ForkPoint(effect=number, result=result)
    abort = AbortSignal()
    changes: dict[str, Any] = {"cwd": _workspace(cwd)}
    hooks = None
    if scripted is not None:
        scenario = _load_scenario(scripted)
        the_model: Model = ScriptedModel(scenario, abort)
        hooks = ScriptedHooks(scenario.hooks)
    else:
        the_model = _real_model(base_url)
    if model is not None:
        changes["model"] = model
    console = Console()
    renderer = LiveRenderer(console, verbose=verbose)
    try:
        replayed = replayed_steps(SessionLog(parent), point)
    except (LogError, ForkError) as exc:
        fail(str(exc))
    console.print(f"[dim]replaying {parent} up to step {replayed}, then live[/dim]")
    if replayed == 0:
        console.rule("live from step 1", style="yellow")

    def on_event(event: Any) -> None:
        renderer(event)
        if isinstance(event, Transition) and event.step == replayed:
            console.rule(f"live from step {replayed + 1}", style="yellow")

    try:
        result = asyncio.run(
            afork(
                parent,
                point,
                model=the_model,
                hooks=hooks,
                config_changes=changes,
                log=log,
                on_event=on_event,
                abort=abort,
            )
        )
    except (LogError, ForkError) as exc:
        fail(str(exc))
    except Divergence as exc:
        click.echo(divergence_report(exc), err=True)
        sys.exit(EXIT_DIVERGED)
    except OSError as exc:
        fail(f"cannot write the session log: {exc}")
    renderer.summary(result)
    sys.exit(EXIT_CODES.get(result.reason, 1))


def _debug(path: Path) -> None:
    from rich.console import Console

    from fsm_agent.debugger import Debugger
    from fsm_agent.log import LogError

    try:
        debugger = Debugger(path)
    except LogError as exc:
        fail(str(exc))
    try:
        import readline

        readline.set_completer(debugger.complete)
        readline.set_completer_delims(" \t\n")
        readline.parse_and_bind("tab: complete")
    except ImportError:
        pass
    debugger.interact(Console())


def _check(path: Path) -> None:
    from fsm_agent.log import LogError
    from fsm_agent.recording import Divergence
    from fsm_agent.session import areplay

    try:
        result = asyncio.run(areplay(path))
    except LogError as exc:
        fail(str(exc))
    except Divergence as exc:
        click.echo(divergence_report(exc), err=True)
        sys.exit(EXIT_DIVERGED)
    click.echo(f"✓ {len(result.path)} steps match the log; ends {result.reason}")


@cli.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def coverage(logs: tuple[Path, ...]) -> None:
    """Which edges of the machine the LOGS take (with counts), and which none does."""
    from fsm_agent.coverage import REASONS, Coverage

    cov = Coverage.of((s["from"], s["edge"], s["to"]) for log in logs for s in _recorded_path(log))
    width = max(len(f"{a} -[{e}]-> {b}") for (a, e, b), _ in cov.rows())
    click.echo(f"{'edge':<{width}}  taken")
    for (source, edge, dest), count in cov.rows():
        click.echo(f"{f'{source} -[{edge}]-> {dest}':<{width}}  {count if count else '-'}")
    taken = len(cov.rows()) - len(cov.untaken)
    click.echo(
        f"\n{taken} of {len(cov.rows())} edges taken by {len(logs)} log(s); "
        f"{len(cov.reasons_taken)} of {len(REASONS)} reasons"
    )
    if cov.untaken:
        click.echo("not taken by any log:")
        for source, edge, dest in cov.untaken:
            click.echo(f"  {source} -[{edge}]-> {dest}")
    for source, edge, dest in cov.unknown:
        click.echo(f"not in this machine's table: {source} -[{edge}]-> {dest}")


def divergence_report(exc: Any) -> str:
    """The step, what the log recorded, what the code asked for, and where they differ."""

    def show(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    lines = [
        f"✗ diverged at step {exc.step}: {exc.what}",
        f"  log:  {show(exc.expected)}",
        f"  code: {show(exc.got)}",
    ]
    diff = exc.diff
    if diff and not isinstance(exc.expected, str) and not isinstance(exc.got, str):
        lines.append("  diff (log → code):")
        lines.extend(f"    {line}" for line in diff)
    return "\n".join(lines)


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
