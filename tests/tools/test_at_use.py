"""Checks that hold at use: a directory swapped for a symlink between the workspace check
and the open cannot redirect a Read, Write or Edit (the file is opened with O_NOFOLLOW and
its real place verified, a write made relative to the verified directory), nor a Glob or
Grep (the walk opens each directory relative to its parent, never through a link, and a
listed file is read only if it still is where it was listed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsm_agent.core.tool import ToolInputError
from fsm_agent.tools.files import open_verified, read_text, write_text
from fsm_agent.tools.glob import GlobTool
from fsm_agent.tools.grep import GrepTool
from fsm_agent.tools.read import ReadTool
from fsm_agent.tools.walk import open_found, walk_found
from fsm_agent.tools.write import WriteTool
from tests.support.tools import call, make_env

SECRET = "OUTSIDE SECRET\n"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET)
    (ws / "d" / "f.txt").write_text("inside\n")
    return {"ws": ws, "outside": outside}


def swap(world: dict[str, Path]) -> None:
    """What another process does after the check: the directory becomes a link out."""
    (world["ws"] / "d").rename(world["ws"] / "d.old")
    (world["ws"] / "d").symlink_to(world["outside"])


def test_a_write_checked_then_swapped_out_is_refused(world: dict[str, Path]) -> None:
    resolved = str(world["ws"] / "d" / "f.txt")
    swap(world)
    with pytest.raises(ToolInputError, match="changed while it was being opened"):
        write_text(resolved, "pwned\n")
    assert (world["outside"] / "f.txt").read_text() == SECRET
    assert sorted(p.name for p in world["outside"].iterdir()) == ["f.txt"]


def test_a_read_checked_then_swapped_out_is_refused(world: dict[str, Path]) -> None:
    resolved = str(world["ws"] / "d" / "f.txt")
    swap(world)
    with pytest.raises(ToolInputError, match="changed while it was being opened"):
        read_text(resolved)
    with pytest.raises(ToolInputError):
        open_verified(resolved)


def test_a_file_swapped_for_a_link_is_not_followed(world: dict[str, Path]) -> None:
    target = world["ws"] / "d" / "f.txt"
    target.unlink()
    target.symlink_to(world["outside"] / "f.txt")
    with pytest.raises(ToolInputError):
        read_text(str(target))
    with pytest.raises(ToolInputError):
        write_text(str(target), "pwned\n")
    assert (world["outside"] / "f.txt").read_text() == SECRET


SWAPPER = """
import os, shutil, sys, time
ws, outside = sys.argv[1], sys.argv[2]
d, kept = os.path.join(ws, "d"), os.path.join(ws, "d.real")
end = time.time() + float(sys.argv[3])
while time.time() < end:
    try:
        os.rename(d, kept); os.symlink(outside, d); time.sleep(0.0003)
        os.unlink(d)
        os.rename(kept, d); time.sleep(0.0003)
    except OSError:  # a Write made a new `d` while it was away: keep the old one
        try:
            if os.path.isdir(d) and not os.path.islink(d) and os.path.isdir(kept):
                shutil.rmtree(d, ignore_errors=True)
                os.rename(kept, d)
        except OSError:
            pass
"""


def test_reads_and_writes_racing_a_swapping_directory_never_reach_outside(
    world: dict[str, Path], tmp_path: Path
) -> None:
    """Another process swaps `d` for a link out and back as fast as it can while the
    model reads and writes `d/f.txt` 400 times each: each call runs inside or is refused;
    none reads the outside file or writes there."""
    script = tmp_path / "swapper.py"
    script.write_text(SWAPPER)
    ws = world["ws"]
    swapper = subprocess.Popen([sys.executable, str(script), str(ws), str(world["outside"]), "20"])
    refused = 0
    try:
        env = make_env(ws)
        for n in range(400):
            read = call(ReadTool(), {"file_path": "d/f.txt"}, env)
            assert SECRET.strip() not in str(read.content)
            env = make_env(ws, read=dict(read.read_files))
            wrote = call(WriteTool(), {"file_path": "d/f.txt", "content": f"w{n}\n"}, env)
            refused += read.is_error + wrote.is_error
            assert (world["outside"] / "f.txt").read_text() == SECRET
        assert swapper.poll() is None, "the swapper stopped: the race was not run"
    finally:
        swapper.kill()
        swapper.wait()
    assert refused > 0, "no call met a swapped directory"
    assert sorted(p.name for p in world["outside"].iterdir()) == ["f.txt"]
    assert not list(world["outside"].glob(".*"))
    assert os.path.exists(ws / "d") or os.path.exists(ws / "d.real")


def test_a_search_base_checked_then_swapped_out_is_refused(world: dict[str, Path]) -> None:
    resolved = str(world["ws"] / "d")
    swap(world)
    with pytest.raises(ToolInputError, match="changed while it was being opened"):
        list(walk_found(resolved, (str(world["ws"]),)))


def test_a_directory_swapped_while_the_walk_runs_is_not_entered(world: dict[str, Path]) -> None:
    """The swap happens after the walk listed the top directory (at its first file), so
    `d` was a directory when listed and is a link out when the walk comes to it."""
    ws = world["ws"]
    (ws / "top.txt").write_text("top\n")
    swapped: list[str] = []

    def swap_once(path: str) -> bool:
        if not swapped:
            swap(world)
            swapped.append(path)
        return False

    found = [p for p, _, _ in walk_found(str(ws), (str(ws),), hidden=swap_once)]
    assert swapped
    assert found == [str(ws / "top.txt")]


def test_a_listed_file_whose_directory_is_swapped_is_not_read(world: dict[str, Path]) -> None:
    ws = world["ws"]
    listed = [(p, r) for p, r, _ in walk_found(str(ws), (str(ws),))]
    assert listed == [(str(ws / "d" / "f.txt"), str(ws / "d" / "f.txt"))]
    path, real = listed[0]
    f = open_found(path, real)
    assert f is not None
    f.close()
    swap(world)
    assert open_found(path, real) is None


def test_searches_racing_a_swapping_directory_never_reach_outside(
    world: dict[str, Path], tmp_path: Path
) -> None:
    """The swapper of the Read/Write race, against Glob and Grep over the workspace,
    300 times each: neither lists a file that is only outside nor shows its content."""
    (world["outside"] / "only_outside.txt").write_text(SECRET)
    script = tmp_path / "swapper.py"
    script.write_text(SWAPPER)
    ws = world["ws"]
    swapper = subprocess.Popen([sys.executable, str(script), str(ws), str(world["outside"]), "30"])
    grep = GrepTool()
    seen_inside = 0
    try:
        env = make_env(ws)
        for _ in range(300):
            globbed = call(GlobTool(), {"pattern": "**/*.txt"}, env)
            assert "only_outside" not in str(globbed.content)
            grepped = call(grep, {"pattern": "SECRET|inside", "output_mode": "content"}, env)
            assert "SECRET" not in str(grepped.content)
            assert "only_outside" not in str(grepped.content)
            seen_inside += "inside" in str(grepped.content)
        assert swapper.poll() is None, "the swapper stopped: the race was not run"
    finally:
        grep.close()
        swapper.kill()
        swapper.wait()
    assert seen_inside > 0, "no search ran while the directory was in place"
