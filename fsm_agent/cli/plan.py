"""`run`'s and `chat`'s options made a `Plan`: the configuration is assembled below the
CLI (`fsm_agent.app.configure`); here what it cannot use becomes an error line."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

import click
from click.core import ParameterSource

from fsm_agent.app.configure import AskTrust, NotTrusted, RunOptions, configure
from fsm_agent.app.environment import ConfigError
from fsm_agent.app.history import Resumed
from fsm_agent.cli.launch import Plan
from fsm_agent.cli.render import printable
from fsm_agent.cli.usage import fail, say
from fsm_agent.live.mcp_files import McpSetup

EXIT_NOT_TRUSTED = 1
"""The trust question answered No: Claude Code exits 1 there too."""


def base_url_given_by() -> str:
    """The option or the variable a bad base URL came from, to name it in the error."""
    source = click.get_current_context().get_parameter_source("base_url")
    return "ANTHROPIC_BASE_URL" if source == ParameterSource.ENVIRONMENT else "--base-url"


TRUST_GUIDE = "https://code.claude.com/docs/en/security"


def tolerant_stdin() -> None:
    """A line typed in another encoding still goes: undecodable bytes replaced. Done
    before the first read (the trust question's, or the chat's), once: Python refuses
    it after."""
    if isinstance(sys.stdin, io.TextIOWrapper) and sys.stdin.errors != "replace":
        with contextlib.suppress(io.UnsupportedOperation):
            sys.stdin.reconfigure(errors="replace")


def trust_question(workspace: str, home: bool) -> bool:
    """Claude Code's first-run question in a folder it has not been told to trust, in its
    words, on the terminal: only y is yes; Enter, anything else, Ctrl-D or Ctrl-C is No
    (the CLI's dialog starts on "No, exit")."""
    only = " This is your home folder, so Yes lasts for this session only." if home else ""
    for line in (
        "Accessing workspace:",
        "",
        f"  {printable(workspace)}",
        "",
        "Quick safety check: Is this a project you created or one you trust? (Like your own "
        "code, a well-known open source project, or work from your team). If not, take a "
        "moment to review what's in this folder first.",
        "",
        f"fsm-agent'll be able to read, edit, and execute files here.{only}",
        f"Security guide: {TRUST_GUIDE}",
        "",
    ):
        say(line)
    tolerant_stdin()
    try:
        answer = click.prompt(
            "[y] Yes, I trust this folder  [n] No, exit", default="", show_default=False,
            err=True, prompt_suffix=" ",
        )  # fmt: skip
    except click.Abort:
        say("")
        return False
    return answer.strip().lower() in ("y", "yes")


def plan_of(
    ask_trust: AskTrust | None = None, **options: Any
) -> tuple[Plan, Resumed | None, str | None]:
    """The run the options describe: `(plan, resumed session or None, scenario prompt)`.

    `ask_trust`: an interactive session's trust question (`trust_question`)."""
    typed = click.get_current_context().get_parameter_source("base_url")
    if options.get("scripted") is not None and typed == ParameterSource.COMMANDLINE:
        # ANTHROPIC_BASE_URL may be set for other runs; a typed --base-url was meant.
        fail(
            "--base-url is for a real model, and --scripted runs a scenario: give one or the other"
        )
    try:
        made = configure(
            RunOptions(**options, base_url_given_by=base_url_given_by()), say, ask_trust
        )
    except NotTrusted:
        fail(
            "the session did not start: this folder isn't trusted (run again and answer y, "
            "pass --trust, or run it in another folder)",
            EXIT_NOT_TRUSTED,
        )
    except ConfigError as exc:
        fail(str(exc))
    log = options["log"]
    resumed = made.resumed
    plan = Plan(
        model=made.model,
        config=made.config,
        hooks=made.hooks,
        abort=made.abort,
        log=log.resolve() if log is not None else None,
        parent=resumed.path if resumed is not None else None,
        parent_session_id=resumed.session_id if resumed is not None else None,
        read_files=resumed.read_files if resumed is not None else None,
        parent_cut_short=resumed.cut_short if resumed is not None else None,
        idle_notify_s=made.idle_notify_s,
        mcp=approved(made.mcp),
        history=resumed.messages if resumed is not None else (),
    )
    return plan, resumed, made.scenario_prompt


def approved(setup: McpSetup | None) -> McpSetup | None:
    """`.mcp.json` servers no setting approves, put to the user in a terminal as Claude
    Code asks; without one they stay off (`fsm-agent mcp list` shows them)."""
    if setup is None or not setup.unapproved or not sys.stdin.isatty():
        return setup
    yes = [
        server.name
        for server in setup.unapproved
        if click.confirm(
            f"New MCP server found in .mcp.json: {server.name}. Use it in this session?",
            default=False,
            err=True,
        )
    ]
    return setup.approved(yes)
