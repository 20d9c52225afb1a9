"""Context management: each preprocessing level alone, then the pipeline in order."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from attrs import evolve

from fsm_agent.app.session import arun, replay, run_scenario
from fsm_agent.context import levels as ctx
from fsm_agent.context.collapse import CollapseStore
from fsm_agent.context.levels import (
    CLEARED,
    apply_compact_summary,
    apply_tool_result_budget,
    count_tokens,
    drain_collapses,
    estimate_all,
    estimate_tokens,
    is_compact_summary,
    keep_from,
    microcompact,
    parse_summary,
    project_collapses,
    reactive_compact,
    snip,
    stage_collapse,
)
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import ContextReport, DriverEvent, Notice, StreamEvent
from fsm_agent.core.limits import MIN_CONTEXT_WINDOW, context_window, output_limits
from fsm_agent.core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user,
)
from fsm_agent.core.model import ModelRequest, ToolSpec
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.driver import fresh_iteration, initial_state
from fsm_agent.engine.phases import Run, blocking_limit_check
from fsm_agent.engine.preprocess import preprocess
from fsm_agent.engine.state import AutoCompactTracking, Iteration, LoopState
from fsm_agent.live.anthropic_model import AnthropicModel, request_body
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tape.log import SessionLog
from tests.conftest import SCENARIOS
from tests.support.cli import fsm
from tests.support.logs import reseal
from tests.support.messages_server import (
    MessagesServer,
    StreamReply,
    message,
    messages_server_fixture,  # noqa: F401
    text,
)

# --- building histories -------------------------------------------------------------


def round_of(
    n: int, tool: str = "Read", result: str = "", usage: int | None = None
) -> list[Message]:
    """One tool round: an assistant tool_use and the user message with its result."""
    tid = f"toolu_{n:04d}"
    assistant = Message(
        "assistant",
        (TextBlock(f"step {n}"), ToolUseBlock(tid, tool, {"file_path": f"f{n}.txt"})),
        usage=None if usage is None else Usage(input_tokens=usage),
    )
    return [assistant, Message("user", (ToolResultBlock(tid, result or f"result {n} " * 20),))]


def history(rounds: int, tool: str = "Read", usage: int | None = 1000) -> Transcript:
    items = [user("Do the task.")]
    for n in range(rounds):
        items += round_of(n, tool, usage=usage)
    return Transcript.of(items)


def results(messages: Transcript) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def tool_uses(messages: Transcript) -> set[str]:
    return {b.id for m in messages for b in m.tool_uses}


def assert_no_orphans(messages: Transcript) -> None:
    used = tool_uses(messages)
    assert {r.tool_use_id for r in results(messages)} <= used


# --- token accounting ---------------------------------------------------------------


def test_count_is_last_usage_plus_estimate_of_what_came_after() -> None:
    messages = history(3, usage=5000)
    extra = user("and one more thing")
    count = count_tokens(messages.extend((extra,)))
    last = messages[-2]
    assert last.usage is not None
    assert count.exact
    expected = last.usage.context_tokens + estimate_tokens(messages[-1]) + estimate_tokens(extra)
    assert count.tokens == expected


def test_count_walks_back_only_to_the_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = history(200, usage=5000)
    seen: list[Message] = []
    real = ctx.estimate_tokens

    def spy(message: Message) -> int:
        seen.append(message)
        return real(message)

    monkeypatch.setattr(ctx, "estimate_tokens", spy)
    count_tokens(messages)
    assert seen == [messages[-1]]


def test_an_image_counts_as_claude_code_counts_it_not_by_its_base64(tmp_path: Path) -> None:
    """An image costs the model at most about 1,600 tokens whatever its size; Claude Code
    estimates 2,000. A quarter of its base64 (here 250k tokens) made a run that read a
    screenshot autocompact, or end over its blocking limit."""
    image = ImageBlock(ImageSource("image/png", "A" * 1_000_000))
    read = ToolResultBlock("toolu_0009", (TextBlock("screenshot.png"), image))
    items = [*history(9, usage=1_000), Message("user", (read,)), Message("user", (image,))]
    messages = Transcript.of(items)
    without = estimate_tokens(
        Message("user", (ToolResultBlock("toolu_0009", (TextBlock("screenshot.png"),)),))
    )
    assert estimate_tokens(messages[-2]) == without + ctx.IMAGE_TOKENS
    assert estimate_tokens(messages[-1]) == ctx.IMAGE_TOKENS
    model = CountingModel([SUMMARY_TURN])
    it, reports = pipeline(messages, SMALL, model, tmp_path)
    assert reports == [] and model.requests == []
    assert it.token_count < 1_000 + 5_000


def test_count_without_usage_is_an_estimate() -> None:
    messages = history(2, usage=None)
    count = count_tokens(messages)
    assert not count.exact
    assert count.tokens == estimate_all(messages)


def test_a_response_that_reports_no_input_anchors_nothing(tmp_path: Path) -> None:
    """A compatible server that reports zero usage (or none: the stream's usage stays at
    zero) counted every response as an empty context, so a long session never reached
    autocompact or the blocking limit. Every request has input: such usage is missing,
    and the messages are estimated instead."""
    zero = Usage(output_tokens=20)
    messages = history(12, usage=None)
    messages = Transcript.of(
        [evolve(m, usage=zero) if m.role == "assistant" else m for m in messages]
    )
    count = count_tokens(messages)
    assert not count.exact
    assert count.tokens == estimate_all(messages)
    big = Transcript.of(
        [user("go"), *(m for n in range(12) for m in round_of(n, "Task", "r" * 8_000))]
    )
    big = Transcript.of([evolve(m, usage=Usage()) if m.role == "assistant" else m for m in big])
    assert estimate_all(big) > SMALL.autocompact_threshold
    model = CountingModel([SUMMARY_TURN])
    it, reports = pipeline(big, SMALL, model, tmp_path)
    assert [r.purpose for r in model.requests] == ["compact"]
    assert reports[-1].level == "autocompact"
    assert is_compact_summary(it.messages_for_query[0])


def test_thresholds_are_claude_codes() -> None:
    """20k reserved for the summary whatever max_tokens a request asks: Claude Code
    autocompacts at 167k on a 200k window and at about 967k on a 1M one."""
    assert RunConfig(context_window=200_000).autocompact_threshold == 167_000
    assert RunConfig(context_window=200_000).blocking_limit == 177_000
    assert RunConfig(context_window=1_000_000).autocompact_threshold == 967_000
    small_output = RunConfig(context_window=200_000, escalated_max_output_tokens=4_096)
    assert small_output.effective_window == 195_904


@pytest.mark.parametrize("window", [MIN_CONTEXT_WINDOW, 50_000, 62_000, 72_000, 200_000])
def test_the_lighter_levels_come_first_on_every_window(window: int) -> None:
    """Autocompact's threshold is a fixed margin, microcompact's a share of the window:
    below a 52,500 window autocompact came first (50k: 17,000 against 18,000), and
    the seed's lighter level, which makes it a no-op when it frees enough, never ran."""
    config = RunConfig(context_window=window)
    assert config.microcompact_threshold <= config.collapse_threshold
    assert config.microcompact_threshold <= config.autocompact_threshold


