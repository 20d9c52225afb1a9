"""Importing a Claude Code transcript: each of its runs re-enacted and recorded.

Each run goes through the same engine a live run does, with every effect
answered from the transcript (`fsm_agent.tape.transcript_effects`), and is
recorded as a live run is: the logs it writes replay with `--check` like any
other. A transcript of several prompts is several runs of one conversation,
each log's `parent` naming the one before, as a chat writes them. Where the
engine's conversation parts from the transcript's, the import says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import evolve, frozen

from fsm_agent.app.history import follow_up
from fsm_agent.core import jsontext
from fsm_agent.core.config import RunConfig
from fsm_agent.core.limits import MIN_CONTEXT_WINDOW
from fsm_agent.core.messages import Message, ToolResultBlock, ToolUseBlock, user
from fsm_agent.core.model import ToolSpec
from fsm_agent.engine.driver import Engine, StepInfo
from fsm_agent.tape.claude_transcript import (
    TOOL_HOOK_EVENTS,
    Run,
    Transcript,
    TranscriptError,
    read_transcript,
    tool_names,
)
from fsm_agent.tape.header import session_header
from fsm_agent.tape.log import LogError, LogWriter
from fsm_agent.tape.recording import RecordingTape
from fsm_agent.tape.transcript_effects import TranscriptEffects
from fsm_agent.tools import default_tools
from fsm_agent.tools.replacements import BUILTIN_OUTPUTS

ANY_INPUT = {"type": "object", "additionalProperties": True}


@frozen
class ImportedRun:
    """One run's log, how the engine ended it, and where it parted from the transcript."""

    log: Path
    reason: str
    line: int
    differences: tuple[str, ...] = ()


