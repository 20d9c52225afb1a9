"""A Claude Code transcript read as the runs of the loop it records.

Claude Code keeps every session as JSON Lines under `~/.claude/projects/`
(docs/replay.md). Reading one is pure: the file's text in, the runs out. Each
prompt the user typed starts a run; a run holds the API responses (a response's
content blocks are written as several lines that share `message.id`: joined
here), the tool results by `tool_use_id`, the Stop hooks' outcomes, the API
errors retried before a response and how the run was interrupted.
`fsm_agent.app.importing` re-enacts the runs through the engine.

What the file does not say is stated once as an assumption; a line that
cannot be placed is a warning naming it, never a guess in silence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from attrs import evolve, field, frozen

from fsm_agent.core import jsontext
from fsm_agent.core.codec import json_name
from fsm_agent.core.events import ModelRetry
from fsm_agent.core.messages import (
    ContentBlock,
    ImageBlock,
    ImageSource,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultContent,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.tool import INTERRUPTED
from fsm_agent.hooks.outcomes import HookOutcome

INTERRUPT_PREFIX = "[Request interrupted by user"
"""How Claude Code's user line after Ctrl-C begins (`…]` or `… for tool use]`)."""

STOP_FEEDBACK = "Stop hook feedback:\n"
"""The meta user message a blocking Stop hook leaves (the engine writes the same)."""

CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
"""The line types of the conversation's chain (each has `uuid` and `parentUuid`)."""

IGNORED_TYPES = frozenset(
    {
        "summary",
        "queue-operation",
        "file-history-snapshot",
        "custom-title",
        "ai-title",
        "tag",
        "last-prompt",
        "content-replacement",
        "cost-state",
        "mode",
        "tools-used",
        "atis-latch",
        "api-request-blob",
        "api-request-shape",
    }
)
"""Line types that hold no step of the loop: titles, the UI's queue, cost, request shapes."""


class TranscriptError(ValueError):
    """A file that is not a Claude Code transcript at all; the message says why."""


@frozen
class ToolResult:
    """A tool's result as the transcript holds it: what the model read, and
    `toolUseResult` (Claude Code's structured output) when it is an object."""

    content: ToolResultContent
    is_error: bool = False
    response: dict[str, Any] | None = None
    line: int = 0

    @property
    def interrupted(self) -> bool:
        return self.is_error and self.content == INTERRUPTED


@frozen
class Response:
    """One API call: the response's blocks (lines sharing `message.id` joined), or
    the error that ended it; `retries` are the `api_error` lines before it."""

    line: int
    content: tuple[ContentBlock, ...] = ()
    message_id: str = ""
    model: str = ""
    stop_reason: str | None = None
    usage: Usage = Usage()
    retries: tuple[ModelRetry, ...] = ()
    error: str | None = None
    error_status: int | None = None
    unparsed: tuple[tuple[str, str], ...] = ()
    """The tool calls whose input was not JSON, (id, the raw text): Claude Code writes such
    an input as `{"__unparsedToolInput": {"raw": …}}`; the block holds `{}`, as the
    engine's own would."""


@frozen
class Run:
    """One prompt and everything the loop did for it, in the transcript's order."""

    prompt: str
    line: int
    responses: tuple[Response, ...] = ()
    results: dict[str, ToolResult] = field(factory=dict)
    stop_hooks: tuple[HookOutcome, ...] = ()
    interrupted: bool = False
    interrupted_while: str | None = None
    """Where the interrupt's line says the run was: `tools` (`… for tool use]`), else
    `streaming`; None without one."""
    compacted: bool = False
    compactions: tuple[str, ...] = ()
    """The summaries of the run's automatic compactions, in order: the engine's own
    compaction request is answered with each (Claude Code does not write its request)."""
    max_turns: int | None = None
    """`--max-turns`, when the run ended at it (Claude Code's `max_turns_reached` line)."""
    prompt_hook: HookOutcome | None = None
    """The UserPromptSubmit hooks' block of the prompt (the run then has no response)."""
    tool_hook_stops: dict[tuple[str, str], str] = field(factory=dict)
    """The tool hooks that stopped the run (`continue: false`), by (event, tool_use_id),
    each with its `stopReason`: Claude Code's `hook_stopped_continuation` attachments."""