def test_the_smallest_window_a_run_takes_has_every_threshold_above_zero(
    workspace: Path, tmp_path: Path
) -> None:
    """A window under the summary reserve and the margins made negative thresholds: the
    run autocompacted before its first request and ended over a limit of -13,000."""
    config = RunConfig(context_window=MIN_CONTEXT_WINDOW)
    assert 0 < config.microcompact_threshold <= config.autocompact_threshold
    assert config.autocompact_threshold < config.blocking_limit
    scenario = str(SCENARIOS / "tool_round.json")
    log = tmp_path / "l.jsonl"
    args = ["--scripted", scenario, "--cwd", str(workspace), "--log", str(log)]
    small = str(MIN_CONTEXT_WINDOW)
    fits = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "run", *args, "--context-window", small],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert "autocompact" not in fits.stdout
    under = str(MIN_CONTEXT_WINDOW - 1)
    refused = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "run", *args, "--context-window", under],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "--context-window" in refused.stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("context_window", 1_000),
        ("context_window", 0),
        ("context_window", -5),
        ("max_output_tokens", 0),
        ("escalated_max_output_tokens", -1),
        ("snip_threshold", -1),
    ],
)
def test_a_run_config_with_limits_no_run_can_keep_is_refused(
    field: str, value: int, tmp_path: Path
) -> None:
    """The command line and a scenario refuse a window under 40,000; a `RunConfig` took
    one from Python as given: the run asked the model to summarise the prompt before its
    first request, then ended "over the blocking limit of -22,000". A zero or negative
    output limit is refused by the API; a negative snip threshold snips every turn."""
    with pytest.raises(ValueError, match=field):
        RunConfig(**{field: value})
    log = tmp_path / "l.jsonl"
    run_scenario(SCENARIOS / "tool_round.json", cwd=tmp_path, log=log)
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    header["config"][field] = value
    log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    reseal(log)
    proc = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "replay", "--check", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("fsm-agent: error: ") and field in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_output_limits_table() -> None:
    """A dated id is its family's; a minor version the table lacks is not its family's
    oldest (Opus 4's 32k would cap a newer Opus), it keeps the defaults."""
    assert output_limits("claude-opus-4-20250514") == (32_000, 32_000)
    assert output_limits("claude-opus-4-1-20250805") == (32_000, 32_000)
    assert output_limits("claude-opus-4-5-20251101") == (32_000, 64_000)
    assert output_limits("claude-opus-4-9") == (32_000, 64_000)
    assert output_limits("claude-3-5-sonnet-20241022") == (8_192, 8_192)
    assert output_limits("claude-3-haiku-20240307") == (4_096, 4_096)
    assert output_limits("some-other-model") == (32_000, 64_000)


def test_context_window_table() -> None:
    assert context_window("claude-sonnet-4-5") == 200_000
    assert context_window("claude-opus-4-1-20250805") == 200_000
    assert context_window("claude-sonnet-4-5", beta_1m=True) == 1_000_000
    assert context_window("claude-opus-4-1", beta_1m=True) == 200_000
    assert context_window("some-other-model") == 200_000
    for model in ("claude-opus-5-5", "claude-sonnet-5", "claude-haiku-5-5", "claude-fable-5-1"):
        assert context_window(model) == 1_000_000, model
    assert context_window("claude-haiku-4-5") == 200_000


def test_replace_from_has_the_digest_of_building_the_whole_list() -> None:
    messages = history(5)
    new = user("changed")
    changed = messages.replace_from(4, (new, *messages[5:]))
    assert changed.digest == Transcript.of((*messages[:4], new, *messages[5:])).digest
    assert changed.replace_from(3, changed[3:]).digest == changed.digest


# --- level 1: tool-result budget ---------------------------------------------------


