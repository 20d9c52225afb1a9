"""Bash: run one shell command in the workspace, bounded in time and output size."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import errno
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping
from typing import Any

from attrs import define, evolve, frozen

from fsm_agent.core.messages import ToolResultContent
from fsm_agent.core.tool import (
    INTERRUPTED,
    ToolEnv,
    ToolInputError,
    ToolInterrupted,
    ToolOutcome,
)
from fsm_agent.policy.bash_analysis import analyse
from fsm_agent.tools import exit_codes
from fsm_agent.tools.files import mtime, printable
from fsm_agent.tools.read import MAX_IMAGE_BYTES, image_media_type, shown_image
from fsm_agent.tools.session_env import source_chain
from fsm_agent.tools.viewed import viewed_file
from fsm_agent.tools.workspace import check_path

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
DEFAULT_TIMEOUT_VARIABLE = "BASH_DEFAULT_TIMEOUT_MS"
MAX_TIMEOUT_VARIABLE = "BASH_MAX_TIMEOUT_MS"
LONGEST_TIMER_MS = 2**31 - 1
MAX_ERROR_OUTPUT_CHARS = 10_000
"""What a failing command shows of its output: a head and a tail, as Claude Code's
excerpt. A successful command's output is handed over whole; past 30,000 characters
the tool-result budget saves it to a file and sends a preview (`fsm_agent.context.levels`)."""
KEEP_BYTES = 1024 * 1024
"""What the output buffer keeps of each end; the middle of anything larger is dropped."""
DRAIN_SECONDS = 2.0


@frozen
class Timeouts:
    """A command's timeout when the model gives none, and the most it may ask for (ms)."""

    default_ms: int = DEFAULT_TIMEOUT_MS
    max_ms: int = MAX_TIMEOUT_MS

    @classmethod
    def of(cls, environ: Mapping[str, str]) -> Timeouts:
        """Claude Code's `BASH_DEFAULT_TIMEOUT_MS` and `BASH_MAX_TIMEOUT_MS`, read as its
        `timeouts.ts` reads them: a value that is not a positive number is ignored (the
        CLI refuses one first), and the maximum is never below the default."""
        default = _positive(environ.get(DEFAULT_TIMEOUT_VARIABLE)) or DEFAULT_TIMEOUT_MS
        most = _positive(environ.get(MAX_TIMEOUT_VARIABLE)) or MAX_TIMEOUT_MS
        return cls(default, max(most, default))


def _positive(value: str | None) -> int | None:
    """The number `value` starts with, as JavaScript's `parseInt`, up to the longest
    timer Node.js keeps (2**31 - 1 ms, 24.8 days); None unless positive."""
    found = re.match(r"\s*(-?)\+?([0-9]+)", value or "")
    if found is None or found.group(1) or not found.group(2).strip("0"):
        return None
    digits = found.group(2).lstrip("0")
    return LONGEST_TIMER_MS if len(digits) > 10 else min(int(digits), LONGEST_TIMER_MS)


def description_of(timeouts: Timeouts) -> str:
    return f"""\
Run a bash command (`bash -c`) in the working directory and return its \
combined stdout and stderr. Each call starts fresh in the working directory: \
`cd`, variables and processes do not carry over, and anything the command \
leaves running in the background is stopped when it returns. stdin is empty, \
so avoid interactive programs.
`timeout` is in milliseconds (default {timeouts.default_ms}, at most {timeouts.max_ms}). \
Output over 30000 characters is saved to a file: you get its path and a preview. A \
non-zero exit status is reported as an error together with the output's first and \
last 5000 characters; an exit status of 1 that answers (grep, rg: no match; diff: \
the files differ; test: false; find: a directory could not be read) is not an error.
Prefer Read, Edit, Write, Glob and Grep over cat, sed, echo >, find and grep."""


def schema_of(timeouts: Timeouts) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to run"},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": (
                    f"Timeout in milliseconds (default {timeouts.default_ms}, "
                    f"max {timeouts.max_ms})"
                ),
            },
            "description": {
                "type": "string",
                "description": "What the command does, in 5-10 words",
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Not supported here; must be false or omitted",
            },
            "dangerouslyDisableSandbox": {
                "type": "boolean",
                "description": "Commands run without a sandbox here; accepted and ignored",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }


DESCRIPTION = description_of(Timeouts())
SCHEMA = schema_of(Timeouts())


