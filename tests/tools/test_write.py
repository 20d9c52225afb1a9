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


def _read_then_write(ws: Path, target: Path, content: str) -> ToolOutcome:
    env = make_env(ws)
    read = call(ReadTool(), {"file_path": str(target)}, env)
    return call(WRITE, {"file_path": str(target), "content": content}, after(env, read))


def test_a_hard_link_to_a_file_outside_is_never_written_through(ws: Path) -> None:
    """The name in the workspace gets a new file; the outside file behind the other
    name keeps its content (it used to be written in place)."""
    outside = ws.parent / "outside" / "keep.txt"
    link = ws / "link.txt"
    os.link(outside, link)
    out = _read_then_write(ws, link, "new\n")
    assert not out.is_error, out.content
    assert link.read_text() == "new\n"
    assert outside.read_text() == "original\n"
    assert os.stat(link).st_ino != os.stat(outside).st_ino


def test_a_write_keeps_the_files_mode_and_a_symlink_stays_a_symlink(ws: Path) -> None:
    real = ws / "real.sh"
    real.write_text("echo old\n")
    real.chmod(0o751)
    alias = ws / "alias.sh"
    alias.symlink_to(real)
    out = _read_then_write(ws, alias, "echo new\n")
    assert not out.is_error, out.content
    assert alias.is_symlink() and os.readlink(alias) == str(real)
    assert real.read_text() == "echo new\n"
    assert real.stat().st_mode & 0o7777 == 0o751
    assert sorted(p.name for p in ws.iterdir()) == ["alias.sh", "real.sh"], "no temp file left"


def test_a_new_file_gets_the_mode_the_umask_gives(ws: Path) -> None:
    old = os.umask(0o027)
    try:
        call(WRITE, {"file_path": str(ws / "new.txt"), "content": "x"}, make_env(ws))
    finally:
        os.umask(old)
    assert (ws / "new.txt").stat().st_mode & 0o777 == 0o640


def test_a_read_only_file_stays_refused(ws: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write any file")
    target = ws / "ro.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    out = _read_then_write(ws, target, "new\n")
    assert out.is_error
    assert target.read_text() == "keep\n"


KILLED_WRITER = """
import sys
from pathlib import Path
from fsm_agent.tools.read import ReadTool
from fsm_agent.tools.write import WriteTool
from tests.support.tools import after, call, make_env

ws, target = Path(sys.argv[1]), Path(sys.argv[2])
env = make_env(ws)
env = after(env, call(ReadTool(), {"file_path": str(target), "limit": 1}, env))
print("writing", flush=True)
call(WriteTool(), {"file_path": str(target), "content": "n" * 100_000_000}, env)
print("done", flush=True)
"""


def test_a_kill_inside_a_write_leaves_the_old_content_or_the_new_never_part(
    ws: Path, tmp_path: Path
) -> None:
    """SIGKILL while a 100 MB Write is under way: the child is killed as soon as the
    temporary file beside the target holds some of the new content, so the kill lands
    inside the write (retried until one does); the target is then whole, old or new."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    target = ws / "big.txt"
    inside = 0
    for _ in range(8):
        target.write_text("old\n" * 1000)
        for leftover in ws.glob(".big.txt.*"):
            leftover.unlink()
        child = subprocess.Popen(
            [sys.executable, str(script), str(ws), str(target)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"writing\n"
        while child.poll() is None:
            temps = list(ws.glob(".big.txt.*.fsm-tmp"))
            partial = 0 < _size(temps[0]) < 100_000_000 if temps else False
            if partial or _size(target) not in (4000, 100_000_000):  # written in place
                child.send_signal(signal.SIGKILL)
                inside += 1
                break
        child.wait()
        content = target.read_bytes()
        assert content in (b"old\n" * 1000, b"n" * 100_000_000), len(content)
        if inside >= 2:
            break
    assert inside >= 1, "no kill landed inside a write"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
