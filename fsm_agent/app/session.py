"""Putting a live run together: a model, tools, hooks, permissions, a log, the engine.

`arun` records a live run; a replay (`areplay`, re-exported here for the package's
users) is put together in `fsm_agent.app.replaying`, which loads nothing live.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import evolve

from fsm_agent.app.replaying import areplay, own_loop, replay
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent
from fsm_agent.core.messages import Message, user
from fsm_agent.core.model import Model, ToolSpec
from fsm_agent.core.tool import Tool, close_tools
from fsm_agent.core.validation import check_schema
from fsm_agent.engine.driver import Engine, LoopResult
from fsm_agent.engine.ports import Effects
from fsm_agent.hooks.outcomes import (
    NOTIFICATION,
    Hooks,
    events_of,
    hooked_events,
    joined,
    notifier,
)
from fsm_agent.live.approvals import Approvals, Prompter
from fsm_agent.live.command_hooks import CommandHooks
from fsm_agent.live.effects import Inbox, LiveEffects
from fsm_agent.live.transcript_writer import TranscriptCursor, TranscriptWriter, transcript_path
from fsm_agent.policy.permissions import check_mode, removed_tools
from fsm_agent.tape.header import session_header
from fsm_agent.tape.log import LogWriter, MemoryWriter, default_log_path
from fsm_agent.tape.recording import RecordingTape, SessionRecorder
from fsm_agent.tools import default_tools
from fsm_agent.tools.replacements import BUILTIN_OUTPUTS
from fsm_agent.tools.session_env import with_session_env

if TYPE_CHECKING:  # the mcp SDK under it takes seconds to import: only MCP runs load it
    from fsm_agent.live.mcp_servers import McpServers
    from fsm_agent.live.scripted import Scenario

__all__ = [
    "areplay",
    "arun",
    "arun_scenario",
    "default_tools",
    "new_session_id",
    "replay",
    "run",
    "run_scenario",
    "tool_specs",
]


def new_session_id() -> str:
    return str(uuid.uuid4())


def tool_specs(tools: Mapping[str, Tool]) -> tuple[ToolSpec, ...]:
    return tuple(ToolSpec(t.name, t.description, t.input_schema) for t in tools.values())


def _messages(prompt: str | Sequence[Message]) -> list[Message]:
    return [user(prompt)] if isinstance(prompt, str) else list(prompt)


async def arun(
    prompt: str | Sequence[Message],
    *,
    model: Model,
    config: RunConfig | None = None,
    tools: Mapping[str, Tool] | None = None,
    hooks: Hooks | None = None,
    log: str | Path | None = None,
    keep_log: bool = True,
    on_event: Callable[[DriverEvent], None] | None = None,
    abort: AbortSignal | None = None,
    inbox: Inbox | None = None,
    header_extra: dict[str, Any] | None = None,
    prompter: Prompter | None = None,
    session_id: str | None = None,
    live_effects: Callable[..., Effects] | None = None,
    read_files: Mapping[str, float] | None = None,
    mcp: McpServers | None = None,
    claude_transcript: bool = True,
    recorder: SessionRecorder | None = None,
    transcript_cursor: TranscriptCursor | None = None,
) -> LoopResult:
    """Run the loop live, recording every transition and effect.

    The log goes to `log`, or under `.fsm-agent/sessions/` in the workspace;
    `keep_log=False` keeps it in memory only. Permission rules and command
    hooks come from `config` (see `fsm_agent.live.settings.load_settings`);
    `prompter` asks the user when a rule says ask (without one, ask = deny).
    `session_id` and `live_effects` (called like `LiveEffects`) let
    tools/regen_replays.py write logs that are the same on every run;
    stream-json passes `session_id` to name the session in `system/init`
    before the run starts. `read_files` carries the files an earlier run of
    the conversation read. `mcp` are the MCP servers whose tools the run offers:
    started here if they are not yet, stopped by their owner (`async with`).
    A run with a log file also writes its conversation
    as a Claude Code transcript (`fsm_agent.live.transcript_writer`), which hooks
    get as `transcript_path`; `claude_transcript=False` (or
    `FSM_AGENT_CLAUDE_TRANSCRIPT=0`) turns that off. `recorder` writes the run into
    its session's one log, after the session's earlier runs (an Agent SDK process),
    in place of a log of its own; `transcript_cursor` carries a
    conversation's transcript from one of its runs to the next (one file for all).
    """
    if mcp is not None:
        mcp.start()  # in parallel with everything else before the first request
    live_effects = live_effects or LiveEffects
    config = config or RunConfig()
    _check_workspace(config.cwd)
    # The workspace as the tools see it (they resolve every path), so the pure context
    # layer matches CLAUDE.md files and `paths:` rules without asking the file system.
    config = evolve(
        config,
        cwd=os.path.realpath(config.cwd),
        home=config.home if config.home is not None else os.path.expanduser("~"),
    )
    mode = check_mode(config.permission_mode)
    if mode != config.permission_mode:  # `manual`, Claude Code's newer name, as the CLI has it
        config = evolve(config, permission_mode=mode)
    tools = default_tools() if tools is None else _checked_tools(tools)
    removed = removed_tools(config.permissions)
    tools = {name: tool for name, tool in tools.items() if name not in removed}
    specs = tool_specs(tools)
    for spec in specs:
        check_schema(spec.name, spec.input_schema)
    config = evolve(
        config,
        hooked_events=hooked_events(events_of(hooks), frozenset(m.event for m in config.hooks)),
    )
    session_id = session_id or new_session_id()
    config = with_session_env(config, session_id)
    header = session_header(session_id, config, specs, **(header_extra or {}))
    path: Path | None = None
    writer: LogWriter | MemoryWriter | None = None
    if recorder is not None:
        path = recorder.path
        tape = recorder.tape(header)  # the session's log stays open for its next run
        blobs = path.parent / path.stem / "tool-results"
    elif keep_log:
        path = Path(log) if log else default_log_path(config.cwd, session_id)
        writer = LogWriter(path, header)
        blobs = path.parent / path.stem / "tool-results"
    else:
        writer = MemoryWriter(header)
        blobs = Path(tempfile.gettempdir()) / "fsm-agent" / session_id / "tool-results"
    if writer is not None:
        tape = RecordingTape(writer)
    claude_session = (transcript_cursor.session_id if transcript_cursor else None) or session_id
    claude_path = (
        transcript_path(config.cwd, claude_session) if path and claude_transcript else None
    )
    claude = None
    if claude_path is not None:
        claude = TranscriptWriter(
            claude_path, session_id=session_id, cwd=config.cwd, model=config.model,
            cursor=transcript_cursor,
        )  # fmt: skip
    if config.hooks:
        transcript = str(claude_path) if claude is not None else str(path.resolve()) if path else ""
        hooks = joined(CommandHooks.for_run(config, transcript), hooks)
    if claude is not None and hooks is not None and config.has_hooks("Stop"):
        stops = [h.command for m in config.hooks if m.event == "Stop" for h in m.hooks]
        hooks = claude.watching(hooks, stops)
    notify = None
    if hooks is not None and prompter is not None and config.has_hooks(NOTIFICATION):
        notify = notifier(hooks, session_id, config.cwd)
    approvals = Approvals(
        config.permissions, config.cwd, prompter=prompter, notify=notify,
        mode=config.permission_mode,
    )  # fmt: skip
    more: dict[str, Any] = {} if mcp is None else {"mcp": mcp}
    effects = live_effects(
        model, tools, hooks, abort, inbox, blob_dir=blobs, approvals=approvals, **more
    )
    on_step = None
    if claude is not None:
        on_event, on_step = _also(claude.on_event, on_event), claude.observe
    engine = Engine(
        config, tape, effects, specs, session_id, on_event, on_step, outputs=BUILTIN_OUTPUTS
    )
    try:
        result = await engine.run(_messages(prompt), read_files)
        if claude is not None:
            claude.sync(result.messages.items)
            claude.ended(result.reason)
        return result
    finally:
        close_tools(tools.values())
        if writer is not None:
            writer.close()
        if claude is not None:
            claude.close()


def _also(
    first: Callable[[DriverEvent], None], then: Callable[[DriverEvent], None] | None
) -> Callable[[DriverEvent], None]:
    def both(event: DriverEvent) -> None:
        first(event)
        if then is not None:
            then(event)

    return both


def _check_workspace(cwd: str) -> None:
    """A workspace that is there, as `--cwd` must be: the log and the tools would
    otherwise make a misspelt path a new, empty workspace and run in it."""
    if not os.path.exists(cwd):
        raise FileNotFoundError(f"the workspace {cwd} does not exist")
    if not os.path.isdir(cwd):
        raise NotADirectoryError(f"the workspace {cwd} is not a directory")


def _checked_tools(tools: Mapping[str, Tool]) -> dict[str, Tool]:
    """`tools` as the engine needs them: each under the name the model calls it by,
    and each a tool, not its class. Checked here, as a mistake would otherwise show
    only when the model first calls the tool ('No such tool available')."""
    if not isinstance(tools, Mapping):
        raise TypeError(f"tools is a mapping of names to tools, not {type(tools).__name__}")
    for key, tool in tools.items():
        if isinstance(tool, type):
            raise TypeError(f"tools[{key!r}] is the class {tool.__name__}, not a tool")
        name = getattr(tool, "name", None)
        if not (
            isinstance(name, str)
            and isinstance(getattr(tool, "description", None), str)
            and isinstance(getattr(tool, "input_schema", None), Mapping)
            and callable(getattr(tool, "run", None))
        ):
            raise TypeError(
                f"tools[{key!r}] is not a tool: a tool has a str 'name', a 'description', "
                "an 'input_schema' and an async 'run' (fsm_agent.core.tool.Tool)"
            )
        if name != key:
            raise ValueError(
                f"tools[{key!r}] is the tool {name!r}: the model calls a tool by its name, "
                "so it must be its key"
            )
    return dict(tools)


def run(prompt: str | Sequence[Message], **kwargs: Any) -> LoopResult:
    """`arun` for scripts: runs its own event loop."""
    own_loop("run")
    return asyncio.run(arun(prompt, **kwargs))


async def arun_scenario(
    scenario: Scenario | str | Path,
    *,
    cwd: str | Path,
    prompt: str | None = None,
    config: RunConfig | None = None,
    **kwargs: Any,
) -> LoopResult:
    """Run a scripted scenario in a workspace: its model turns, its hooks, its settings.

    `config`'s options win over the scenario's `config` where they differ from
    `RunConfig`'s defaults (as command-line options do); the scenario's settings
    add their permission rules and hooks to `config`'s.
    """
    # Deferred (listed in docs/architecture.md): a run against a real model has no scenario.
    from fsm_agent.live.scripted import (
        Scenario,
        ScenarioError,
        ScriptedHooks,
        ScriptedModel,
        callers_choices,
    )

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    text = prompt or scenario.prompt
    if not text:
        raise ScenarioError("no prompt given, and the scenario has no 'prompt'")
    abort = kwargs.pop("abort", None) or AbortSignal()
    base = config or RunConfig()
    run_config = scenario.run_config(evolve(base, cwd=os.path.realpath(cwd)))
    run_config = evolve(run_config, **callers_choices(base))
    return await arun(
        text,
        model=ScriptedModel(scenario, abort),
        config=run_config,
        hooks=ScriptedHooks(scenario.hooks),
        abort=abort,
        **kwargs,
    )


def run_scenario(scenario: Scenario | str | Path, **kwargs: Any) -> LoopResult:
    own_loop("run_scenario")
    return asyncio.run(arun_scenario(scenario, **kwargs))
