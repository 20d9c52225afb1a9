"""`fsm-agent run`: one run of the loop, shown as text or printed as JSON.

With no prompt it reads one from a pipe, or opens a chat in a terminal.
"""

from __future__ import annotations

import select
import sys
import time
from typing import Any, BinaryIO

import click
from attrs import evolve

from fsm_agent.app.history import follow_up
from fsm_agent.app.session import new_session_id
from fsm_agent.cli.headless import (
    RunTally,
    StreamJson,
    broken_off_object,
    init_object,
    result_object,
)
from fsm_agent.cli.launch import Plan
from fsm_agent.cli.options import run_options
from fsm_agent.cli.plan import plan_of, trust_question
from fsm_agent.cli.questions import QuestionScreen, terminal_prompter
from fsm_agent.cli.render import LazyConsole, LiveRenderer, QuietRenderer
from fsm_agent.cli.usage import (
    exit_code,
    fail,
    is_utf8,
    refuse_undecodable,
    say,
    silence,
    stdout_lost,
)
from fsm_agent.core.events import DriverEvent, McpReady
from fsm_agent.core.mcp import McpServerState, tool_name
from fsm_agent.core.messages import Message
from fsm_agent.engine.driver import LoopResult
from fsm_agent.policy.permissions import removed_tools
from fsm_agent.tape.log import LogError, default_log_path


@click.command()
@click.argument("prompt", required=False)
@run_options
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
    if prompt is not None and not is_utf8(prompt):
        fail("the prompt is not UTF-8 text")
    refuse_undecodable(options)
    # No PROMPT in a terminal is a chat (unless a scenario brings its prompt): an
    # interactive session, which asks the trust question as Claude Code's does.
    interactive = not (prompt and prompt.strip()) and sys.stdin.isatty()
    plan, resumed, scenario_prompt = plan_of(trust_question if interactive else None, **options)
    if output_format == "stream-json":
        plan.config = evolve(plan.config, structured_results=True)
    prompt = prompt if prompt and prompt.strip() else scenario_prompt
    history = list(resumed.messages) if resumed is not None else []
    if not prompt:
        if sys.stdin.isatty():
            if output_format != "text":
                fail(f"--output-format {output_format} needs a PROMPT (no interactive session)")
            # Deferred (listed in docs/architecture.md): the chat and its keyboard, rich's
            # console at their top; only a run in a terminal with no prompt opens one.
            from fsm_agent.cli.chat import chat_in_terminal

            chat_in_terminal(plan, history, quiet=quiet, verbose=verbose)
            return
        prompt = piped_text(sys.stdin.buffer).strip()
        if not prompt:
            fail("no prompt given (pass PROMPT, pipe it on stdin, or use a scenario's 'prompt')")
    elif not sys.stdin.isatty():
        prompt = with_piped(prompt, piped_text(sys.stdin.buffer, wait_s=STDIN_WAIT_S))
    messages = follow_up(history, prompt)
    if output_format == "text":
        result, lost = run_text(
            plan, messages, quiet=quiet, verbose=verbose, ask=sys.stdin.isatty()
        )
    else:
        result, lost = run_json(
            plan,
            messages,
            stream=output_format == "stream-json",
            partial=include_partial_messages,
            every=verbose,
        )
    plan.end("other")
    if lost is not None:
        stdout_lost(lost, f"the run ended {result.reason}; its log: {result.log_path}")
    sys.exit(exit_code(result))


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


def run_text(
    plan: Plan, messages: list[Message], *, quiet: bool, verbose: bool, ask: bool = False
) -> tuple[LoopResult, OSError | None]:
    """The run shown as it goes, and why stdout failed if it did; with `ask` (a
    terminal), the user is asked what the rules leave open, the live status put away
    meanwhile."""
    console = LazyConsole()
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


def run_json(
    plan: Plan, messages: list[Message], *, stream: bool, partial: bool, every: bool = False
) -> tuple[LoopResult, OSError | None]:
    """The run, with one JSON result at its end, or (`stream`) a JSON line per event;
    with `every` and not `stream`, one JSON array of every line stream-json would print
    but the raw stream events, as `claude -p --output-format json --verbose`.

    `system/init` goes out with the run's first event: the log is open by then, so a
    log that cannot be created is an error line and nothing on stdout. Once the run
    began, it always ends with a `result`, an error one if the log failed mid-run."""
    session_id = plan.session_id or new_session_id()
    tally = RunTally()
    collected: list[dict[str, Any]] | None = [] if every and not stream else None
    writer = StreamJson(sys.stdout, session_id, partial=partial, collect=collected)
    lines = stream or collected is not None
    config = plan.config
    log = plan.next_log() or default_log_path(config.cwd, session_id)
    began = False
    mcp: tuple[McpServerState, ...] = ()

    def begin() -> None:
        nonlocal began
        if began:
            return
        began = True
        if lines:
            removed = removed_tools(config.permissions)
            tools = [name for name in config.tools if name not in removed]
            tools += [tool_name(s.name, t.name) for s in mcp for t in s.tools]
            key_source = "ANTHROPIC_API_KEY" if getattr(plan.model, "api_key", None) else "none"
            writer.write(
                init_object(
                    session_id,
                    config.cwd,
                    tools,
                    config.model,
                    config.permission_mode,
                    api_key_source=key_source,
                    mcp_servers=[
                        {"name": s.name, "status": s.status, "source": s.source} for s in mcp
                    ],
                    additional_directories=config.permissions.additional_directories,
                )
            )

    def on_event(event: DriverEvent) -> None:
        nonlocal mcp
        if isinstance(event, McpReady):  # the run's first event when it has servers
            mcp = event.servers
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
    if lines:
        writer.ended(result)
    line = result_object(result, duration_ms=duration_ms, tally=tally)
    emit(line if plan.budget is None else plan.budget.mark(line, tally))
    if writer.closed:
        silence(sys.stdout)
    return result, writer.write_error
