"""A run's conversation as Claude Code writes it: a transcript under its config directory.

Hooks receive it as `transcript_path`, and tools built for Claude Code's
transcripts read it: the Agent SDK's `list_sessions()` and
`get_session_messages()`, `claude --resume <session-id>`, a Stop hook that
copies the conversation. It goes to `$CLAUDE_CONFIG_DIR/projects/<cwd with
every non-alphanumeric character a '-'>/<session-id>.jsonl` (`~/.claude` when
the variable is unset), one line per entry as the real CLI writes them: a
`user` line per user message (`isMeta` on injected ones, `toolUseResult` on
tool results), an `assistant` line per content block of a response (the
lines share `message.id`), a `system` `compact_boundary` line where the
conversation was compacted, a `system` `stop_hook_summary` line each time
the Stop hooks ran (after the feedback of one that blocked), and the user's
`[Request interrupted by user…]` line where a run was interrupted.
`FSM_AGENT_CLAUDE_TRANSCRIPT=0` turns it off.

The session log stays what replays a run; this file is written from what the
run records (its states, step by step) and is never read back by fsm-agent.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from attrs import evolve

from fsm_agent.core import jsontext
from fsm_agent.core.codec import block_to_api, unstructure
from fsm_agent.core.events import ContextReport, DriverEvent, ModelEvent, ModelRetry, ToolFinished
from fsm_agent.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from fsm_agent.engine.driver import StepInfo
from fsm_agent.engine.reasons import Terminal
from fsm_agent.hooks.outcomes import HookOutcome, Hooks
from fsm_agent.live.claude_home import UserFiles

SWITCH_VARIABLE = "FSM_AGENT_CLAUDE_TRANSCRIPT"
ENTRYPOINT = "fsm-agent"
"""Each line's `entrypoint` (Claude Code writes `cli`, `sdk-cli`…): `fsm-agent sessions`
tells its own transcripts, whose logs it lists, from Claude Code's."""
OFF = frozenset({"0", "false", "off", "no"})
MAX_NAME = 200
"""Claude Code truncates a project directory's name past this, and adds a hash."""

API_ERROR = "API Error: "
"""How the answer an API error became begins (the engine's words, and Claude Code's)."""

INTERRUPTS: dict[str, str] = {
    Terminal.ABORTED_STREAMING: "[Request interrupted by user]",
    Terminal.ABORTED_TOOLS: "[Request interrupted by user for tool use]",
}
"""The user line Claude Code writes when the user interrupts a run, by where it was."""

CLAUDE_CODE_VERSION = "2.1.332"
"""The Claude Code release whose transcript lines these match (the CLI the tests run)."""


def project_dir_name(cwd: str) -> str:
    """The directory Claude Code keeps a workspace's transcripts in, under `projects/`."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME]}-{_string_hash(cwd)}"


def _string_hash(text: str) -> str:
    """The 32-bit string hash (`h = 31 * h + c`, as a signed int) in base 36, as Claude
    Code names a long path's directory, so its readers (the Agent SDK) find it."""
    h = 0
    for char in text:
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    n = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = ""
    while True:
        n, rest = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
        if n == 0:
            return digits


def claude_config_dir() -> Path:
    return UserFiles.of().config_dir


def project_dir(cwd: str) -> Path:
    """Where Claude Code keeps the transcripts of sessions in `cwd`."""
    return claude_config_dir() / "projects" / project_dir_name(cwd)


def transcript_path(cwd: str, session_id: str) -> Path | None:
    """Where a run in `cwd` writes its transcript; None when the variable turns it off."""
    if os.environ.get(SWITCH_VARIABLE, "").strip().lower() in OFF:
        return None
    return project_dir(cwd) / f"{session_id}.jsonl"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TranscriptCursor:
    """Where a conversation's transcript stands between its runs: a chat's (or an SDK
    session's) runs each have their own log and session id, but Claude Code keeps one
    transcript for the conversation, so each run after the first goes on writing the
    first run's file (its `sessionId`, its chain of `parentUuid`), from the messages the
    runs before wrote. A fresh cursor (`/clear`) starts a new one."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.last_uuid: str | None = None
        self.written: tuple[Message, ...] = ()

    @classmethod
    def resuming(cls, cwd: str, session_id: str, messages: Sequence[Message]) -> TranscriptCursor:
        """The cursor of a resumed conversation (`--resume`): Claude Code goes on the
        session's own transcript (same file, same `sessionId`, the chain from its last
        line), so the run writes only what it adds to `messages`. With no transcript of
        the session there (written with the transcript off, or elsewhere), the run
        writes the whole conversation to one under the session's id."""
        cursor = cls()
        cursor.session_id = session_id
        path = transcript_path(cwd, session_id)
        last = _last_uuid(path) if path is not None else None
        if last is not None:
            cursor.last_uuid = last
            cursor.written = tuple(messages)
        return cursor


