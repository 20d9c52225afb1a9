"""The lazy table: `--help` lists the subcommands from it without loading them, so
each summary must be its command's own, and each target must load."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from fsm_agent.cli.lazy import COMMANDS, REPLAY_MODES, load
from fsm_agent.cli.main import cli


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_summary_is_its_command_s_first_paragraph(name: str) -> None:
    command = load(COMMANDS[name])
    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.help is not None
    assert COMMANDS[name].summary == " ".join(command.help.split("\n\n")[0].split())


@pytest.mark.parametrize("mode", sorted(REPLAY_MODES))
def test_every_replay_mode_loads(mode: str) -> None:
    assert callable(load(REPLAY_MODES[mode]))


def test_help_lists_what_the_loaded_commands_would_say() -> None:
    """The group's listing, from the summaries, is click's own from the loaded commands."""
    ctx = click.Context(cli, terminal_width=80)
    formatter = ctx.make_formatter()
    cli.format_commands(ctx, formatter)
    loaded = click.Group(commands=[load(lazy) for lazy in COMMANDS.values()])
    expected = ctx.make_formatter()
    click.Group.format_commands(loaded, click.Context(loaded, terminal_width=80), expected)
    assert formatter.getvalue() == expected.getvalue()


def test_a_mistyped_command_is_matched_against_the_whole_table() -> None:
    """click suggests only from loaded commands; none is loaded before one runs."""
    with pytest.raises(click.exceptions.NoSuchCommand) as err:
        cli.main(["sesions"], standalone_mode=False, prog_name="fsm-agent")
    assert err.value.possibilities == ["sessions"]


def test_help_loads_no_subcommand_and_no_attrs() -> None:
    """In a fresh interpreter: the listing comes from the table alone."""
    modules = [lazy.target.partition(":")[0] for lazy in COMMANDS.values()]
    code = (
        "import sys\n"
        "from fsm_agent.cli.main import main\n"
        "sys.argv = ['fsm-agent', '--help']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"loaded = [m for m in {[*modules, 'attrs']!r} if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "replay" in proc.stdout


COLLECTOR = """
import gc, sys
from fsm_agent.cli import lazy
from fsm_agent.cli.main import main
seen = []
original = lazy.load
def load(target):
    seen.append(gc.isenabled())
    return original(target)
lazy.load = load
sys.argv = ["fsm-agent", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(seen, gc.isenabled(), gc.get_freeze_count() > 0)
"""


@pytest.mark.parametrize(
    ("args", "loaded"), [(["graph"], "[False]"), (["no-such-command"], "[]"), (["--help"], "[]")]
)
def test_the_collector_is_paused_while_a_command_loads_and_back_after(
    args: list[str], loaded: str
) -> None:
    """Paused for the start-up's imports, the collector must come back however the
    command line ends: a chat with it off would never collect a cycle."""
    proc = subprocess.run(
        [sys.executable, "-c", COLLECTOR, *args], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"{loaded} True True"
