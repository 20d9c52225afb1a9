import asyncio
import base64
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from fsm_agent.core.messages import ImageBlock, ImageSource
from fsm_agent.core.tool import INTERRUPTED, ToolInterrupted, ToolOutcome
from fsm_agent.tools import output
from fsm_agent.tools.bash import (
    DESCRIPTION,
    KEEP_BYTES,
    BashTool,
    no_output_expected,
    timeout_of,
)
from tests.support.tools import call, make_env, text

BASH = BashTool()


def bash(cwd: Path, command: str, **extra: object) -> ToolOutcome:
    return call(BASH, {"command": command, **extra}, make_env(cwd))


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting for its reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_dead(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_runs_in_the_working_directory(tmp_path: Path) -> None:
    out = bash(tmp_path, "pwd; ls", description="Show where we are")
    (tmp_path / "marker").write_text("")
    assert not out.is_error
    assert text(out).splitlines()[0] == str(tmp_path)


def test_stdout_and_stderr_are_both_returned(tmp_path: Path) -> None:
    out = bash(tmp_path, "echo to-out; echo to-err >&2")
    assert text(out) == "to-out\nto-err"


def test_files_it_creates_land_in_cwd(tmp_path: Path) -> None:
    bash(tmp_path, "echo hi > made.txt")
    assert (tmp_path / "made.txt").read_text() == "hi\n"


def test_non_zero_exit_is_an_error_with_the_code(tmp_path: Path) -> None:
    out = bash(tmp_path, "echo oops; exit 3")
    assert out.is_error
    assert text(out) == "Exit code 3\noops"


def test_death_by_signal_is_reported(tmp_path: Path) -> None:
    out = bash(tmp_path, "kill -9 $$")
    assert out.is_error
    assert text(out).startswith("Killed by signal 9")


def test_no_output_and_empty_stdin(tmp_path: Path) -> None:
    out = bash(tmp_path, "cat")
    assert not out.is_error
    assert text(out) == "(Bash completed with no output)"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    start = time.monotonic()
    out = bash(tmp_path, "sleep 30 & echo $! > child.pid; echo started; wait", timeout=500)
    assert time.monotonic() - start < 5
    assert out.is_error
    assert text(out).startswith("Command timed out after 500 ms")
    assert "started" in text(out)
    assert wait_dead(int((tmp_path / "child.pid").read_text()))


def test_background_leftovers_are_stopped_when_the_command_returns(tmp_path: Path) -> None:
    start = time.monotonic()
    out = bash(tmp_path, "sleep 30 & echo $! > child.pid; echo done")
    assert time.monotonic() - start < 5
    assert text(out) == "done"
    assert wait_dead(int((tmp_path / "child.pid").read_text()))


def test_cancellation_kills_the_group_and_propagates(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"

    async def scenario() -> None:
        task = asyncio.ensure_future(
            BASH.run({"command": "sleep 30 & echo $! > child.pid; wait"}, make_env(tmp_path))
        )
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.02)
        task.cancel()
        await task

    start = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(scenario())
    assert time.monotonic() - start < 5
    assert wait_dead(int(pid_file.read_text()))


def test_cancellation_hands_over_what_the_command_printed(tmp_path: Path) -> None:
    """The cancel goes on (a `CancelledError`), carrying Claude Code's error for a killed
    command, with the output so far: Ctrl-C does not lose it."""
    started = tmp_path / "started"

    async def scenario() -> None:
        task = asyncio.ensure_future(
            BASH.run({"command": "printf 'a\\nb\\n'; : > started; sleep 30"}, make_env(tmp_path))
        )
        while not started.exists():
            await asyncio.sleep(0.02)
        task.cancel()
        await task

    with pytest.raises(ToolInterrupted) as caught:
        asyncio.run(scenario())
    outcome = caught.value.outcome
    assert (outcome.content, outcome.is_error, outcome.interrupted) == (
        f"Exit code 137\n{INTERRUPTED}\na\nb",
        True,
        True,
    )


def test_cancellation_as_the_command_starts_kills_what_it_started(tmp_path: Path) -> None:
    """On a loaded machine the command can run (and start a child) before the event loop
    hands its start back to the tool: a cancel then (SIGTERM, Ctrl-C) left asyncio's
    clean-up to kill the shell alone, and the child lived on. The start is slowed here
    so the cancel lands in that window every time."""
    pid_file = tmp_path / "child.pid"
    started = asyncio.Event()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        real = loop.subprocess_exec

        async def slow_exec(*args: Any, **kwargs: Any) -> Any:
            result = await real(*args, **kwargs)
            while not (pid_file.exists() and pid_file.read_text().strip()):
                await asyncio.sleep(0.01)
            started.set()
            await asyncio.sleep(0.3)
            return result

        loop.subprocess_exec = slow_exec  # type: ignore[method-assign]
        task = asyncio.ensure_future(
            BASH.run({"command": "sleep 30 & echo $! > child.pid; wait"}, make_env(tmp_path))
        )
        await started.wait()
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(scenario())
    assert wait_dead(int(pid_file.read_text()))


def test_long_output_comes_back_whole_for_the_context_to_store(tmp_path: Path) -> None:
    """Claude Code keeps Bash output inline up to 30,000 characters, then saves it to a
    file and shows a preview: the tool hands over all of it, and the tool-result budget
    stores what is over Bash's 30,000 (tests/context/test_context.py)."""
    out = text(bash(tmp_path, "printf HEAD; head -c 100000 /dev/zero | tr '\\0' x; printf TAIL"))
    assert out == "HEAD" + "x" * 100_000 + "TAIL"


def test_huge_output_is_bounded_and_counted(tmp_path: Path) -> None:
    out = text(bash(tmp_path, "printf HEAD; head -c 3000000 /dev/zero | tr '\\0' y; printf TAIL"))
    assert out.startswith("HEAD")
    assert out.endswith("TAIL")
    kept = 2 * KEEP_BYTES
    assert f"[{3_000_008 - kept} characters truncated]" in out
    assert len(out) < kept + 100


def test_failing_command_output_keeps_a_head_and_a_tail_of_ten_thousand(tmp_path: Path) -> None:
    """As Claude Code's excerpt of a failing command: about 10,000 characters."""
    out = bash(tmp_path, "printf HEAD; head -c 50000 /dev/zero | tr '\\0' z; printf TAIL; exit 1")
    assert out.is_error
    shown = text(out)
    assert shown.startswith("Exit code 1\nHEADzzz") and shown.endswith("zzzTAIL")
    assert "[40008 characters truncated]" in shown
    assert (
        len(shown.replace("\n\n... [40008 characters truncated] ...\n\n", ""))
        == len("Exit code 1\n") + 10_000
    )


def test_timeout_is_clamped_not_refused(tmp_path: Path) -> None:
    assert timeout_of({"command": "x"}) == 120_000
    assert timeout_of({"command": "x", "timeout": 5_000}) == 5_000
    assert timeout_of({"command": "x", "timeout": 10**9}) == 600_000
    assert not bash(tmp_path, "true", timeout=10**9).is_error


def test_background_mode_is_rejected_clearly(tmp_path: Path) -> None:
    out = bash(tmp_path, "touch ran", run_in_background=True)
    assert out.is_error
    assert "run_in_background is not supported" in text(out)
    assert not (tmp_path / "ran").exists()


def test_schema_rejects_a_non_positive_timeout(tmp_path: Path) -> None:
    out = bash(tmp_path, "touch ran", timeout=0)
    assert "InputValidationError" in text(out)
    assert not (tmp_path / "ran").exists()


def test_job_control_background_jobs_are_stopped_too(tmp_path: Path) -> None:
    """`set -m` gives each background job a process group of its own; it stays in the
    command's session, and is stopped with it."""
    out = bash(tmp_path, "set -m; sleep 30 & echo $! > child.pid; echo done")
    assert text(out) == "done"
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert wait_dead(pid)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("flag", [False, True])
def test_dangerously_disable_sandbox_is_part_of_the_schema(tmp_path: Path, flag: bool) -> None:
    """Claude Code's Bash takes `dangerouslyDisableSandbox`; with no sandbox (as here)
    it changes nothing, and a call that sets it runs like any other."""
    out = bash(tmp_path, "touch ran && echo ok", dangerouslyDisableSandbox=flag)
    assert not out.is_error, out.content
    assert text(out) == "ok"
    assert (tmp_path / "ran").exists()


def test_cdpath_does_not_send_cd_outside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The permission check follows `cd sub` to the workspace's `sub`; with the user's
    CDPATH the shell went to another `sub`, outside, and the check judged the wrong place."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    monkeypatch.setenv("CDPATH", str(outside))
    out = bash(workspace, "cd sub && pwd")
    assert text(out).strip() == str(workspace / "sub")


def test_git_does_not_wait_for_an_editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As Claude Code sets `GIT_EDITOR=true`: `git commit --amend` (or `rebase --continue`)
    keeps the message it has instead of opening an editor no one can type in, which
    held the command until its timeout."""
    monkeypatch.setenv("GIT_EDITOR", "false")
    for setup in (
        "git init -q",
        "git config user.email a@b.c",
        "git config user.name n",
        "echo a > a",
        "git add a",
        "git commit -qm first",
    ):
        assert not bash(tmp_path, setup).is_error
    out = bash(tmp_path, "git commit -q --amend && git log --format=%s")
    assert not out.is_error, out.content
    assert text(out) == "first"


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("grep needle hay.txt", "(Bash completed with no output)"),
        ("rg() { return 1; }; rg needle hay.txt", "(Bash completed with no output)"),
        ("cat hay.txt | grep -c needle", "0"),
        ("cd . && grep needle hay.txt", "(Bash completed with no output)"),
        ("diff hay.txt other.txt", "1c1\n< hay\n---\n> other"),
        ("test -f missing", "(Bash completed with no output)"),
        ("[ -f missing ]", "(Bash completed with no output)"),
        ("find . missing -name hay.txt", None),
    ],
)
def test_an_exit_code_of_one_that_answers_is_not_a_failure(
    tmp_path: Path, command: str, shown: str | None
) -> None:
    """As Claude Code reads exit codes (`commandSemantics.ts`): grep's and rg's 1 is "no
    matches", diff's "files differ", test's "false", find's "some directories were
    inaccessible"; judged by the last command of the line. It was an error `Exit code 1`.
    (`rg` is a shell function here: what counts is the name, and ripgrep may be absent.)"""
    (tmp_path / "hay.txt").write_text("hay\n")
    (tmp_path / "other.txt").write_text("other\n")
    out = call(BASH, {"command": command}, evolve(make_env(tmp_path), wants_response=True))
    assert not out.is_error, out.content
    if shown is not None:
        assert text(out) == shown
    assert out.response is not None
    assert out.response["returnCodeInterpretation"]


@pytest.mark.parametrize(
    "command",
    [
        "grep -q needle missing.txt",
        "diff missing.txt hay.txt",
        "grep needle hay.txt && echo x",
        "false",
        "grep needle hay.txt; exit 1",
    ],
)
def test_other_exit_codes_stay_failures(tmp_path: Path, command: str) -> None:
    (tmp_path / "hay.txt").write_text("hay\n")
    out = bash(tmp_path, command)
    assert out.is_error
    assert text(out).startswith("Exit code ")


def test_blank_lines_around_the_output_are_left_out(tmp_path: Path) -> None:
    """As Claude Code shows output: without its leading blank lines and trailing
    whitespace, the indentation of its first line kept."""
    out = call(
        BASH,
        {"command": "printf '\\n \\n  hi  \\n\\n'"},
        evolve(make_env(tmp_path), wants_response=True),
    )
    assert text(out) == "  hi"
    assert out.response is not None and out.response["stdout"] == "  hi"


def test_claude_codes_timeout_variables_set_the_default_and_the_maximum(tmp_path: Path) -> None:
    """`BASH_DEFAULT_TIMEOUT_MS` and `BASH_MAX_TIMEOUT_MS`, read as Claude Code's
    `timeouts.ts` reads them: the maximum is never below the default, and a value that
    is not a positive number is ignored. The tool's description says what is in force."""
    tool = BashTool({"BASH_DEFAULT_TIMEOUT_MS": "300", "BASH_MAX_TIMEOUT_MS": "900000"})
    assert tool.timeout_of({"command": "x"}) == 300
    assert tool.timeout_of({"command": "x", "timeout": 800_000}) == 800_000
    assert tool.timeout_of({"command": "x", "timeout": 10**9}) == 900_000
    assert "default 300, at most 900000" in tool.description
    assert "max 900000" in tool.input_schema["properties"]["timeout"]["description"]
    out = call(tool, {"command": "sleep 30"}, make_env(tmp_path))
    assert text(out) == "Command timed out after 300 ms"

    raised = BashTool({"BASH_DEFAULT_TIMEOUT_MS": "700000"})
    assert raised.timeout_of({"command": "x", "timeout": 10**9}) == 700_000
    ignored = BashTool({"BASH_DEFAULT_TIMEOUT_MS": "0", "BASH_MAX_TIMEOUT_MS": "ten"})
    assert ignored.timeout_of({"command": "x", "timeout": 10**9}) == 600_000
    assert ignored.timeout_of({"command": "x"}) == 120_000
    assert BashTool({}).description == DESCRIPTION


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 20


def test_an_image_printed_as_a_data_uri_is_sent_as_an_image(tmp_path: Path) -> None:
    """As Claude Code's Bash: output that is one `data:image/…;base64,` URI (a plot a
    script prints) reaches the model as the image, with the type its bytes say."""
    (tmp_path / "plot.png").write_bytes(PNG)
    command = "printf '\\n%s\\n' \"data:image/jpeg;base64,$(base64 -w0 plot.png)\""
    out = call(BASH, {"command": command}, evolve(make_env(tmp_path), wants_response=True))
    assert not out.is_error
    data = base64.b64encode(PNG).decode()
    assert out.content == (ImageBlock(ImageSource(media_type="image/png", data=data)),)
    assert out.response == {
        "stdout": f"data:image/jpeg;base64,{data}",
        "stderr": "",
        "interrupted": False,
        "isImage": True,
        "noOutputExpected": False,
    }


@pytest.mark.parametrize(
    "printed",
    [
        "data:image/png;base64,bm90IGFuIGltYWdl",  # base64, but not of an image
        "data:image/png;base64,%%%",
        "data:text/plain;base64,iVBORw0KGgo=",
        "see data:image/png;base64,iVBORw0KGgo=",
    ],
)
def test_output_that_is_no_image_stays_text(tmp_path: Path, printed: str) -> None:
    out = bash(tmp_path, f"echo '{printed}'")
    assert text(out) == printed


def test_a_hooks_replacement_marked_as_an_image_is_rendered_as_one() -> None:
    """A PostToolUse hook's `updatedToolOutput` with `isImage` is shown as Claude Code's
    `mapToolResultToToolResultBlockParam` shows it: the image, if it is one."""
    data = base64.b64encode(PNG).decode()
    value = {"stdout": f"data:image/png;base64,{data}", "stderr": "", "interrupted": False}
    image = (ImageBlock(ImageSource(media_type="image/png", data=data)),)
    assert output.rendered("Bash", True, {**value, "isImage": True}) == image
    assert output.rendered("Bash", True, value) == value["stdout"]
    not_one = {**value, "stdout": "data:image/png;base64,AAAA", "isImage": True}
    assert output.rendered("Bash", True, not_one) == "data:image/png;base64,AAAA"


def test_a_command_too_long_for_the_system_says_so_plainly(tmp_path: Path) -> None:
    """A heredoc writing a large file is longer than one argument may be (128 KiB on
    Linux): the model read `Bash failed: OSError: [Errno 7] …`; now what to do instead."""
    if sys.platform != "linux":
        pytest.skip("the limit on one argument is Linux's")
    command = "cat > big.txt <<'EOF'\n" + ("x" * 99 + "\n") * 2000 + "EOF"
    out = bash(tmp_path, command)
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>The command is too long to run (200025 bytes; the system "
        "refused it as an argument list too long). Write long content with the Write "
        "tool, or split the command.</tool_use_error>"
    )
    assert not (tmp_path / "big.txt").exists()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("mkdir d", True),
        ("mkdir -p a/b && touch a/b/c", True),
        ("mv a b; cp b c; rm c", True),
        ("cd sub", True),
        ("ln -s a b", True),
        ("echo hi", False),
        ("ls", False),
        ("true", False),
        ("git init -q", False),
        ("touch z | cat", False),
        ("", False),
    ],
)
def test_no_output_expected_is_claude_codes_silent_commands(command: str, expected: bool) -> None:
    """As measured on Claude Code 2.1.x, for `tool_use_result.noOutputExpected`."""
    assert no_output_expected(command) is expected
