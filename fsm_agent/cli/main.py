"""The `fsm-agent` command.

Imports stay inside the commands: `--help`, `graph` and `replay` must start
fast, and only a run against a real model pays for the `anthropic` SDK.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from fsm_agent.core.limits import MIN_CONTEXT_WINDOW

if TYPE_CHECKING:
    from fsm_agent.cli.launch import Plan
    from fsm_agent.core.config import RunConfig
    from fsm_agent.core.model import Model
    from fsm_agent.engine.driver import LoopResult

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
EXIT_ERROR_ANSWER = 20
"""`completed`, but the answer is an error (an API error such as a 401): the task
was not done, so a script must not read it as success."""


def exit_code(result: LoopResult) -> int:
    """Not 0 exactly when the result is an error (`is_error` in the JSON result)."""
    if result.reason == "completed" and result.is_error:
        return EXIT_ERROR_ANSWER
    return EXIT_CODES.get(result.reason, 1)


def say(text: str) -> None:
    """A line on stderr. A stderr whose reader went away (`2>&1 | head -1`) or that cannot
    be written loses the line, never the exit code: the exception would have ended the
    command 0 (a reader gone) or with a traceback, and exit-time flushes 120."""
    try:
        click.echo(text, err=True)
    except OSError:
        from fsm_agent.cli.render import silence  # here: `render` brings in the engine

        silence(sys.stderr)


def error_line(message: str) -> None:
    say(f"fsm-agent: error: {message}")


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    error_line(message)
    sys.exit(code)


def _is_utf8(text: str) -> bool:
    """Python hands bytes that are not UTF-8 over as lone surrogates, which no log (JSON
    in UTF-8) can hold: caught here, they are a usage error before anything runs."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_undecodable(options: dict[str, Any]) -> None:
    for name, value in options.items():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, (str, Path)) and not _is_utf8(str(item)):
                fail(f"--{name.replace('_', '-')} is not UTF-8 text")


class _Group(click.Group):
    """Ends quietly (exit 0) when the reader goes away (`| head`): click would exit 1,
    which `replay` uses for a divergence. A standard output that cannot be written for
    another reason (a full disk) is one error line, exit 2, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()
            raise click.exceptions.Exit(0) from None
        except OSError as exc:
            if exc.errno not in FULL or exc.filename is not None:
                raise
            _silence_stdout()
            fail(f"cannot write to standard output ({exc.strerror or exc})")


def _silence_stdout() -> None:
    from fsm_agent.cli.render import silence  # here: `render` brings in the engine

    silence(sys.stdout)


FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
"""Errors only a write raises. A command writes its own files under its own guard (a
run's log, a fork's), so one of these that reaches the group, naming no file, is the
standard output's."""


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fsm-agent")
def cli() -> None:
    """Claude Code's agent loop as an explicit state machine, with a replay debugger."""


def _workspace(cwd: str) -> str:
    return os.path.realpath(cwd)


def _load_scenario(path: Path) -> Any:
    from fsm_agent.live.scripted import Scenario, ScenarioError

    try:
        return Scenario.load(path)
    except ScenarioError as exc:
        fail(str(exc))


def _real_model(base_url: str | None) -> Model:
    """The API's client, from what was typed and set. The key and the base URL are
    trimmed, as Claude Code trims them: a key read from a file keeps its line break."""
    key = (os.environ.get("ANTHROPIC_API_KEY") or "").strip()
    if not key:
        fail(
            "ANTHROPIC_API_KEY is not set. Set it to run against a real model, or run "
            "offline: `fsm-agent run --scripted SCENARIO.json` (a scripted model) or "
            "`fsm-agent replay LOG` (a recorded session)."
        )
    if not key.isprintable():  # the transport's error would print it, and the log keep it
        fail(
            "ANTHROPIC_API_KEY holds a control character, which no HTTP header can carry: "
            "check how it was set"
        )
    base_url = (base_url or "").strip() or None
    if base_url is not None and not _is_http_url(base_url):
        source = click.get_current_context().get_parameter_source("base_url")
        given_by = "ANTHROPIC_BASE_URL" if source == ParameterSource.ENVIRONMENT else "--base-url"
        fail(
            f"{given_by} {base_url!r} is not an http(s) URL "
            "(give one like https://api.anthropic.com or http://127.0.0.1:4000)"
        )
    from fsm_agent.live.anthropic_model import AnthropicModel, stream_idle_timeout

    try:
        idle = stream_idle_timeout(os.environ)
    except ValueError as exc:
        fail(str(exc))
    return AnthropicModel(api_key=key, base_url=base_url, stream_idle_timeout=idle)


def _is_http_url(url: str) -> bool:
    """Whether the SDK can send a request to `url`: it would take `localhost:8080`,
    `ftp://…` or a line break inside, then fail every attempt as if the connection
    were lost."""
    if not url.isprintable() or any(c.isspace() for c in url):
        return False
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _context(cwd: str) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """CLAUDE.md files, date, working directory, git status: read once, kept in the log header."""
    import datetime as dt

    from fsm_agent.live.memory_files import gather

    return gather(Path(cwd), Path.home(), dt.date.today().isoformat())