@frozen
class Subagent:
    """A Task (`Agent` tool) subagent of the session, as Claude Code 2.1 writes it: a
    transcript of its own, `<session>/subagents/agent-<id>.jsonl` beside the session's
    (its lines `isSidechain`, its `sessionId` the session's), and `agent-<id>.meta.json`
    naming its type, description and the call that started it, when that is there."""

    path: Path
    agent_id: str
    tool_use_id: str | None = None
    agent_type: str | None = None
    description: str | None = None

    def describe(self) -> dict[str, str]:
        """What a log's header says of the subagent whose run it re-enacts."""
        fields = {
            "agent_id": self.agent_id,
            "tool_use_id": self.tool_use_id,
            "agent_type": self.agent_type,
            "description": self.description,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def title(self) -> str:
        """`subagent a705… (general-purpose: Read the notes) of the call toolu_a1`."""
        what = ": ".join(x for x in (self.agent_type, self.description) if x)
        call = f" of the call {self.tool_use_id}" if self.tool_use_id else ""
        return f"subagent {self.agent_id}{f' ({what})' if what else ''}{call}"


AGENT_FILE = "agent-"


def subagents_of(transcript: Path) -> list[Subagent]:
    """The subagents of the session whose transcript is `transcript`, in name order."""
    folder = transcript.with_suffix("") / "subagents"
    try:
        files = sorted(folder.glob(f"{AGENT_FILE}*.jsonl")) if folder.is_dir() else []
    except OSError:
        return []
    found = []
    for file in files:
        agent_id = file.stem[len(AGENT_FILE) :]
        meta = _meta(file.with_name(f"{file.stem}.meta.json"))
        found.append(
            Subagent(
                file,
                agent_id,
                tool_use_id=_str(meta.get("toolUseId")),
                agent_type=_str(meta.get("agentType")),
                description=_str(meta.get("description")),
            )
        )
    return found


def _meta(path: Path) -> dict[str, object]:
    try:
        value = jsontext.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def subagent_log(log: Path, agent_id: str) -> Path:
    """Where a subagent's first run is logged: beside `log`, `STEM.agent-<id>.jsonl`."""
    return log.with_name(f"{log.stem}.{AGENT_FILE}{agent_id}{log.suffix or '.jsonl'}")


@frozen
class ImportedSubagent:
    """A subagent's logs (or why its transcript could not be read: `problem`)."""

    agent: Subagent
    transcript: Transcript | None
    runs: tuple[ImportedRun, ...]
    problem: str | None = None


@frozen
class Imported:
    transcript: Transcript
    runs: tuple[ImportedRun, ...]
    subagents: tuple[ImportedSubagent, ...] = ()

    @property
    def logs(self) -> tuple[Path, ...]:
        return tuple(run.log for run in self.runs)


def _window_for(transcript: Transcript, config: RunConfig) -> RunConfig:
    """The context window: the default, unless Claude Code compacted at fewer tokens
    than the default's autocompact threshold: then the window whose threshold is the
    fewest it compacted at, so the engine compacts where Claude Code did (a
    transcript does not record the window; the import says it assumed so)."""
    if not transcript.compacted_at or min(transcript.compacted_at) >= config.autocompact_threshold:
        return config
    smaller = config.context_window - (config.autocompact_threshold - min(transcript.compacted_at))
    return evolve(config, context_window=max(smaller, MIN_CONTEXT_WINDOW))


def run_logs(first: Path, count: int) -> list[Path]:
    """Where each run's log goes: `first`, then `first` with `-2`, `-3`, … before `.jsonl`."""
    return [first] + [
        first.with_name(f"{first.stem}-{n}{first.suffix}") for n in range(2, count + 1)
    ]


def tool_specs_for(names: Sequence[str]) -> tuple[ToolSpec, ...]:
    """The tools offered: a built-in one as fsm-agent defines it, any other with any input."""
    builtin = default_tools()
    specs = []
    for name in names:
        tool = builtin.get(name)
        if tool is not None:
            specs.append(ToolSpec(name, tool.description, tool.input_schema))
        else:
            specs.append(ToolSpec(name, f"{name} (a tool of the imported session)", ANY_INPUT))
    return tuple(specs)


def _session_id(transcript: Transcript) -> str:
    """The session id of every run's log: the transcript's, as Claude Code keeps one id
    over a conversation's runs (`--resume`, `--continue`) and fsm-agent's chat does."""
    return transcript.session_id or str(uuid.uuid5(uuid.NAMESPACE_URL, "fsm-agent-import"))


class Said:
    """What the engine's conversation says that the transcript also says: the model's
    blocks and the tool results, in the order they first appear; injected messages and
    the prompt left out. Gathered step by step (`observe` is the engine's `on_step`),
    since a compaction replaces what came before it in the run's messages."""

    def __init__(self, start: Sequence[Message]) -> None:
        self.seen: set[object] = {_key(m) for m in start}
        """The messages the run started with (the prompt, the conversation before) are
        not the run's: seen already."""
        self.items: list[tuple[str, object]] = []

    def observe(self, step: StepInfo) -> None:
        self.take(step.state.messages.items)

    def take(self, messages: Sequence[Message]) -> None:
        for message in messages:
            key = _key(message)
            if message.is_meta or key in self.seen:
                continue
            self.seen.add(key)
            for block in message.content:
                if message.role == "assistant":
                    self.items.append(("assistant", block))
                elif isinstance(block, ToolResultBlock):
                    item = (block.tool_use_id, block.text, block.is_error)
                    self.items.append(("tool_result", item))


def _key(message: Message) -> object:
    """A message as `Said` tells it apart: by its response's id, or the calls its
    results answer, since a compaction's copies of the kept messages lose their usage
    and microcompact clears old results' text."""
    if message.role == "assistant" and message.id:
        return ("assistant", message.id)
    answered = tuple(b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock))
    return ("results", answered) if answered else (message.role, message.content)


def _expected(run: Run) -> list[tuple[str, object]]:
    said: list[tuple[str, object]] = []
    for response in run.responses:
        said.extend(("assistant", block) for block in response.content)
        for block in response.content:
            if not isinstance(block, ToolUseBlock):
                continue
            result = run.results.get(block.id)
            if result is not None:
                text = ToolResultBlock(block.id, result.content, result.is_error).text
                said.append(("tool_result", (block.id, text, result.is_error)))
    return said


def _short(item: object, limit: int = 160) -> str:
    text = repr(item)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def differences(run: Run, said: Said, effects: TranscriptEffects) -> list[str]:
    """Where the engine's run parts from the transcript's: the first differing item of
    the conversation, responses or results it never asked for, compactions it did not
    make, and what it missed."""
    found: list[str] = list(effects.misses)
    got = said.items
    want = _expected(run)
    for n, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            found.append(
                f"item {n + 1} of the run's conversation: the transcript has "
                f"{_short(a)}, the engine {_short(b)}"
            )
            break
    else:
        if len(got) < len(want):
            found.append(
                f"the engine's run ends after {len(got)} of the transcript's {len(want)} blocks"
            )
    unused = len(run.responses) - effects.calls
    if unused > 0:
        found.append(f"{unused} response(s) of the transcript were never asked for")
    if effects.compactions:
        found.append(
            f"Claude Code compacted the conversation {len(effects.compactions)} more "
            "time(s) than the engine"
        )
    return found


