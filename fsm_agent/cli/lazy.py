"""The one table of what the CLI loads only when it is used, and why.

`fsm-agent --help`, `graph` and `replay --path` must start fast (tests/test_startup.py
pins what they must not import), so a subcommand's module, which imports what its
command needs at its top, is loaded only when that command runs (click's LazyGroup
idiom); `--help` lists the commands from the summaries here. `replay`'s modes are
loaded the same way: `--path` must not load the engine, nor `--check` rich or the
live adapters.

Three heavy imports are made where they are used, and nowhere else:
- the `anthropic` SDK (about half a second, through `fsm_agent.live.lazy_sdk`):
  `fsm_agent.app.configure` (`real_model`, and the thread `start_loading_sdk` starts), so
  only a run against a real model pays for it;
- rich's Markdown (markdown-it and Pygments, about 20 ms):
  `fsm_agent.cli.render.LiveRenderer._flush_text`, so only a live run's finished text
  does, not the debugger, which shares `render`;
- rich's console (about 17 ms): `fsm_agent.cli.render.LazyConsole`, when a run first
  prints, so a piped run's first request goes before it and a JSON run never loads it.
"""

from __future__ import annotations

import gc
from importlib import import_module
from typing import Any, NamedTuple

import click

_paused: list[bool] = []
"""Set while `pause_collector` holds the cyclic collector off: whether it was on."""


def pause_collector() -> None:
    """The cyclic collector off while the command's module loads: the start-up builds
    tens of thousands of objects (attrs' classes, click's, the engine's tables), nearly
    none of them garbage, and collecting meanwhile cost a run about 30 ms of CPU."""
    if not _paused:
        _paused.append(gc.isenabled())
        gc.disable()


def resume_collector() -> None:
    """The collector back once the command is loaded, what start-up built frozen (later
    collections skip it); nothing when it was not paused."""
    if _paused and _paused.pop():
        gc.freeze()
        gc.enable()


class Lazy(NamedTuple):
    """A NamedTuple, not an attrs class: `--help` and `replay --path` would import attrs."""

    target: str
    """`module:attribute`."""
    summary: str = ""
    """A subcommand's first docstring paragraph, for `--help` (a test keeps them equal)."""


COMMANDS: dict[str, Lazy] = {
    "run": Lazy(
        "fsm_agent.cli.run:run",
        "Run PROMPT through the loop, with real tools on the workspace's files.",
    ),
    "chat": Lazy(
        "fsm_agent.cli.chat:chat",
        "An interactive session: each message you type runs the loop over the conversation so far.",
    ),
    "sessions": Lazy(
        "fsm_agent.cli.sessions:sessions",
        "List the workspace's recorded sessions, newest first (.fsm-agent/sessions/).",
    ),
    "graph": Lazy(
        "fsm_agent.cli.graph:graph", "Print the state machine, every edge labelled with its name."
    ),
    "replay": Lazy(
        "fsm_agent.cli.replay:replay",
        "Replay a recorded session: no network, no API key, no file touched.",
    ),
    "view": Lazy(
        "fsm_agent.cli.view:view",
        "Write a recorded session as one HTML page that opens offline in any browser.",
    ),
    "mcp": Lazy(
        "fsm_agent.cli.mcp:mcp",
        "The MCP servers a run in the workspace would start, and their state.",
    ),
    "import": Lazy(
        "fsm_agent.cli.import_transcript:import_transcript",
        "Import a Claude Code transcript (~/.claude/projects/…/SESSION.jsonl) as session logs.",
    ),
    "coverage": Lazy(
        "fsm_agent.cli.coverage:coverage",
        "Which edges of the machine the LOGS take (with counts), and which none does.",
    ),
}
"""The subcommands (`--help` lists them sorted, as click does)."""

REPLAY_MODES: dict[str, Lazy] = {
    "check": Lazy("fsm_agent.cli.replay_check:check_all"),
    "fork": Lazy("fsm_agent.cli.fork:fork"),
    "debugger": Lazy("fsm_agent.cli.replay_debug:debug"),
    "view": Lazy("fsm_agent.cli.view:open_divergence"),
}
"""`replay`'s modes but `--path`, which `replay` prints itself."""


def load(lazy: Lazy) -> Any:
    module, _, name = lazy.target.partition(":")
    return getattr(import_module(module), name)


class LazyGroup(click.Group):
    """A group whose subcommands are the `COMMANDS` table's, each loaded when it runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            command: click.Command = load(COMMANDS[cmd_name])
            return command
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with its "did you mean" drawn from the table too: click suggests
        only from the commands already loaded."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None
        finally:
            resume_collector()

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, from the summaries: it would load every subcommand for its help."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            lazy = COMMANDS.get(name)
            command = click.Command(name, help=lazy.summary) if lazy else self.commands[name]
            rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