class FilePath(click.Path):
    """A file's path. click takes an empty one (`--log ""`, an unset variable) as `.`,
    the current directory, and it was refused for what `.` is, or not at all."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no file", param, ctx)
        return super().convert(value, param, ctx)


def _run_options(fn: Any) -> Any:
    """The options `run` and `chat` share, in the order `--help` shows them."""
    options = [
        click.option(
            "--scripted",
            type=FilePath(),
            help="Drive the loop with a scenario file of model turns instead of a real model.",
        ),
        click.option(
            "--cwd",
            type=click.Path(exists=True, file_okay=False),
            help="The workspace: tools are confined to it. Default: the resumed session's, "
            "else the current directory.",
        ),
        click.option(
            "--log",
            type=FilePath(),
            help="Where to write the session log (a new file: an existing one is never "
            "overwritten). Default: .fsm-agent/sessions/ in the workspace. In a chat, later "
            "runs go next to it as STEM.N.jsonl.",
        ),
        click.option(
            "--resume",
            metavar="LOG|ID",
            type=FilePath(),
            help="Continue the conversation a session ended with: its log's path, or its "
            "session id (a unique prefix will do) in the workspace.",
        ),
        click.option(
            "--max-turns",
            type=click.IntRange(min=1),
            help="End with max_turns past N turns (env CLAUDE_CODE_MAX_TURNS).",
        ),
        click.option("--model", envvar="FSM_AGENT_MODEL", help="Model id (env FSM_AGENT_MODEL)."),
        click.option(
            "--fallback-model", help="Model to switch to when the main one is overloaded."
        ),
        click.option("--base-url", envvar="ANTHROPIC_BASE_URL", help="A Messages API server."),
        click.option(
            "--context-window",
            type=click.IntRange(min=MIN_CONTEXT_WINDOW),
            help="Override the model's context window (tokens). Default: from the model table.",
        ),
        click.option(
            "--system-prompt",
            help="The system prompt, in place of fsm-agent's (or the resumed session's).",
        ),
        click.option(
            "--append-system-prompt",
            help="Text added at the end of the system prompt.",
        ),
        click.option(
            "--permission-mode",
            type=click.Choice(
                ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto", "manual"]
            ),
            help="How calls no rule decides are treated. Default: settings' defaultMode, "
            "else default (asks; without a terminal, asking is denying). manual is default's "
            "newer name. auto needs Claude Code's safety classifier: it runs as default, "
            "with a warning.",
        ),
        click.option(
            "--allowed-tools",
            "--allowedTools",
            "allowed_tools",
            multiple=True,
            help='Allow rules, e.g. "Read,Bash(git log *)", added to the settings files\'.',
        ),
        click.option(
            "--disallowed-tools",
            "--disallowedTools",
            "disallowed_tools",
            multiple=True,
            help='Deny rules, e.g. "Bash(rm *)".',
        ),
        click.option(
            "--add-dir",
            multiple=True,
            type=click.Path(exists=True, file_okay=False),
            help="Another directory the tools may use.",
        ),
        click.option("-q", "--quiet", is_flag=True, help="Print only the final answer."),
        click.option("-v", "--verbose", is_flag=True, help="Show every transition as it is taken."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _plan(
    *,
    scripted: Path | None,
    cwd: str | None,
    log: Path | None,
    resume: Path | None,
    max_turns: int | None,
    model: str | None,
    fallback_model: str | None,
    base_url: str | None,
    context_window: int | None,
    system_prompt: str | None,
    append_system_prompt: str | None,
    permission_mode: str | None,
    allowed_tools: tuple[str, ...],
    disallowed_tools: tuple[str, ...],
    add_dir: tuple[str, ...],
) -> tuple[Plan, Any, str | None]:
    """The run the options describe: `(plan, resumed session or None, scenario prompt)`.

    Permission rules and hooks are read from ~/.claude/settings.json,
    .claude/settings.json and .claude/settings.local.json, once, here.
    """
    from fsm_agent.cli.launch import Plan
    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.config import DEFAULT_MODEL, RunConfig
    from fsm_agent.core.limits import context_window as window_of
    from fsm_agent.core.limits import output_limits
    from fsm_agent.live.scripted import ScriptedHooks, ScriptedModel
    from fsm_agent.live.settings import SettingsError, load_settings
    from fsm_agent.policy.permissions import (
        MODE_ALIASES,
        UNSUPPORTED_MODES,
        unsupported_mode_warning,
    )

    if max_turns is None:
        max_turns = _max_turns_variable()
    _check_bash_timeouts()
    _refuse_existing_log(log)
    resumed = _resume(resume, cwd) if resume is not None else None
    if resumed is not None and scripted is None and model is None:
        _refuse_scripted_model(resumed)
    base = resumed.config if resumed is not None else RunConfig()
    workspace = _workspace(cwd or (base.cwd if resumed is not None else "."))
    if not os.path.isdir(workspace):
        fail(f"the resumed session's workspace {workspace} does not exist (pass --cwd)")
    user_context, system_context, memory_paths = _context(workspace)
    from fsm_agent.live.memory_files import path_rules

    try:
        settings = load_settings(
            workspace,
            allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools,
            add_dirs=add_dir,
        )
    except SettingsError as exc:
        fail(str(exc))
    for warning in settings.warnings:
        say(f"fsm-agent: warning: {warning}")
    if permission_mode in UNSUPPORTED_MODES:
        say(f"fsm-agent: warning: {unsupported_mode_warning(permission_mode, '--permission-mode')}")
        permission_mode = UNSUPPORTED_MODES[permission_mode]
    permission_mode = MODE_ALIASES.get(permission_mode or "", permission_mode)
    config = config_with(
        base,
        cwd=workspace,
        user_context=user_context,
        system_context=system_context,
        memory_paths=memory_paths,
        path_rules=path_rules(Path(workspace)),
        permission_mode=settings.permissions.default_mode,
        permissions=settings.permissions,
        hooks=settings.hooks,
        max_tool_concurrency=_concurrency_cap(),
        stop_hook_block_cap=_stop_hook_block_cap(),
        session_source="resume" if resumed is not None else None,
    )
    abort = AbortSignal()
    hooks = None
    scenario_prompt = None
    if scripted is not None:
        scenario = _load_scenario(scripted)
        scenario_prompt = scenario.prompt
        config = scenario.run_config(config)
        config = config_with(
            config,
            model=model,
            fallback_model=fallback_model,
            max_turns=max_turns,
        )
        the_model: Model = ScriptedModel(scenario, abort)
        hooks = ScriptedHooks(scenario.hooks)
    else:
        default = base.model if resumed is not None else DEFAULT_MODEL
        config = config_with(
            config,
            model=model or default,
            fallback_model=fallback_model,
            max_turns=max_turns,
        )
        default_tokens, escalated_tokens = output_limits(config.model)
        config = config_with(
            config,
            context_window=window_of(config.model),
            max_output_tokens=default_tokens,
            escalated_max_output_tokens=escalated_tokens,
        )
        the_model = _real_model(base_url)
    if fallback_model is not None and fallback_model == config.model:
        fail(f"--fallback-model {fallback_model} is the main model: give another one")
    config = config_with(
        config,
        context_window=context_window,
        permission_mode=permission_mode,
        system_prompt=system_prompt,
    )
    if append_system_prompt:
        prompt = "\n\n".join(p for p in (config.system_prompt, append_system_prompt) if p)
        config = config_with(config, system_prompt=prompt)
    plan = Plan(
        model=the_model,
        config=config,
        hooks=hooks,
        abort=abort,
        log=log.resolve() if log is not None else None,
        parent=resumed.path if resumed is not None else None,
        parent_session_id=resumed.session_id if resumed is not None else None,
        read_files=resumed.read_files if resumed is not None else None,
        parent_cut_short=resumed.cut_short if resumed is not None else None,
        idle_notify_s=_idle_notify_s(),
    )
    if resumed is not None and resumed.cut_short is not None:
        say(
            f"fsm-agent: warning: {resumed.path}: the run was cut short after step "
            f"{resumed.cut_short} (killed?); going on from where its log stops, with every "
            "call it left unanswered marked interrupted"
        )
    return plan, resumed, scenario_prompt


def _refuse_existing_log(log: Path | None) -> None:
    """`--log` onto a file is refused before anything runs: the file may be the very
    log being resumed or forked, and a new log never overwrites one."""
    from fsm_agent.replay.log import LogError, refuse_existing

    if log is not None:
        try:
            refuse_existing(log)
        except LogError as exc:
            fail(f"{exc} (give --log a new path)")


def _refuse_scripted_model(resumed: Any) -> None:
    """A scripted session's model is `scripted`, which no API serves: going on with it
    needs a scenario, or a real model named."""
    from fsm_agent.live.scripted import ScenarioConfig

    if resumed.config.model == ScenarioConfig().model:
        fail(
            f"{resumed.path}: the session ran a scripted model; go on with "
            "--scripted SCENARIO.json, or with a real model: --model ID"
        )


def _resume(ref: Path, cwd: str | None) -> Any:
    import asyncio

    from fsm_agent.app.history import ResumeError, aresume, find_log

    try:
        return asyncio.run(aresume(find_log(ref, cwd or ".")))
    except ResumeError as exc:
        fail(str(exc))


@cli.command()
@click.argument("prompt", required=False)
@_run_options
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "stream-json"]),
    default="text",
    show_default=True,
    help="text for people; json: one result object; stream-json: a JSON line per event.",
)
@click.option(
    "--include-partial-messages",
    is_flag=True,
    help="With stream-json: also print the model's raw stream events (stream_event lines).",
)
def run(
    prompt: str | None,
    output_format: str,
    include_partial_messages: bool,
    quiet: bool,
    verbose: bool,
    **options: Any,
) -> None:
    """Run PROMPT through the loop, with real tools on the workspace's files.

    With no PROMPT: a scenario's prompt, else an interactive session when
    standard input is a terminal, else the prompt read from standard input.
    """
    if include_partial_messages and output_format != "stream-json":
        fail("--include-partial-messages needs --output-format stream-json")
    if prompt is not None and not _is_utf8(prompt):
        fail("the prompt is not UTF-8 text")
    _refuse_undecodable(options)
    plan, resumed, scenario_prompt = _plan(**options)
    if output_format == "stream-json":
        plan.config = config_with(plan.config, structured_results=True)
    prompt = prompt if prompt and prompt.strip() else scenario_prompt
    history = list(resumed.messages) if resumed is not None else []
    if not prompt:
        if sys.stdin.isatty():
            if output_format != "text":
                fail(f"--output-format {output_format} needs a PROMPT (no interactive session)")
            _chat(plan, history, quiet=quiet, verbose=verbose)
            return
        prompt = piped_text(sys.stdin.buffer).strip()
        if not prompt:
            fail("no prompt given (pass PROMPT, pipe it on stdin, or use a scenario's 'prompt')")
    elif not sys.stdin.isatty():
        prompt = with_piped(prompt, piped_text(sys.stdin.buffer, wait_s=STDIN_WAIT_S))
    from fsm_agent.app.history import follow_up

    messages = follow_up(history, prompt)
    if output_format == "text":
        result, lost = _run_text(
            plan, messages, quiet=quiet, verbose=verbose, ask=sys.stdin.isatty()
        )
    else:
        result, lost = _run_json(
            plan,
            messages,
            stream=output_format == "stream-json",
            partial=include_partial_messages,
            every=verbose,
        )
    plan.end("other")
    if lost is not None:
        _stdout_lost(lost, f"the run ended {result.reason}; its log: {result.log_path}")
    sys.exit(exit_code(result))


def _stdout_lost(lost: OSError, what_happened: str) -> NoReturn:
    """A stdout nobody chose to close (a full disk) lost output: one line, exit 2."""
    fail(
        f"cannot write to standard output ({lost.strerror or lost}), the output is "
        f"incomplete; {what_happened}"
    )


STDIN_WAIT_S = 3.0
"""How long a run with its PROMPT waits for the first byte on a piped stdin (Claude Code's 3s)."""


def piped_text(stream: BinaryIO, *, wait_s: float | None = None) -> str:
    """What comes on `stream` up to its end, as text. With `wait_s`, nothing within that
    time (a parent that leaves stdin open and never writes) is nothing, said on stderr:
    the run goes on without, where reading would hang it."""
    if wait_s is not None and _silent(stream, wait_s):
        say(
            f"fsm-agent: warning: nothing came on standard input in {wait_s:g}s; going on "
            "without it (redirect it: < /dev/null to skip the wait)"
        )
        return ""
    try:
        return stream.read().decode("utf-8")
    except UnicodeDecodeError:
        fail("the prompt on standard input is not UTF-8 text")


def _silent(stream: BinaryIO, wait_s: float) -> bool:
    import select

    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # not a file: a test's in-memory stdin, read at once
        return False
    ready, _, _ = select.select([fd], [], [], wait_s)
    return not ready


def with_piped(prompt: str, piped: str) -> str:
    """The prompt, then on a new line the text piped in, as `cat log | claude -p PROMPT`
    sends them; a pipe with nothing but whitespace adds nothing."""
    return f"{prompt}\n{piped}" if piped.strip() else prompt


@cli.command()
@_run_options
def chat(quiet: bool, verbose: bool, **options: Any) -> None:
    """An interactive session: each message you type runs the loop over the conversation so far.

    Type while a run goes to queue a message for it; Ctrl-C interrupts the
    run; Ctrl-C twice at the prompt, or Ctrl-D, leaves. With --scripted, each
    message takes the scenario's next turns.
    """
    _refuse_undecodable(options)
    plan, resumed, _ = _plan(**options)
    history = list(resumed.messages) if resumed is not None else []
    _chat(plan, history, quiet=quiet, verbose=verbose)


CONCURRENCY_VARIABLE = "CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY"
MAX_TURNS_VARIABLE = "CLAUDE_CODE_MAX_TURNS"
STOP_HOOK_CAP_VARIABLE = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
IDLE_NOTIFY_VARIABLE = "FSM_AGENT_IDLE_NOTIFY_MS"
AT_LEAST_ONE = "a whole number of 1 or more"


def _whole_number_variable(name: str, words: str, least: int | None = 1) -> int | None:
    """The environment variable `name` as a whole number (ASCII digits, a sign when no
    `least` is set), None when it is unset or blank; anything else, or less than
    `least`, is a usage error naming the variable, saying it must be `words`."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    number = None
    if re.fullmatch(r"[0-9]+" if least is not None else r"-?[0-9]+", value):
        with contextlib.suppress(ValueError):  # more digits than Python converts
            number = int(value)
    if number is None or (least is not None and number < least):
        fail(f"{name} must be {words}, not {value[:40]!r}")
    return number


def _check_bash_timeouts() -> None:
    """Claude Code's Bash timeout variables, which the Bash tool reads: one it cannot
    read is a usage error here, where Claude Code ignores it (commands would stop at
    2 minutes, not at the time the user set)."""
    from fsm_agent.tools.bash import DEFAULT_TIMEOUT_VARIABLE, MAX_TIMEOUT_VARIABLE

    for name in (DEFAULT_TIMEOUT_VARIABLE, MAX_TIMEOUT_VARIABLE):
        _whole_number_variable(name, "a whole number of milliseconds, 1 or more")


def _concurrency_cap() -> int | None:
    """How many safe calls may run at once, if Claude Code's variable says."""
    return _whole_number_variable(CONCURRENCY_VARIABLE, AT_LEAST_ONE)


def _max_turns_variable() -> int | None:
    """`--max-turns` from Claude Code's variable, when the option is not given."""
    return _whole_number_variable(MAX_TURNS_VARIABLE, AT_LEAST_ONE)


def _stop_hook_block_cap() -> int | None:
    """How many Stop-hook blocks in a row send the model on, if Claude Code's variable
    says (0 or less: no cap)."""
    words = "a whole number (0 or less: no cap)"
    return _whole_number_variable(STOP_HOOK_CAP_VARIABLE, words, least=None)


def _idle_notify_s() -> float:
    """How long a chat's prompt waits after an answer before Notification hooks hear
    `idle_prompt` (Claude Code's `messageIdleNotifThresholdMs`, default a minute)."""
    from fsm_agent.cli.launch import IDLE_NOTIFY_S

    words = "a whole number of milliseconds"
    number = _whole_number_variable(IDLE_NOTIFY_VARIABLE, words, least=0)
    if number is None:
        return IDLE_NOTIFY_S
    try:
        return number / 1000
    except OverflowError:  # more seconds than a float holds
        shown = os.environ[IDLE_NOTIFY_VARIABLE].strip()[:40]
        fail(f"{IDLE_NOTIFY_VARIABLE} must be {words}, not {shown!r}")


def config_with(config: RunConfig, **changes: Any) -> RunConfig:
    from attrs import evolve

    return evolve(config, **{k: v for k, v in changes.items() if v is not None})


def _chat(plan: Plan, history: list[Any], *, quiet: bool, verbose: bool) -> None:
    from fsm_agent.cli.chat import ChatSession, LineReader
    from fsm_agent.cli.render import RunConsole
    from fsm_agent.replay.log import LogError

    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="replace")  # a line typed in another encoding still goes
    console = RunConsole()
    session = ChatSession(
        plan, console, LineReader(sys.stdin), messages=history, quiet=quiet, verbose=verbose
    )
    if history and plan.parent is not None:
        resuming = f"resuming {plan.parent} ({len(history)} messages)"
        session.console.print(resuming, style="dim", markup=False, highlight=False)
    try:
        session.loop()
    except LogError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the session log: {exc}")
    plan.end("prompt_input_exit")
    if console.write_error is not None:
        _stdout_lost(
            console.write_error,
            "the chat stopped there (a run under way was finished first, its log whole)",
        )


def _run_text(
    plan: Plan, messages: list[Any], *, quiet: bool, verbose: bool, ask: bool = False
) -> tuple[Any, OSError | None]:
    """The run shown as it goes, and why stdout failed if it did; with `ask` (a
    terminal), the user is asked what the rules leave open, the live status put away
    meanwhile."""
    from fsm_agent.cli.questions import QuestionScreen, terminal_prompter
    from fsm_agent.cli.render import LiveRenderer, QuietRenderer, RunConsole
    from fsm_agent.replay.log import LogError

    console = RunConsole()
    renderer = QuietRenderer(console) if quiet else LiveRenderer(console, verbose=verbose)
    screen = QuestionScreen(renderer, renderer.paused)
    if ask:
        plan.prompter = terminal_prompter(plan.abort, screen.asking)
    renderer.start()
    try:
        result = plan.run_interruptibly(messages, screen)
    except LogError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the session log: {exc}")
    finally:
        renderer.stop()
    renderer.summary(result)
    if quiet and result.reason != "completed" and console.write_error is None:
        detail = f": {result.error}" if result.error else ""
        say(f"fsm-agent: the run ended {result.reason}{detail}")
    return result, console.write_error


def _run_json(
    plan: Plan, messages: list[Any], *, stream: bool, partial: bool, every: bool = False
) -> tuple[Any, OSError | None]:
    """The run, with one JSON result at its end, or (`stream`) a JSON line per event;
    with `every` and not `stream`, one JSON array of every line stream-json would print
    but the raw stream events, as `claude -p --output-format json --verbose`.

    `system/init` goes out with the run's first event: the log is open by then, so a
    log that cannot be created is an error line and nothing on stdout. Once the run
    began, it always ends with a `result`, an error one if the log failed mid-run."""
    import time

    from fsm_agent.app.session import new_session_id
    from fsm_agent.cli.headless import (
        RunTally,
        StreamJson,
        broken_off_object,
        init_object,
        result_object,
    )
    from fsm_agent.policy.permissions import removed_tools
    from fsm_agent.replay.log import LogError, default_log_path

    session_id = new_session_id()
    tally = RunTally()
    collected: list[dict[str, Any]] | None = [] if every and not stream else None
    writer = StreamJson(sys.stdout, session_id, partial=partial, collect=collected)
    lines = stream or collected is not None
    config = plan.config
    log = plan.next_log() or default_log_path(config.cwd, session_id)
    began = False

    def begin() -> None:
        nonlocal began
        if began:
            return
        began = True
        if lines:
            removed = removed_tools(config.permissions)
            tools = [name for name in config.tools if name not in removed]
            key_source = "ANTHROPIC_API_KEY" if getattr(plan.model, "api_key", None) else "none"
            writer.write(
                init_object(
                    session_id,
                    config.cwd,
                    tools,
                    config.model,
                    config.permission_mode,
                    api_key_source=key_source,
                )
            )

    def on_event(event: Any) -> None:
        begin()
        tally(event)
        if lines:
            writer(event)

    def emit(obj: dict[str, Any]) -> None:
        if stream:
            writer.write(obj)
            return
        out = obj if collected is None else [*collected, obj]
        writer.guarded(lambda: click.echo(writer.text(out)))

    started = time.monotonic()
    try:
        result = plan.run_interruptibly(messages, on_event, session_id=session_id)
    except (LogError, OSError) as exc:
        error = str(exc) if isinstance(exc, LogError) else f"cannot write the session log: {exc}"
        if began:
            duration_ms = round((time.monotonic() - started) * 1000)
            emit(
                broken_off_object(
                    error,
                    session_id=session_id,
                    model=config.model,
                    log=str(log),
                    duration_ms=duration_ms,
                    tally=tally,
                )
            )
        fail(error)
    begin()
    duration_ms = round((time.monotonic() - started) * 1000)
    emit(result_object(result, duration_ms=duration_ms, tally=tally))
    if writer.closed:
        from fsm_agent.cli.render import silence

        silence(sys.stdout)
    return result, writer.write_error