TOOL_HOOK_EVENTS = ("PreToolUse", "PostToolUse")
"""The events whose hooks' `continue: false` a transcript records on the call."""
MAIN_QUERIES = frozenset({"sdk", "repl_main_thread"})
"""The `querySource` of the loop's own requests (a title's or a summary's are not)."""
AGENT_QUERY = "agent:"
"""How a subagent's loop's `querySource` begins (`agent:builtin:general-purpose`)."""
PROMPT_BLOCKED = "UserPromptSubmit operation blocked by hook:\n"
ORIGINAL_PROMPT = "\n\nOriginal prompt: "


@frozen
class Sidechain:
    """A Task subagent's lines inside the session's transcript (older Claude Code wrote
    them there; 2.1 writes each subagent a file of its own): kept apart from the main
    run, and named as such."""

    first_line: int
    last_line: int
    entries: int


@frozen
class Transcript:
    """What a transcript records: its session, its runs, and what reading it found."""

    session_id: str
    cwd: str
    model: str
    runs: tuple[Run, ...]
    warnings: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    sidechains: tuple[Sidechain, ...] = ()
    titles: tuple[str, ...] = ()
    compacted_at: tuple[int, ...] = ()
    """The token counts automatic compactions happened at (`compactMetadata.preTokens`)."""
    max_tokens: tuple[int, ...] = ()
    """The `max_tokens` of the loop's requests, in order, where the transcript records
    them (newer Claude Code's `api-request` lines)."""
    agent_id: str = ""
    """A subagent's transcript: the `agentId` its lines carry."""


