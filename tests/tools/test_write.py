import os
from pathlib import Path

import pytest

from fsm_agent.core.tool import ToolOutcome
from fsm_agent.tools.read import ReadTool
from fsm_agent.tools.write import WriteTool
from tests.support.tools import after, call, make_env, text

WRITE = WriteTool()
NOT_READ = (
    "<tool_use_error>File has not been read yet. Read it first before writing to it."
    "</tool_use_error>"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("original\n")
    return tmp_path / "ws"


def test_creates_a_new_file_with_parent_directories(ws: Path) -> None:
    target = ws / "a" / "b" / "new.py"
    out = call(WRITE, {"file_path": str(target), "content": "print(1)\n"}, make_env(ws))
    assert not out.is_error
    assert text(out) == f"File created successfully at: {target}"
    assert target.read_text() == "print(1)\n"
    assert out.read_files == {str(target): os.stat(target).st_mtime}


def test_content_is_written_byte_for_byte(ws: Path) -> None:
    target = ws / "dos.txt"
    call(WRITE, {"file_path": "dos.txt", "content": "a\r\nb\ré\n"}, make_env(ws))
    assert target.read_bytes() == "a\r\nb\ré\n".encode()


def test_overwriting_an_unread_file_is_refused(ws: Path) -> None:
    target = ws / "exists.txt"
    target.write_text("old\n")
    out = call(WRITE, {"file_path": str(target), "content": "new\n"}, make_env(ws))
    assert out.is_error
    assert text(out) == NOT_READ
    assert target.read_text() == "old\n"


def test_overwriting_after_read_succeeds(ws: Path) -> None:
    target = ws / "exists.txt"
    target.write_text("old\n")
    env = make_env(ws)
    env = after(env, call(ReadTool(), {"file_path": str(target)}, env))
    out = call(WRITE, {"file_path": str(target), "content": "new\n"}, env)
    assert not out.is_error
    assert text(out) == f"The file {target} has been updated successfully."
    assert target.read_text() == "new\n"
    assert out.read_files == {str(target): os.stat(target).st_mtime}


def test_a_file_changed_since_it_was_read_is_refused(ws: Path) -> None:
    target = ws / "exists.txt"
    target.write_text("old\n")
    env = make_env(ws)
    env = after(env, call(ReadTool(), {"file_path": str(target)}, env))
    target.write_text("changed by a linter\n")
    os.utime(target, (1_000_000, 1_000_000))
    out = call(WRITE, {"file_path": str(target), "content": "new\n"}, env)
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>File has been modified since read, either by the user or by a "
        "linter. Read it again before attempting to write it.</tool_use_error>"
    )
    assert target.read_text() == "changed by a linter\n"


def test_a_file_it_wrote_can_be_written_again(ws: Path) -> None:
    env = make_env(ws)
    first = call(WRITE, {"file_path": "f.txt", "content": "1"}, env)
    second = call(WRITE, {"file_path": "f.txt", "content": "2"}, after(env, first))
    assert not second.is_error
    assert (ws / "f.txt").read_text() == "2"


def test_a_directory_cannot_be_written(ws: Path) -> None:
    (ws / "d").mkdir()
    out = call(WRITE, {"file_path": str(ws / "d"), "content": "x"}, make_env(ws))
    assert out.is_error
    assert "directory" in text(out)
    assert (ws / "d").is_dir()


def test_schema_requires_content(ws: Path) -> None:
    out = call(WRITE, {"file_path": str(ws / "x")}, make_env(ws))
    assert out.is_error
    assert "InputValidationError" in text(out)
    assert not (ws / "x").exists()


# Confinement: refused, and nothing outside is created or changed.


def assert_refused(out: ToolOutcome, ws: Path) -> None:
    assert out.is_error
    assert "outside the workspace" in text(out)
    assert str(ws) in text(out)
    assert out.read_files == {}
    outside = ws.parent / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "original\n"


