"""What a run has loaded, and which TLS contexts it has made, when it first connects to
the test server: the start-up tests' one view of a real run's way to its first request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from tests.support.cli import MODEL
from tests.support.messages_server import MessagesServer

WATCH_FIRST_CONNECT = """\
import json, ssl, sys
made, loaded, seen = [], [], {}
_new = ssl.SSLContext.__new__


def _made(cls, *args, **kwargs):
    made.append(cls.__name__)
    return _new(cls, *args, **kwargs)


ssl.SSLContext.__new__ = staticmethod(_made)
for _name in ("load_verify_locations", "load_default_certs", "set_default_verify_paths"):
    def _loading(self, *args, _name=_name, _was=getattr(ssl.SSLContext, _name), **kwargs):
        loaded.append(_name)
        return _was(self, *args, **kwargs)
    setattr(ssl.SSLContext, _name, _loading)


def _hook(event, args):
    if event == "socket.connect" and not seen and args[1] == ("127.0.0.1", __PORT__):
        seen["rich"] = sorted(m for m in sys.modules if m.split(".")[0] == "rich")
        seen["modules"] = sorted(sys.modules)
        seen["contexts"] = list(made)
        seen["loaded"] = list(loaded)


sys.addaudithook(_hook)
from fsm_agent.cli.main import main

sys.argv = __ARGV__
try:
    main()
except SystemExit as exc:
    seen["exit"] = exc.code
seen["rich_at_exit"] = "rich" in sys.modules
with open(__REPORT__, "w") as out:
    json.dump(seen, out)
"""
"""A run, in a fresh interpreter, noting what was loaded and which TLS contexts were made
when it first connects to the test server (the audit hook's `socket.connect`)."""


def python_c(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -c code` in a fresh interpreter from the checkout's root, stdin closed: what
    a run loads is only seen in a process of its own."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def watched_run(
    server: MessagesServer, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """`fsm-agent run hi ARGS` against `server` under WATCH_FIRST_CONNECT: what it saw,
    and the process."""
    report = tmp_path / "first_connect.json"
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    argv = ["fsm-agent", "run", "hi", "--model", MODEL, "--cwd", str(workspace), *args]
    if "--base-url" not in args:
        argv += ["--base-url", server.url]
    port = int(server.url.rsplit(":", 1)[1])
    code = (
        WATCH_FIRST_CONNECT.replace("__PORT__", str(port))
        .replace("__ARGV__", repr(argv))
        .replace("__REPORT__", repr(str(report)))
    )
    proc = python_c(code, env={**os.environ, "ANTHROPIC_API_KEY": "test-key", **(env or {})})
    assert report.exists(), proc.stderr
    return json.loads(report.read_text()), proc