@cli.command()
@click.option(
    "--cwd",
    default=".",
    type=click.Path(exists=True, file_okay=False),
    help="The workspace whose sessions to list. Default: the current directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def sessions(cwd: str, as_json: bool) -> None:
    """List the workspace's recorded sessions, newest first (.fsm-agent/sessions/)."""
    from fsm_agent.app.history import list_sessions

    infos = list_sessions(_workspace(cwd))
    if as_json:
        click.echo(json.dumps([_info_json(i) for i in infos], indent=2))
        return
    if not infos:
        click.echo(f"no sessions recorded in {_workspace(cwd)}")
        return
    _sessions_table(infos)


def _info_json(info: Any) -> dict[str, Any]:
    from attrs import asdict

    return {**asdict(info), "path": str(info.path)}


def _sessions_table(infos: list[Any]) -> None:
    """The listing, one line a log. Every column but the prompt has a fixed width and
    the prompt gets what is left, cut with an ellipsis: left to rich, a long prompt
    on 80 columns squeezed the session and turns columns out entirely."""
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from fsm_agent.cli.render import printable

    rows = []
    for info in infos:
        when = printable((info.created or "?").replace("T", " ").split("+")[0])
        prompt = printable(" ".join((info.prompt or "").split()))
        if info.parent:
            prompt = "↳ " + prompt
        if info.status == "complete":
            ended = printable(info.reason or "?")
            style = "green" if info.reason == "completed" else "red"
        else:
            problem = f" ({printable(info.problem)})" if info.problem else ""
            ended = info.status.replace("_", " ") + problem
            style = "yellow"
        turns = "" if info.turns is None else str(info.turns)
        session = printable(info.session_id or info.path.stem)[:8]
        rows.append((Text(session), Text(when[:16]), turns, Text(ended, style=style), Text(prompt)))
    console = Console()
    widths = [8, 16, 5, min(24, max(cell_len("ended"), *(r[3].cell_len for r in rows)))]
    gutter = 2 * len(widths)  # a space either side of each inner edge
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("session", no_wrap=True, style="cyan", width=widths[0])
    table.add_column("when (UTC)", no_wrap=True, width=widths[1])
    table.add_column("turns", no_wrap=True, justify="right", width=widths[2])
    table.add_column("ended", no_wrap=True, width=widths[3], overflow="ellipsis")
    prompt_width = max(12, console.width - sum(widths) - gutter)
    table.add_column("prompt", no_wrap=True, overflow="ellipsis", max_width=prompt_width)
    for row in rows:
        table.add_row(*row)
    needed = sum(widths) + gutter + prompt_width
    if console.width < needed:  # the terminal wraps the lines rather than rich squeeze columns
        console = Console(width=needed)
    console.print(table)


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
    type=FilePath(),
    help="Mark the path a recorded session took.",
)
def graph(fmt: str, highlight: Path | None) -> None:
    """Print the state machine, every edge labelled with its name."""
    from fsm_agent.engine.graph import RENDERERS, count_path, unknown
    from fsm_agent.replay.log import edge_text

    taken = None
    if highlight is not None:
        taken = count_path((s["from"], s["edge"], s["to"]) for s in _recorded_path(highlight))
        if odd := unknown(taken):
            say(
                f"fsm-agent: warning: {highlight}: not in this machine's table, not marked: "
                + ", ".join(map(edge_text, odd))
            )
    click.echo(RENDERERS[fmt](taken), nl=False)


