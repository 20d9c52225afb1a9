"""The door's effects as the session log holds them: one declaration each.

Each `Effect` names a port's method, its record's `name`, what of a call is
written (`key`: the request the replay matches it by, and the `args` shown in
reports), and how its result is written and read back. Recording
(`fsm_agent.tape.recording`), replay (`fsm_agent.tape.answering`), a cut
log's interrupt (`fsm_agent.tape.cut_log`) and a fork's switch
(`fsm_agent.app.fork`) are all derived from `EFFECTS`: adding an effect is its
port's method, its line here, and its live implementation.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

from attrs import frozen

from fsm_agent.core.codec import CodecError, converter, structure, unstructure, unstructure_hook
from fsm_agent.core.config import NO_CHANGE, SessionChange
from fsm_agent.core.events import ModelCallError, StreamEvent
from fsm_agent.core.jsontext import canonical
from fsm_agent.core.mcp import McpServerState
from fsm_agent.core.model import ModelRequest
from fsm_agent.core.permission_types import (
    ALLOW_ONCE,
    Decision,
    PermissionAsk,
    PermissionRequest,
    PermissionsUpdated,
    PermissionUpdate,
)
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome
from fsm_agent.engine.ports import interrupted
from fsm_agent.hooks.outcomes import INTERRUPTED_HOOKS, HookOutcome
from fsm_agent.tape.stream_check import stream_problem

Key = tuple[str, Any]
"""A call as the log writes it: the request it is matched by, and its `args` (None: none)."""
Kind = Literal["call", "sync", "stream"]
"""How the port's method is called: awaited, called, or iterated (the model's stream)."""


def plain(value: Any) -> Any:
    """`unstructure(value)` through cattrs' hook for its class, looked up once per class."""
    return unstructure_hook(value.__class__)(value)


