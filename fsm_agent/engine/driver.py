"""The driver: run the phase of the current state, fire the machine, apply the edge.

This is the whole loop. It holds no decision of its own: which edge is taken
is the machine's, what an edge does to the state is its action's (`actions`), and
what the world answers is the effects'. The same code records a live run and
replays a log.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

from attrs import evolve, field, frozen

from fsm_agent.core.codec import unstructure
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import (
    ContextReport,
    DriverEvent,
    McpReady,
    Notice,
    ToolRefused,
    Transition,
)
from fsm_agent.core.mcp import CONNECTED, describe, mcp_tools
from fsm_agent.core.messages import Message, Usage
from fsm_agent.core.model import ToolSpec
from fsm_agent.core.tool import ToolOutputs
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.actions import (
    CONTINUE,
    ON_EDGE,
    PROCEED,
    final_messages,
    terminal_error,
    unanswered_results,
)
from fsm_agent.engine.machine import EDGES, LoopMachine
from fsm_agent.engine.phases import CONFIRMS, PHASES, STOP_HOOKS_INTERRUPTED
from fsm_agent.engine.ports import Effects, Tape
from fsm_agent.engine.prelude import session_prelude
from fsm_agent.engine.reasons import PROMPT_BLOCKED, Kind, Terminal
from fsm_agent.engine.run import Run
from fsm_agent.engine.state import Iteration, LoopState, Permissions, ToolContext


@frozen
class Step:
    source: str
    edge: str
    dest: str

    def __str__(self) -> str:
        return f"{self.source} -[{self.edge}]-> {self.dest}"


STEPS: dict[tuple[str, str], Step] = {
    (e.source.value, e.name): Step(e.source.value, e.name, e.dest) for e in EDGES
}
"""One `Step` per edge of the table: a path holds these, not a new one per step."""


API_ERROR_REASONS = (
    Terminal.MODEL_ERROR,
    Terminal.PROMPT_TOO_LONG,
    Terminal.IMAGE_ERROR,
    Terminal.BLOCKING_LIMIT,
)
"""The Terminal reasons of a run the API's failure ended, or the context's size before
a request (which Claude Code answers with the same synthetic error as the API's)."""
_KIND = re.compile(r"^[a-z_]+: ")


@frozen
class LoopResult:
    """How a run ended: the Terminal reason, the path taken, the conversation.

    The path and the conversation stay out of the repr: `asyncio.run` formats
    its main task's result when it restores the SIGINT handler, and a repr
    that walks a long session would be paid at the end of every run.
    """

    reason: str
    path: tuple[Step, ...] = field(repr=False)
    messages: Transcript = field(repr=False)
    turns: int
    usage: Usage
    session_id: str
    model: str
    error: str | None = None
    api_error_status: int | None = None
    """The HTTP status of an API error that became the answer or ended the run
    (`claude -p`'s field)."""
    log_path: str | None = None
    read_files: dict[str, float] = field(factory=dict, repr=False)
    """Files read and their mtimes, for the next run of the same conversation (a chat)."""

    @property
    def is_error(self) -> bool:
        """Anything but a clean `completed`: an API error answer (a 401, say) ends the
        loop `completed`, with `error` set, and is still an error. A prompt a hook
        blocked is not one: the hook did its job (Claude Code's `success`), and `error`
        holds what it answers in the model's place. Nor is a Stop hook's stop."""
        if self.reason == PROMPT_BLOCKED or self.stopped_by_hook:
            return False
        return self.reason != "completed" or self.error is not None

    @property
    def text(self) -> str:
        for message in reversed(self.messages.items):
            if message.role == "assistant":
                return message.text
        return ""

    @property
    def stopped_by_hook(self) -> bool:
        """A hook ended the run, not Ctrl-C while Stop hooks ran: a Stop hook's
        `continue: false` after the model finished, or a tool hook's stop once the turn's
        calls ran (`hook_stopped`). Claude Code reports either as `success`, not an error
        (measured on 2.1.332); `error` keeps the hook's `stopReason`."""
        if self.reason == Terminal.HOOK_STOPPED:
            return True
        return self.reason == Terminal.STOP_HOOK_PREVENTED and self.error != STOP_HOOKS_INTERRUPTED

    @property
    def ended_on_api_error(self) -> bool:
        """The run ended because the API failed (its retries used, the prompt too long,
        an image refused) or the context is over the blocking limit: Claude Code
        answers such a run with the error, as `success` with `is_error`, where
        fsm-agent keeps the Terminal reason that says which."""
        return self.reason in API_ERROR_REASONS

    @property
    def answer(self) -> str:
        """What `claude -p` answers a run that completed with: the `API Error: …` it
        ended on (a refusal after some text, say), else the final text; a run that
        ended on an API error answers with it. A run a tool hook stopped answers `""`:
        Claude Code takes the text of its last content block, a tool call (measured on
        2.1.332, text earlier in that turn or not)."""
        if self.reason in ("completed", PROMPT_BLOCKED):
            return self.error or self.text
        if self.reason == Terminal.HOOK_STOPPED:
            return ""
        if self.stopped_by_hook:
            return self.text
        if self.ended_on_api_error:
            said = self.error or self.reason
            if self.reason == Terminal.MODEL_ERROR:
                said = _KIND.sub("", said, count=1)  # the kind the loop reacted to
            return f"API Error: {said}"
        return self.text

    @property
    def edges(self) -> tuple[str, ...]:
        return tuple(step.edge for step in self.path)


def initial_state(
    messages: Sequence[Message], config: RunConfig, read_files: Mapping[str, float] | None = None
) -> LoopState:
    return LoopState(
        messages=Transcript.of(messages),
        tool_context=ToolContext(
            cwd=config.cwd, model=config.model, read_files=dict(read_files or {})
        ),
        permissions=Permissions(
            config.permission_mode,
            config.permission_mode,
            config.permissions.additional_directories,
        ),
    )


def fresh_iteration(state: LoopState) -> Iteration:
    return Iteration(
        messages_for_query=state.messages,
        model=state.tool_context.model,
        collapse=state.collapse,
        auto_compact_tracking=state.auto_compact_tracking,
    )


@frozen
class StepInfo:
    """What one step left behind, for observers (the replay debugger).

    `iteration` is the scratch the phase filled in, before a Continue edge
    starts a fresh one; `state` is the `LoopState` after the edge.
    """

    step: int
    source: str
    edge: str
    dest: str
    state: LoopState
    iteration: Iteration


OnStep = Callable[[StepInfo], Awaitable[None] | None]


class Engine:
    """Drives one run of the loop over a tape (a log being written or replayed).

    `on_step` is called after every transition; if it returns an awaitable the
    engine awaits it, so an observer can pause the run between steps. `outputs` are
    the tools' output shapes, for hooks that replace an output (the engine imports
    no tool).
    """

    def __init__(
        self,
        config: RunConfig,
        tape: Tape,
        effects: Effects | None = None,
        tool_specs: Sequence[ToolSpec] = (),
        session_id: str = "",
        on_event: Callable[[DriverEvent], None] | None = None,
        on_step: OnStep | None = None,
        outputs: ToolOutputs | None = None,
    ) -> None:
        self.config = config
        self.outputs = outputs
        self.on_step = on_step
        self.tape = tape
        self.effects = tape.wrap(effects)
        self.tool_specs = tuple(tool_specs)
        self.session_id = session_id
        self.on_event = on_event
        self.machine = LoopMachine(config)

    def _emit(self, event: DriverEvent) -> None:
        if isinstance(event, ContextReport):
            self.tape.context(
                {
                    "level": event.level,
                    "before": event.before,
                    "after": event.after,
                    "text": event.text,
                }
            )
        if self.on_event is not None:
            self.on_event(event)

    async def run(
        self, messages: Sequence[Message], read_files: Mapping[str, float] | None = None
    ) -> LoopResult:
        """Run the loop over `messages`; `read_files` carries what an earlier run read."""
        self.tape.start([unstructure(m, Message) for m in messages], dict(read_files or {}))
        servers = await self.effects.mcp_servers()
        if servers:
            self._emit(McpReady(servers))
        for state in servers:
            if state.status != CONNECTED:
                self._emit(Notice("mcp", f"MCP server {describe(state)}"))
        mcp = mcp_tools(servers)
        run = Run(
            self.config,
            self.effects,
            self.tool_specs + mcp.specs,
            self._emit,
            self.session_id,
            outputs=self.outputs,
            mcp=mcp,
        )
        try:
            return await self._loop(run, messages, read_files)
        except BaseException:
            await run.executor.abandon()
            raise

    async def _loop(
        self, run: Run, messages: Sequence[Message], read_files: Mapping[str, float] | None
    ) -> LoopResult:
        prelude = await session_prelude(run, messages)
        state = initial_state(prelude.messages, self.config, read_files)
        it = evolve(fresh_iteration(state), prompt_blocked=prelude.blocked)
        start = state.permissions
        digest = state.digest(start)
        path: list[Step] = []
        machine = self.machine
        while not machine.is_final:
            source = machine.state
            it, facts = await PHASES[source](run, state, it)
            edge = machine.choose(state, facts)
            if edge.confirm is not None:
                it, facts = await CONFIRMS[edge.confirm](run, state, it, facts)
                edge = machine.choose(state, facts)
            machine.take(edge)
            done = it
            if edge.kind is Kind.CONTINUE:
                state = await CONTINUE[edge.action](run, state, it, facts)
                it = fresh_iteration(state)
                digest = state.digest(start)
            elif edge.action != PROCEED:  # a phase edge hands the iteration on as it is
                it = done = await ON_EDGE[edge.action](run, state, it, facts)
            record = {
                "from": source,
                "to": edge.dest,
                "edge": edge.name,
                "turn": state.turn_count,
                "state": digest,
            }
            step_no = self.tape.step
            self.tape.transition(record, state)
            path.append(STEPS[source, edge.name])
            self._emit(Transition(step_no, source, edge.dest, edge.name, state.turn_count))
            if self.on_step is not None:
                waiting = self.on_step(StepInfo(step_no, source, edge.name, edge.dest, state, done))
                if inspect.isawaitable(waiting):
                    await waiting
        reason = machine.state
        for block, filled in unanswered_results(reason, it):
            self._emit(ToolRefused(block, filled))
        result = LoopResult(
            reason=reason,
            path=tuple(path),
            messages=final_messages(reason, it),
            turns=0 if reason == PROMPT_BLOCKED else state.turn_count,
            usage=state.usage + it.usage,
            session_id=self.session_id,
            model=it.model,
            error=(
                it.model_error
                or it.api_error
                or it.hook_stop_reason
                or terminal_error(reason, it, self.config)
            ),
            api_error_status=it.api_error_status,
            log_path=str(self.tape.path) if self.tape.path else None,
            read_files={**state.tool_context.read_files, **it.read_files},
        )
        self.tape.result(
            {
                "reason": reason,
                "turns": result.turns,
                "usage": unstructure(result.usage),
                "steps": len(path),
            }
        )
        return result

    async def events(
        self, messages: Sequence[Message], read_files: Mapping[str, float] | None = None
    ) -> AsyncIterator[DriverEvent | LoopResult]:
        """The run as an async stream of events, ending with the `LoopResult`; `read_files`
        as `run` takes it. If the run is cancelled from elsewhere, the stream raises
        `CancelledError` rather than wait for an end that will not come."""
        queue: asyncio.Queue[DriverEvent | LoopResult | BaseException] = asyncio.Queue()
        self.on_event = queue.put_nowait
        task = asyncio.create_task(self.run(messages, read_files))
        task.add_done_callback(
            lambda t: queue.put_nowait(
                asyncio.CancelledError() if t.cancelled() else t.exception() or t.result()
            )
        )
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, LoopResult):
                    return
        finally:
            if not task.done():
                task.cancel()
