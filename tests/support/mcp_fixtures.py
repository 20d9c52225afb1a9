"""MCP servers for the tests: the small one in `mcp_server.py`, the PyPI servers
installed with the test extra, and `@modelcontextprotocol/server-everything` from npm
where Node is (installed once into a cache directory; the test skips, in one line,
without Node or when npm cannot install it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fsm_agent.core.mcp_config import McpServerConfig
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
SERVER = ROOT / "tests" / "support" / "mcp_server.py"
EVERYTHING = "@modelcontextprotocol/server-everything"
NPM_CACHE = Path(os.environ.get("FSM_AGENT_TEST_NPM", Path.home() / ".cache" / "fsm-agent-tests"))


def probe(name: str = "probe", *args: str) -> McpServerConfig:
    """The small test server over stdio; `args` are its options (`--garbage`, …)."""
    return McpServerConfig(name, "stdio", "dynamic", command=sys.executable,
                           args=(str(SERVER), *args))  # fmt: skip


def pypi_server(name: str) -> str:
    """The command of `mcp-server-time` or `mcp-server-git`, from the test extra."""
    path = BIN / f"mcp-server-{name}"
    if not path.exists():
        pytest.skip(f"mcp-server-{name} is not installed: pip install -e '.[test]'")
    return str(path)


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "notes.txt").write_text("hello\n")
    return path


def everything_command() -> str:
    """The npm server's command, installed into `NPM_CACHE` on first use."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node is not installed: the npm MCP server is not tested")
    binary = NPM_CACHE / "node_modules" / ".bin" / "mcp-server-everything"
    if not binary.exists():
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--prefix", str(NPM_CACHE), "--no-audit", "--no-fund", EVERYTHING],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0 or not binary.exists():
            pytest.skip(f"npm could not install {EVERYTHING} (offline?)")
    return str(binary)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def served(transport: str) -> Iterator[str]:
    """The small server over `http` (streamable HTTP) or `sse` on a free local port: its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), f"--{transport}", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {transport} MCP server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
