"""Start-up cost: what importing the package and `replay --check` do before the first step.

Each check runs in a fresh interpreter, since the test session has long since
imported everything. See tools/bench_startup.py for the timings themselves.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT
from tests.support.cli import MODEL
from tests.support.messages_server import MessagesServer, text
from tests.support.startup import python_c, watched_run

SHIPPED = ROOT / "replays" / "fix_bug.jsonl"
SCENARIO = ROOT / "replays" / "scenarios" / "tool_round.json"


def test_replay_check_imports_nothing_only_a_live_run_needs() -> None:
    live_only = [
        "anthropic",
        "rich",
        "tempfile",
        "fsm_agent.live.approvals",
        "fsm_agent.policy.permissions",
        "fsm_agent.policy.bash_analysis",
        "tree_sitter",
        "fsm_agent.hooks.commands",
        "fsm_agent.live.paths",
        "fsm_agent.live.scripted",
        "fsm_agent.live.settings",
        "fsm_agent.tools.bash",
        "fsm_agent.tools.read",
    ]
    code = (
        "import sys\n"
        "from fsm_agent.cli.main import main\n"
        f"sys.argv = ['fsm-agent', 'replay', {str(SHIPPED)!r}, '--check']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"loaded = [m for m in {live_only!r} if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    proc = python_c(code)
    assert proc.returncode == 0, proc.stderr
    assert "steps match the log" in proc.stdout


def test_replay_check_compiles_only_the_schemas_of_tools_the_log_calls() -> None:
    """A tool's schema is compiled when a recorded call first needs it, as in a live run
    after its start: compiling all six built-in ones up front costs `replay --check`
    about 13 ms, more than the whole replay of a short log."""
    no_calls = str(ROOT / "replays" / "max_output_tokens.jsonl")
    code = (
        "import sys\n"
        "from fsm_agent.cli.main import main\n"
        "import fsm_agent.core.validation as v\n"
        f"sys.argv = ['fsm-agent', 'replay', {no_calls!r}, '--check']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "assert not v._compiled, len(v._compiled)\n"
    )
    proc = python_c(code)
    assert proc.returncode == 0, proc.stderr


def test_a_class_hooks_are_generated_once() -> None:
    """cattrs forgets its hooks whenever it makes a collection hook; the codec must
    not then generate (and compile) a class's hooks again."""
    from attrs import frozen

    from fsm_agent.core.codec import converter
    from fsm_agent.core.messages import Usage

    @frozen
    class Fresh:
        n: int

    unstructure = converter.get_unstructure_hook(Usage)
    structure = converter.get_structure_hook(Usage)
    converter.get_unstructure_hook(list[Fresh])
    converter.get_structure_hook(list[Fresh])
    assert converter.get_unstructure_hook(Usage) is unstructure
    assert converter.get_structure_hook(Usage) is structure


def test_help_graph_and_path_import_none_of_the_engine() -> None:
    """They need no state, codec or event loop, and only `graph` needs the machine:
    importing those would cost them tens of milliseconds (a constant in the wrong
    module, and a formatting helper in `graph`, once did)."""
    engine = [
        "asyncio",
        "cattrs",
        "fsm_agent.engine.state",
        "fsm_agent.core.codec",
        "fsm_agent.core.events",
    ]
    machine = ["transitions", "fsm_agent.engine.machine"]
    config = ["fsm_agent.core.config", "fsm_agent.core.permission_types"]
    for argv, unneeded in (
        (["--help"], engine + machine + config),
        (["graph"], engine + config),
        (["replay", str(SHIPPED), "--path"], engine + machine),
    ):
        code = (
            "import sys\n"
            "from fsm_agent.cli.main import main\n"
            f"sys.argv = ['fsm-agent', *{argv!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            f"loaded = [m for m in {unneeded!r} if m in sys.modules]\n"
            "assert not loaded, loaded\n"
        )
        proc = python_c(code)
        assert proc.returncode == 0, (argv, proc.stderr)