def big_result_history(
    size: int = ctx.TOOL_RESULT_MAX_CHARS + 10, tool: str = "Read"
) -> Transcript:
    return Transcript.of([user("go"), *round_of(0, tool, result="x" * size)])


def test_budget_replaces_an_oversized_result_by_a_preview_and_its_path() -> None:
    messages = big_result_history()
    out = apply_tool_result_budget(messages, ctx.TOOL_RESULT_MAX_CHARS, {"toolu_0000": "/s/r.txt"})
    text = results(out)[0].text
    assert "Full output saved to: /s/r.txt" in text
    assert "Output too large (97.7KB)" in text
    assert len(text) < 3_000
    assert out[:-1] == messages[:-1]


def test_the_preview_is_worded_and_cut_as_claude_codes() -> None:
    """Claude Code's `buildLargeToolResultMessage`: the size as `formatFileSize` writes it,
    the preview cut at the last line's end in its first 2KB, and `...` when there is more.
    It said "(45000 characters)", "(first 2000 characters)", and cut lines in two."""
    text = ("a" * 99 + "\n") * 450
    assert ctx.persisted_preview(text, "/s/r.txt") == (
        "<persisted-output>\nOutput too large (43.9KB). Full output saved to: /s/r.txt\n\n"
        f"Preview (first 2KB):\n{text[:1999]}\n...\n</persisted-output>"
    )
    one_line = "b" * 40_000
    assert ctx.persisted_preview(one_line, "/s/r.txt").endswith(
        f"Preview (first 2KB):\n{one_line[:2000]}\n...\n</persisted-output>"
    )
    assert ctx.persisted_preview("c" * 1024, "/r").startswith(
        "<persisted-output>\nOutput too large (1KB)."
    )
    assert "Output too large (900 bytes)." in ctx.persisted_preview("d" * 900, "/r")
    assert "(1.5MB)" in ctx.persisted_preview("e" * (3 * 1024 * 512), "/r")


def test_budget_leaves_a_result_it_could_not_store_whole() -> None:
    messages = big_result_history()
    assert apply_tool_result_budget(messages, ctx.TOOL_RESULT_MAX_CHARS, {}) is messages


def test_budget_ignores_results_within_the_limit() -> None:
    messages = big_result_history(ctx.TOOL_RESULT_MAX_CHARS)
    assert ctx.oversized_results(messages, ctx.TOOL_RESULT_MAX_CHARS) == ()


def test_bash_output_is_stored_past_thirty_thousand_characters() -> None:
    """Claude Code's Bash keeps 30,000 characters inline (BASH_MAX_OUTPUT_LENGTH), then
    saves the output to a file; other tools keep the general 100,000."""
    limit = ctx.TOOL_RESULT_MAX_CHARS
    bash, read = (big_result_history(30_001, tool) for tool in ("Bash", "Read"))
    assert [b.tool_use_id for b in ctx.oversized_results(bash, limit)] == ["toolu_0000"]
    assert ctx.oversized_results(read, limit) == ()
    assert ctx.oversized_results(big_result_history(30_000, "Bash"), limit) == ()
    stored = apply_tool_result_budget(bash, limit, {"toolu_0000": "/s/r.txt"})
    assert "Full output saved to: /s/r.txt" in results(stored)[0].text


def parallel_results(*calls: tuple[str, int]) -> Transcript:
    """One round of parallel calls: (tool, result size) each."""
    uses = tuple(ToolUseBlock(f"toolu_p{i}", tool, {}) for i, (tool, _) in enumerate(calls))
    answers = tuple(
        ToolResultBlock(f"toolu_p{i}", str(i) * size) for i, (_, size) in enumerate(calls)
    )
    return Transcript.of([user("go"), Message("assistant", uses), Message("user", answers)])


def test_parallel_results_are_held_to_a_budget_for_the_whole_message(tmp_path: Path) -> None:
    """Claude Code's applyToolResultBudget holds the results of one message to 200,000
    characters together (MAX_TOOL_RESULTS_PER_MESSAGE_CHARS), storing the largest first:
    five Greps of 60,000 characters each went to the model whole, 300,000 characters."""
    limit = ctx.TOOL_RESULT_MAX_CHARS

    def stored(messages: Transcript) -> list[str]:
        return [b.tool_use_id for b in ctx.oversized_results(messages, limit)]

    assert stored(parallel_results(*[("Grep", 60_000)] * 5)) == ["toolu_p0", "toolu_p1"]
    mixed = parallel_results(("Grep", 10_000), ("Glob", 90_000), ("Bash", 25_000), ("Grep", 80_000))
    assert stored(mixed) == ["toolu_p1"]
    assert stored(parallel_results(*[("Grep", 50_000)] * 4)) == []
    reads = parallel_results(("Read", 90_000), ("Read", 90_000), ("Grep", 30_000))
    assert stored(reads) == ["toolu_p2"], "Read's results are not stored, as in Claude Code"
    messages = parallel_results(*[("Grep", 60_000)] * 5)
    it, reports = pipeline(messages, RunConfig(), CountingModel([]), tmp_path)
    sent = results(it.messages_for_query)
    assert sum(len(r.text) for r in sent) <= ctx.TOOL_RESULTS_PER_MESSAGE_CHARS
    assert (tmp_path / "blobs" / "toolu_p0.txt").read_text() == "0" * 60_000
    assert [r.level for r in reports] == ["tool_result_budget"]


# --- level 2: snip -----------------------------------------------------------------


