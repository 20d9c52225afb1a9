"""The live side of permissions: judging calls in this workspace, and asking the user.

`Approvals` is what `LiveEffects.check_permission` and `ask_permission`
call. It resolves paths on the real file system, runs the pure `evaluate`,
and keeps the rules the user added with "always" for the rest of the run, as
it keeps what PermissionRequest hooks' `updatedPermissions` change (`update`).
Without a terminal there is no one to ask, and an ask is a denial.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager

from attrs import evolve

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.permission_types import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    DENY,
    NO_TERMINAL,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionSettings,
    PermissionsUpdated,
    PermissionUpdate,
    RuleSource,
)
from fsm_agent.live.paths import (
    command_resolve,
    default_expand,
    default_links,
    default_resolve,
    read_denied,
)
from fsm_agent.policy.permissions import (
    EDIT_TOOLS,
    READ_TOOLS,
    Workspace,
    call_facts,
    evaluate,
    path_rule,
)

Prompter = Callable[[PermissionAsk], str]
Notifier = Callable[[PermissionAsk], None]

_QUESTION_CANCEL: contextvars.ContextVar[AbortSignal | None] = contextvars.ContextVar(
    "question_cancel", default=None
)


def withdrawn() -> bool:
    """Called from a prompter: True once the question it is asking is withdrawn (the
    stream that started the call failed), so a prompter that waits for input can give up.
    The answer it gives after that is ignored."""
    cancel = _QUESTION_CANCEL.get()
    return cancel is not None and cancel.is_set()


class Approvals:
    """Judges calls in one workspace and asks the user.

    `workspace` and `hidden` (the files Glob and Grep leave out: those a Read
    deny rule covers) are derived from `settings` whenever it changes, as
    an "always" answer extends it.
    """

    def __init__(
        self,
        settings: PermissionSettings,
        cwd: str,
        *,
        home: str | None = None,
        prompter: Prompter | None = None,
        notify: Notifier | None = None,
        mode: str = "default",
    ) -> None:
        self.cwd = os.path.realpath(cwd)
        self.mode = self.start_mode = mode
        """The run's mode, and the one it started in: a hook's `setMode` changes the first."""
        self.persisted: list[PermissionUpdate] = []
        """The hooks' updates written to settings files: a chat's `/clear` keeps them."""
        self.home = os.path.realpath(home or os.path.expanduser("~"))
        self.prompter = prompter
        self.notify = notify
        """Told of each question as it is put to the user (the Notification hook)."""
        self._lock = asyncio.Lock()
        self._resolve = default_resolve(self.cwd)
        self._command_resolve = command_resolve(self.cwd)
        self._expand = default_expand(self.cwd)
        self._links = default_links(self.cwd)
        self._granted: set[str] = set()
        """The rules "always" added this run: a question waiting while one was added may
        be answered already."""
        self._updated = False
        """A hook's permission updates changed the rules: waiting questions are judged again."""
        self.settings = settings

    @property
    def settings(self) -> PermissionSettings:
        return self._settings

    @settings.setter
    def settings(self, settings: PermissionSettings) -> None:
        self._settings = settings
        self.workspace = Workspace(self.cwd, self.home, settings.additional_directories)
        self.hidden: Callable[[str], bool] | None = read_denied(settings, self.workspace)

    def check(self, request: PermissionRequest) -> Decision:
        """The verdict; a call whose paths the OS will not resolve is denied, never raised.

        Input validation turns away what is known to fail (a null byte); this
        is the backstop for whatever else `realpath` or a glob refuses, so an
        odd input costs the model one error result, not the run.
        """
        ws = self.workspace
        try:
            resolve = self._command_resolve if request.tool == "Bash" else self._resolve
            facts = call_facts(request.tool, request.input, ws, resolve, self._expand, self._links)
        except (ValueError, OSError) as exc:
            return Decision(
                "deny",
                f"{request.tool} was not run: a path in its input cannot be resolved ({exc})",
            )
        return evaluate(facts, self._settings, request.mode, ws)

    async def ask(
        self,
        question: PermissionAsk,
        cancel: AbortSignal | None = None,
        recheck: PermissionRequest | None = None,
    ) -> str:
        """The user's answer, one question at a time.

        A question whose turn comes after "always" answers added rules is not put if
        they cover it: the rules it would add, or the call (`recheck`) judged again
        by them, as Claude Code resolves the requests waiting behind the one answered.

        Cancelling this wait (the question is withdrawn) leaves the prompter's
        thread to finish: its answer is dropped, and the next question waits
        for it, so two prompts never share the screen. `cancel` is what the
        prompter's `withdrawn()` reads.
        """
        if self.prompter is None:
            return NO_TERMINAL
        await self._lock.acquire()
        wanted = self.always_rules(question)
        if (wanted and self._granted.issuperset(wanted)) or (
            recheck is not None
            and (self._granted or self._updated)
            and self.check(recheck).behavior == "allow"
        ):
            self._lock.release()
            return ALLOW_ONCE
        if self.notify is not None and not (cancel is not None and cancel.is_set()):
            self.notify(question)
        token = _QUESTION_CANCEL.set(cancel)
        try:
            thread = asyncio.ensure_future(asyncio.to_thread(_safely, self.prompter, question))
        finally:
            _QUESTION_CANCEL.reset(token)
        try:
            answer = await asyncio.shield(thread)
        except BaseException:
            thread.add_done_callback(lambda _: self._lock.release())
            raise
        self._lock.release()
        if answer == ALLOW_ALWAYS:
            self.grant(question)
        return answer if answer in (ALLOW_ONCE, ALLOW_ALWAYS) else DENY

    def grant(self, question: PermissionAsk) -> None:
        """The rules an "always" answer to `question` adds, for the rest of the run
        (a fork's live part takes them from its replayed part's answers)."""
        rules = self.always_rules(question)
        self._granted.update(rules)
        extra = tuple(RuleSource(r, self.cwd, "this session") for r in rules)
        self.settings = evolve(self.settings, allow=self.settings.allow + extra)

    def update(
        self, updates: Sequence[PermissionUpdate], *, write: bool = True
    ) -> PermissionsUpdated:
        """A PermissionRequest hook's `updatedPermissions`, applied to the run's rules,
        mode and directories as Claude Code applies them, those of a settings file also
        written to it (not with `write` False: a fork replaying its parent's, which the
        parent wrote)."""
        from fsm_agent.live.permission_updates import apply_updates, persist
        from fsm_agent.policy.permission_updates import persisted

        settings, mode, notes = apply_updates(
            self.settings, self.mode, updates, cwd=self.cwd, home=self.home,
            start_mode=self.start_mode,
        )  # fmt: skip
        kept = persisted(updates, self.start_mode)
        if write:
            notes += [persist(u, self.cwd, self.home) for u in kept]
        self.persisted += kept
        self.settings, self.mode, self._updated = settings, mode, True
        self._granted &= {r.rule for r in settings.allow}  # a hook may take them off
        return PermissionsUpdated(mode, settings.additional_directories, tuple(notes))

    @staticmethod
    def always_rules(question: PermissionAsk) -> list[str]:
        """The rules an "always" answer to `question` adds."""
        rules = [question.suggestion] if question.suggestion else []
        kind = _path_rule_kind(question.tool)
        return rules + ([path_rule(kind, p) for p in question.outside] if kind else [])