@define
class OutputBuffer:
    """Keeps the head and tail of a stream and counts what fell out between them."""

    head: bytearray
    tail: bytearray
    dropped: int = 0

    @classmethod
    def empty(cls) -> OutputBuffer:
        return cls(bytearray(), bytearray())

    def add(self, chunk: bytes) -> None:
        room = KEEP_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        excess = len(self.tail) - KEEP_BYTES
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self, keep: int | None = None) -> str:
        """What was kept, with a marker where the middle was dropped; with `keep`, a head
        and a tail of that many characters in all."""
        if keep is not None or not self.dropped:
            joined = (self.head + self.tail).decode("utf-8", errors="replace")
            return joined if keep is None else clip_middle(joined, keep, self.dropped)
        head, tail = (part.decode("utf-8", errors="replace") for part in (self.head, self.tail))
        return f"{head}{marker(self.dropped)}{tail}"


def clip_middle(text: str, keep: int, dropped: int = 0) -> str:
    """A head and a tail of `text`, `keep` characters in all, with a marker saying how
    much was cut. `dropped` counts bytes the buffer already lost from the middle; they
    are reported as characters, which is exact for ASCII output."""
    if not dropped and len(text) <= keep:
        return text
    half = keep // 2
    cut = len(text) - 2 * half + dropped
    return f"{text[:half]}{marker(cut)}{text[-half:]}"


def marker(cut: int) -> str:
    return f"\n\n... [{cut} characters truncated] ...\n\n"


def timeout_of(input: dict[str, Any], timeouts: Timeouts = Timeouts()) -> float:
    """The timeout in ms: the model's choice, clamped to the maximum rather than refused."""
    return min(float(input.get("timeout", timeouts.default_ms)), timeouts.max_ms)


def kill_group(pgid: int) -> None:
    """Kill the command's process group, and what else is left of its session.

    The shell leads a new session whose id is `pgid`; job control (`set -m`)
    moves background jobs to groups of their own, but not out of the session.
    Only `setsid` leaves it.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    for pid in session_members(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def session_members(sid: int) -> list[int]:
    """The processes of session `sid`, found through /proc (none where there is no /proc)."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    members = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getsid(pid) == sid:
                members.append(pid)
    return members