def test_snip_drops_whole_old_rounds_and_reports_what_it_freed() -> None:
    messages = history(6)
    one_round = estimate_all(messages[1:3])
    out, freed = snip(messages, tokens_to_free=one_round + 1)
    assert freed == 2 * one_round
    assert out[0] == messages[0]
    assert list(out[1:]) == list(messages[5:])
    assert_no_orphans(out)


def test_snip_keeps_the_prompt_and_the_last_rounds() -> None:
    messages = history(4)
    out, freed = snip(messages, tokens_to_free=10**9, keep_rounds=2)
    assert list(out) == [messages[0], *messages[-4:]]
    assert freed == estimate_all(messages[1:5])
    assert snip(out, 10**9, keep_rounds=2) == (out, 0)


def test_snip_with_nothing_to_free_is_a_no_op() -> None:
    messages = history(6)
    assert snip(messages, 0) == (messages, 0)


# --- level 3: microcompact --------------------------------------------------------


def test_microcompact_clears_all_but_the_five_newest_results() -> None:
    messages = history(8)
    out, freed = microcompact(messages)
    texts = [r.content for r in results(out)]
    assert texts[:3] == [CLEARED] * 3
    assert CLEARED not in texts[3:]
    assert freed == estimate_all(messages) - estimate_all(out)
    assert freed > 0
    assert out.digest == Transcript.of(out.items).digest


def test_microcompact_is_idempotent() -> None:
    out, _ = microcompact(history(8))
    again, freed = microcompact(out)
    assert freed == 0
    assert again is out


def test_microcompact_only_touches_the_listed_tools() -> None:
    messages = history(8, tool="TodoWrite")
    assert microcompact(messages) == (messages, 0)


def test_microcompact_stops_at_the_first_cleared_result() -> None:
    """Older results were cleared with it: the walk costs only what was added since."""
    cleared, _ = microcompact(history(8))
    later = cleared.extend(round_of(8)).extend(round_of(9))
    out, freed = microcompact(later)
    texts = [r.content for r in results(out)]
    assert texts[:5] == [CLEARED] * 5
    assert CLEARED not in texts[5:]
    assert freed > 0


def test_microcompact_leaves_a_result_shorter_than_its_marker() -> None:
    """Clearing "ok" with the 33-character marker made the history longer: the report
    showed the count going up (446 → 481 tokens). Only what clearing shrinks is
    cleared, so what it frees is never negative."""
    items = [user("go")]
    for n in range(10):
        items += round_of(n, result="ok" if n % 2 else "long result " * 40)
    messages = Transcript.of(items)
    out, freed = microcompact(messages)
    texts = [r.content for r in results(out)]
    assert texts[:5] == [CLEARED, "ok", CLEARED, "ok", CLEARED]
    assert texts[5:] == [r.content for r in results(messages)][5:]
    assert freed == estimate_all(messages) - estimate_all(out) > 0
    short = history(10, usage=None)
    short = Transcript.of(
        [
            evolve(m, content=(evolve(m.content[0], content="ok"),))
            if m.role == "user" and i
            else m
            for i, m in enumerate(short)
        ]
    )
    assert microcompact(short) == (short, 0)
    later = out.extend(round_of(10)).extend(round_of(11))
    again, freed = microcompact(later)
    assert [r.content for r in results(again)][:7] == [
        CLEARED,
        "ok",
        CLEARED,
        "ok",
        CLEARED,
        "ok",
        CLEARED,
    ]
    assert freed == estimate_all(later) - estimate_all(again) > 0


# --- level 4: context collapse ---------------------------------------------------


def test_collapse_is_staged_then_drained_then_projected_once() -> None:
    messages = history(5)
    store = stage_collapse(messages, CollapseStore())
    assert store.staged_count == 1
    span = store.staged[0]
    assert (span.start, span.end) == (1, 9)
    view, _, freed = project_collapses(messages, store)
    assert view is messages and freed == 0
    committed = drain_collapses(store)
    view, applied, freed = project_collapses(messages, committed)
    assert len(view) == len(messages) - 8 + 1
    assert "collapsed" in view[1].text
    assert list(view[2:]) == list(messages[9:])
    assert freed == estimate_all(messages[1:9]) - estimate_tokens(view[1])
    assert applied.committed[0].applied
    assert_no_orphans(view)
    again, _, freed = project_collapses(view, applied)
    assert again is view and freed == 0


def test_projecting_a_stored_view_again_does_not_double_apply() -> None:
    """Even a store that lost its `applied` marks leaves an already-collapsed view alone."""
    messages = history(5)
    committed = drain_collapses(stage_collapse(messages, CollapseStore()))
    view, _, _ = project_collapses(messages, committed)
    longer = view.extend(round_of(10))
    again, _, freed = project_collapses(longer, committed)
    assert list(again) == list(longer)
    assert freed == 0


def test_a_newer_staging_replaces_an_overlapping_one() -> None:
    messages = history(4)
    store = stage_collapse(messages, CollapseStore())
    longer = messages.extend(round_of(4))
    store = stage_collapse(longer, store)
    assert store.staged_count == 1
    assert store.staged[0].end == len(longer) - 2


# --- level 5: autocompact (pure parts) ---------------------------------------------


def test_parse_summary_drops_the_analysis() -> None:
    text = "<analysis>thinking</analysis>\n<summary>\nThe gist.\n</summary>"
    assert parse_summary(text) == "The gist."
    assert parse_summary("plain") == "plain"


def test_compact_summary_replaces_the_history_and_keeps_recent_rounds() -> None:
    messages = history(6, usage=9000)
    cut = keep_from(messages, max_tokens=10**6, max_rounds=2)
    assert cut == len(messages) - 4
    out = apply_compact_summary(messages, "The gist.", cut)
    assert is_compact_summary(out[0]) and out[0].is_meta
    assert out[0].text.endswith("The gist.")
    assert [m.content for m in out[1:]] == [m.content for m in messages[cut:]]
    assert all(m.usage is None for m in out)
    assert_no_orphans(out)


def test_compact_keeps_nothing_when_the_last_round_is_too_big() -> None:
    messages = history(3)
    cut = keep_from(messages, max_tokens=1, max_rounds=2)
    assert cut == len(messages)
    out = apply_compact_summary(messages, "The gist.", cut)
    assert len(out) == 1
    assert "Please continue the conversation" in out[0].text


def test_reactive_compact_keeps_the_prompt_and_the_last_round() -> None:
    messages = history(5, usage=9000)
    out = reactive_compact(messages)
    assert out[0] == messages[0]
    assert "compacted to fit" in out[1].text
    assert [m.content for m in out[2:]] == [m.content for m in messages[-2:]]
    assert not count_tokens(out).exact
    assert_no_orphans(out)


# --- the pipeline, in order --------------------------------------------------------


class CountingModel(ScriptedModel):
    """A scripted model that keeps its requests and may answer count_tokens."""

    def __init__(self, turns: list[dict], counted: int | None = None) -> None:
        super().__init__(Scenario.parse({"turns": turns}))
        self.requests: list[ModelRequest] = []
        self.counted = counted
        self.count_requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        return super().stream(request)

    async def count_tokens(self, request: ModelRequest) -> int | None:
        self.count_requests.append(request)
        return self.counted


SUMMARY_TURN = {"content": [{"type": "text", "text": "<summary>The gist.</summary>"}]}


def pipeline(
    messages: Transcript,
    config: RunConfig,
    model: CountingModel,
    tmp_path: Path,
    state: LoopState | None = None,
    tool_specs: tuple[ToolSpec, ...] = (),
) -> tuple[Iteration, list[ContextReport]]:
    events: list[DriverEvent] = []
    effects = LiveEffects(model, {}, blob_dir=tmp_path / "blobs")
    run = Run(config, effects, tool_specs, events.append, "s")
    state = state or evolve(initial_state([], config), messages=messages)
    it, _ = asyncio.run(preprocess(run, state, fresh_iteration(state)))
    return it, [e for e in events if isinstance(e, ContextReport)]


SMALL = RunConfig(context_window=50_000)


def test_under_every_threshold_nothing_happens(tmp_path: Path) -> None:
    messages = history(10, usage=5_000)
    model = CountingModel([])
    it, reports = pipeline(messages, SMALL, model, tmp_path)
    assert it.messages_for_query is messages
    assert reports == [] and model.requests == [] and model.count_requests == []
    assert it.token_count == count_tokens(messages).tokens


def test_levels_run_in_order_and_report_before_and_after(tmp_path: Path) -> None:
    items = [user("go")]
    for n in range(9):
        items += round_of(n, result="r" * 4_000, usage=1_000 * n)
    items[-2] = evolve(items[-2], usage=Usage(input_tokens=40_000))
    items[-1] = Message("user", (ToolResultBlock("toolu_0008", "y" * 100_050),))
    messages = Transcript.of(items)
    config = evolve(SMALL, snip_threshold=40_000)
    model = CountingModel([SUMMARY_TURN])
    it, reports = pipeline(messages, config, model, tmp_path)
    assert [r.level for r in reports] == [
        "tool_result_budget",
        "snip",
        "microcompact",
        "collapse",
        "autocompact",
    ]
    for earlier, later in itertools.pairwise(reports[1:]):
        assert later.before == earlier.after
    assert reports[0].after < reports[0].before
    assert reports[1].text.startswith("snip: dropped old rounds, 17 left")
    stored = tmp_path / "blobs" / "toolu_0008.txt"
    assert stored.read_text() == "y" * 100_050
    assert [r.purpose for r in model.requests] == ["compact"]
    assert is_compact_summary(it.messages_for_query[0])
    assert str(stored) in results(it.messages_for_query)[-1].text
    assert it.auto_compact_tracking == AutoCompactTracking(compacted=True)
    assert it.token_count == reports[-1].after < config.autocompact_threshold
    assert it.memory_forgotten, "nested CLAUDE.md files shown before are shown again"


def test_tokens_freed_by_snip_count_toward_the_autocompact_decision(tmp_path: Path) -> None:
    config = evolve(SMALL, snip_threshold=10_000)
    messages = history(30, usage=None)
    anchor = evolve(messages[-2], usage=Usage(input_tokens=config.autocompact_threshold + 10))
    messages = messages.replace_from(len(messages) - 2, (anchor, messages[-1]))
    model = CountingModel([SUMMARY_TURN])
    it, reports = pipeline(messages, config, model, tmp_path)
    assert reports[0].level == "snip"
    assert it.token_count <= config.autocompact_threshold
    assert model.requests == []


