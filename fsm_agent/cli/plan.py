"""`run`'s and `chat`'s options made a `Plan`: the configuration is assembled below the
CLI (`fsm_agent.app.configure`); here what it cannot use becomes an error line."""

from __future__ import annotations

import sys
from typing import Any

import click
from click.core import ParameterSource

from fsm_agent.app.configure import RunOptions, configure
from fsm_agent.app.environment import ConfigError
from fsm_agent.app.history import Resumed
from fsm_agent.cli.launch import Plan
from fsm_agent.cli.usage import fail, say
from fsm_agent.live.mcp_files import McpSetup


def base_url_given_by() -> str:
    """The option or the variable a bad base URL came from, to name it in the error."""
    source = click.get_current_context().get_parameter_source("base_url")
    return "ANTHROPIC_BASE_URL" if source == ParameterSource.ENVIRONMENT else "--base-url"


def plan_of(**options: Any) -> tuple[Plan, Resumed | None, str | None]:
    """The run the options describe: `(plan, resumed session or None, scenario prompt)`."""
    typed = click.get_current_context().get_parameter_source("base_url")
    if options.get("scripted") is not None and typed == ParameterSource.COMMANDLINE:
        # ANTHROPIC_BASE_URL may be set for other runs; a typed --base-url was meant.
        fail(
            "--base-url is for a real model, and --scripted runs a scenario: give one or the other"
        )
    try:
        made = configure(RunOptions(**options, base_url_given_by=base_url_given_by()), say)
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