def test_the_debugger_does_not_load_markdown() -> None:
    """rich's Markdown brings markdown-it and Pygments, about 20 ms of the debugger's
    start: only a live run's finished text is shown as Markdown."""
    code = (
        "import sys\n"
        "import fsm_agent.cli.debugger\n"
        "loaded = [m for m in ('rich.markdown', 'markdown_it', 'pygments') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    proc = python_c(code)
    assert proc.returncode == 0, proc.stderr


def test_a_text_run_reads_no_package_metadata(tmp_path: Path) -> None:
    """Only stream-json's `system/init` line names the installed version; reading package
    metadata (zipfile, email, csv) would cost every run about 10 ms."""
    code = (
        "import sys\n"
        "from fsm_agent.cli.main import main\n"
        f"sys.argv = ['fsm-agent', 'run', '--scripted', {str(SCENARIO)!r}, '--cwd', "
        f"{str(tmp_path)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "assert 'importlib.metadata' not in sys.modules\n"
    )
    proc = python_c(code)
    assert proc.returncode == 0, proc.stderr


def test_a_real_run_loads_only_the_parts_of_the_sdk_it_uses(tmp_path: Path) -> None:
    """The SDK's beta API, the other platforms' clients and its tool runner are most of
    its import (docs/performance.md): a run against a real model sends its request
    without them, and still ends as a completed run."""
    unneeded = [
        "anthropic.lib.vertex",
        "anthropic.lib.bedrock",
        "anthropic.lib.foundry",
        "anthropic.lib.tools",
        "anthropic.resources.beta.beta",
        "anthropic.types.beta.session_create_params",
    ]
    with MessagesServer() as server:
        server.reply(text("Hello.", model=MODEL))
        code = (
            "import os, sys\n"
            "from fsm_agent.cli.main import main\n"
            "os.environ['ANTHROPIC_API_KEY'] = 'test-key'\n"
            f"sys.argv = ['fsm-agent', 'run', 'hi', '--base-url', {server.url!r}, "
            f"'--model', {MODEL!r}, '--cwd', {str(tmp_path)!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "assert 'anthropic._client' in sys.modules\n"
            f"loaded = [m for m in {unneeded!r} if m in sys.modules]\n"
            "assert not loaded, loaded\n"
        )
        proc = python_c(code)
    assert proc.returncode == 0, proc.stderr
    assert "Hello." in proc.stdout
    assert len(server.bodies()) == 1


def test_a_piped_run_asks_the_model_before_it_loads_rich_or_a_ca_bundle(tmp_path: Path) -> None:
    """rich's console and renderables are about 17 ms of imports: a piped run shows
    nothing before the model answers, so it loads them after its first request (they
    were loaded with `cli.chat`, `cli.render` and `cli.questions`, before anything).
    A plain `http://` server needs no TLS: no CA bundle is loaded (about 35 ms of CPU),
    and the one context made is the clients' deferred one, which loads nothing."""
    with MessagesServer() as server:
        server.reply(text("Hello.", model=MODEL))
        seen, proc = watched_run(server, tmp_path)
    assert seen["exit"] == 0, proc.stderr
    assert "rich" in seen, "the run never connected to the server"
    assert seen["rich"] == []
    assert seen["contexts"] == ["DeferredContext"]
    assert seen["loaded"] == []
    assert "fsm_agent.live.scripted" not in seen["modules"]  # no scenario: no scripted model
    assert seen["rich_at_exit"]
    assert "Hello." in proc.stdout and "■ completed" in proc.stdout


def test_a_json_run_never_loads_rich(tmp_path: Path) -> None:
    """`--output-format json` prints one JSON object, through no console."""
    with MessagesServer() as server:
        server.reply(text("Hello.", model=MODEL))
        seen, proc = watched_run(server, tmp_path, "--output-format", "json")
    assert seen["exit"] == 0, proc.stderr
    assert seen["rich"] == [] and not seen["rich_at_exit"]
    assert json.loads(proc.stdout)["result"] == "Hello."