def looks_like_transcript(first_line: bytes) -> bool:
    """Whether a file's first line is a Claude Code entry (it has a `type`, and is not
    an fsm-agent header): cheap, so a command can tell the two formats apart."""
    try:
        value = jsontext.loads(first_line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(value, dict) and "format" not in value and isinstance(value.get("type"), str)


class _Reader:
    """The state of one pass over the lines; `read_transcript` is its face."""

    def __init__(self, where: str, *, subagent: bool = False) -> None:
        self.where = where
        self.subagent = subagent
        """Reading a subagent's own transcript, whose lines are all `isSidechain`."""
        self.agent_id = ""
        self.runs: list[Run] = []
        self.warnings: list[str] = []
        self.assumptions: dict[str, None] = {}
        self.sidechains: list[Sidechain] = []
        self.titles: list[str] = []
        self.seen: dict[str, int] = {}
        self.session_id = ""
        self.cwd = ""
        self.model = ""
        self.retries: list[ModelRetry] = []
        self.pending_feedback: list[tuple[int, str]] = []
        self.max_tokens: list[int] = []
        self.compacted_at: list[int] = []
        self.before_compaction: set[str] = set()
        """The response and tool_use ids of the run up to its last automatic compaction:
        a line after it with one of them is a message the compaction kept, written again."""
        self.boundary: str | None = None
        """The trigger (`auto`, `manual`) of a `compact_boundary` whose summary is next."""
        self.has_summaries = False
        """Whether the transcript writes `stop_hook_summary` lines (newer Claude Code): they
        say every Stop hook's outcome, and the feedback meta lines only repeat them."""

    def warn(self, line: int, text: str) -> None:
        self.warnings.append(f"{self.where}:{line}: {text}")

    def assume(self, text: str) -> None:
        self.assumptions[f"assumed: {text}"] = None

    @property
    def run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def replace_run(self, run: Run) -> None:
        self.runs[-1] = run

    def entry(self, n: int, value: Any) -> None:
        if not isinstance(value, dict):
            self.warn(n, f"not a transcript entry ({json_name(value)}, not an object); skipped")
            return
        kind = value.get("type")
        if not isinstance(kind, str):
            self.warn(n, "an entry with no 'type'; skipped")
            return
        if kind == "summary":
            if isinstance(value.get("summary"), str):
                self.titles.append(value["summary"])
            return
        if kind == "api-request":
            self.api_request(value)
            return
        if kind in IGNORED_TYPES:
            return
        if kind not in CHAIN_TYPES:
            self.warn(n, f"an entry of type {kind!r}, which the import does not know; skipped")
            return
        uuid = value.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.seen:
                self.warn(n, f"repeats the entry of line {self.seen[uuid]} (uuid {uuid}); skipped")
                return
            self.seen[uuid] = n
        if value.get("isSidechain") is True and not self.subagent:
            self.sidechain(n)
            return
        if not self.agent_id and isinstance(value.get("agentId"), str):
            self.agent_id = value["agentId"]
        for key, attr in (("sessionId", "session_id"), ("cwd", "cwd")):
            if not getattr(self, attr) and isinstance(value.get(key), str):
                setattr(self, attr, value[key])
        if kind == "user":
            self.user(n, value)
        elif kind == "assistant":
            self.assistant(n, value)
        elif kind == "system":
            self.system(n, value)
        elif kind == "attachment":
            self.attachment(value)

    def api_request(self, value: dict[str, Any]) -> None:
        params = value.get("params")
        source = value.get("querySource")
        ours = source in (None, *MAIN_QUERIES) or (
            self.subagent and isinstance(source, str) and source.startswith(AGENT_QUERY)
        )
        if not isinstance(params, dict) or not ours:
            return
        most = params.get("max_tokens")
        if isinstance(most, int) and not isinstance(most, bool) and most > 0:
            self.max_tokens.append(most)

    def attachment(self, value: dict[str, Any]) -> None:
        held = value.get("attachment")
        if isinstance(held, dict) and held.get("type") == "hook_stopped_continuation":
            self.hook_stopped(held)
            return
        if not isinstance(held, dict) or held.get("type") != "max_turns_reached":
            return
        most = held.get("maxTurns")
        if self.run is not None and isinstance(most, int) and most >= 1:
            self.replace_run(evolve(self.run, max_turns=most))

    def hook_stopped(self, held: dict[str, Any]) -> None:
        """A PreToolUse or PostToolUse hook's `continue: false` on a call: the import's
        hook for that event and call says the same, so the run ends where Claude
        Code's did (`hook_stopped`, after the call)."""
        event, call, message = held.get("hookEvent"), held.get("toolUseID"), held.get("message")
        if self.run is None or event not in TOOL_HOOK_EVENTS or not isinstance(call, str):
            return
        stops = {
            **self.run.tool_hook_stops,
            (event, call): message if isinstance(message, str) else "",
        }
        self.replace_run(evolve(self.run, tool_hook_stops=stops))

    def sidechain(self, n: int) -> None:
        last = self.sidechains[-1] if self.sidechains else None
        if last is not None and last.last_line == n - 1:
            self.sidechains[-1] = Sidechain(last.first_line, n, last.entries + 1)
        else:
            self.sidechains.append(Sidechain(n, n, 1))

    def user(self, n: int, value: dict[str, Any]) -> None:
        message = value.get("message")
        if not isinstance(message, dict) or not isinstance(
            content := message.get("content"), str | list
        ):
            self.warn(n, "a user entry without a message's content; skipped")
            return
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = [b["text"] for b in blocks if _is(b, "text") and isinstance(b.get("text"), str)]
        results = [b for b in blocks if _is(b, "tool_result")]
        if value.get("isCompactSummary") is True:
            self.compaction(n, "\n".join(texts))
            return
        if value.get("isMeta") is True:
            text = "\n".join(texts)
            if text.startswith(STOP_FEEDBACK) and not self.has_summaries:
                self.pending_feedback.append((n, text[len(STOP_FEEDBACK) :]))
            return
        if results:
            self.tool_results(n, results, value.get("toolUseResult"))
            return
        text = "\n".join(texts)
        if text.startswith(INTERRUPT_PREFIX):
            if self.run is None:
                self.warn(n, "an interrupt before any prompt; skipped")
            else:
                where = "tools" if text.startswith(INTERRUPTED) else "streaming"
                self.replace_run(evolve(self.run, interrupted=True, interrupted_while=where))
            return
        if not text:
            self.warn(n, "a user entry with neither text nor tool results; skipped")
            return
        if text.startswith(("<command-name>", "<local-command-stdout>", "<local-command-")):
            self.warn(n, "a local command's message (not a prompt to the model); skipped")
            return
        self.flush_feedback()
        self.retries.clear()
        self.runs.append(Run(text, n))

    def tool_results(self, n: int, blocks: list[Any], structured: Any) -> None:
        run = self.run
        if run is None:
            self.warn(n, "tool results before any prompt; skipped")
            return
        results = dict(run.results)
        for block in blocks:
            use_id = block.get("tool_use_id")
            if not isinstance(use_id, str):
                self.warn(n, "a tool_result without a tool_use_id; skipped")
                continue
            content = _result_content(block.get("content", ""))
            if content is None:
                self.warn(n, f"the result of {use_id} has content the import cannot read; skipped")
                continue
            if use_id in self.before_compaction:
                continue  # a result a compaction kept, written again after its summary
            response = structured if isinstance(structured, dict) and len(blocks) == 1 else None
            results[use_id] = ToolResult(content, block.get("is_error") is True, response, n)
        self.replace_run(evolve(run, results=results))

    def assistant(self, n: int, value: dict[str, Any]) -> None:
        self.flush_feedback()
        run = self.run
        message = value.get("message")
        if run is None:
            self.warn(n, "an assistant entry before any prompt; skipped")
            return
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            self.warn(n, "an assistant entry without a message's content; skipped")
            return
        model = _text(message.get("model"))
        if value.get("isApiErrorMessage") is True or model == "<synthetic>":
            self.synthetic(n, value, message)
            return
        blocks: list[ContentBlock] = []
        unparsed: list[tuple[str, str]] = []
        for block in message["content"]:
            raw = _unparsed_input(block)
            if raw is not None:
                unparsed.append((block["id"], raw))
                block = {**block, "input": {}}
            converted = _answer_block(block)
            if converted is None:
                what = block.get("type") if isinstance(block, dict) else json_name(block)
                self.warn(n, f"a {what!r} block the engine's messages cannot hold; left out")
            else:
                blocks.append(converted)
        message_id = _text(message.get("id"))
        stop = message.get("stop_reason") if isinstance(message.get("stop_reason"), str) else None
        usage = _usage(message.get("usage"))
        last = run.responses[-1] if run.responses else None
        if message_id and message_id in self.before_compaction:
            return  # a response a compaction kept, written again after its summary
        if last is not None and message_id and last.message_id == message_id and not last.error:
            joined = evolve(
                last,
                content=(*last.content, *blocks),
                unparsed=(*last.unparsed, *unparsed),
                stop_reason=stop or last.stop_reason,
                usage=usage if usage != Usage() else last.usage,
            )
            self.replace_run(evolve(run, responses=(*run.responses[:-1], joined)))
            return
        if not self.model and model:
            self.model = model
        response = Response(
            n, tuple(blocks), message_id, model, stop, usage, tuple(self.retries),
            unparsed=tuple(unparsed),
        )  # fmt: skip
        self.retries.clear()
        self.replace_run(evolve(run, responses=(*run.responses, response)))

    def synthetic(self, n: int, value: dict[str, Any], message: dict[str, Any]) -> None:
        """An assistant line Claude Code made itself: an API error's message ends the
        call with that error; any other (`No response requested.`) is not the model's."""
        run = self.run
        assert run is not None
        if value.get("isApiErrorMessage") is not True:
            self.warn(n, "a message Claude Code wrote itself (model <synthetic>); skipped")
            return
        texts = [b.get("text") for b in message["content"] if _is(b, "text")]
        text = next((t for t in texts if isinstance(t, str)), "")
        text = text.removeprefix("API Error: ") or "an API error"
        status = value.get("apiErrorStatus")
        response = Response(
            n, retries=tuple(self.retries), error=text,
            error_status=status if isinstance(status, int) else None,
        )  # fmt: skip
        self.retries.clear()
        self.replace_run(evolve(run, responses=(*run.responses, response)))

    def system(self, n: int, value: dict[str, Any]) -> None:
        subtype = value.get("subtype")
        if subtype == "api_error":
            error: dict[str, Any] = value["error"] if isinstance(value.get("error"), dict) else {}
            status = error.get("status")
            delay = value.get("retryInMs")
            attempt = value.get("retryAttempt")
            most = value.get("maxRetries")
            self.retries.append(
                ModelRetry(
                    attempt=attempt if isinstance(attempt, int) else len(self.retries) + 1,
                    status=status if isinstance(status, int) else 0,
                    error=str(error.get("formatted") or error.get("message") or "API error"),
                    delay_s=delay / 1000 if isinstance(delay, int | float) else None,
                    max_retries=most if isinstance(most, int) else None,
                )
            )
        elif subtype == "stop_hook_summary":
            self.stop_hook(n, value)
        elif subtype == "compact_boundary" and self.run is not None:
            meta = value.get("compactMetadata")
            meta = meta if isinstance(meta, dict) else {}
            trigger, tokens = meta.get("trigger"), meta.get("preTokens")
            self.boundary = trigger if isinstance(trigger, str) else "unknown"
            if trigger == "auto" and isinstance(tokens, int) and tokens > 0:
                self.compacted_at.append(tokens)
        elif subtype == "informational" and _ending(value) == "blocked_by_hook":
            self.blocked_prompt(n, value)

    def blocked_prompt(self, n: int, value: dict[str, Any]) -> None:
        """A prompt a UserPromptSubmit hook blocked: Claude Code writes no user line for
        it, only its notice, which names the hooks' errors and the prompt."""
        content = _text(value.get("content"))
        errors, found, prompt = content.removeprefix(PROMPT_BLOCKED).rpartition(ORIGINAL_PROMPT)
        if not content.startswith(PROMPT_BLOCKED) or not found:
            self.warn(n, "a blocked prompt's notice without the prompt; skipped")
            return
        self.flush_feedback()
        self.retries.clear()
        outcome = HookOutcome(blocking_errors=(errors,))
        self.runs.append(Run(prompt, n, prompt_hook=outcome))

    def stop_hook(self, n: int, value: dict[str, Any]) -> None:
        run = self.run
        if run is None:
            self.warn(n, "a Stop hook's summary before any prompt; skipped")
            return
        errors = value.get("hookErrors")
        stop_reason = value.get("stopReason")
        outcome = HookOutcome(
            blocking_errors=tuple(e for e in errors if isinstance(e, str))
            if isinstance(errors, list)
            else (),
            prevent_continuation=value.get("preventedContinuation") is True,
            stop_reason=stop_reason if isinstance(stop_reason, str) and stop_reason else None,
        )
        self.replace_run(evolve(run, stop_hooks=(*run.stop_hooks, outcome)))

    def flush_feedback(self) -> None:
        """Stop hook feedback from a transcript without `stop_hook_summary` lines
        (older Claude Code): each is a blocking Stop hook's outcome."""
        run = self.run
        if not self.pending_feedback or run is None:
            self.pending_feedback.clear()
            return
        outcomes = tuple(HookOutcome(blocking_errors=(text,)) for _, text in self.pending_feedback)
        self.pending_feedback.clear()
        self.assume(
            "a Stop hook that left no feedback had no opinion (this transcript records "
            "only the Stop hooks that blocked)"
        )
        self.replace_run(evolve(run, stop_hooks=(*run.stop_hooks, *outcomes)))

    def compaction(self, n: int, summary: str) -> None:
        """An automatic compaction is the engine's own, in the run it happened in (its
        summary answers the engine's compaction request); any other (`/compact`) starts
        a new run from the summary, as the transcript cannot say how it was asked."""
        trigger, self.boundary = self.boundary, None
        if trigger == "auto" and self.run is not None:
            run = self.run
            self.before_compaction |= {r.message_id for r in run.responses} | set(run.results)
            self.replace_run(evolve(run, compactions=(*run.compactions, summary_of(summary))))
            return
        if self.run is not None:
            self.replace_run(evolve(self.run, compacted=True))
        self.warn(
            n,
            "a compaction's summary: the import starts a new run from it (the summary "
            "request itself is not in the transcript)",
        )
        self.flush_feedback()
        self.runs.append(Run(summary, n, compacted=True))


def read_transcript(
    data: bytes, where: str = "transcript", *, subagent: bool = False
) -> Transcript:
    """The runs a transcript's bytes record; `TranscriptError` if it holds none.

    Broken lines (not JSON, not an object, an entry without its message) are
    warnings naming the line; the rest is read. `subagent`: the bytes are a
    subagent's own transcript (`<session>/subagents/agent-<id>.jsonl`), whose
    `isSidechain` lines are its run, not lines to keep apart."""
    reader = _Reader(where, subagent=subagent)
    reader.has_summaries = b'"stop_hook_summary"' in data
    lines = data.split(b"\n")
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]
    first = next((raw for raw in lines if raw.strip()), b"")
    if first and not looks_like_transcript(first):
        try:
            head = jsontext.loads(first)
        except (json.JSONDecodeError, UnicodeDecodeError):
            head = None
        if isinstance(head, dict) and head.get("format") == "fsm-agent-session":
            raise TranscriptError(
                f"{where}: an fsm-agent session log, not a Claude Code transcript"
            )
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            value = jsontext.loads(raw)
        except UnicodeDecodeError:
            reader.warn(n, "not UTF-8; skipped")
            continue
        except json.JSONDecodeError as exc:
            reader.warn(n, f"not valid JSON ({exc.msg}); skipped")
            continue
        reader.entry(n, value)
    reader.flush_feedback()
    if not reader.runs:
        raise TranscriptError(
            f"{where}: not a Claude Code transcript (no user prompt in it)"
            if reader.seen or not reader.warnings
            else f"{where}: not a Claude Code transcript: {reader.warnings[0]}"
        )
    return _with_assumptions(reader)


