"""One command-line run, however it is shown: the pieces fixed for a session, and a run.

A `Plan` is what the command line decided (model, configuration, hooks, the
abort flag, where logs go, the run it continues). `Plan.arun` runs the loop
once over a conversation; a chat session calls it once per user message,
each run writing its own log whose header names the previous one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve

from fsm_agent.app.environment import IDLE_NOTIFY_S
from fsm_agent.app.session import arun
from fsm_agent.cli.headless import Budget
from fsm_agent.cli.questions import line_prompter
from fsm_agent.cli.usage import ignore_signal
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.messages import Message
from fsm_agent.core.model import Model
from fsm_agent.core.permission_types import PermissionSettings, PermissionUpdate
from fsm_agent.core.tool import Tool
from fsm_agent.engine.driver import LoopResult
from fsm_agent.hooks.outcomes import HookOutcome, Hooks
from fsm_agent.live.approvals import Approvals, Prompter
from fsm_agent.live.claude_home import UserFiles
from fsm_agent.live.command_hooks import CommandHooks
from fsm_agent.live.effects import Inbox, LiveEffects
from fsm_agent.live.mcp_files import McpSetup
from fsm_agent.live.permission_updates import apply_updates
from fsm_agent.live.transcript_writer import TranscriptCursor, transcript_path
from fsm_agent.tape.log import next_run_log_path
from fsm_agent.tape.recording import SessionRecorder
from fsm_agent.tools.session_env import with_session_env

INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


class Plan:
    """What stays fixed across the runs of one command: model, config, hooks, logs."""

    def __init__(
        self,
        *,
        model: Model,
        config: RunConfig,
        hooks: Hooks | None,
        abort: AbortSignal,
        log: Path | None,
        parent: Path | None = None,
        parent_session_id: str | None = None,
        read_files: dict[str, float] | None = None,
        parent_cut_short: int | None = None,
        idle_notify_s: float = IDLE_NOTIFY_S,
        mcp: McpSetup | None = None,
        history: Sequence[Message] = (),
    ) -> None:
        self.model = model
        self.mcp = mcp
        """The MCP servers each run starts (in parallel, as it starts) and stops."""
        self.idle_notify_s = idle_notify_s
        """How long a chat's prompt waits after an answer before `notify_idle`."""
        self.config = config
        self.hooks = hooks
        self.abort = abort
        self.log = log
        self.parent = parent
        self.parent_session_id = parent_session_id
        self.parent_cut_short = parent_cut_short
        """The steps the parent log holds when it was cut short by a kill (`--resume` of it)."""
        self.runs = 0
        self._start: tuple[PermissionSettings, str] | None = None
        """The permissions and mode the conversation started with (taken at its first run):
        `/clear` goes back to them (the session's "always" rules and hooks' updates end
        with it)."""
        self._written: list[PermissionUpdate] = []
        """Hooks' permission updates written to settings files: they outlast a `/clear`."""
        self._approvals: Approvals | None = None
        """The permissions of the run under way, as "always" answers and hooks change them."""
        self._open = False
        """A conversation has run and its SessionEnd has not fired yet."""
        self.read_files: dict[str, float] = dict(read_files or {})
        """Files read so far in the conversation: an edit in a later run needs no re-read."""
        self.ask: Callable[[str], str | None] | None = None
        """The seam for questions asked mid-run (permission prompts): set by an interactive
        session to ask inline; `None` when no one can answer (piped, JSON output)."""
        self.prompter: Prompter | None = None
        """A terminal prompt for one-shot runs in a terminal; `ask` wins when set."""
        self.budget: Budget | None = None
        """`--max-budget-usd`: checked after each response of every run, as Claude Code's
        message loop checks it; reached, the run is stopped through the abort flag."""
        self.recorder: SessionRecorder | None = None
        """Set by an Agent SDK session: every run goes into its one log, one after another
        (`log` names it), not a log each."""
        self.transcript = (
            TranscriptCursor.resuming(os.path.realpath(config.cwd), parent_session_id, history)
            if parent_session_id
            else TranscriptCursor()
        )
        """The conversation's Claude Code transcript, which each of its runs goes on (a
        resumed one's too, as `claude --resume` goes on the session's file)."""
        self.fork_id: str | None = None
        """A resumed conversation's new session id (`--session-id` with `--resume`, as
        Claude Code's `--fork-session` gives one): its runs go on under it, in a new
        transcript."""
        self.tools: dict[str, Tool] | None = None
        """The tools the runs get: None for the built-in ones (an SDK session adds its
        MCP servers' tools)."""

    @property
    def session_id(self) -> str | None:
        """The session id of the next run: the conversation's, when it goes on one (a
        chat's later run, a resumed one), as Claude Code keeps one id for a conversation
        over its runs and `--resume`; None for a new conversation (the run makes one)."""
        return self.fork_id or self.parent_session_id

    def next_log(self) -> Path | None:
        """`--log PATH` names the first run's log; later runs go next to it as `STEM.N.jsonl`,
        N counting on past any file already there: a log never overwrites one. Without
        `--log`, a run that goes on a conversation logs as its next run (`ID.N.jsonl`)."""
        log = self.log
        if log is None:
            session = self.session_id
            if session is None:
                return None
            return next_run_log_path(os.path.realpath(self.config.cwd), session)
        if self.runs == 0:
            return log
        number = self.runs + 1
        while os.path.lexists(path := log.with_name(f"{log.stem}.{number}{log.suffix}")):
            number += 1
        return path

    def end(self, reason: str) -> None:
        """SessionEnd hooks, once the session is over (`other` after a one-shot run,
        `prompt_input_exit` when a chat is left)."""
        if not self._open:
            return
        self._open = False
        run = self._between_runs("SessionEnd", {"reason": reason})
        if run is not None:
            asyncio.run(run)

    def notify_idle(self) -> None:
        """Notification hooks (`idle_prompt`): the chat has waited long for the user's
        next message. On a thread of their own, so the prompt goes on waiting."""
        fields = {"message": "Claude is waiting for your input", "notification_type": "idle_prompt"}
        run = self._between_runs("Notification", fields)
        if run is not None:
            thread = threading.Thread(target=asyncio.run, args=(run,), name="fsm-agent-notify")
            thread.daemon = True
            thread.start()

    def _between_runs(
        self, event: str, fields: dict[str, Any]
    ) -> Coroutine[Any, Any, HookOutcome] | None:
        """The settings' `event` hooks of the conversation, to run outside every run, with
        their output discarded as in Claude Code, so no log records or replays them;
        None when no settings file has one."""
        if not any(m.event == event for m in self.config.hooks):
            return None
        session = self.transcript.session_id or self.parent_session_id
        claude = transcript_path(self.config.cwd, session) if session else None
        transcript = str(claude) if claude is not None and claude.exists() else ""
        hooks = CommandHooks.for_run(self.config, transcript or str(self.parent or ""))
        payload = {
            "hook_event_name": event,
            "session_id": self.parent_session_id or "",
            "cwd": self.config.cwd,
            **fields,
        }
        return hooks.run(event, payload)

    def clear(self) -> None:
        """A chat's `/clear`: the conversation so far ends (SessionEnd `clear`, as in
        Claude Code) and the next run starts a new one: no parent log, no files read,
        SessionStart `clear`, and its own `CLAUDE_ENV_FILE`s."""
        self.end("clear")
        self.parent = None
        self.parent_session_id = None
        self.parent_cut_short = None
        self.read_files = {}
        self.transcript = TranscriptCursor()
        self.config = evolve(self.config, session_source="clear", session_env=None)
        if self._start is None:
            return
        permissions, mode = self._start
        if self._written:
            permissions, mode, _ = apply_updates(
                permissions, mode, self._written, cwd=self.config.cwd,
                home=os.path.expanduser("~"), start_mode=mode,
                config_dir=UserFiles.of().config_dir,
            )  # fmt: skip
        self.config = evolve(self.config, permissions=permissions, permission_mode=mode)

    def _prompter(self) -> Prompter | None:
        return line_prompter(self.ask) if self.ask is not None else self.prompter

    def _live(self, *args: Any, **kwargs: Any) -> LiveEffects:
        """The run's live effects, kept: the permissions it ends with are the next run's."""
        effects = LiveEffects(*args, **kwargs)
        self._approvals = effects.approvals
        return effects

    def _keep_permissions(self) -> None:
        """The session's rules, mode and directories ("always" answers, hooks' updates)
        into the configuration the next run starts from (and its log's header records,
        so it replays), as Claude Code keeps them for the session."""
        approvals, self._approvals = self._approvals, None
        if approvals is None:
            return
        self._written += approvals.persisted
        self.config = evolve(
            self.config, permissions=approvals.settings, permission_mode=approvals.mode
        )

    def header_extra(self) -> dict[str, Any]:
        if self.parent is None:
            return {}
        parent: dict[str, Any] = {"log": str(self.parent), "session_id": self.parent_session_id}
        if self.parent_cut_short is not None:
            parent["cut_short"] = self.parent_cut_short
        return {"parent": parent}

    async def arun(
        self,
        messages: Sequence[Message],
        on_event: Callable[[DriverEvent], None] | None,
        *,
        inbox: Inbox | None = None,
        session_id: str | None = None,
    ) -> LoopResult:
        """Run the loop over `messages`; the next run continues from this one."""
        if self._start is None:
            self._start = (self.config.permissions, self.config.permission_mode)
        budget = self.budget
        if budget is not None:
            budget.begin()
            inner = on_event

            def on_event(event: DriverEvent) -> None:
                if inner is not None:
                    inner(event)
                budget.watch(event, self.abort)

        async with contextlib.AsyncExitStack() as stack:
            mcp = None if self.mcp is None else await stack.enter_async_context(self.mcp.open())
            result = await arun(
                list(messages),
                model=self.model,
                config=self.config,
                hooks=self.hooks,
                log=self.next_log(),
                on_event=on_event,
                abort=self.abort,
                inbox=inbox,
                header_extra=self.header_extra(),
                session_id=session_id or self.session_id,
                read_files=self.read_files,
                prompter=self._prompter(),
                live_effects=self._live,
                mcp=mcp,
                tools=self.tools,
                recorder=self.recorder,
                transcript_cursor=self.transcript,
            )
        self.runs += 1
        self._keep_permissions()
        self._open = True
        self.config = evolve(self.config, session_source=None)  # the session has started
        self.config = with_session_env(self.config, result.session_id)  # as the run chose it
        self.read_files = dict(result.read_files)
        if result.log_path:
            self.parent = Path(result.log_path)
            self.parent_session_id = result.session_id
            self.parent_cut_short = None
        return result

    def run_interruptibly(
        self,
        messages: Sequence[Message],
        on_event: Callable[[DriverEvent], None] | None,
        *,
        inbox: Inbox | None = None,
        session_id: str | None = None,
    ) -> LoopResult:
        """`arun` with Ctrl-C bound to the abort flag; a second Ctrl-C raises KeyboardInterrupt.

        SIGTERM (`timeout`, a supervisor stopping the run) is taken as Ctrl-C: the
        run ends `aborted_*` with its log whole and its tools' processes killed,
        where the default action would leave a log without its end and a Bash
        command running on."""
        return asyncio.run(
            interruptibly(
                self.abort, self.arun(messages, on_event, inbox=inbox, session_id=session_id)
            )
        )


