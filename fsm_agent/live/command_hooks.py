"""Running command hooks, each through `sh -c`, as Claude Code runs them.

A hook written for Claude Code runs unchanged: it gets the same JSON on stdin and
`$CLAUDE_PROJECT_DIR` in its environment, and what it answers is read by
`fsm_agent.hooks.commands.interpret`. Matching hooks of one event run in
parallel; a command listed twice runs once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import evolve

from fsm_agent.core.config import CommandHook, HookMatcher, RunConfig
from fsm_agent.hooks.commands import (
    MAX_CAPTURE_BYTES,
    HookRun,
    hook_input,
    interpret,
    selected,
)
from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome, merge
from fsm_agent.live.paths import default_resolve
from fsm_agent.policy.permissions import Place
from fsm_agent.tools import session_env

DEFAULT_TIMEOUT_S = 600.0
PROMPT_TIMEOUT_S = 30.0
SESSION_END_TIMEOUT_S = 1.5
SESSION_END_MAX_S = 60.0
"""SessionEnd hooks share one budget: 1.5 s, raised to the largest timeout one of them
sets, up to a minute (Claude Code's), so a hook cannot hold the exit for ten."""


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_command(
    hook: CommandHook, stdin: bytes, cwd: str, env: Mapping[str, str], default_timeout: float
) -> HookRun:
    """One hook command through `sh -c`, its stdin the event's JSON; killed on timeout.

    A command the OS will not start (its directory gone, no process left to fork)
    is reported, not raised: a hook that fails has no say, the run goes on.
    Ctrl-C as the command starts lets the start finish, then kills its group:
    cancelled mid-start, asyncio's own clean-up waits for the child to exit,
    which it may never see (CPython 3.11), and the run hung for good.
    """
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_shell(
            hook.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    )
    try:
        proc = await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            started = await starting
            _kill(started.pid)
            await asyncio.wait_for(started.wait(), 1.0)
        raise
    except OSError as exc:
        return HookRun(hook.command, None, "", "", unstarted=str(exc))
    try:
        (out, cut), (err, _) = await asyncio.wait_for(
            _exchange(proc, stdin), hook.timeout or default_timeout
        )
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        return HookRun(hook.command, None, "", "")
    except asyncio.CancelledError:
        _kill(proc.pid)  # Ctrl-C: the whole group, as a cancelled Bash call's
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 1.0)
        raise
    return HookRun(hook.command, proc.returncode, out, err, stdout_cut=cut)


async def _exchange(
    proc: asyncio.subprocess.Process, stdin: bytes
) -> tuple[tuple[str, int], tuple[str, int]]:
    """`communicate`, keeping at most `MAX_CAPTURE_BYTES` of each stream (and saying
    how much was cut); the rest is read and dropped so the hook can run to its end."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    _, out, err = await asyncio.gather(
        _feed(proc.stdin, stdin), _capture(proc.stdout), _capture(proc.stderr)
    )
    await proc.wait()
    return out, err


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    """The event's JSON; a hook that exits without reading it is no error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.write(data)
        await pipe.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.close()


async def _capture(stream: asyncio.StreamReader) -> tuple[str, int]:
    kept = bytearray()
    cut = 0
    while chunk := await stream.read(65536):
        room = MAX_CAPTURE_BYTES - len(kept)
        kept += chunk[:room]
        cut += max(0, len(chunk) - room)
    text = kept.decode("utf-8", errors="replace")
    return (f"{text}\n… [{cut} bytes cut]" if cut else text), cut


class CommandHooks:
    """Runs the settings files' command hooks for each event the engine reports."""

    def __init__(
        self,
        matchers: Sequence[HookMatcher],
        *,
        project_dir: str,
        transcript_path: str = "",
        permission_mode: str = "default",
        session_env: str | None = None,
    ) -> None:
        self.matchers = tuple(matchers)
        self.events = frozenset(m.event for m in self.matchers)
        self.project_dir = project_dir
        self.transcript_path = transcript_path
        self.permission_mode = permission_mode
        self.session_env = session_env
        self.prompt_id = str(uuid.uuid4())
        """One run is one prompt: its hooks share the id, as Claude Code's do."""

    @classmethod
    def for_run(cls, config: RunConfig, transcript_path: str) -> CommandHooks:
        """The settings' hooks of a run in `config.cwd`, its log as `transcript_path`."""
        return cls(
            config.hooks,
            project_dir=config.cwd,
            transcript_path=transcript_path,
            permission_mode=config.permission_mode,
            session_env=config.session_env,
        )

    def payload(self, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        return hook_input(
            event,
            payload,
            transcript_path=self.transcript_path,
            cwd=self.project_dir,
            permission_mode=self.permission_mode,
            prompt_id=self.prompt_id,
        )

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        home = os.path.realpath(os.path.expanduser("~"))
        place = Place(str(payload.get("cwd", self.project_dir)), home)
        hooks = selected(self.matchers, event, payload, place, default_resolve(place.cwd))
        if not hooks:
            return NO_OPINION
        stdin = json.dumps(self.payload(event, payload)).encode()
        env = {**os.environ, "CLAUDE_PROJECT_DIR": self.project_dir}
        timeout = {"UserPromptSubmit": PROMPT_TIMEOUT_S, "SessionEnd": SESSION_END_TIMEOUT_S}.get(
            event, DEFAULT_TIMEOUT_S
        )
        if event == "SessionEnd":
            budget = max([SESSION_END_TIMEOUT_S, *(h.timeout or 0 for h in hooks)])
            hooks = [evolve(h, timeout=min(budget, SESSION_END_MAX_S)) for h in hooks]
        envs = [env] * len(hooks)
        directory = self.session_env if event == session_env.EVENT else None
        made = session_env.prepare(directory) if directory is not None else None
        if directory is not None and made is not None:
            envs = [
                {**env, "CLAUDE_ENV_FILE": session_env.hook_file(directory, n)}
                for n in range(len(hooks))
            ]
        pairs = zip(hooks, envs, strict=True)
        try:
            runs = await asyncio.gather(
                *(run_command(h, stdin, self.project_dir, e, timeout) for h, e in pairs)
            )
        finally:
            session_env.tidy(made or [])
        return merge([interpret(event, r) for r in runs])
