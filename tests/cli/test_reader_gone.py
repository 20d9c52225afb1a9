"""A reader of stdout that goes away (`| head`) stops the output, never the run: the
run finishes, its log is whole and replays, the exit code is the run's."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.cli.main import EXIT_CODES
from tests.conftest import SCENARIOS
from tests.support.cli import fsm, fsm_argv

FORMATS = [
    [],
    ["--verbose"],
    ["--quiet"],
    ["--output-format", "json"],
    ["--output-format", "stream-json"],
]


def _run_into_a_closed_pipe(
    workspace: Path, log: Path, extra: list[str], *, lines_read: int, scenario: str = "fix_bug"
) -> tuple[int, str]:
    """`fsm-agent run … | head -N`: read `lines_read` lines of stdout, then close it."""
    argv = [*fsm_argv(), "run", "--scripted", str(SCENARIOS / f"{scenario}.json")]
    proc = subprocess.Popen(
        [*argv, "--cwd", str(workspace), "--log", str(log), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(lines_read):
        proc.stdout.readline()
    proc.stdout.close()
    return _ended(proc)


def _ended(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """The process's exit code and stderr, once it ends (killed after 60 s)."""
    assert proc.stderr is not None
    try:
        stderr = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    return code, stderr


@pytest.mark.parametrize("lines_read", [0, 1])
@pytest.mark.parametrize("extra", FORMATS, ids=lambda e: " ".join(e) or "text")
def test_the_run_finishes_and_its_log_is_whole(
    workspace: Path, tmp_path: Path, extra: list[str], lines_read: int
) -> None:
    log = tmp_path / "gone.jsonl"
    code, stderr = _run_into_a_closed_pipe(workspace, log, extra, lines_read=lines_read)
    assert code == 0, stderr
    assert "Traceback" not in stderr and "never retrieved" not in stderr, stderr
    assert (workspace / "average.py").is_file()
    assert json.loads(log.read_text().splitlines()[-1])["t"] == "result"
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr
    assert "ends completed" in check.stdout