def test_refuses_dot_dot_escape(ws: Path) -> None:
    env = make_env(ws)
    assert_refused(call(WRITE, {"file_path": "../outside/keep.txt", "content": "x"}, env), ws)
    assert_refused(call(WRITE, {"file_path": "../outside/new.txt", "content": "x"}, env), ws)


def test_refuses_absolute_path_outside(ws: Path) -> None:
    target = ws.parent / "outside" / "new.txt"
    assert_refused(call(WRITE, {"file_path": str(target), "content": "x"}, make_env(ws)), ws)


def test_refuses_symlinks_pointing_outside(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link.txt").symlink_to(outside / "keep.txt")
    (ws / "dir-link").symlink_to(outside)
    (ws / "dangling.txt").symlink_to(outside / "planted.txt")
    # Even a "read" of the target recorded under its real path must not help.
    env = make_env(ws, read={str(outside / "keep.txt"): os.stat(outside / "keep.txt").st_mtime})
    for path in ("link.txt", "dir-link/new.txt", "dir-link/keep.txt", "dangling.txt"):
        assert_refused(call(WRITE, {"file_path": str(ws / path), "content": "x"}, env), ws)


def test_writes_in_additional_dirs(ws: Path) -> None:
    extra = ws.parent / "outside"
    env = make_env(ws, extra=(extra,))
    out = call(WRITE, {"file_path": str(extra / "added.txt"), "content": "ok"}, env)
    assert not out.is_error
    assert (extra / "added.txt").read_text() == "ok"


def test_a_path_ending_in_a_slash_names_no_file(ws: Path) -> None:
    out = call(WRITE, {"file_path": "newdir/", "content": "x"}, make_env(ws))
    assert out.is_error
    assert "newdir/ ends in /" in text(out)
    assert not (ws / "newdir").exists()


@pytest.mark.parametrize("rel", ["f.txt/child", "f.txt/a/b.txt"])
def test_a_file_in_the_way_of_the_directories_is_named(ws: Path, rel: str) -> None:
    (ws / "f.txt").write_text("keep\n")
    out = call(WRITE, {"file_path": rel, "content": "x"}, make_env(ws))
    assert text(out) == (
        f"<tool_use_error>Cannot create {ws / rel}: {ws / 'f.txt'} is a file, "
        "not a directory.</tool_use_error>"
    )
    assert (ws / "f.txt").read_text() == "keep\n"


def test_a_file_whose_name_is_not_utf8_is_not_written(ws: Path) -> None:
    os.symlink(b"caf\xe9.txt", os.fsencode(ws) + b"/link.txt")
    out = call(WRITE, {"file_path": "link.txt", "content": "x"}, make_env(ws))
    assert out.is_error
    assert "a name that is not UTF-8" in text(out)
    assert not os.path.exists(os.fsencode(ws) + b"/caf\xe9.txt")


def test_text_utf8_cannot_hold_creates_no_file(ws: Path) -> None:
    target = ws / "new.txt"
    out = call(WRITE, {"file_path": str(target), "content": "x\ud800y"}, make_env(ws))
    assert out.is_error
    assert "lone surrogate" in text(out)
    assert not target.exists()


def test_overwriting_a_utf16le_file_keeps_its_encoding(ws: Path) -> None:
    """Claude Code writes over a file in the file's encoding; a UTF-16LE file keeps
    its byte order mark too, so it is read as UTF-16LE again."""
    target = ws / "win.txt"
    target.write_bytes(b"\xff\xfe" + "old\r\n".encode("utf-16-le"))
    env = make_env(ws)
    env = after(env, call(ReadTool(), {"file_path": str(target)}, env))
    out = call(WRITE, {"file_path": str(target), "content": "néw\n"}, env)
    assert not out.is_error, out.content
    assert target.read_bytes() == b"\xff\xfe" + "néw\n".encode("utf-16-le")