def _last_uuid(path: Path) -> str | None:
    """The `uuid` of the transcript's last entry that has one (the end of its chain)."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            entry = jsontext.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("uuid"), str):
            return entry["uuid"]
    return None


class TranscriptWriter:
    """Appends the run's messages to its transcript as they come, each once.

    `observe` is the engine's `on_step`: a response is written the step it is
    streamed (a Stop hook that reads the file finds it), a user message once a
    state holds it. A state whose messages no longer extend what was written
    was compacted: a `compact_boundary` line, then its messages. A transcript
    that cannot be written is given up, never the run's failure.
    """

    def __init__(
        self,
        path: Path,
        *,
        session_id: str,
        cwd: str,
        model: str,
        cursor: TranscriptCursor | None = None,
    ) -> None:
        self.path = path
        self.cursor = cursor
        self.session_id = session_id
        self.cwd = cwd
        self.model = model
        self.written: list[Message] = []
        self.last_uuid: str | None = None
        if cursor is not None and cursor.session_id is not None:  # a later run goes on
            self.session_id = cursor.session_id
            self.written = list(cursor.written)
            self.last_uuid = cursor.last_uuid
        self.uuids: dict[str, str] = {}
        """Each tool_use id to the uuid of the assistant line that holds it."""
        self.responses: dict[str, dict[str, Any]] = {}
        self.compacted: dict[str, int] = {}
        """The token counts of the compaction whose boundary is next (`preTokens`, …)."""
        self.summaries: list[dict[str, Any]] = []
        """Stop hooks' summaries not yet written: each follows the messages of its step
        (a blocking hook's feedback first), as Claude Code orders them."""
        self.file: IO[bytes] | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file = path.open("ab")
        except OSError:
            self.file = None

    def on_event(self, event: DriverEvent) -> None:
        """A finished tool's structured output, for its result's `toolUseResult`; a
        request the SDK retried, as Claude Code's `system` `api_error` line."""
        if isinstance(event, ToolFinished) and event.response is not None:
            self.responses[event.result.tool_use_id] = event.response
        elif isinstance(event, ContextReport) and event.after < event.before:
            self.compacted = {"preTokens": event.before, "postTokens": event.after}
        elif isinstance(event, ModelEvent) and isinstance(event.event, ModelRetry):
            retry = event.event
            delay = None if retry.delay_s is None else round(retry.delay_s * 1000)
            error = {"message": retry.error, "status": retry.status, "formatted": retry.error}
            self._write(
                self._entry(
                    "system",
                    subtype="api_error",
                    level="error",
                    error=error,
                    retryInMs=delay,
                    retryAttempt=retry.attempt,
                    maxRetries=retry.max_retries,
                )
            )

    def observe(self, step: StepInfo) -> None:
        messages = step.state.messages
        pending: Sequence[Message] = step.iteration.assistant_messages
        if pending:
            recent = messages[-4:]
            pending = [m for m in pending if m not in recent]
        self.sync(messages, pending)

    def sync(self, messages: Sequence[Message], pending: Sequence[Message] = ()) -> None:
        """Write what `messages`, then `pending` (responses no state holds yet), hold
        beyond what is written already. Only their tail is read: a step costs what it
        added, not the history (a `Transcript` slices without copying what is before)."""
        if self.file is None:
            return
        done = len(self.written)
        held = len(messages)
        size = held + len(pending)

        def at(index: int) -> Message:
            return messages[index] if index < held else pending[index - held]

        if done and size >= done and self._extends(at(done - 1)):
            self.written[-1] = at(done - 1)
        if done and (size < done or at(done - 1) != self.written[-1]):
            self._boundary()
            done = 0
            self.written = []
        new = pending[done - held :] if done >= held else (*messages[done:], *pending)
        for message in new:
            self._message(message, compact_summary=not self.written and self.last_uuid is not None)
            self.written.append(message)
        for summary in self.summaries:
            self._write(self._entry("system", **summary))
        self.summaries.clear()

    def watching(self, hooks: Hooks, commands: Sequence[str]) -> Hooks:
        """`hooks`, with each outcome of the Stop hooks (`commands`, as settings name
        them) written as Claude Code's `stop_hook_summary` line."""
        return _StopWatch(hooks, self, tuple(commands))

    def stop_hooks_ran(self, outcome: HookOutcome, commands: Sequence[str]) -> None:
        self.summaries.append(
            {
                "subtype": "stop_hook_summary",
                "hookCount": max(len(commands), 1),
                "hookInfos": [{"command": c} for c in commands],
                "hookErrors": list(outcome.blocking_errors),
                "failedHookErrorIndexes": [],
                "hookAdditionalContext": list(outcome.additional_context),
                "preventedContinuation": outcome.prevent_continuation,
                "stopReason": outcome.stop_reason or "",
                "hasOutput": bool(
                    outcome.blocking_errors or outcome.prevent_continuation or outcome.messages
                ),
                "level": "suggestion",
                "toolUseID": str(uuid.uuid4()),
            }
        )

    def ended(self, reason: str) -> None:
        """The run is over: an interrupted one gets the user's interrupt line."""
        text = INTERRUPTS.get(reason)
        if text is not None and self.file is not None:
            content = [{"type": "text", "text": text}]
            self._write(self._entry("user", message={"role": "user", "content": content}))

    def _extends(self, message: Message) -> bool:
        """Whether `message` is the last one written with blocks added: a later run's
        prompt joined to the tool results an interrupted run ended with
        (`history.follow_up`); the added blocks are written as a user line of their own."""
        last = self.written[-1]
        if message == last or message.role != "user" or last.role != "user":
            return False
        if message.content[: len(last.content)] != last.content:
            return False
        added = evolve(message, content=message.content[len(last.content) :])
        self._message(added, compact_summary=False)
        return True

    def close(self) -> None:
        if self.cursor is not None:
            self.cursor.session_id = self.session_id
            self.cursor.last_uuid = self.last_uuid
            self.cursor.written = tuple(self.written)
        if self.file is not None:
            self.file.close()
            self.file = None

    def _write(self, entry: dict[str, Any]) -> None:
        if self.file is None:
            return
        try:
            self.file.write(jsontext.dumps(entry) + b"\n")
            self.file.flush()
        except OSError:
            self.close()

    def _entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        line_uuid = str(uuid.uuid4())
        entry = {
            "parentUuid": self.last_uuid,
            "isSidechain": False,
            "userType": "external",
            "entrypoint": ENTRYPOINT,
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": CLAUDE_CODE_VERSION,
            "gitBranch": "",
            "type": kind,
            **fields,
            "uuid": line_uuid,
            "timestamp": _now(),
        }
        self.last_uuid = line_uuid
        return entry

    def _message(self, message: Message, *, compact_summary: bool) -> None:
        if message.role == "assistant":
            self._assistant(message)
            return
        blocks = [block_to_api(b) for b in message.content]
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        single = len(message.content) == 1 and isinstance(message.content[0], TextBlock)
        content: Any = message.content[0].text if single else blocks  # type: ignore[union-attr]
        fields: dict[str, Any] = {"message": {"role": "user", "content": content}}
        if message.is_meta:
            fields["isMeta"] = True
        if compact_summary:
            fields["isCompactSummary"] = True
        if results:
            first = results[0]
            fields["toolUseResult"] = self.responses.get(
                first.tool_use_id, f"Error: {first.text}" if first.is_error else first.text
            )
            source = self.uuids.get(first.tool_use_id)
            if source is not None:
                fields["sourceToolAssistantUUID"] = source
        self._write(self._entry("user", **fields))

    def _assistant(self, message: Message) -> None:
        first = message.content[0] if message.content else None
        if message.id is None and isinstance(first, TextBlock) and first.text.startswith(API_ERROR):
            self._api_error(first.text)
            return
        usage = unstructure(message.usage) if message.usage is not None else {}
        for block in message.content or (TextBlock(""),):
            body = {
                "id": message.id or f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": message.model or self.model,
                "content": [block_to_api(block)],
                "stop_reason": message.stop_reason,
                "stop_sequence": None,
                "usage": usage,
            }
            entry = self._entry("assistant", message=body)
            if isinstance(block, ToolUseBlock):
                self.uuids[block.id] = entry["uuid"]
            self._write(entry)

    def _api_error(self, text: str) -> None:
        """An API error that became the answer, as Claude Code writes it: a message of
        its own making (model `<synthetic>`), marked `isApiErrorMessage`."""
        body = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": "<synthetic>",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "stop_sequence",
            "stop_sequence": "",
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        self._write(self._entry("assistant", message=body, isApiErrorMessage=True))

    def _boundary(self) -> None:
        logical = self.last_uuid
        self.last_uuid = None
        self._write(
            self._entry(
                "system",
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                level="info",
                compactMetadata={"trigger": "auto", **self.compacted},
                logicalParentUuid=logical,
            )
        )


class _StopWatch:
    """A run's hooks, unchanged, telling the writer what the Stop hooks decided."""

    def __init__(self, hooks: Hooks, writer: TranscriptWriter, commands: tuple[str, ...]):
        self.hooks = hooks
        self.writer = writer
        self.commands = commands
        events = getattr(hooks, "events", None)
        if events is not None:
            self.events = events

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        outcome = await self.hooks.run(event, payload)
        if event == "Stop" and not outcome.interrupted:
            self.writer.stop_hooks_ran(outcome, self.commands)
        return outcome
