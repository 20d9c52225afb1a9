"""Text from the command line and standard input that is not UTF-8 (a Latin-1 file piped
in, a stray byte in an argument): a usage error before anything runs, never a traceback
from the log writer after the log file was opened."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS
from tests.support.cli import fsm

BAD = b"caf\xe9 \xff"
ANSWER = {"turns": [{"content": "Noted."}, {"content": "Noted again."}]}


def fsm_bytes(*args: str | bytes, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return fsm(*args, cwd=cwd, input=stdin)


def one_error_line(proc: subprocess.CompletedProcess, needle: str) -> None:
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("fsm-agent: error:") and needle in line, line


def no_logs(workspace: Path) -> bool:
    return not list((workspace / ".fsm-agent" / "sessions").glob("*"))


@pytest.mark.parametrize(
    "args, needle",
    [
        ([BAD], "the prompt"),
        (["hi", "--system-prompt", BAD], "--system-prompt"),
        (["hi", "--append-system-prompt", BAD], "--append-system-prompt"),
        (["hi", "--model", BAD], "--model"),
        (["hi", "--allowed-tools", b"Bash(" + BAD + b")"], "--allowed-tools"),
    ],
)
def test_an_argument_not_utf8_is_a_usage_error(
    args: list[str | bytes], needle: str, workspace: Path
) -> None:
    scenario = str(SCENARIOS / "tool_round.json")
    proc = fsm_bytes("run", "--scripted", scenario, *args, cwd=workspace)
    one_error_line(proc, f"{needle} is not UTF-8 text")
    assert no_logs(workspace)


@pytest.mark.parametrize("data", [BAD + b"\n", bytes(range(256))])
def test_a_prompt_on_stdin_not_utf8_is_a_usage_error(data: bytes, workspace: Path) -> None:
    answer = workspace / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    proc = fsm_bytes("run", "--scripted", str(answer), cwd=workspace, stdin=data)
    one_error_line(proc, "the prompt on standard input is not UTF-8 text")
    assert no_logs(workspace)


def test_a_utf8_prompt_on_stdin_is_read_whole(workspace: Path) -> None:
    answer = workspace / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    prompt = "café ☕ 😀"
    proc = fsm_bytes(
        "run", "--scripted", str(answer), "--output-format", "json",
        cwd=workspace, stdin=f"{prompt}\n".encode(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    log = Path(json.loads(proc.stdout)["log"])
    start = json.loads(log.read_text(encoding="utf-8").splitlines()[1])
    assert start["messages"] == [{"role": "user", "content": [{"type": "text", "text": prompt}]}]


def test_a_chat_line_not_utf8_is_sent_with_replacement_characters(workspace: Path) -> None:
    """A chat goes on: the bytes that are not UTF-8 become U+FFFD, as a terminal shows them."""
    answer = workspace / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    proc = fsm_bytes("chat", "--scripted", str(answer), cwd=workspace, stdin=BAD + b"\n")
    assert proc.returncode == 0, proc.stderr.decode()
    (log,) = (workspace / ".fsm-agent" / "sessions").glob("*.jsonl")
    start = json.loads(log.read_text(encoding="utf-8").splitlines()[1])
    text = start["messages"][0]["content"][0]["text"]
    assert text == "caf\ufffd \ufffd"


@pytest.mark.parametrize("prompt", ["   ", "\n\t "])
def test_a_blank_prompt_argument_is_no_prompt(prompt: str, workspace: Path) -> None:
    """As an empty one, and as a blank stdin: the API refuses a text block with nothing
    but whitespace, so the run would only end with an API error for an answer."""
    answer = workspace / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    proc = fsm_bytes("run", "--scripted", str(answer), prompt, cwd=workspace)
    one_error_line(proc, "no prompt given")
    assert no_logs(workspace)


def _first_prompt(proc: subprocess.CompletedProcess) -> str:
    """The text of the run's prompt, as its log's `start` record holds it."""
    assert proc.returncode == 0, proc.stderr.decode()
    log = Path(json.loads(proc.stdout)["log"])
    start = json.loads(log.read_text(encoding="utf-8").splitlines()[1])
    ((block,),) = [m["content"] for m in start["messages"]]
    return block["text"]


@pytest.mark.parametrize(
    "piped, prompt",
    [
        (b"Traceback: boom\n  at line 3\n", "explain this\nTraceback: boom\n  at line 3\n"),
        (b"", "explain this"),
        (b" \n\t\n", "explain this"),
    ],
)
def test_text_piped_with_a_prompt_follows_it_on_a_new_line(
    piped: bytes, prompt: str, workspace: Path
) -> None:
    """As `cat error.log | claude -p "explain this"`: the prompt, a newline, then what was
    piped; an empty (or blank) pipe adds nothing. It is in the log, so a replay has it."""
    answer = workspace / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    proc = fsm_bytes(
        "run", "--scripted", str(answer), "explain this", "--output-format", "json",
        cwd=workspace, stdin=piped,
    )  # fmt: skip
    assert _first_prompt(proc) == prompt
    check = fsm("replay", json.loads(proc.stdout)["log"], "--check")
    assert check.returncode == 0, check.stderr


def test_text_piped_follows_a_scenario_s_prompt(workspace: Path) -> None:
    """The scenario's `prompt` stands in for the PROMPT argument, piped text and all."""
    answer = workspace / "answer.json"
    answer.write_text(json.dumps({**ANSWER, "prompt": "summarize"}))
    proc = fsm_bytes(
        "run", "--scripted", str(answer), "--output-format", "json",
        cwd=workspace, stdin=b"line one\n",
    )  # fmt: skip
    assert _first_prompt(proc) == "summarize\nline one\n"


def test_text_piped_with_a_prompt_not_utf8_is_a_usage_error(workspace: Path) -> None:
    answer = workspace / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    proc = fsm_bytes("run", "--scripted", str(answer), "explain this", cwd=workspace, stdin=BAD)
    one_error_line(proc, "the prompt on standard input is not UTF-8 text")
    assert no_logs(workspace)


def test_a_pipe_nothing_comes_on_is_left_after_a_wait(capsys: pytest.CaptureFixture) -> None:
    """A parent that leaves standard input open and writes nothing (a subprocess spawned
    without stdin handling) must not hang a run that has its PROMPT: after the wait, it
    goes on without, and says so (as Claude Code does)."""
    import os

    from fsm_agent.cli.run import piped_text

    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", closefd=False) as stream:
            assert piped_text(stream, wait_s=0.05) == ""
            os.write(write, "late ☕".encode())
            os.close(write)
            write = -1
            assert piped_text(stream, wait_s=5) == "late ☕"
    finally:
        os.close(read)
        if write != -1:
            os.close(write)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("fsm-agent: warning: nothing came on standard input")
