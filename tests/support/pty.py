"""`fsm-agent` in a real pseudo-terminal, as a user drives it: a fixed size, a known
terminal type, no API key."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pexpect

from fsm_agent.live.claude_home import UserFiles
from tests.support.trust import trust_in

TIMEOUT = 30
ROWS, COLUMNS = 30, 100
"""The terminal's size: output wraps here whatever the developer's terminal is."""

_BETWEEN_WORDS = r"(?:\s|\x1b\[[0-9;?]*[A-Za-z])+"


def spawn(
    args: list[str], cwd: Path, *, trusted: bool = True, env: dict[str, str] | None = None
) -> pexpect.spawn:
    """`fsm-agent ARGS` in a ROWS×COLUMNS xterm with colour, no API key. `cwd` is
    `trusted` (marked in the suite's state file, as a user who accepted the trust
    question once), so a chat there starts without asking; a test of the question
    passes False. `env` adds variables."""
    inherited = os.environ.items()
    env = {k: v for k, v in inherited if k not in ("ANTHROPIC_API_KEY", "NO_COLOR")} | (env or {})
    if trusted:
        trust_in(UserFiles.of(env, env.get("HOME")).state_file, cwd)
    env.update(TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(ROWS))
    return pexpect.spawn(
        sys.executable,
        ["-m", "fsm_agent.cli", *args],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(ROWS, COLUMNS),
    )


def wrapped(text: str) -> str:
    """A pattern for `text` as the terminal shows it: a line that holds a path (a
    temporary directory, as long as the machine makes it) may wrap at any space, and
    the style codes close and open again around the break."""
    return _BETWEEN_WORDS.join(re.escape(word) for word in text.split())


def leave(child: pexpect.spawn) -> int | None:
    """Ctrl-D at the prompt, as a user leaves a chat; the exit status."""
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def logs(workspace: Path) -> list[dict]:
    """Each run's log (header, records), in the order the parent links chain them (by the
    parent's log: a conversation's runs share its session id)."""
    by_parent = {}
    for path in (workspace / ".fsm-agent" / "sessions").glob("*.jsonl"):
        lines = path.read_text().splitlines()
        header = json.loads(lines[0])
        log = {"header": header, "records": [json.loads(x) for x in lines[1:]]}
        by_parent[header.get("parent", {}).get("log")] = (str(path.resolve()), log)
    chain, parent = [], None
    while parent in by_parent and len(chain) <= len(by_parent):
        parent, log = by_parent[parent]
        chain.append(log)
    assert len(chain) == len(by_parent), "every run's log links to the one before"
    return chain
