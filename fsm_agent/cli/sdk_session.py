"""A stream-json session for the Agent SDKs: their lines on stdin, one run per user message.

Standard input is read on a thread the whole time, as a chat reads it: a
`user` line is the next prompt, or, while a run goes, queued in that run's
`Inbox` (the model gets it in the `attachments` phase; what the run never took
becomes the next prompt). `control_request` lines are answered at once
(`initialize`, `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`,
`get_context_usage`; anything else is an `error` response), and
`control_response` lines answer the requests a run made of the SDK
(`fsm_agent.live.sdk_control`). Every run of the session has the session's one
`session_id` and goes into its one log, one run after another
(`fsm_agent.tape.recording.SessionRecorder`), which replays with `--check` and
steps through in the debugger run by run. Stdout gets the run's stream-json
lines, written whole under one lock, as the reader thread writes its answers too.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import uuid
from collections import deque
from typing import Any, TextIO

from attrs import evolve

from fsm_agent.app.history import follow_up
from fsm_agent.cli.headless import (
    RunTally,
    StreamJson,
    broken_off_object,
    init_object,
    result_object,
)
from fsm_agent.cli.launch import Plan
from fsm_agent.cli.usage import say
from fsm_agent.core.config import SessionChange
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.limits import context_window
from fsm_agent.core.messages import Message
from fsm_agent.hooks.outcomes import joined
from fsm_agent.live.effects import Inbox
from fsm_agent.live.sdk_control import ControlChannel
from fsm_agent.live.sdk_hooks import RegistrationError, SdkHooks, registered
from fsm_agent.policy.permissions import removed_tools
from fsm_agent.tape.log import LogError
from fsm_agent.tape.recording import SessionRecorder
from fsm_agent.tools import default_tools
from fsm_agent.tools.structured_output import StructuredOutputNudge, structured_output

MODES = ("acceptEdits", "bypassPermissions", "default", "dontAsk", "plan")
"""The modes `set_permission_mode` takes (Claude Code's list, less `auto`, whose
classifier fsm-agent does not have)."""


class SharedInbox(Inbox):
    """The run's inbox, put to by the stdin thread while the run drains it."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def put(self, text: str) -> None:
        with self._lock:
            super().put(text)

    def drain(self) -> tuple[str, ...]:
        with self._lock:
            return super().drain()

    def change(self, **changed: str) -> None:
        with self._lock:
            super().change(**changed)

    def take_change(self) -> SessionChange:
        with self._lock:
            return super().take_change()


class BadRequest(Exception):
    """A control request that cannot be carried out: its `error` response says why."""