def _recorded_path(path: Path) -> list[dict[str, Any]]:
    from fsm_agent.replay.log import LogError

    try:
        return _read_path(path)
    except LogError as exc:
        fail(str(exc))


def _read_path(path: Path) -> list[dict[str, Any]]:
    """The log's transitions; a log without a `start` record (only a header) holds no run
    and is an error (`LogError`), as for `--check`, not an empty path."""
    from fsm_agent.replay.log import SessionLog, no_start

    steps: list[dict[str, Any]] = []
    started = False
    for _, record in SessionLog(path).records():
        started = started or record["t"] == "start"
        if record["t"] == "transition":
            steps.append(record)
    if not started:
        raise no_start(path)
    _warn_if_torn(path)
    return steps


def _warn_if_torn(path: Path) -> None:
    """A killed run leaves a torn last line: it is read up to it, and the user is told."""
    from fsm_agent.replay.log import is_torn

    if path.is_file() and is_torn(path):
        say(f"fsm-agent: warning: {path}: the last line is torn; read up to it")


@cli.command()
@click.argument("logs", nargs=-1, required=True, type=FilePath())
@click.option(
    "--check",
    is_flag=True,
    help="Re-run the engine against the log (or each of several); exit 1 on a divergence.",
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
    type=(int, FilePath()),
    metavar="K FILE",
    help="Replay up to effect record K (1-based, in log order), answer it with the JSON "
    "result in FILE, then go on live.",
)
@click.option(
    "--scripted",
    type=FilePath(),
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
    type=FilePath(),
    help="Fork: where to write the new log (a new file: an existing one is never "
    "overwritten). Default: .fsm-agent/sessions/ in the workspace.",
)
@click.option("-v", "--verbose", is_flag=True, help="Fork: show every transition.")
def replay(
    logs: tuple[Path, ...],
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
    forking = fork_at is not None or edit_effect is not None
    typed = click.get_current_context().get_parameter_source
    given = {
        "--scripted": scripted is not None,
        "--model": model is not None,
        "--log": fork_log is not None,
        "--cwd": typed("cwd") == ParameterSource.COMMANDLINE,
        "--base-url": typed("base_url") == ParameterSource.COMMANDLINE,
        "--verbose": verbose,
    }
    for option, value in given.items():
        if value and not forking:
            fail(f"{option} is for a fork: give --fork-at N or --edit-effect K FILE")
    for option, value in {"--path": show_path, "--json": as_json}.items():
        if value and (check or forking):
            what = "--check replays the log" if check else "a fork goes on live"
            fail(f"{option} prints the recorded path; {what}: give one or the other")
    if check:
        if forking:
            fail("--check replays a log to its end; a fork (--fork-at, --edit-effect) goes on live")
        _check_all(logs)
        return
    if len(logs) > 1:
        fail(f"got {len(logs)} logs: only --check takes several")
    (log,) = logs
    if forking:
        _fork(log, fork_at, edit_effect, scripted, model, base_url, cwd, fork_log, verbose)
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
    from fsm_agent.replay.log import edge_text

    for s in steps:
        click.echo(edge_text((s["from"], s["edge"], s["to"])))


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
    from fsm_agent.app.fork import ForkError, ForkPoint, afork, replayed_steps
    from fsm_agent.cli.render import LiveRenderer, RunConsole
    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.events import Transition
    from fsm_agent.live.scripted import ScriptedHooks, ScriptedModel
    from fsm_agent.replay.divergence import Divergence, divergence_report
    from fsm_agent.replay.log import LogError, SessionLog

    if fork_at is not None and edit_effect is not None:
        fail("give --fork-at or --edit-effect, not both (an edit is itself the fork point)")
    if scripted is None and model is None:
        fail("a fork goes on live: give --scripted SCENARIO.json or --model MODEL")
    _refuse_existing_log(log)
    point = ForkPoint(step=fork_at)
    if edit_effect is not None:
        number, file = edit_effect
        from fsm_agent.core.jsontext import MAX_DEPTH, deeper_than, strict_loads

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
    console = RunConsole()
    renderer = LiveRenderer(console, verbose=verbose)
    try:
        replayed = replayed_steps(SessionLog(parent), point)
    except (LogError, ForkError) as exc:
        fail(str(exc))
    _warn_if_torn(parent)
    replaying = f"replaying {parent} up to step {replayed}, then live"
    console.print(replaying, style="dim", markup=False, highlight=False)
    if replayed == 0:
        console.rule("live from step 1", style="yellow")

    def on_event(event: Any) -> None:
        renderer(event)
        if isinstance(event, Transition) and event.step == replayed:
            console.rule(f"live from step {replayed + 1}", style="yellow")

    try:
        import asyncio

        from fsm_agent.cli.launch import interruptibly

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
        _stdout_lost(
            console.write_error, f"the fork ended {result.reason}; its log: {result.log_path}"
        )
    sys.exit(exit_code(result))


def _debug(path: Path) -> None:
    from rich.console import Console

    from fsm_agent.cli.debugger import Debugger
    from fsm_agent.replay.log import LogError

    try:
        debugger = Debugger(path)
    except LogError as exc:
        fail(str(exc))
    _warn_if_torn(path)
    try:
        import readline

        readline.set_completer(debugger.complete)  # type: ignore[arg-type]  # typeshed: a list
        readline.set_completer_delims(" \t\n")
        readline.parse_and_bind("tab: complete")
    except ImportError:
        pass
    debugger.interact(Console())


def _check_all(logs: tuple[Path, ...]) -> None:
    """Each log checked in turn; the exit code is the worst: 2 if one could not be
    read, else 1 if one diverged. With several, each line names its log."""
    codes = [_check(path, f"{path}: " if len(logs) > 1 else "") for path in logs]
    if len(logs) > 1:
        counts = [
            f"{codes.count(0)} match",
            f"{codes.count(EXIT_DIVERGED)} diverged",
            f"{codes.count(EXIT_USAGE)} unreadable",
        ]
        click.echo(f"{len(logs)} logs: {', '.join(counts)}")
    worst = max(codes)
    if worst:
        sys.exit(worst)


def _check(path: Path, name: str) -> int:
    import asyncio

    from fsm_agent.app.replaying import areplay
    from fsm_agent.replay.divergence import Divergence, LogEnded, divergence_report
    from fsm_agent.replay.log import LogError

    try:
        result = asyncio.run(areplay(path))
    except LogError as exc:
        error_line(str(exc))
        return EXIT_USAGE
    except LogEnded as exc:
        _warn_if_torn(path)
        click.echo(
            f"✓ {name}{exc.matched} steps match the log; it ends there, without a result: {exc.WHY}"
        )
        return 0
    except Divergence as exc:
        _warn_if_torn(path)
        say(divergence_report(exc, name))
        if (note := _other_machine(path)) is not None:
            say(note)
        return EXIT_DIVERGED
    _warn_if_torn(path)
    click.echo(f"✓ {name}{len(result.path)} steps match the log; ends {result.reason}")
    return 0


def _other_machine(path: Path) -> str | None:
    from fsm_agent.replay.header import other_machine_note
    from fsm_agent.replay.log import LogError, SessionLog

    try:
        return other_machine_note(SessionLog(path))
    except LogError:  # gone since it was replayed
        return None


@cli.command()
@click.argument("logs", nargs=-1, required=True, type=FilePath())
def coverage(logs: tuple[Path, ...]) -> None:
    """Which edges of the machine the LOGS take (with counts), and which none does.

    A log that cannot be read is named on stderr and left out, as `replay --check` does
    with several; the others are counted, and the exit code is then 2. A log named twice
    (by two globs that overlap) is counted once."""
    from fsm_agent.replay.coverage import REASONS, Coverage
    from fsm_agent.replay.log import LogError, edge_text

    named: dict[Path, Path] = {}
    for log in logs:
        named.setdefault(log.resolve(), log)
    logs = tuple(named.values())
    paths: list[list[dict[str, Any]]] = []
    for log in logs:
        try:
            paths.append(_read_path(log))
        except LogError as exc:
            error_line(str(exc))
    unreadable = len(logs) - len(paths)
    if not paths:
        sys.exit(EXIT_USAGE)
    cov = Coverage.of((s["from"], s["edge"], s["to"]) for path in paths for s in path)
    width = max(len(f"{a} -[{e}]-> {b}") for (a, e, b), _ in cov.rows())
    click.echo(f"{'edge':<{width}}  taken")
    for (source, edge, dest), count in cov.rows():
        click.echo(f"{f'{source} -[{edge}]-> {dest}':<{width}}  {count if count else '-'}")
    taken = len(cov.rows()) - len(cov.untaken)
    skipped = f" ({unreadable} unreadable)" if unreadable else ""
    click.echo(
        f"\n{taken} of {len(cov.rows())} edges taken by {len(paths)} log(s); "
        f"{len(cov.reasons_taken)} of {len(REASONS)} reasons{skipped}"
    )
    if cov.untaken:
        click.echo("not taken by any log:")
        for source, edge, dest in cov.untaken:
            click.echo(f"  {source} -[{edge}]-> {dest}")
    for key in cov.unknown:
        click.echo(f"not in this machine's table: {edge_text(key)}")
    if unreadable:
        sys.exit(EXIT_USAGE)


def _escape_what_stdout_cannot_encode() -> None:
    """A lone surrogate (JSON's `"\\ud800"` in a model's answer) is no UTF-8: written as
    that escape, which keeps JSON output valid and exact, rather than raising. So is what
    an ASCII-only stream cannot hold (the JSON formats escape it themselves, `ascii_only`):
    an encoding error raised from an event callback would end the run mid-way."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _open_closed_streams() -> None:
    """A standard stream closed at start (`<&-`, `>&-`, a daemon's) is None in Python:
    stdin is then one with nothing on it, stdout and stderr a reader that is gone."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115


def main() -> None:
    _open_closed_streams()
    _escape_what_stdout_cannot_encode()
    try:
        cli.main(standalone_mode=False, prog_name="fsm-agent")
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        say("fsm-agent: interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
