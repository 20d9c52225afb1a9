"""The Claude Agent SDK's own `examples/` scripts, run unchanged against `fsm-claude`.

The examples ship in the SDK's source distribution, not its wheel: `.ci/run` unpacks
the pinned release's and names its `examples/` in `FSM_AGENT_SDK_EXAMPLES`; without it
these tests skip. Each script runs as its README says (`python examples/X.py [all]`),
in a process whose SDK finds `fsm-claude` where it would find its bundled CLI (a
`sitecustomize` does that, so the script itself is not touched), with the model
served by the local Messages server. Every session log it leaves must replay.

Left out, each for a reason of its own: `agents`, `filesystem_agents`,
`setting_sources` and `plugin_example` need flags fsm-agent refuses by name
(`--agents`, `--setting-sources`, `--plugin-dir`); `streaming_mode_trio` needs
trio; `streaming_mode_ipython` is a notebook's cells, not a script.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.agent_sdk import entry_point
from tests.support.cli import MODEL, fsm
from tests.support.messages_server import MessagesServer, text

EXAMPLES = os.environ.get("FSM_AGENT_SDK_EXAMPLES")
SITE = (
    "import os\n"
    "from claude_agent_sdk._internal.transport import subprocess_cli\n"
    "subprocess_cli.SubprocessCLITransport._find_bundled_cli = "
    "lambda self: os.environ['FSM_AGENT_CLAUDE']\n"
)
"""Where the SDK looks for its bundled CLI first, made to answer `fsm-claude`."""

pytestmark = pytest.mark.skipif(
    not EXAMPLES or not Path(EXAMPLES, "quick_start.py").is_file(),
    reason="the SDK's examples are not here: set FSM_AGENT_SDK_EXAMPLES (see .ci/run)",
)

RUN = [
    ("quick_start", ()),
    ("system_prompt", ()),
    ("include_partial_messages", ()),
    ("stderr_callback_example", ()),
    ("tools_option", ()),
    ("tool_permission_callback", ()),
    ("mcp_calculator", ()),
    ("hooks", ("all",)),
    ("streaming_mode", ("all",)),
]


def run_example(name: str, args: tuple[str, ...], tmp_path: Path) -> tuple[int, str, Path]:
    """The example's exit code and output, and the workspace it ran in."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE, encoding="utf-8")
    with MessagesServer() as server:
        server.reply(*[text("4", model=MODEL) for _ in range(40)])
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path / "home"),
            "PYTHONPATH": str(site),
            "FSM_AGENT_CLAUDE": str(entry_point(tmp_path)),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "test-key",
        }
        proc = subprocess.run(
            [sys.executable, str(Path(str(EXAMPLES), f"{name}.py")), *args],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert server.bodies(), "the example asked the model nothing"
    return proc.returncode, proc.stdout + proc.stderr, workspace


def replayed(workspace: Path) -> list[Path]:
    logs = sorted((workspace / ".fsm-agent" / "sessions").glob("*.jsonl"))
    assert logs, "the example left no session log"
    proc = fsm("replay", "--check", *map(str, logs))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return logs


@pytest.mark.parametrize(("name", "args"), RUN, ids=[name for name, _ in RUN])
def test_an_sdk_example_runs_unchanged(name: str, args: tuple[str, ...], tmp_path: Path) -> None:
    code, output, workspace = run_example(name, args, tmp_path)
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    replayed(workspace)


def test_the_budget_example_ends_as_it_does_against_claude_code(tmp_path: Path) -> None:
    """Its tight budget ($0.0001) is reached by the first answer: the SDK raises the
    `ResultError` it raises against Claude Code (measured: the same line, exit 1)."""
    code, output, workspace = run_example("max_budget_usd", (), tmp_path)
    assert code == 1
    assert output.rstrip().splitlines()[-1] == (
        "claude_agent_sdk._errors.ResultError: Claude Code returned an error result: "
        "Reached maximum budget ($0.0001) (exit code: 1)"
    )
    assert "=== With Reasonable Budget ($0.10) ===\nClaude: 4" in output
    replayed(workspace)