def test_the_exit_code_is_the_runs(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "gone.jsonl"
    code, stderr = _run_into_a_closed_pipe(workspace, log, [], lines_read=0, scenario="max_turns")
    assert code == EXIT_CODES["max_turns"], stderr
    assert json.loads(log.read_text().splitlines()[-1])["reason"] == "max_turns"


class _Gone(io.StringIO):
    """A stream whose reader went away."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_the_run_console_goes_quiet_instead_of_exiting() -> None:
    """Rich's own console raises SystemExit here (and points fd 1 at /dev/null)."""
    from fsm_agent.cli.run_console import RunConsole

    console = RunConsole(file=_Gone())
    console.print("lost")
    console.print("also lost")
    assert console.quiet


def test_a_chat_whose_reader_goes_away_ends_after_the_run_it_is_in(
    workspace: Path, tmp_path: Path
) -> None:
    """The banner was read, then the reader left: the run the next line starts
    finishes with its log whole, and the chat ends there, exit 0."""
    log = tmp_path / "chat.jsonl"
    argv = [*fsm_argv(), "chat", "--scripted", str(SCENARIOS / "tool_round.json")]
    proc = subprocess.Popen(
        [*argv, "--cwd", str(workspace), "--log", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    proc.stdin.write(b"write the notes\n")
    proc.stdin.close()
    code, stderr = _ended(proc)
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert json.loads(log.read_text().splitlines()[-1])["t"] == "result"
    assert (workspace / "notes.txt").read_text() == "hello\n"


@pytest.mark.parametrize("extra", FORMATS, ids=lambda e: " ".join(e) or "text")
@pytest.mark.parametrize("closed", [0, 1], ids=["stdin closed", "stdout closed"])
def test_a_closed_standard_stream_is_an_empty_one_not_a_traceback(
    workspace: Path, tmp_path: Path, extra: list[str], closed: int
) -> None:
    """`fsm-agent run … <&-` or `>&-` (a daemon, a cron job with its streams closed):
    Python has no sys.stdin or sys.stdout then. A closed stdin is one with nothing on it,
    a closed stdout a reader that is gone: the run finishes, log whole, its exit code."""
    import os

    log = tmp_path / "closed.jsonl"
    argv = [*fsm_argv(), "run", "--scripted", str(SCENARIOS / "tool_round.json")]
    proc = subprocess.run(
        [*argv, "--cwd", str(workspace), "--log", str(log), *extra],
        stdin=subprocess.DEVNULL,
        capture_output=closed == 0,
        stderr=subprocess.PIPE if closed else None,
        preexec_fn=lambda: os.close(closed),
        timeout=60,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert json.loads(log.read_text().splitlines()[-1])["reason"] == "completed"
    if closed == 0:
        assert "notes.txt now says hello." in proc.stdout.decode()


def _full_disk_error(argv: list[str], **run: Any) -> str:
    """`argv` with its stdout on a full disk (/dev/full): the one error line it must end
    with, exit 2, after whatever the run left."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, timeout=60, **run)
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("fsm-agent: error: cannot write to standard output"), line
    return line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("extra", FORMATS, ids=lambda e: " ".join(e) or "text")
def test_a_stdout_that_cannot_be_written_is_said_and_the_run_still_finishes(
    workspace: Path, tmp_path: Path, extra: list[str]
) -> None:
    """`fsm-agent run … > out` on a full disk: unlike a reader that chose to stop, the
    output is lost without anyone asking, so a script must learn it. The run finishes
    (its log whole), then one error line says so, exit 2; not a traceback, nor a run
    broken off mid-way blamed on its log."""
    log = tmp_path / "full.jsonl"
    argv = [*fsm_argv(), "run", "--scripted", str(SCENARIOS / "fix_bug.json")]
    argv += ["--cwd", str(workspace), "--log", str(log), *extra]
    line = _full_disk_error(argv, stdin=subprocess.DEVNULL)
    assert f"the run ended completed; its log: {log}" in line
    assert json.loads(log.read_text().splitlines()[-1])["reason"] == "completed"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_chat_whose_stdout_cannot_be_written_says_so(workspace: Path, tmp_path: Path) -> None:
    """`fsm-agent chat > out` on a full disk ended with exit 0 and no word, as if a
    reader had chosen to stop; now one error line, exit 2."""
    scenario = tmp_path / "chat.json"
    scenario.write_text(json.dumps({"turns": [{"content": "hello"}]}))
    argv = [*fsm_argv(), "chat", "--scripted", str(scenario), "--cwd", str(workspace)]
    _full_disk_error(argv, input=b"hi\n")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_fork_whose_stdout_cannot_be_written_says_so(scenario, tmp_path: Path) -> None:
    """`replay --fork-at … > out` on a full disk ended as if all was well; now the fork
    finishes, then one error line with its end and its log, exit 2."""
    scenario("tool_round")
    fork_log = tmp_path / "fork.jsonl"
    argv = [*fsm_argv(), "replay", str(tmp_path / "tool_round.jsonl"), "--fork-at", "6"]
    argv += ["--scripted", str(SCENARIOS / "tool_round.json"), "--log", str(fork_log)]
    line = _full_disk_error(argv, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert f"the fork ended completed; its log: {fork_log}" in line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [["sessions"], ["sessions", "--json"], ["replay", "LOG", "--path"], ["replay", "--check",
     "LOG"], ["graph"], ["coverage", "LOG"]],
    ids=" ".join,
)  # fmt: skip
def test_a_listing_whose_stdout_cannot_be_written_says_so(
    scenario, tmp_path: Path, args: list[str]
) -> None:
    """`fsm-agent sessions > out` (or `replay --path`, `graph`…) on a full disk ended
    in a traceback and exit 1, which for `replay --check` means a divergence."""
    scenario("tool_round")
    log = str(tmp_path / "tool_round.jsonl")
    argv = [*fsm_argv(), *(log if a == "LOG" else a for a in args)]
    _full_disk_error(argv, stdin=subprocess.DEVNULL, cwd=tmp_path)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--scripted", str(SCENARIOS / "max_turns.json"), "--quiet"], EXIT_CODES["max_turns"]),
        (["--scripted", "no-such-scenario.json"], 2),
    ],
    ids=["quiet run that did not complete", "usage error"],
)
def test_a_stderr_whose_reader_is_gone_keeps_the_exit_code(
    workspace: Path, args: list[str], code: int
) -> None:
    """`fsm-agent run -q … 2>&1 | head -1`: the stderr line found its reader gone, and
    the run that ended max_turns (or the usage error) exited 0, a success to a script;
    the line is lost, the exit code still says how it ended."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [*fsm_argv(), "run", *args, "--cwd", str(workspace)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=write,
            timeout=60,
        )
    finally:
        os.close(write)
    assert proc.returncode == code