def _with_assumptions(reader: _Reader) -> Transcript:
    reader.assume(
        "the model was offered the tools it called: a built-in one as fsm-agent defines "
        "it, any other taking any input (a transcript does not record the tool list)"
    )
    if reader.max_tokens:
        reader.assume(
            "the context window and the other run options are fsm-agent's defaults "
            "(a transcript does not record them); max_tokens is the transcript's"
        )
    else:
        reader.assume(
            "max_tokens, the context window and the other run options are fsm-agent's "
            "defaults (a transcript does not record them)"
        )
    reader.assume(
        "no hooks ran but the Stop hooks the transcript shows, and every tool call "
        "was allowed (a transcript does not record the hooks or the permission rules)"
    )
    if reader.compacted_at:
        reader.assume(
            "where Claude Code compacted at fewer tokens than the default window's "
            "autocompact threshold, the window is the one whose threshold that is"
        )
    if any(r.stop_reason is None for run in reader.runs for r in run.responses if not r.error):
        reader.assume(
            "a response whose stop_reason is null (older Claude Code writes it so) "
            "stopped at tool_use when it calls tools, else at end_turn"
        )
    return Transcript(
        session_id=reader.session_id,
        cwd=reader.cwd,
        model=reader.model,
        runs=tuple(reader.runs),
        warnings=tuple(reader.warnings),
        assumptions=tuple(reader.assumptions),
        sidechains=tuple(reader.sidechains),
        titles=tuple(reader.titles),
        max_tokens=tuple(reader.max_tokens),
        compacted_at=tuple(reader.compacted_at),
        agent_id=reader.agent_id,
    )