async def interruptibly(abort: AbortSignal, run: Awaitable[LoopResult]) -> LoopResult:
    """Await `run` with Ctrl-C and SIGTERM setting `abort`; a second one raises
    KeyboardInterrupt. A run (or a fork's live part) then ends `aborted_*` with its log
    whole and its tools' processes killed.

    The second one cancels the run and raises only once it has unwound, with the loop
    still open: raised from the signal handler, it left the loop closed under a Bash
    process still being reaped (`Loop … that handles pid … is closed`) and exited
    through the interpreter's own SIGINT handling."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(run)
    hard = False

    def interrupt() -> None:
        nonlocal hard
        if abort.is_set():
            hard = True
            task.cancel()
            return
        abort.set()

    for signum in INTERRUPTS:
        loop.add_signal_handler(signum, interrupt)
    try:
        result = await task
    except asyncio.CancelledError:
        if hard:
            raise KeyboardInterrupt from None
        raise
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for signum in INTERRUPTS:
            # Ignored, not the default, until asyncio.run has closed: one more Ctrl-C
            # while it shuts down would kill the process mid-way (exit -2, no message).
            loop.remove_signal_handler(signum)
            if hard:
                signal.signal(signum, ignore_signal)
    if hard:  # the run unwound (its log whole) but was asked to stop at once
        raise KeyboardInterrupt
    return result
