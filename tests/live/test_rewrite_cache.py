"""The SDK rewrites kept between runs: reused while both files are unchanged, rebuilt
otherwise, and never in the way of a run (a damaged entry, a directory that cannot be
written, the cache turned off)."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from fsm_agent.live import rewrite_cache
from fsm_agent.live.rewrite_cache import cache_dir, cached_rewrite


class Builds:
    """A build that counts its calls and compiles what it is given, as the rewrites do."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, source: str) -> tuple[object, str]:
        self.calls += 1
        return compile(source, "m.py", "exec"), source.upper()


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("FSM_AGENT_CACHE_DIR", str(tmp_path / "cache"))
    source, rewriter = tmp_path / "m.py", tmp_path / "rewriter.py"
    source.write_text("x = 1\n")
    rewriter.write_text("# rewrites\n")
    return source, rewriter


def _call(build: Builds, source: Path, rewriter: Path) -> tuple[object, str]:
    return cached_rewrite("kind", "pkg.m", str(source), build, rewriter=str(rewriter))


def test_a_second_run_takes_the_rewrite_from_the_cache(files: tuple[Path, Path]) -> None:
    source, rewriter = files
    build = Builds()
    first = _call(build, source, rewriter)
    second = _call(build, source, rewriter)
    assert build.calls == 1
    assert second[1] == first[1] == "X = 1\n"
    namespace: dict[str, object] = {}
    exec(second[0], namespace)  # the code object itself survived the round trip
    assert namespace["x"] == 1


def test_a_changed_source_or_rewriter_is_rebuilt(files: tuple[Path, Path]) -> None:
    source, rewriter = files
    build = Builds()
    _call(build, source, rewriter)
    source.write_text("x = 22\n")
    assert _call(build, source, rewriter)[1] == "X = 22\n"
    stat = rewriter.stat()
    os.utime(rewriter, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    _call(build, source, rewriter)
    assert build.calls == 3
    assert len(list((source.parent / "cache").iterdir())) == 1  # one entry a module


def test_a_damaged_entry_is_rebuilt_and_written_again(files: tuple[Path, Path]) -> None:
    source, rewriter = files
    build = Builds()
    _call(build, source, rewriter)
    (entry,) = (source.parent / "cache").iterdir()
    entry.write_bytes(b"\x00not marshal")
    assert _call(build, source, rewriter)[1] == "X = 1\n"
    assert marshal.loads(entry.read_bytes())[1][1] == "X = 1\n"
    assert build.calls == 2


def test_a_directory_that_cannot_be_written_costs_only_the_rebuild(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, rewriter = files
    blocker = source.parent / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("FSM_AGENT_CACHE_DIR", str(blocker / "cache"))
    build = Builds()
    assert _call(build, source, rewriter)[1] == "X = 1\n"
    assert _call(build, source, rewriter)[1] == "X = 1\n"
    assert build.calls == 2


def test_an_empty_setting_turns_the_cache_off(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, rewriter = files
    monkeypatch.setenv("FSM_AGENT_CACHE_DIR", "")
    assert cache_dir() is None
    build = Builds()
    _call(build, source, rewriter)
    _call(build, source, rewriter)
    assert build.calls == 2
    assert not (source.parent / "cache").exists()


def test_the_default_directory_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FSM_AGENT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "fsm-agent"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "fsm-agent"


def test_an_entry_of_another_format_is_not_used(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, rewriter = files
    build = Builds()
    _call(build, source, rewriter)
    monkeypatch.setattr(rewrite_cache, "FORMAT", rewrite_cache.FORMAT + 1)
    _call(build, source, rewriter)
    assert build.calls == 2


def test_two_installs_sharing_the_cache_keep_their_own_entries(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two checkouts (or environments) sharing one cache directory, run in turn: each
    rebuilds once, then reuses its own entry, instead of replacing the other's every run
    (which made every run of both rebuild: about 0.1 s of each run's first request)."""
    source, rewriter = files
    other = tmp_path / "other"
    other.mkdir()
    other_source, other_rewriter = other / "m.py", other / "rewriter.py"
    other_source.write_text("x = 2\n")
    other_rewriter.write_text("# another checkout's rewriter\n")
    build = Builds()
    for _ in range(3):
        assert _call(build, source, rewriter)[1] == "X = 1\n"
        assert _call(build, other_source, other_rewriter)[1] == "X = 2\n"
    assert build.calls == 2