SUMMARY_MARKS = ("Summary:\n", "summarized below:\n")
SUMMARY_ENDS = ("\n\nIf you need specific details", "\n\nPlease continue the conversation")


def summary_of(text: str) -> str:
    """The model's summary in a compaction's message: what follows Claude Code's lead-in
    (`Summary:`, or older releases' `…summarized below:`), up to its closing advice."""
    for mark in SUMMARY_MARKS:
        if mark in text:
            text = text.split(mark, 1)[1]
            break
    for end in SUMMARY_ENDS:
        text = text.split(end, 1)[0]
    return text.strip()


def _ending(value: dict[str, Any]) -> str | None:
    ending = value.get("promptSubmitEnding")
    inner = ending.get("ending") if isinstance(ending, dict) else None
    kind = inner.get("kind") if isinstance(inner, dict) else None
    return kind if isinstance(kind, str) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return Usage()
    counts = {
        key: value[key]
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        )
        if isinstance(value.get(key), int) and not isinstance(value.get(key), bool)
        and value[key] >= 0
    }  # fmt: skip
    return Usage(**counts)


def _image(block: dict[str, Any]) -> ImageBlock | None:
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    media, data = source.get("media_type"), source.get("data")
    if source.get("type") != "base64" or not isinstance(media, str) or not isinstance(data, str):
        return None
    return ImageBlock(ImageSource(type="base64", media_type=media, data=data))


