"""The live side of permissions: judging calls in this workspace, and asking the user.

`Approvals` is what `LiveEffects.check_permission` and `ask_permission`
call. It resolves paths on the real file system, runs the pure `evaluate`,
and keeps the rules the user added with "always" for the rest of the run, as
it keeps what PermissionRequest hooks' `updatedPermissions` change (`update`).
The user is asked through a `Prompter`, a callback the caller gives (the CLI's
asks on the terminal or a chat's line reader, `fsm_agent.cli.questions`); without
one there is no one to ask, and an ask is a denial.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Callable, Sequence

from attrs import evolve

from fsm_agent.core.abort import AbortSignal
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
from fsm_agent.live.claude_home import UserFiles
from fsm_agent.live.git_config import repository_programs
from fsm_agent.live.paths import (
    command_resolve,
    default_expand,
    default_links,
    default_resolve,
    read_denied,
)
from fsm_agent.live.permission_updates import apply_updates, persist
from fsm_agent.policy.permission_updates import persisted
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
        self.config_dir = (UserFiles.at(home) if home else UserFiles.of()).config_dir
        """Where the user's settings file is, for updates a hook writes there: `home`'s
        when given, else as the CLI finds it (`$CLAUDE_CONFIG_DIR`, else `~/.claude`)."""
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
            facts = call_facts(
                request.tool, request.input, ws, resolve, self._expand, self._links,
                repository_programs,
            )  # fmt: skip
        except (ValueError, OSError) as exc:
            return Decision(
                "deny",
                f"{request.tool} was not run: a path in its input cannot be resolved ({exc})",
            )
        return evaluate(facts, self._settings, request.mode, ws)

    def readable(self, mode: str) -> Callable[[str], bool]:
        """Whether the model may Read a file in `mode` without being asked: the rules
        allow it, or bypassPermissions does (a path outside the workspace no rule asks
        about), as Claude Code judges an unread file Edit and Write may change."""

        def can_read(path: str) -> bool:
            decision = self.check(PermissionRequest("Read", {"file_path": path}, mode))
            if decision.behavior == "allow":
                return True
            return mode == "bypassPermissions" and decision.behavior == "ask" and not decision.rule

        return can_read

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
        settings, mode, notes = apply_updates(
            self.settings, self.mode, updates, cwd=self.cwd, home=self.home,
            start_mode=self.start_mode, config_dir=self.config_dir,
        )  # fmt: skip
        kept = persisted(updates, self.start_mode)
        if write:
            notes += [persist(u, self.cwd, self.home, self.config_dir) for u in kept]
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