def test_autocompact_gives_up_after_three_consecutive_failures(tmp_path: Path) -> None:
    error = {"error": {"kind": "server", "message": "boom", "status": 500}}
    model = CountingModel([error, error, error, SUMMARY_TURN])
    messages = history(10, usage=SMALL.autocompact_threshold + 5_000)
    state = evolve(initial_state([], SMALL), messages=messages)
    failures, texts = [], []
    for _ in range(4):
        it, reports = pipeline(messages, SMALL, model, tmp_path, state)
        tracking = it.auto_compact_tracking
        assert tracking is not None
        state = evolve(state, auto_compact_tracking=tracking)
        failures.append(tracking.consecutive_failures)
        texts.append([r.text for r in reports if r.level == "autocompact"])
        assert it.messages_for_query[0] == messages[0]
    assert failures == [1, 2, 3, 3]
    assert len(model.requests) == 3
    assert "giving up" in texts[2][0]
    assert texts[3] == []


def test_the_compact_request_defines_the_tools_its_history_uses(tmp_path: Path) -> None:
    """The API refuses a request whose messages hold tool_use or tool_result blocks
    but which defines no tools (400 "Requests which include tool_use or tool_result
    blocks must define tools"): the summary request sends the run's tools."""
    messages = history(10, usage=SMALL.autocompact_threshold + 5_000)
    model = CountingModel([SUMMARY_TURN])
    read = ToolSpec("Read", "Read a file.", {"type": "object"})
    it, _ = pipeline(messages, SMALL, model, tmp_path, tool_specs=(read,))
    (request,) = model.requests
    assert request.purpose == "compact"
    assert tool_uses(request.messages)
    assert request.tools == (read,)
    assert request_body(request)["tools"][0]["name"] == "Read"
    assert is_compact_summary(it.messages_for_query[0])


def test_the_summary_is_asked_within_the_models_output_limit(tmp_path: Path) -> None:
    """20,000 tokens for the summary, or fewer if the model can write fewer (Claude 3
    Haiku: 4,096): the API refuses a larger `max_tokens`."""
    config = evolve(SMALL, max_output_tokens=4_096, escalated_max_output_tokens=4_096)
    messages = history(10, usage=config.autocompact_threshold + 5_000)
    model = CountingModel([SUMMARY_TURN])
    pipeline(messages, config, model, tmp_path)
    assert [(r.purpose, r.max_tokens) for r in model.requests] == [("compact", 4_096)]
    model = CountingModel([SUMMARY_TURN])
    pipeline(messages, SMALL, model, tmp_path)
    assert [r.max_tokens for r in model.requests] == [20_000]


def test_a_count_at_a_limit_has_reached_it(tmp_path: Path) -> None:
    """Claude Code compares `tokenUsage >= threshold`: a count equal to the autocompact
    threshold compacts, and one equal to the blocking limit is at it."""
    model = CountingModel([SUMMARY_TURN])
    at_threshold = history(10, tool="Task", usage=None)
    anchor = Usage(input_tokens=SMALL.autocompact_threshold - estimate_tokens(at_threshold[-1]))
    at_threshold = at_threshold.replace_from(
        len(at_threshold) - 2, (evolve(at_threshold[-2], usage=anchor), at_threshold[-1])
    )
    assert count_tokens(at_threshold).tokens == SMALL.autocompact_threshold
    pipeline(at_threshold, SMALL, model, tmp_path)
    assert [r.purpose for r in model.requests] == ["compact"]
    run = Run(SMALL, LiveEffects(model, {}), (), lambda _: None, "s")
    state = initial_state([], SMALL)
    at_limit = evolve(fresh_iteration(state), token_count=SMALL.blocking_limit)
    _, facts = asyncio.run(blocking_limit_check(run, state, at_limit))
    assert facts.over_hard_limit


def test_count_tokens_is_asked_only_without_an_anchor_near_a_limit(tmp_path: Path) -> None:
    near = Transcript.of([user("x" * 4 * int(0.9 * SMALL.microcompact_threshold))])
    model = CountingModel([], counted=123)
    it, _ = pipeline(near, SMALL, model, tmp_path)
    assert len(model.count_requests) == 1
    assert model.count_requests[0].purpose == "count_tokens"
    assert it.token_count == 123
    failing = CountingModel([], counted=None)
    it, _ = pipeline(near, SMALL, failing, tmp_path)
    assert it.token_count == count_tokens(near).tokens
    far = CountingModel([], counted=123)
    pipeline(Transcript.of([user("short")]), SMALL, far, tmp_path)
    assert far.count_requests == []


# --- whole runs --------------------------------------------------------------------


