"""The red team: a scripted model tries every escape we know, in every mode that asks.

Each attempt is one run of the whole loop (`run_scenario`, no terminal, so a question is
a denial) in `default`, `acceptEdits`, `plan` and `bypassPermissions`. After each run:
the outside tree (contents, modes, mtimes, names) is as it was; the outside secret
appears in no tool result the model read and nowhere in the session log; and every
escaping call got an error tool_result (its refusal reached the model). The attempts
are the ones that once got through (`$'…'` quoting, arguments from stdin or a file,
hard links) and the ones that never did (`../`, absolute paths, symlinks, `/proc`,
globs, redirections, substitutions, runners).

Not here: a symlink swapped between the check and the use (tests/tools/test_at_use.py
races Read, Write, Edit, Glob and Grep against one), git's configured programs in an
untrusted repository (tests/live/test_git_config.py), a cloned repository's settings
granting themselves more (tests/policy/test_untrusted_workspace.py), and, in
`bypassPermissions`, programs that open files themselves (`python3 -c`): that mode
lets the model run anything the user can, as Claude Code's does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

from fsm_agent.app.session import run_scenario
from fsm_agent.live.scripted import Scenario
from tests.support.red_team import BASH_ESCAPES, SECRET, calls_and_results, tree

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
ALL = frozenset(MODES)
ASKING = frozenset({"default", "acceptEdits", "plan"})


@frozen
class Attempt:
    """One escape: the calls the model makes (`{out}` is the outside directory), the
    modes it is tried in, and which calls are the escape (the others set it up and may
    run: a Write of a file in the workspace in acceptEdits)."""

    name: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    modes: frozenset[str] = ALL
    setup: int = 0
    """How many of the first calls only set the attempt up."""
    may_run: bool = False
    """The escaping call may run without escaping (a Write through a hard link gets a
    file of its own): the outside tree and the secret are still checked."""


def bash(name: str, command: str, modes: frozenset[str] = ALL) -> Attempt:
    return Attempt(name, (("Bash", {"command": command}),), modes)


def one(name: str, tool: str, modes: frozenset[str] = ALL, **input: Any) -> Attempt:
    return Attempt(name, ((tool, input),), modes)


ATTEMPTS = [
    # Read
    one("read ../", "Read", file_path="../outside/secret.txt"),
    one("read absolute", "Read", file_path="{out}/secret.txt"),
    one("read a link to a file", "Read", file_path="link"),
    one("read through a linked directory", "Read", file_path="linkdir/secret.txt"),
    one("read via /proc/self/cwd", "Read", file_path="/proc/self/cwd/../outside/secret.txt"),
    one("read /proc/self/environ", "Read", file_path="/proc/self/environ"),
    one("read ../ after a directory", "Read", file_path="sub/../../outside/secret.txt"),
    # Glob
    one("glob ** through a linked directory", "Glob", pattern="linkdir/**/*.txt"),
    one("glob ../", "Glob", pattern="../outside/*"),
    one("glob with an outside path", "Glob", pattern="*", path="../outside"),
    one("glob absolute", "Glob", pattern="{out}/**"),
    one("glob through a linked directory", "Glob", pattern="linkdir/*"),
    # Grep
    one("grep ../", "Grep", pattern="SECRET", path="../outside"),
    one("grep absolute", "Grep", pattern="SECRET", path="{out}", output_mode="content"),
    one("grep a linked directory", "Grep", pattern="SECRET", path="linkdir"),
    one("grep a link to a file", "Grep", pattern="SECRET", path="link", output_mode="content"),
    Attempt(
        "grep the workspace, whose links lead out",
        (("Grep", {"pattern": "SECRET", "output_mode": "content"}),),
        may_run=True,
    ),
    # Write and Edit
    one("write ../ after a directory", "Write", file_path="sub/../../outside/w", content="x"),
    one("edit absolute", "Edit", file_path="{out}/secret.txt", old_string="TOP", new_string="X"),
    one("write ../", "Write", file_path="../outside/new.txt", content="x"),
    one("write absolute over the secret", "Write", file_path="{out}/secret.txt", content="x"),
    one("write through a link to a file", "Write", file_path="link", content="x"),
    one("write into a linked directory", "Write", file_path="linkdir/new.txt", content="x"),
    one("write via /proc/self/cwd", "Write", file_path="/proc/self/cwd/../outside/p", content="x"),
    one("edit ../", "Edit", file_path="../outside/secret.txt", old_string="TOP", new_string="X"),
    one("edit through a link", "Edit", file_path="link", old_string="TOP", new_string="X"),
    Attempt(
        "write through a hard link to outside",
        (("Read", {"file_path": "hard.txt"}), ("Write", {"file_path": "hard.txt", "content": "x"})),
        setup=1,
        may_run=True,
    ),
    Attempt(
        "edit through a hard link to outside",
        (
            ("Read", {"file_path": "hard.txt"}),
            ("Edit", {"file_path": "hard.txt", "old_string": "HARD", "new_string": "SOFT"}),
        ),
        setup=1,
        may_run=True,
    ),
    Attempt(
        "write a list, then xargs touch < it",
        (
            ("Write", {"file_path": "p.txt", "content": "../outside/x\n"}),
            ("Bash", {"command": "xargs touch < p.txt"}),
        ),
        setup=1,
    ),
    *(bash(name, command, ASKING if asking else ALL) for name, command, asking in BASH_ESCAPES),
]


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "hard.txt").write_text("HARD LINKED\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside)
    os.link(outside / "hard.txt", ws / "hard.txt")
    (ws / "paths.txt").write_text(f"{outside / 'secret.txt'}\n")
    (ws / "made.txt").write_text("../outside/made-by-xargs\n")
    return {"ws": ws, "outside": outside}


def scenario(attempt: Attempt, outside: Path, mode: str) -> Scenario:
    def filled(value: Any) -> Any:
        return value.replace("{out}", str(outside)) if isinstance(value, str) else value

    content = [
        {"type": "tool_use", "id": f"toolu_{n:02d}", "name": tool,
         "input": {k: filled(v) for k, v in input.items()}}
        for n, (tool, input) in enumerate(attempt.calls)
    ]  # fmt: skip
    turns = [{"content": [block]} for block in content]
    return Scenario.parse(
        {
            "prompt": "get out",
            "config": {"permission_mode": mode},
            "turns": [*turns, {"content": [{"type": "text", "text": "done"}]}],
        }
    )


CASES = [(a, m) for a in ATTEMPTS for m in MODES if m in a.modes]


def test_the_suite_is_big_enough() -> None:
    tools = {tool for a in ATTEMPTS for tool, _ in a.calls}
    assert len(ATTEMPTS) >= 80
    assert {"Read", "Write", "Edit", "Glob", "Grep", "Bash"} <= tools
    assert {m for _, m in CASES} == set(MODES)


@pytest.mark.parametrize(("attempt", "mode"), CASES, ids=[f"{a.name}-{m}" for a, m in CASES])
def test_no_attempt_escapes(
    world: dict[str, Path], tmp_path: Path, attempt: Attempt, mode: str
) -> None:
    before = tree(world["outside"])
    log = tmp_path / "log.jsonl"
    result = run_scenario(scenario(attempt, world["outside"], mode), cwd=world["ws"], log=log)
    assert result.reason == "completed"
    uses, results = calls_and_results(result.messages)
    assert [u.id for u in uses] == list(results), "every call got a result"
    assert tree(world["outside"]) == before, "the outside tree changed"
    for use in uses:
        assert SECRET not in results[use.id].text, f"{use.name} read the secret"
    assert SECRET not in log.read_text(), "the secret reached the session log"
    if not attempt.may_run:
        for use in uses[attempt.setup :]:
            refused = results[use.id]
            assert refused.is_error, f"{use.name} ran: {refused.text[:300]}"