async def aimport_transcript(
    path: str | Path, log: str | Path, *, config: RunConfig | None = None
) -> Imported:
    """Read the transcript at `path` and write a log per run, the first at `log`; each
    of the session's subagents (`subagents_of`) gets logs of its own beside it
    (`subagent_log`), kept apart from the main runs.

    Raises `TranscriptError` for a file that is no transcript, `OSError` if it cannot
    be read, `LogError` if a log's path is taken."""
    path = Path(path)
    transcript = read_transcript(path.read_bytes(), str(path))
    base = config or RunConfig()
    logs = run_logs(Path(log), len(transcript.runs))
    found: list[tuple[Subagent, Transcript | None, str | None]] = []
    for agent in subagents_of(path):
        try:
            read = read_transcript(agent.path.read_bytes(), str(agent.path), subagent=True)
        except TranscriptError as exc:
            found.append((agent, None, str(exc)))
        except OSError as exc:
            found.append((agent, None, f"{agent.path}: cannot read: {exc.strerror or exc}"))
        else:
            found.append((agent, read, None))
    side_logs = [
        run_logs(subagent_log(Path(log), agent.agent_id), len(held.runs)) if held else []
        for agent, held, _ in found
    ]
    for target in (*logs, *(p for paths in side_logs for p in paths)):
        if target.exists():
            raise LogError(f"{target}: a file is already there (a log is never overwritten)")
    runs = await _reenact(transcript, path, logs, base, _session_id(transcript))
    subagents: list[ImportedSubagent] = []
    for (agent, side, problem), paths in zip(found, side_logs, strict=True):
        if side is None:
            subagents.append(ImportedSubagent(agent, None, (), problem))
            continue
        marked = {"subagent": agent.describe()}
        done = await _reenact(side, agent.path, paths, base, _session_id(transcript), marked)
        subagents.append(ImportedSubagent(agent, side, done))
    return Imported(transcript, runs, tuple(subagents))


async def _reenact(
    transcript: Transcript,
    path: Path,
    logs: Sequence[Path],
    base: RunConfig,
    session_id: str,
    marked: Mapping[str, object] | None = None,
) -> tuple[ImportedRun, ...]:
    """Each of the transcript's runs through the engine, recorded at `logs`; `marked`
    goes into each header's `imported` (a subagent's says whose it is)."""
    hooked = [("Stop", any(r.stop_hooks for r in transcript.runs))]
    hooked.append(("UserPromptSubmit", any(r.prompt_hook for r in transcript.runs)))
    for event in TOOL_HOOK_EVENTS:
        hooked.append(
            (event, any(e == event for r in transcript.runs for e, _ in r.tool_hook_stops))
        )
    asked = transcript.max_tokens
    config = evolve(
        base,
        model=transcript.model or base.model,
        cwd=transcript.cwd or base.cwd,
        hooked_events=tuple(event for event, found in hooked if found),
        # what the loop asked first, and the most it ever asked (an escalation)
        max_output_tokens=asked[0] if asked else base.max_output_tokens,
        escalated_max_output_tokens=max(asked) if asked else base.escalated_max_output_tokens,
    )
    config = _window_for(transcript, config)
    specs = tool_specs_for(tool_names(transcript))
    runs: list[ImportedRun] = []
    messages: list[Message] = []
    parent: dict[str, str] | None = None
    for n, run in enumerate(transcript.runs):
        if run.compacted or not messages:
            start = [user(run.prompt)]
        else:
            start = follow_up(messages, run.prompt)
        config = evolve(config, max_turns=run.max_turns)
        imported = {"transcript": str(path.resolve()), "line": run.line, **(marked or {})}
        header = session_header(
            session_id, config, specs, imported=imported, **({"parent": parent} if parent else {})
        )
        writer = LogWriter(logs[n], header)
        effects = TranscriptEffects(run, config.model)
        said = Said(start)
        engine = Engine(
            config, RecordingTape(writer), effects, specs, session_id,
            on_step=said.observe, outputs=BUILTIN_OUTPUTS,
        )  # fmt: skip
        try:
            result = await engine.run(start, None)
        finally:
            writer.close()
        said.take(result.messages.items)
        found = differences(run, said, effects)
        runs.append(ImportedRun(logs[n], result.reason, run.line, tuple(found)))
        messages = list(result.messages.items)
        parent = {"log": str(logs[n].resolve()), "session_id": session_id}
        config = evolve(config, session_source=None)
    return tuple(runs)