def test_long_session_autocompacts_and_completes(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "ac.jsonl"
    result = run_scenario(SCENARIOS / "autocompact.json", cwd=workspace, log=log)
    assert result.reason == "completed"
    assert is_compact_summary(result.messages[0])
    assert "todo.txt held gamma" in result.messages[0].text
    assert (workspace / "todo.txt").read_text() == "gamma (done)\n"
    records = [r for _, r in SessionLog(log).records()]
    levels = [r["level"] for r in records if r["t"] == "context"]
    assert levels[-1] == "autocompact" and "microcompact" in levels
    purposes = [
        r["args"]["purpose"] for r in records if r["t"] == "effect" and r["name"] == "model"
    ]
    assert purposes.count("compact") == 1
    assert replay(log).reason == "completed"


def test_autocompact_lets_a_run_past_the_blocking_limit(tmp_path: Path, workspace: Path) -> None:
    data = json.loads((SCENARIOS / "blocking_limit.json").read_text())
    del data["config"]["autocompact"]
    data["turns"] += [SUMMARY_TURN, {"content": [{"type": "text", "text": "Done."}]}]
    path = tmp_path / "rescued.json"
    path.write_text(json.dumps(data))
    result = run_scenario(path, cwd=workspace, keep_log=False)
    assert result.reason == "completed"
    assert "blocking_limit" not in result.edges


def test_a_media_error_retries_without_the_images(tmp_path: Path, workspace: Path) -> None:
    """The API refused an image: the retry sends `[image]` in its place, as Claude Code's
    compaction strips images, so it can succeed; it sent the same image again, wasting
    a request before `image_error`."""
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 20
    (workspace / "shot.png").write_bytes(png)
    read = {"type": "tool_use", "id": "toolu_png", "name": "Read"}
    refused = "messages.2.content.0.content.0.image.source.base64: image exceeds 5 MB maximum"
    turns = [
        {"content": [{**read, "input": {"file_path": "shot.png"}}]},
        {"error": {"kind": "media", "message": refused, "status": 400}},
        {"content": [{"type": "text", "text": "I could not see it."}]},
    ]
    model = CountingModel(turns)
    seen: list[object] = []
    config = RunConfig(cwd=str(workspace))
    result = asyncio.run(
        arun("Look at shot.png.", model=model, config=config, on_event=seen.append, keep_log=False)
    )

    def images(request: ModelRequest) -> list[object]:
        blocks = [b for m in request.messages for b in m.content]
        inner = [
            c
            for b in blocks
            if isinstance(b, ToolResultBlock) and not isinstance(b.content, str)
            for c in b.content
        ]
        return [b for b in (*blocks, *inner) if isinstance(b, ImageBlock)]

    assert result.edges.count("reactive_compact_retry") == 1
    assert result.reason == "completed"
    failed, retried = model.requests[1], model.requests[2]
    assert len(images(failed)) == 1 and images(retried) == []
    assert "[image]" in [r.text for r in results(retried.messages)]
    notices = [e.text for e in seen if isinstance(e, Notice)]
    assert notices == ["an image was refused: images sent as [image], retrying"]


def test_prompt_too_long_after_rounds_compacts_reactively_and_retries(
    tmp_path: Path, workspace: Path
) -> None:
    glob = {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}}
    turns = [{"content": [{**glob, "id": f"toolu_p{n}"}]} for n in range(3)]
    turns += [
        {"error": {"kind": "prompt_too_long", "message": "prompt is too long", "status": 400}},
        {"content": [{"type": "text", "text": "Done."}]},
    ]
    path = tmp_path / "ptl.json"
    path.write_text(json.dumps({"prompt": "Look.", "turns": turns}))
    scenario = Scenario.load(path)
    model = CountingModel(turns)
    from fsm_agent.app.session import arun

    result = asyncio.run(
        arun(
            scenario.prompt or "",
            model=model,
            config=scenario.run_config(RunConfig(cwd=str(workspace))),
            keep_log=False,
        )
    )
    assert result.reason == "completed"
    assert result.edges.count("reactive_compact_retry") == 1
    failed, retried = model.requests[3], model.requests[4]
    assert len(retried.messages) < len(failed.messages)
    assert_no_orphans(retried.messages)


def test_an_oversized_result_is_stored_next_to_the_log_and_replayed(
    tmp_path: Path, workspace: Path
) -> None:
    import jsonschema

    from tests.conftest import ROOT

    lines = (f"{n:04d} " + "z" * 40 + "\n" for n in range(2000))  # under Read's 25,000 tokens
    (workspace / "big.txt").write_text("".join(lines))
    read = {"type": "tool_use", "id": "toolu_big1", "name": "Read"}
    turns = [
        {"content": [{**read, "input": {"file_path": "big.txt"}}]},
        {"content": [{"type": "text", "text": "It is long."}]},
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"prompt": "Read big.txt", "turns": turns}))
    log = tmp_path / "logs" / "big.jsonl"
    result = run_scenario(path, cwd=workspace, log=log)
    assert result.reason == "completed"
    stored = tmp_path / "logs" / "big" / "tool-results" / "toolu_big1.txt"
    whole = stored.read_text()
    assert len(whole) > ctx.TOOL_RESULT_MAX_CHARS and whole.startswith("     1→0000 zzz")
    sent = results(result.messages)[-1].text
    assert f"Full output saved to: {stored}" in sent
    assert len(sent) < 3_000
    records = [r for _, r in SessionLog(log).records()]
    blobs = [r for r in records if r["t"] == "effect" and r["name"] == "store_blob"]
    assert [b["result"] for b in blobs] == [str(stored)]
    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    for record in records:
        jsonschema.validate(record, schema)
    stored.unlink()
    assert replay(log).reason == "completed"
    assert not stored.exists()


def test_long_bash_output_reaches_the_model_as_a_file_and_a_preview(
    tmp_path: Path, workspace: Path
) -> None:
    """`seq 1 20000` prints 108,894 characters: the model is sent a preview and the path
    of a file that holds all of it, as Claude Code does past 30,000, not a cut middle."""
    call = {"type": "tool_use", "id": "toolu_seq", "name": "Bash"}
    turns = [
        {"content": [{**call, "input": {"command": "seq 1 20000"}}]},
        {"content": [{"type": "text", "text": "Counted."}]},
    ]
    path = tmp_path / "seq.json"
    config = {"permission_mode": "bypassPermissions"}
    path.write_text(json.dumps({"prompt": "Count", "config": config, "turns": turns}))
    log = tmp_path / "logs" / "seq.jsonl"
    result = run_scenario(path, cwd=workspace, log=log)
    stored = tmp_path / "logs" / "seq" / "tool-results" / "toolu_seq.txt"
    assert stored.read_text() == "\n".join(str(n) for n in range(1, 20_001))
    sent = results(result.messages)[-1].text
    assert sent.startswith("<persisted-output>") and f"Full output saved to: {stored}" in sent
    assert replay(log).reason == "completed"


