"""The options `run` and `chat` share, declared once so their `--help` stays the same."""

from __future__ import annotations

from typing import Any

import click

from fsm_agent.cli.usage import FilePath
from fsm_agent.core.limits import MIN_CONTEXT_WINDOW


def run_options(fn: Any) -> Any:
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
        click.option(
            "--trust",
            is_flag=True,
            help="Trust the workspace for this run: its .claude/settings.json may allow "
            "tools and add directories (without it, only once Claude Code's trust dialog, "
            "or a chat's trust question, was answered yes there, in ~/.claude.json).",
        ),
        click.option(
            "--mcp-config",
            multiple=True,
            help='MCP servers from a JSON file or string ({"mcpServers": ...}); may repeat.',
        ),
        click.option(
            "--strict-mcp-config",
            is_flag=True,
            help="Only the servers of --mcp-config: no .mcp.json, no ~/.claude.json servers.",
        ),
        click.option("-q", "--quiet", is_flag=True, help="Print only the final answer."),
        click.option("-v", "--verbose", is_flag=True, help="Show every transition as it is taken."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn
