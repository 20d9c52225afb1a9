import os
from pathlib import Path

import pytest

from fsm_agent.tools.workspace import check_path
from tests.support.tools import make_env


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return tmp_path / "ws"


def test_relative_path_is_resolved_against_cwd(ws: Path) -> None:
    check = check_path("src/a.py", make_env(ws))
    assert check.inside
    assert check.resolved == str(ws / "src" / "a.py")


def test_dot_dot_escape_is_outside(ws: Path) -> None:
    check = check_path("src/../../outside/x", make_env(ws))
    assert not check.inside
    assert check.resolved == str(ws.parent / "outside" / "x")


def test_absolute_path_elsewhere_is_outside(ws: Path) -> None:
    assert not check_path("/etc/passwd", make_env(ws)).inside


def test_sibling_with_common_prefix_is_outside(ws: Path) -> None:
    (ws.parent / "ws-evil").mkdir()
    assert not check_path(str(ws.parent / "ws-evil" / "f"), make_env(ws)).inside


def test_symlink_to_outside_is_outside_even_for_new_files(ws: Path) -> None:
    (ws / "door").symlink_to(ws.parent / "outside")
    env = make_env(ws)
    check = check_path(str(ws / "door" / "new" / "file.txt"), env)
    assert not check.inside
    assert check.resolved == str(ws.parent / "outside" / "new" / "file.txt")


def test_dangling_symlink_to_outside_is_outside(ws: Path) -> None:
    (ws / "dangling").symlink_to(ws.parent / "outside" / "not-yet")
    assert not check_path(str(ws / "dangling"), make_env(ws)).inside


def test_symlink_within_workspace_resolves_to_target(ws: Path) -> None:
    (ws / "src" / "real.py").write_text("x")
    (ws / "alias.py").symlink_to(ws / "src" / "real.py")
    check = check_path("alias.py", make_env(ws))
    assert check.inside
    assert check.resolved == str(ws / "src" / "real.py")


def test_additional_dirs_are_part_of_the_workspace(ws: Path) -> None:
    extra = ws.parent / "outside"
    check = check_path(str(extra / "notes.md"), make_env(ws, extra=(extra,)))
    assert check.inside
    assert check.roots == (str(ws), str(extra))


def test_cwd_given_through_a_symlink_still_contains_its_files(ws: Path) -> None:
    link = ws.parent / "link-to-ws"
    link.symlink_to(ws)
    check = check_path(str(link / "src" / "a.py"), make_env(link))
    assert check.inside
    assert check.roots == (str(ws),)


def test_refusal_names_the_path_and_the_workspace(ws: Path) -> None:
    outcome = check_path("../outside/x", make_env(ws)).refusal()
    assert outcome.is_error
    assert isinstance(outcome.content, str)
    assert "outside the workspace" in outcome.content
    assert str(ws) in outcome.content
    assert os.path.join(str(ws.parent), "outside", "x") in outcome.content
