"""The CLAUDE.md rules of `context.claude_md` are pure: a path is taken as the run names
it, whatever the file system holds there, so a replay on another machine (where a
workspace is a link, or is not there at all) finds the same candidates."""

from __future__ import annotations

import os
from pathlib import Path

from fsm_agent.context.claude_md import matching_rules, nested_candidates
from fsm_agent.core.config import PathRule


def test_a_workspace_that_is_a_link_is_taken_as_named_not_resolved(tmp_path: Path) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    read = str(link / "sub" / "x.py")
    found = nested_candidates([str(link)], [read])
    assert os.path.join(str(link), "sub", "CLAUDE.md") in found
    rule = PathRule("rules/py.md", ("sub/*.py",), "python rules")
    assert matching_rules([str(link)], [rule], [read], []) == [rule]


def test_a_workspace_that_is_not_there_gives_the_same_candidates() -> None:
    root = "/nowhere/fsm-agent/ws"
    found = nested_candidates([root], [f"{root}/a/b/c.py"])
    assert found[:3] == [f"{root}/a/CLAUDE.md", f"{root}/a/.claude/CLAUDE.md",
                         f"{root}/a/CLAUDE.local.md"]  # fmt: skip
    assert f"{root}/a/b/CLAUDE.md" in found
