"""The real Claude Code CLI, run offline against the project's test Messages server.

The PyPI package `claude-agent-sdk` ships the CLI itself (`_bundled/claude`); the
conformance suite and every test that measures fsm-agent against Claude Code start
it here, in a fresh HOME whose `.claude.json` trusts the workspace (a project's
`.claude/settings.json` applies only to a trusted folder), with no traffic but the
requests to `server`.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.support.messages_server import MessagesServer

INSTALL_HINT = "the real Claude Code CLI is not installed: pip install -e '.[conformance]'"
"""The one line a test without the binary skips with."""


def claude_binary() -> Path | None:
    """The bundled CLI of the installed `claude-agent-sdk`, or None."""
    spec = find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        binary = Path(root) / "_bundled" / "claude"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
    return None


def require_claude() -> Path:
    """The binary, or skip the calling test with the install hint."""
    binary = claude_binary()
    if binary is None:
        pytest.skip(INSTALL_HINT)
    return binary


def claude_version() -> str | None:
    """The bundled CLI's version as its package records it (`2.1.332`), or None."""
    binary = claude_binary()
    if binary is None:
        return None
    stamp = binary.with_name("claude.version")
    if stamp.is_file():
        return stamp.read_text().split()[0]
    return None


def trusted_home(home: Path, workspace: Path, *, trusted: bool = True, **extra: Any) -> Path:
    """Make `home` a fresh Claude config home that trusts `workspace` (or, `trusted`
    false, knows it without its trust dialog accepted) and asks nothing on first run;
    `extra` adds top-level keys to `.claude.json`."""
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "hasCompletedOnboarding": True,
        "bypassPermissionsModeAccepted": True,
        "projects": {
            str(workspace.resolve()): {
                "hasTrustDialogAccepted": trusted,
                "hasCompletedProjectOnboarding": True,
                "allowedTools": [],
            }
        },
        **extra,
    }
    (home / ".claude.json").write_text(json.dumps(config))
    return home


@dataclass(frozen=True)
class ClaudeRun:
    """What one run of the real CLI printed and how it ended."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """The `--output-format json` result object."""
        return json.loads(self.stdout)

    def lines(self) -> list[dict[str, Any]]:
        """The `--output-format stream-json` lines."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def claude_env(server: MessagesServer, home: Path, **extra: str) -> dict[str, str]:
    """The environment the CLI runs offline in: nothing of the caller's but PATH."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "IS_SANDBOX": "1",
        **extra,
    }


def run_claude(
    server: MessagesServer,
    workspace: Path,
    home: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> ClaudeRun:
    """`claude ARGS` in `workspace`, stdin from /dev/null, against `server`.

    `home` should come from `trusted_home`; `args` usually start with
    `-p PROMPT --output-format json`.
    """
    binary = require_claude()
    proc = subprocess.run(
        [str(binary), *args],
        cwd=workspace,
        env=claude_env(server, home, **(env or {})),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return ClaudeRun(proc.returncode, proc.stdout, proc.stderr)