def test_a_stored_result_is_never_overwritten_by_one_with_the_same_id(
    tmp_path: Path, workspace: Path
) -> None:
    """A server (or a scenario) may use a tool_use id twice: the second oversized result
    overwrote the first's file, so the preview the model had of the first named a file
    that held the second, and the first output was lost."""
    call = {"type": "tool_use", "id": "toolu_same", "name": "Bash"}
    turns = [
        {"content": [{**call, "input": {"command": "yes A | head -n 40000 | tr -d '\\n'"}}]},
        {"content": [{**call, "input": {"command": "yes B | head -n 40000 | tr -d '\\n'"}}]},
        {"content": [{"type": "text", "text": "Both."}]},
    ]
    path = tmp_path / "same.json"
    config = {"permission_mode": "bypassPermissions"}
    path.write_text(json.dumps({"prompt": "Print", "config": config, "turns": turns}))
    log = tmp_path / "logs" / "same.jsonl"
    result = run_scenario(path, cwd=workspace, log=log)
    sent = [r.text for r in results(result.messages)]
    named = [re.search(r"Full output saved to: (\S+)", text) for text in sent]
    files = [Path(m.group(1)) for m in named if m]
    assert len(set(files)) == 2
    assert [f.read_text() for f in files] == ["A" * 40_000, "B" * 40_000]
    assert replay(log).reason == "completed"


def reason_against(server: MessagesServer, prompt: str, config: RunConfig, log: Path) -> str:
    """How a run of `prompt` against the loopback server ends, through the real SDK."""

    async def go() -> str:
        model = AnthropicModel(api_key="test-key", base_url=server.url, max_retries=0)
        try:
            result = await arun(prompt, model=model, config=config, log=log)
        finally:
            await model.aclose()
        return result.reason

    return asyncio.run(go())


def test_fsm_agent_run_shows_what_each_level_did(tmp_path: Path, workspace: Path) -> None:

    scenario = str(SCENARIOS / "autocompact.json")
    log = str(tmp_path / "ac.jsonl")
    proc = fsm("run", "--scripted", scenario, "--cwd", str(workspace), "--log", log)
    assert proc.returncode == 0, proc.stderr
    assert "↻ microcompact: cleared old tool results (26,060 → " in proc.stdout
    assert "↻ autocompact: summarised 13 messages, kept 4 (30,0" in proc.stdout


def test_the_request_after_a_compaction_is_the_context_the_summary_and_the_kept_rounds(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """As Claude Code's: the request after a compaction holds the messages after the
    compact boundary (seed 000), the user context first; the boundary is not sent."""
    (workspace / "a.txt").write_text("alpha\n")
    config = RunConfig(
        model="claude-test-1",
        cwd=str(workspace),
        context_window=MIN_CONTEXT_WINDOW,
        user_context={"currentDate": "Today's date is 2026-11-30."},
    )
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}
    big = {"input_tokens": config.autocompact_threshold + 1_000, "output_tokens": 20}
    messages_server.reply(
        message([read], stop_reason="tool_use", usage=big),
        text("<analysis>a</analysis><summary>Read a.txt: it says alpha.</summary>"),
        text("It says alpha."),
    )

    assert (
        reason_against(messages_server, "What does a.txt say?", config, tmp_path / "s.jsonl")
        == "completed"
    )
    _, compact, after = messages_server.bodies()
    assert compact["messages"][-1]["content"][0]["text"].startswith("Your task is to create")
    sent = after["messages"]
    assert "Today's date is 2026-11-30." in sent[0]["content"][0]["text"]
    assert sent[1]["content"][0]["text"].startswith("This session is being continued")
    assert "Read a.txt: it says alpha." in sent[1]["content"][0]["text"]
    assert [m["role"] for m in sent[2:]] == ["assistant", "user"]
    assert "Conversation compacted" not in json.dumps(sent)


def test_a_server_that_reports_no_usage_still_compacts_a_long_session(
    messages_server: MessagesServer, workspace: Path, tmp_path: Path
) -> None:
    """A compatible server that sends zero usage: each Read adds about 5,000 tokens
    behind the last response, which counted as 0, so the count never passed the
    7,000-token threshold of a 40,000 window and the session grew until the server
    refused it. The estimate of the history stands in, and the third request is the
    summary's."""
    for n in range(3):
        (workspace / f"part{n}.txt").write_text(f"part {n} line of text\n" * 900)
    config = RunConfig(model="claude-test-1", cwd=str(workspace), context_window=40_000)
    zero = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }

    def read(n: int) -> StreamReply:
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
               "input": {"file_path": f"part{n}.txt"}}  # fmt: skip
        return message([use], stop_reason="tool_use", usage=zero)

    messages_server.reply(
        read(0),
        read(1),
        text("<summary>Read part0 and part1.</summary>", usage=zero),
        read(2),
        text("Done.", usage=zero),
    )

    assert (
        reason_against(messages_server, "Read the parts.", config, tmp_path / "s.jsonl")
        == "completed"
    )
    bodies = messages_server.bodies()
    asked = [b["messages"][-1]["content"][0].get("text", "")[:20] for b in bodies]
    assert asked[2] == "Your task is to crea", asked
    assert bodies[3]["messages"][0]["content"][0]["text"].startswith("This session is being")
    assert replay(tmp_path / "s.jsonl").reason == "completed"