def _path_rule_kind(tool: str) -> str | None:
    """The rule that opens an outside path to `tool` alone: Read for the tools that
    read, Edit for those that write; a command (Bash) cannot be opened by path."""
    return "Read" if tool in READ_TOOLS else "Edit" if tool in EDIT_TOOLS else None


def _safely(prompter: Prompter, question: PermissionAsk) -> str:
    """A prompter that fails (EOF on stdin, a closed terminal) denies; a question
    withdrawn before its turn came is not put at all."""
    if withdrawn():
        return DENY
    try:
        return prompter(question)
    except (Exception, KeyboardInterrupt):
        return DENY


def _shown(question: PermissionAsk) -> tuple[str, str, str, str | None]:
    """The question's tool, call, reason and suggested rule as text to show: they quote
    what the model wrote, whose escapes are shown, never obeyed."""
    from fsm_agent.cli.render import key_input, printable

    suggestion = None if question.suggestion is None else printable(question.suggestion)
    call = f"({key_input(question.input)[:120]})"
    return printable(question.tool), call, printable(question.reason), suggestion


def _question(question: PermissionAsk) -> tuple[str, str]:
    tool, call, reason, suggestion = _shown(question)
    always = f"always ({suggestion})" if suggestion else "always"
    return f"? {tool}{call}: {reason}", f"Allow? [y] once  [a] {always}  [n] deny"