def _unparsed_input(block: Any) -> str | None:
    """The raw text of a tool call whose input Claude Code could not parse as JSON."""
    if not _is(block, "tool_use") or not isinstance(block.get("id"), str):
        return None
    tool_input = block.get("input")
    held = tool_input.get("__unparsedToolInput") if isinstance(tool_input, dict) else None
    if isinstance(held, dict) and isinstance(held.get("raw"), str):
        return held["raw"]
    return None


def _answer_block(block: Any) -> ContentBlock | None:
    """An assistant block as the engine holds it, or None for one it has no shape for."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextBlock(block["text"])
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        signature = block.get("signature")
        return ThinkingBlock(block["thinking"], signature if isinstance(signature, str) else "")
    if kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return RedactedThinkingBlock(block["data"])
    if (
        kind == "tool_use"
        and isinstance(block.get("id"), str)
        and isinstance(block.get("name"), str)
        and isinstance(block.get("input"), dict)
    ):
        return ToolUseBlock(block["id"], block["name"], block["input"])
    return None


def _result_content(content: Any) -> ToolResultContent | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    blocks: list[TextBlock | ImageBlock] = []
    for block in content:
        if _is(block, "text") and isinstance(block.get("text"), str):
            blocks.append(TextBlock(block["text"]))
        elif _is(block, "image") and (image := _image(block)) is not None:
            blocks.append(image)
        else:
            return None
    return tuple(blocks)


def tool_names(transcript: Transcript) -> tuple[str, ...]:
    """Every tool the transcript's runs call, in the order first called."""
    names: dict[str, None] = {}
    for run in transcript.runs:
        for response in run.responses:
            for block in response.content:
                if isinstance(block, ToolUseBlock):
                    names[block.name] = None
    return tuple(names)


def prompts(transcript: Transcript) -> Sequence[str]:
    return [run.prompt for run in transcript.runs]