class SdkSession:
    """The session: the prompts waiting, the run under way, and the control protocol."""

    def __init__(
        self,
        plan: Plan,
        *,
        session_id: str,
        history: list[Message],
        partial: bool,
        can_use_tool: bool,
        claude_code_version: str,
        sdk_servers: tuple[str, ...] = (),
        structured: bool = False,
        out: TextIO | None = None,
    ) -> None:
        self.plan = plan
        if plan.log is not None:
            plan.recorder = SessionRecorder(plan.log)
        self.session_id = session_id
        self.messages = list(history)
        self.can_use_tool = can_use_tool
        self.version = claude_code_version
        self.writer = StreamJson(out or sys.stdout, session_id, partial=partial)
        self._out_lock = threading.Lock()
        self.channel = ControlChannel(self.send)
        self._state = threading.Condition()
        self._prompts: deque[str] = deque()
        self._ended = False
        self._inbox: Inbox | None = None
        """The inbox of the run under way; None between runs."""
        self._base_hooks = plan.hooks
        self._sdk_hooks: SdkHooks | None = None
        self._default_model = plan.config.model
        self._changes: dict[str, Any] = {}
        """`set_permission_mode` and `set_model`, for the next run's configuration (the run
        under way takes them at its next request, through its inbox)."""
        self._last_input_tokens = 0
        self.failed = False
        """The last run ended in an error result (the exit code then is 1, as claude's)."""
        self._line = 0
        self.sdk_servers = sdk_servers
        self.structured = structured
        """`--json-schema`: each run is nudged to call StructuredOutput, and its result
        carries that call's input as `structured_output`."""
        self._servers: dict[str, str] | None = None
        """Each SDK MCP server's status, once its tools were listed (before the first run)."""

    def send(self, obj: dict[str, Any]) -> None:
        """One line to the SDK, whole, whichever thread writes it."""
        with self._out_lock:
            self.writer.write(obj)

    # --- stdin, on the reader thread ---------------------------------------------------

    def _pump(self, stream: TextIO) -> None:
        for line in iter(stream.readline, ""):
            self._line += 1
            if not line.strip():
                continue
            try:
                self.take(line)
            except Exception as exc:  # a reader thread that died would leave the SDK waiting
                say(f"fsm-agent: error: stdin line {self._line} could not be handled: {exc!r}")
        self.channel.close("standard input was closed")
        with self._state:
            self._ended = True
            self._state.notify_all()

    def take(self, line: str) -> None:
        """One line from the SDK; one that is no message is said on stderr and skipped."""
        try:
            message = json.loads(line)
        except ValueError as exc:
            say(f"fsm-agent: error: stdin line {self._line} is not JSON ({exc}); skipped")
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "control_request":
            self._control(message)
        elif kind == "control_response":
            if not self.channel.answer(message.get("response")):
                say(f"fsm-agent: warning: stdin line {self._line} answers no request; skipped")
        elif kind == "control_cancel_request":
            pass  # nothing here outlives its request: a late answer is dropped
        elif kind == "user":
            self._user(message)
        else:
            say(
                f"fsm-agent: error: stdin line {self._line} has type {kind!r}, not a message "
                "this session reads (user, control_request, control_response); skipped"
            )

    def _user(self, message: dict[str, Any]) -> None:
        text = _prompt_text(message.get("message"))
        if isinstance(text, BadRequest):
            self.send(self._refusal(f"stdin line {self._line}: {text}"))
            return
        with self._state:
            if self._inbox is not None:
                self._inbox.put(text)
            else:
                self._prompts.append(text)
                self._state.notify_all()

    def _control(self, message: dict[str, Any]) -> None:
        request_id = message.get("request_id")
        request = message.get("request")
        response: dict[str, Any] = {"subtype": "success", "request_id": request_id}
        try:
            if not isinstance(request_id, str):
                raise BadRequest("a control_request needs a request_id")
            if not isinstance(request, dict) or not isinstance(request.get("subtype"), str):
                raise BadRequest("a control_request needs a request with a subtype")
            response["response"] = self._answer(request)
        except BadRequest as exc:
            response = {"subtype": "error", "request_id": request_id, "error": str(exc)}
        self.send({"type": "control_response", "response": response})

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        subtype = request["subtype"]
        config = self.plan.config
        if subtype == "initialize":
            return self._initialize(request)
        if subtype == "interrupt":
            with self._state:
                running = self._inbox is not None
            if running:
                self.plan.abort.set()
            return {"still_queued": []}
        if subtype == "set_permission_mode":
            mode = request.get("mode")
            if mode not in MODES:
                raise BadRequest(f"Cannot set permission mode: must be one of {', '.join(MODES)}")
            self._change(permission_mode=mode)
            if self._sdk_hooks is not None:
                self._sdk_hooks.permission_mode = mode
            self.send(self._line_of("system", subtype="status", status=None, permissionMode=mode))
            return {"mode": mode}
        if subtype == "set_model":
            model = request.get("model")
            if model is not None and not isinstance(model, str):
                raise BadRequest("set_model: model is a string or null")
            self._change(model=model or self._default_model)
            return {}
        if subtype == "mcp_status":
            return {"mcpServers": self._server_list()}
        if subtype == "get_context_usage":
            window = context_window(config.model)
            used = self._last_input_tokens
            return {
                "categories": [],
                "totalTokens": used,
                "maxTokens": window,
                "rawMaxTokens": window,
                "percentage": round(100 * used / window, 2) if window else 0,
                "model": config.model,
            }
        raise BadRequest(f"Unsupported control request subtype: {subtype}")

    def _change(self, **changed: str) -> None:
        """A mode or model set: the run under way takes it at its next request (an effect,
        so its replay does too), and the next run starts with it."""
        with self._state:
            self._changes.update(changed)
            if self._inbox is not None:
                self._inbox.change(**changed)

    def _initialize(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            matchers = registered(request.get("hooks"))
        except RegistrationError as exc:
            raise BadRequest(f"initialize: {exc}") from None
        self._sdk_hooks = SdkHooks(
            self.channel,
            matchers,
            can_use_tool=self.can_use_tool,
            permission_mode=self.plan.config.permission_mode,
        )
        return {
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [],
            "account": {"apiKeySource": self._key_source()},
            "pid": os.getpid(),
            "claude_code_version": self.version,
            "current_permission_mode": self.plan.config.permission_mode,
            "hook_on_failure_supported": False,
        }

    # --- the runs, on the main thread -----------------------------------------------------

    def serve(self, stream: TextIO) -> int:
        """Read `stream` until it ends, running each prompt as it comes; the exit code."""
        threading.Thread(
            target=self._pump, args=(stream,), name="fsm-agent-sdk", daemon=True
        ).start()
        while True:
            with self._state:
                while not self._prompts and not self._ended:
                    self._state.wait()
                if not self._prompts:
                    break
                prompt = self._prompts.popleft()
                self._inbox = SharedInbox()
            self.turn(prompt)
        if self.plan.recorder is not None:
            self.plan.recorder.close()
        self.plan.end("other")
        return 1 if self.failed else 0

    def turn(self, prompt: str) -> None:
        """One user message: a run of the loop over the conversation so far."""
        plan = self.plan
        plan.abort.clear()
        with self._state:
            changes, self._changes = self._changes, {}
        if changes:
            plan.config = evolve(plan.config, **changes)
        if self._sdk_hooks is not None:
            self._sdk_hooks.permission_mode = plan.config.permission_mode
            self._sdk_hooks.prompt_id = str(uuid.uuid4())
        nudge = StructuredOutputNudge() if self.structured else None
        plan.hooks = joined(self._base_hooks, self._sdk_hooks, nudge)
        if self._servers is None:
            self._servers = self._list_sdk_tools() if self.sdk_servers else {}
        inbox = self._inbox
        assert inbox is not None
        tally = RunTally()
        self.send(self._init())

        def on_event(event: DriverEvent) -> None:
            with self._out_lock:
                tally(event)
                self.writer(event)

        started = time.monotonic()
        try:
            result = plan.run_interruptibly(
                follow_up(self.messages, prompt), on_event, inbox=inbox, session_id=self.session_id
            )
        except (LogError, OSError) as exc:
            error = (
                str(exc) if isinstance(exc, LogError) else f"cannot write the session log: {exc}"
            )
            self.send(
                broken_off_object(
                    error, session_id=self.session_id, model=plan.config.model, log=None,
                    duration_ms=round((time.monotonic() - started) * 1000), tally=tally,
                )
            )  # fmt: skip
            self.failed = True
            with self._state:
                self._inbox = None
                self._prompts.clear()
                self._ended = True
            return
        finally:
            with self._state:
                left = inbox.drain()
                self._inbox = None
                self._prompts.extendleft(reversed(left))
        self.messages = list(result.messages.items)
        self._last_input_tokens = _context_tokens(result)
        duration_ms = round((time.monotonic() - started) * 1000)
        line = result_object(result, duration_ms=duration_ms, tally=tally)
        if self.structured:
            line["structured_output"] = structured_output(result.messages.items)
        if plan.budget is not None:
            plan.budget.mark(line, tally)
        with self._out_lock:
            self.writer.ended(result)
            self.writer.write(line)
        self.failed = bool(line["is_error"])

    def _list_sdk_tools(self) -> dict[str, str]:
        """The SDK servers' tools, added to the built-in ones for every run; a server that
        cannot be listed is said on stderr and in its status, its tools left out."""
        import fsm_agent.live.sdk_mcp as sdk_mcp  # the mcp SDK: see the lazy-load table

        tools, status = asyncio.run(sdk_mcp.sdk_tools(self.channel, self.sdk_servers, self.version))
        for name, state in status.items():
            if state != "connected":
                say(f"fsm-agent: error: the SDK's MCP server {name} {state}")
        self.plan.tools = {**(self.plan.tools or default_tools()), **tools}
        return status

    def _server_list(self) -> list[dict[str, str]]:
        return [
            {"name": name, "status": "connected" if state == "connected" else "failed"}
            for name, state in (self._servers or {n: "pending" for n in self.sdk_servers}).items()
        ]

    def _init(self) -> dict[str, Any]:
        config = self.plan.config
        removed = removed_tools(config.permissions)
        extra = [name for name in (self.plan.tools or {}) if name not in config.tools]
        line = init_object(
            self.session_id,
            config.cwd,
            [name for name in (*config.tools, *extra) if name not in removed],
            config.model,
            config.permission_mode,
            api_key_source=self._key_source(),
            claude_code_version=self.version,
            additional_directories=config.permissions.additional_directories,
        )
        line["mcp_servers"] = self._server_list()
        return line

    def _key_source(self) -> str:
        return "ANTHROPIC_API_KEY" if getattr(self.plan.model, "api_key", None) else "none"

    def _line_of(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, **fields, "session_id": self.session_id, "uuid": str(uuid.uuid4())}

    def _refusal(self, error: str) -> dict[str, Any]:
        """The `result` of a user message that could not be run: an error, said at once."""
        return broken_off_object(
            error, session_id=self.session_id, model=self.plan.config.model, log=None,
            duration_ms=0, tally=RunTally(),
        )  # fmt: skip


def _prompt_text(message: Any) -> str | BadRequest:
    """A user message's text: its string content, or its text blocks joined."""
    if not isinstance(message, dict):
        return BadRequest("a user line needs a message object")
    content = message.get("content")
    if isinstance(content, str):
        return content if content.strip() else BadRequest("the user message is empty")
    if not isinstance(content, list):
        return BadRequest("a user message's content is a string or a list of blocks")
    texts: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind != "text" or not isinstance(block.get("text"), str):
            return BadRequest(f"a user message's {kind!r} block is not supported yet (text only)")
        texts.append(block["text"])
    text = "\n".join(texts)
    return text if text.strip() else BadRequest("the user message is empty")


def _context_tokens(result: Any) -> int:
    """The prompt's size at the run's last request, as the context usage reports it."""
    usage = result.usage
    return int(
        usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    )