def digest_of(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()[:16]


def same(value: Any) -> Any:
    return value


def model_summary(request: ModelRequest) -> dict[str, Any]:
    """A short, readable account of a model request, for divergence reports."""
    last = request.messages[-1] if len(request.messages) else None
    return {
        "model": request.model,
        "purpose": request.purpose,
        "max_tokens": request.max_tokens,
        "messages": len(request.messages),
        "last": None if last is None else f"{last.role}: {last.text[:80] or '[blocks]'}",
    }


_HOOKS: dict[Any, Any] = {}


def structured(value: Any, cls: Any) -> Any:
    """cattrs' hook for `cls` called directly: replay structures every recorded result.

    Only on failure does it go through `codec.structure`, for a readable `CodecError`.
    """
    hook = _HOOKS.get(cls)
    if hook is None:
        hook = _HOOKS[cls] = converter.get_structure_hook(cls)
    try:
        return hook(value, cls)
    except Exception:
        return structure(value, cls)


@frozen
class Effect:
    """One effect: see the module docstring.

    A call that is only `sometimes` written leaves its `usual` answer out of the log
    (a poll that found nothing, most polls do): the replay gives it where the log has
    no record. `polled` calls are told apart by their place in
    the step (`Polls`). `pipeline` effects belong to a tool call's pipeline and may be
    written anywhere up to their iteration's `tool_execution` transition (the call
    started while the model streamed). `after_end` is the recorded answer to the call
    past a cut log's end, as an interrupt there would have answered it.
    """

    method: str
    name: str
    key: Callable[..., Key]
    result: Any
    after_end: Any
    kind: Kind = "call"
    encode: Callable[[Any], Any] = plain
    read: Callable[[Any], Any] | None = None
    usual: Any = None
    sometimes: bool = False
    polled: bool = False
    pipeline: bool = False

    def decode(self, recorded: Any) -> Any:
        """A recorded result as the code gets it; `CodecError` if it does not fit."""
        if self.read is not None:
            return self.read(recorded)
        return structured(recorded, self.result)


def _model_key(request: ModelRequest) -> Key:
    return request.digest(), model_summary(request)


def _digest_key(request: ModelRequest) -> Key:
    return request.digest(), None


def _model_result(recorded: Any) -> tuple[list[StreamEvent], ModelCallError | None]:
    """A recorded model stream: its events, and the error it ended with, if any."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("events"), list):
        raise CodecError('a model result is {"events": [...], "error": null}')
    events = structured(recorded["events"], list[StreamEvent])
    problem = stream_problem(events)
    if problem is not None:
        raise CodecError(problem)
    error = recorded.get("error")
    if error is None:
        return events, None
    if not (isinstance(error, dict) and isinstance(error.get("kind"), str)):
        raise CodecError('its error is not {"kind", "message", "status"}')
    return events, ModelCallError(error["kind"], str(error.get("message")), error.get("status"))


def model_record(events: Sequence[StreamEvent], error: ModelCallError | None) -> dict[str, Any]:
    """A model stream as the log writes it: the events it gave, and how it failed."""
    failed = None if error is None else {
        "kind": error.kind, "message": error.message, "status": error.status,
    }  # fmt: skip
    return {"events": unstructure_hook(list[StreamEvent])(list(events)), "error": failed}


def _tool_outcome(recorded: Any) -> ToolOutcome:
    value: ToolOutcome = structured(recorded, ToolOutcome)
    relative = next((p for p in value.read_files if not os.path.isabs(p)), None)
    if relative is not None:  # every reader of read_files takes the path's directory
        raise CodecError(f"read_files: not an absolute path: {json.dumps(relative)}")
    return value


def _plain_key(value: Any) -> Key:
    data = plain(value)
    return digest_of(data), data


def _tool_key(call: ToolCall, env: ToolEnv) -> Key:
    return _plain_key(call)


def _hooks_key(event: str, payload: dict[str, Any]) -> Key:
    return digest_of([event, payload]), event


def _ask_key(
    question: PermissionAsk, cancel: object = None, recheck: PermissionRequest | None = None
) -> Key:
    return _plain_key(question)


def _updates_key(updates: tuple[PermissionUpdate, ...]) -> Key:
    data = [plain(u) for u in updates]
    return digest_of(data), data


def _blob_key(name: str, text: str) -> Key:
    return name, {"name": name, "chars": len(text)}


def _memory_key(paths: tuple[str, ...]) -> Key:
    return digest_of(list(paths)), list(paths)


def _servers(states: tuple[McpServerState, ...]) -> Any:
    return unstructure(list(states), list[McpServerState])


def _named(name: str, *rest: Any) -> Key:
    return name, None


def _nothing() -> Key:
    return "", None


Answer = Literal["allow_once", "allow_always", "deny", "no_terminal", "cancelled"]

EFFECTS: tuple[Effect, ...] = (
    Effect("model_stream", "model", _model_key, None, {"events": [], "error": None},
           kind="stream", encode=same, read=_model_result),
    Effect("count_tokens", "count_tokens", _digest_key, int | None, None, encode=same),
    Effect("run_tool", "tool", _tool_key, ToolOutcome, unstructure(interrupted()),
           read=_tool_outcome, pipeline=True),
    # Written only when the run has MCP servers: a log without them holds no record.
    Effect("mcp_servers", "mcp_servers", _nothing, tuple[McpServerState, ...], [],
           encode=_servers, usual=(), sometimes=True),
    Effect("run_hooks", "hooks", _hooks_key, HookOutcome, unstructure(INTERRUPTED_HOOKS),
           pipeline=True),
    Effect("store_blob", "store_blob", _blob_key, str | None, None, encode=same),
    # A call killed in its permission check was cut short like a running one: it goes on
    # to its tool, whose answer is the interrupt's, not a denial nobody gave.
    Effect("check_permission", "permission", _plain_key, Decision,
           unstructure(Decision("allow")), pipeline=True),
    Effect("ask_permission", "ask_permission", _ask_key, Answer, ALLOW_ONCE, encode=same,
           pipeline=True),
    Effect("update_permissions", "permission_update", _updates_key, PermissionsUpdated, {},
           pipeline=True),
    Effect("discarded", "discarded", _named, bool, True, kind="sync", encode=same,
           usual=False, sometimes=True, pipeline=True),
    Effect("nested_memory", "memory", _memory_key, dict[str, str], {}, encode=same),
    Effect("now", "now", _nothing, float, 0.0, kind="sync", encode=same),
    Effect("new_id", "new_id", _named, str, "cut_short", kind="sync", encode=same),
    Effect("aborted", "aborted", _named, bool, True, kind="sync", encode=same,
           usual=False, sometimes=True, polled=True),
    Effect("queued_input", "queued_input", _nothing, tuple[str, ...], [], kind="sync",
           encode=list, usual=(), sometimes=True),
    # Written only when the user changed something: an older log holds no record.
    Effect("session_change", "session_change", _nothing, SessionChange, {}, kind="sync",
           usual=NO_CHANGE, sometimes=True),
)  # fmt: skip
BY_NAME = {effect.name: effect for effect in EFFECTS}
TOOL_PIPELINE = frozenset(effect.name for effect in EFFECTS if effect.pipeline)
"""Effects of one tool call's pipeline. A call started while the model streams
may record them at any step up to that iteration's `tool_execution`
transition, so replay matches them anywhere in that window."""


def read_result(name: str, recorded: Any) -> Any:
    """A recorded effect result as the code gets it; `CodecError` if it does not fit."""
    effect = BY_NAME.get(name)
    if effect is None:
        raise CodecError(f"no effect is called {name!r}")
    return effect.decode(recorded)


class Polls:
    """Tells apart the polls of one `where` within a step: the second is `where#2`.

    A poll's usual answer (not aborted) is not recorded, so a step that polled
    twice, false then true, holds only the true answer. Keyed by its place,
    the replay gives it to the second poll, not to the first.
    """

    def __init__(self) -> None:
        self._step = 0
        self._counts: dict[str, int] = {}

    def key(self, step: int, where: str) -> str:
        if step != self._step:
            self._step, self._counts = step, {}
        n = self._counts[where] = self._counts.get(where, 0) + 1
        return where if n == 1 else f"{where}#{n}"