class _Collector(asyncio.SubprocessProtocol):
    """Collects output and signals exit and end-of-output separately.

    `asyncio.subprocess.Process.wait` waits for the pipes to close too, which a
    backgrounded grandchild can hold open; the shell's own exit is what counts.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.buffer = OutputBuffer.empty()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.buffer.add(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def _settle(future: asyncio.Future[None], seconds: float) -> bool:
    """Wait for `future` without cancelling it; False if time ran out."""
    try:
        await asyncio.wait_for(asyncio.shield(future), seconds)
    except TimeoutError:
        return False
    return True


class BashTool:
    """The escape hatch for everything the file tools cannot do."""

    name = "Bash"
    description = DESCRIPTION
    input_schema = SCHEMA

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        """`environ` (this process's, by default) may set Claude Code's timeout variables;
        the description and schema the model reads say what they set, and the log's
        header keeps those, so a replay shows the model what the run showed it."""
        self.timeouts = Timeouts.of(os.environ if environ is None else environ)
        self.description = description_of(self.timeouts)
        self.input_schema = schema_of(self.timeouts)

    def timeout_of(self, input: dict[str, Any]) -> float:
        return timeout_of(input, self.timeouts)

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        if input.get("run_in_background"):
            raise ToolInputError(
                "run_in_background is not supported by this agent. Run the command in the "
                "foreground, with a timeout if it may take long."
            )
        timeout_ms = self.timeout_of(input)
        script = with_session_env(input["command"], env.session_env, env.cwd)
        loop = asyncio.get_running_loop()
        starting = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: _Collector(loop),
                "bash",
                "-c",
                script,
                cwd=env.cwd,
                env=command_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        try:
            transport, collector = await asyncio.shield(starting)
        except OSError as exc:
            if exc.errno != errno.E2BIG:
                raise
            raise ToolInputError(too_long(input["command"])) from None
        except asyncio.CancelledError:
            # Cancelled while the start was handed back (a loaded machine): let it finish,
            # then kill the group; asyncio's clean-up would kill the shell alone.
            with contextlib.suppress(Exception):
                begun, _ = await starting
                kill_group(begun.get_pid())
                begun.close()
            raise
        pgid = transport.get_pid()
        try:
            timed_out = not await _settle(collector.exited, timeout_ms / 1000)
            kill_group(pgid)
            await _settle(collector.exited, DRAIN_SECONDS)
            await _settle(collector.drained, DRAIN_SECONDS)
        except asyncio.CancelledError as exc:
            kill_group(pgid)
            await _settle(collector.exited, DRAIN_SECONDS)
            await _settle(collector.drained, DRAIN_SECONDS)
            raise ToolInterrupted(_interrupted(collector.buffer)) from exc
        finally:
            transport.close()
        outcome = _outcome(
            collector.buffer,
            transport.get_returncode(),
            timed_out,
            timeout_ms,
            env.wants_response,
            input["command"],
        )
        if outcome.is_error:
            return outcome
        return evolve(outcome, read_files=_viewed(input["command"], env))


def too_long(command: str) -> str:
    """Why a command the system refused as too long (`E2BIG`: past 128 KiB in one argument
    on Linux, where `bash -c` takes it; Claude Code runs it alike) did not run, and what
    to do instead."""
    size = len(command.encode("utf-8", "surrogatepass"))
    return (
        f"The command is too long to run ({size} bytes; the system refused it as an "
        "argument list too long). Write long content with the Write tool, or split the "
        "command."
    )


def command_env() -> dict[str, str]:
    """The environment a command runs in: this one, with git told to use a bare repository
    only when named (`safe.bareRepository=explicit`). Files written in the workspace
    (HEAD, config, objects/, refs/) would otherwise make it one git finds on its own,
    whose core.fsmonitor runs on the read-only `git status`. And without `CDPATH`, which
    would send `cd sub` to a `sub` outside the workspace, while the permission check
    judges what follows from the workspace's own. `GIT_EDITOR=true`, as Claude Code sets
    it: with no terminal to type in, `git commit --amend` keeps its message rather than
    wait for an editor until the timeout."""
    env = dict(os.environ)
    env.pop("CDPATH", None)
    env["GIT_EDITOR"] = "true"
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    env |= {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "safe.bareRepository",
        f"GIT_CONFIG_VALUE_{count}": "explicit",
    }
    return env


REASSERT = (
    "unset CDPATH; case ${GIT_CONFIG_COUNT-} in ''|*[!0-9]*) GIT_CONFIG_COUNT=0;; esac; "
    "export GIT_CONFIG_KEY_$((10#$GIT_CONFIG_COUNT))=safe.bareRepository "
    "GIT_CONFIG_VALUE_$((10#$GIT_CONFIG_COUNT))=explicit "
    "GIT_CONFIG_COUNT=$((10#$GIT_CONFIG_COUNT + 1));"
)
"""What `command_env` sets, set again after the session's files are sourced: a variable
a SessionStart hook exported (`CDPATH`, `GIT_CONFIG_COUNT`) does not undo it."""


def with_session_env(command: str, directory: str | None, cwd: str) -> str:
    """`command` after the session's `CLAUDE_ENV_FILE`s (`fsm_agent.tools.session_env`), all on
    its first line, so what the shell says of the command keeps its line numbers; and
    in the workspace still, where the permission check judged it from, whatever the
    files did (a `cd`, `CDPATH`, a `cd` function: the shell's own `cd` goes back)."""
    chain = source_chain(directory)
    if chain is None:
        return command
    return f"{chain}; {REASSERT} builtin cd -- {shlex.quote(cwd)} || exit; {command}"


def _viewed(command: str, env: ToolEnv) -> dict[str, float]:
    """The file a successful command only showed (`cat f`, `sed -n '1,9p' f`…) as read,
    as Claude Code counts it for Edit and Write; a file outside the workspace, none."""
    path = viewed_file(command)
    if path is None:
        return {}
    try:
        check = check_path(path, env)
    except ToolInputError:
        return {}
    if not check.inside or printable(check.resolved) != check.resolved:
        return {}
    try:
        if not os.path.isfile(check.resolved):
            return {}
        return {check.resolved: mtime(check.resolved)}
    except OSError:
        return {}


NO_OUTPUT = "(Bash completed with no output)"
"""Claude Code's stand-in for an empty result, which some models answer by ending the turn."""
_LEADING_BLANK_LINES = re.compile(r"^(?:[^\S\n]*\n)+")
_DATA_URI = re.compile(r"data:image/[a-z0-9.+_-]+;base64,([^\n]+)", re.IGNORECASE)
MAX_IMAGE_BASE64 = MAX_IMAGE_BYTES * 4 // 3 + 4


def shown(
    stdout: str, stderr: str = "", interrupted: bool = False, is_image: bool = False
) -> ToolResultContent:
    """What the model reads of a command that did not fail, from the parts of its
    `{stdout, stderr, interrupted, isImage}`, as Claude Code renders them: the image
    stdout holds, or stdout without its leading blank lines and trailing whitespace,
    stderr trimmed. The one rendering of the tool and of a PostToolUse hook's
    replacement (`fsm_agent.tools.output`)."""
    image = image_of(stdout) if is_image else None
    if image is not None:
        return shown_image(*image)
    parts = [strip_blank_lines(stdout), stderr.strip()]
    if interrupted:
        parts.append("<error>Command was aborted before completion</error>")
    return "\n".join(p for p in parts if p) or NO_OUTPUT


def image_of(stdout: str) -> tuple[str, str] | None:
    """`(media type, base64)` of the image `stdout` is, as one `data:image/…;base64,` URI
    (Claude Code's `parseDataUri`), sent with the type its bytes say, as Read sends one;
    None when it is not such an image, or one too large for the API."""
    found = _DATA_URI.fullmatch(stdout.strip())
    if found is None or len(found.group(1)) > MAX_IMAGE_BASE64:
        return None
    data = found.group(1)
    try:
        media_type = image_media_type(base64.b64decode(data, validate=True)[:16])
    except (binascii.Error, ValueError):
        return None
    return None if media_type is None else (media_type, data)


def strip_blank_lines(text: str) -> str:
    """`text` without the blank lines it starts with and the whitespace it ends with:
    the indentation of its first line is kept (Claude Code's `stripEmptyLines`)."""
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


KILLED_CODE = 137
"""The exit code Claude Code reports for a command it killed (128 + SIGKILL)."""


def _interrupted(buffer: OutputBuffer) -> ToolOutcome:
    """What the model reads of a command Ctrl-C killed, as Claude Code's error for it
    (a `ShellError` marked interrupted): the exit code of the kill, the interrupt
    message, then what the command printed until then."""
    output = buffer.text(MAX_ERROR_OUTPUT_CHARS).rstrip()
    text = "\n".join(p for p in (f"Exit code {KILLED_CODE}", INTERRUPTED, output) if p)
    return ToolOutcome(text, is_error=True, interrupted=True)


SILENT_COMMANDS = frozenset(
    {"mv", "cp", "rm", "mkdir", "rmdir", "chmod", "chown", "chgrp", "touch", "ln", "cd",
     "export", "unset", "wait"}
)  # fmt: skip
"""Commands that print nothing when they succeed, as Claude Code lists them."""


def no_output_expected(command: str) -> bool:
    """Claude Code's `noOutputExpected`: every command of `command` is one that prints
    nothing on success (`mkdir d && touch d/f`), so an empty output is no surprise
    (measured on 2.1.x: `mkdir`, `mv`, `cd`, `export` … true; `echo`, `ls`, `true`, a
    pipe into `cat` false). A command the analysis cannot read is not one (`export`,
    which Claude Code counts)."""
    analysis = analyse(command)
    names = [part.name for part in analysis.parts]
    return analysis.problem is None and bool(names) and all(n in SILENT_COMMANDS for n in names)


def _outcome(
    buffer: OutputBuffer,
    code: int | None,
    timed_out: bool,
    timeout_ms: float,
    respond: bool = False,
    command: str = "",
) -> ToolOutcome:
    """The result; with `respond`, Claude Code's `{stdout, stderr, interrupted, isImage}`
    too: stdout and stderr share one pipe here, so all the output is `stdout`. A
    successful command's output is whole, a failing one's an excerpt. An exit code that
    answers (grep's 1: no matches) is no failure, and the response says what it means."""
    meaning = None if timed_out or code is None else exit_codes.answer(command, code)
    failed = timed_out or (code != 0 and meaning is None)
    output = buffer.text(MAX_ERROR_OUTPUT_CHARS if failed else None).rstrip("\n")
    if timed_out:
        return ToolOutcome.error(f"Command timed out after {timeout_ms:g} ms\n{output}".rstrip())
    if code is not None and code < 0:
        return ToolOutcome.error(f"Killed by signal {-code}\n{output}".rstrip())
    if failed:
        return ToolOutcome.error(f"Exit code {code}\n{output}".rstrip())
    stdout = strip_blank_lines(output)
    is_image = image_of(stdout) is not None
    response: dict[str, Any] | None = None
    if respond:
        response = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": is_image}
        response["noOutputExpected"] = no_output_expected(command)
        if meaning is not None:
            response["returnCodeInterpretation"] = meaning
    return ToolOutcome(shown(stdout, is_image=is_image), response=response)