def _choice(answer: str | None) -> str:
    key = (answer or "").strip().lower()[:1]
    return {"y": ALLOW_ONCE, "a": ALLOW_ALWAYS}.get(key, DENY)


class QuestionScreen:
    """A run's events and its questions on one screen. The calls running beside the one
    asked about (reads at once) go on: their events are held while the question waits
    and shown after the answer, where printed meanwhile they land on its line."""

    def __init__(
        self,
        show: Callable[[DriverEvent], None],
        pause: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self._show = show
        self._pause = pause
        self._held: list[DriverEvent] | None = None
        self._lock = threading.Lock()

    def __call__(self, event: DriverEvent) -> None:
        with self._lock:
            if self._held is not None:
                self._held.append(event)
            else:
                self._show(event)

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """The live status put away and events held while a question is on screen."""
        with self._lock:
            self._held = []
        try:
            with self._pause():
                yield
        finally:
            with self._lock:
                held, self._held = self._held, None
                for event in held or ():
                    self._show(event)


def line_prompter(ask: Callable[[str], str | None]) -> Prompter:
    """Ask through an interactive session's line reader (`Plan.ask`); no answer denies."""

    def prompt(question: PermissionAsk) -> str:
        head, options = _question(question)
        return _choice(ask(f"{head}\n  {options}"))

    return prompt


POLL_S = 0.1


def _read_line(abort: AbortSignal | None) -> str | None:
    """A line typed on standard input; None at its end, once `abort` is set, or once
    the question is `withdrawn`.

    Ctrl-C reaches the event loop, which sets `abort`, never this thread: a
    blocking `input()` would keep the run waiting for an answer it no longer wants.
    """
    while not ((abort is not None and abort.is_set()) or withdrawn()):
        ready, _, _ = select.select([sys.stdin], [], [], POLL_S)
        if ready:
            return sys.stdin.readline() or None
    return None


def _discard_typed_ahead() -> None:
    """Keys typed before the question (an Enter pressed while the model was slow) wait
    in the terminal's buffer; they are no answer to a question not yet asked."""
    try:
        import termios
    except ImportError:
        return
    with contextlib.suppress(termios.error, OSError, ValueError):
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)


def terminal_prompter(
    abort: AbortSignal | None = None,
    pause: Callable[[], AbstractContextManager[None]] | None = None,
) -> Prompter:
    """Ask on the terminal: allow once, always (adds the suggested rule), or deny.

    `pause` puts the run's live status away while the question is on screen;
    Ctrl-C (`abort`) denies at once, and the run ends interrupted.
    """
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True)
    answers = {"y": ALLOW_ONCE, "a": ALLOW_ALWAYS, "n": DENY}

    def ask(question: PermissionAsk) -> str:
        """The call as the model wrote it: its text is escaped, never read as markup."""
        tool, call, reason, suggestion = _shown(question)
        _discard_typed_ahead()
        with pause() if pause is not None else contextlib.nullcontext():
            console.print(f"\n[bold yellow]? {escape(tool)}[/]{escape(call)}")
            console.print(f"  [dim]{escape(reason)}[/]")
            always = f"always ({escape(suggestion)})" if suggestion else "always"
            options = escape("  Allow? [y] once  [a] ") + always + escape("  [n] deny")
            while True:
                console.print(f"{options} [bold magenta]\\[y/a/n][/] [bold cyan](n)[/]: ", end="")
                line = _read_line(abort)
                if line is None:
                    console.print()
                    return DENY
                key = line.strip().lower() or "n"
                if key in answers:
                    return answers[key]
                console.print("[red]Please select one of the available options[/]")

    return ask
