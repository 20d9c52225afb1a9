"""The loop's behaviour from the seeds, each driven by the scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from fsm_agent.app.session import arun
from fsm_agent.context.levels import MAX_OUTPUT_RECOVERY_MESSAGE
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent, Notice, StreamEvent
from fsm_agent.core.messages import Message, ToolResultBlock, ToolUseBlock, user
from fsm_agent.core.model import ModelRequest
from fsm_agent.engine.driver import LoopResult, fresh_iteration, initial_state
from fsm_agent.engine.machine import CONTINUE_REASONS
from fsm_agent.engine.phases import Run, stop_hooks
from fsm_agent.hooks.outcomes import HookOutcome
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedHooks, ScriptedModel
from tests.conftest import SCENARIOS


class SpyModel(ScriptedModel):
    """A scripted model that keeps every request it was sent."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        return super().stream(request)


def spy_run(
    name: str,
    workspace: Path,
    on_event: Callable[[DriverEvent], None] | None = None,
    **config: object,
) -> tuple[SpyModel, LoopResult]:
    scenario = Scenario.load(SCENARIOS / f"{name}.json")
    model = SpyModel(scenario)
    run_config = scenario.run_config(RunConfig(cwd=str(workspace), **config))  # type: ignore[arg-type]
    result = asyncio.run(
        arun(
            scenario.prompt or "",
            model=model,
            config=run_config,
            hooks=ScriptedHooks(scenario.hooks),
            abort=model.abort,
            on_event=on_event,
            keep_log=False,
        )
    )
    return model, result


def test_needs_follow_up_comes_from_blocks_not_stop_reason(scenario, workspace: Path) -> None:
    data = json.loads((SCENARIOS / "unknown_tool.json").read_text())
    data["turns"][0]["stop_reason"] = "end_turn"
    path = workspace.parent / "lying_stop_reason.json"
    path.write_text(json.dumps(data))
    from fsm_agent.app.session import run_scenario

    result = run_scenario(path, cwd=workspace, keep_log=False)
    assert "tool_use" in result.edges
    assert result.edges.count("next_turn") == 1


def test_one_result_per_tool_use_and_request_order(workspace: Path) -> None:
    model, result = spy_run("tool_round", workspace)
    assert result.reason == "completed"
    second = model.requests[1].messages.items
    prompt, assistant, results = second[-3], second[-2], second[-1]
    assert prompt.role == "user" and prompt.text.startswith("Create notes.txt")
    assert assistant.role == "assistant"
    assert [b.id for b in assistant.tool_uses] == ["toolu_01write"]
    assert results.role == "user"
    assert [b.tool_use_id for b in results.content if isinstance(b, ToolResultBlock)] == [
        "toolu_01write"
    ]
    assert (workspace / "notes.txt").read_text() == "hello\n"


def test_unknown_tool_gets_is_error_result(scenario) -> None:
    result = scenario("unknown_tool")
    assert result.reason == "completed"
    tool_result = _results(result.messages.items)["toolu_01nope"]
    assert tool_result.is_error
    assert "No such tool available: Frobnicate" in tool_result.text


def test_turn_count_grows_per_tool_batch(workspace: Path) -> None:
    _, result = spy_run("tool_round", workspace)
    assert result.turns == 3


def test_max_turns_one_runs_the_tool_then_stops_without_a_second_request(
    workspace: Path,
) -> None:
    model, result = spy_run("max_turns", workspace)
    assert result.reason == "max_turns"
    assert len(model.requests) == 1
    assert not _results(result.messages.items)["toolu_01glob"].is_error


def test_max_output_tokens_escalates_then_recovers_three_times(workspace: Path) -> None:
    model, result = spy_run("max_output_tokens", workspace)
    assert result.edges.count("max_output_tokens_escalate") == 1
    assert result.edges.count("max_output_tokens_recovery") == 3
    assert result.reason == "completed"
    assert [r.max_tokens for r in model.requests] == [8000, 64000, 64000, 64000, 64000]
    escalated = model.requests[1].messages.items
    assert not any(m.text == MAX_OUTPUT_RECOVERY_MESSAGE for m in escalated)
    last = model.requests[4].messages.items
    assert sum(m.text == MAX_OUTPUT_RECOVERY_MESSAGE and m.is_meta for m in last) == 3


def _cut_output(model_id: str, workspace: Path) -> tuple[SpyModel, LoopResult, list[str]]:
    """The max_output_tokens scenario against `model_id`'s output limit, under the
    seeds' output cap as the scenario asks."""
    model = SpyModel(Scenario.load(SCENARIOS / "max_output_tokens.json"))
    events: list[DriverEvent] = []
    config = RunConfig(cwd=str(workspace), model=model_id, capped_output=True)
    result = asyncio.run(
        arun("go", model=model, config=config, on_event=events.append, keep_log=False)
    )
    retries = [e.text for e in events if isinstance(e, Notice) and e.kind == "retry"]
    return model, result, retries


def test_no_escalation_when_the_escalated_limit_is_no_higher(workspace: Path) -> None:
    """Claude 3 Haiku writes at most 4,096 tokens: the request already asks for them, so
    the "escalated" retry was the same request again. Output cut at the model's own
    limit goes straight to the recovery turns, as Claude Code's does when the limit
    is fixed."""
    model, result, _ = _cut_output("claude-3-haiku-20240307", workspace)
    assert "max_output_tokens_escalate" not in result.edges
    assert result.edges.count("max_output_tokens_recovery") == 3
    assert [r.max_tokens for r in model.requests] == [4_096] * 4
    second = model.requests[1].messages.items
    assert second[-1].text == MAX_OUTPUT_RECOVERY_MESSAGE and second[-1].is_meta
    assert len({r.messages.digest for r in model.requests}) == 4


def test_the_escalation_notice_names_the_limits_sent(workspace: Path) -> None:
    """3.5 Haiku's limit is 8,192: the notice said "retrying with 64000" while the
    request asked for 8,192."""
    model, _, retries = _cut_output("claude-3-5-haiku-20241022", workspace)
    assert [r.max_tokens for r in model.requests[:2]] == [8_000, 8_192]
    assert retries[0] == "output cut at 8000 tokens; retrying with 8192"


def test_a_cut_at_the_context_window_is_named_so_in_the_notices(workspace: Path) -> None:
    """`model_context_window_exceeded` takes the max-output path, but the notices said
    the output token limit was hit, sending the user after the wrong cause."""
    turns = [
        {"content": [{"type": "text", "text": f"Part {n}"}],
         "stop_reason": "model_context_window_exceeded"}
        for n in range(5)
    ]  # fmt: skip
    events: list[DriverEvent] = []
    asyncio.run(
        arun(
            "go",
            model=ScriptedModel(Scenario.parse({"turns": turns})),
            config=RunConfig(cwd=str(workspace), capped_output=True),
            on_event=events.append,
            keep_log=False,
        )
    )
    retries = [e.text for e in events if isinstance(e, Notice) and e.kind == "retry"]
    assert retries == [
        "answer cut at the context window; retrying with 64000 output tokens",
        *(f"answer cut at the context window; asking the model to resume ({n}/3)"
          for n in (1, 2, 3)),
    ]  # fmt: skip


def test_without_the_output_cap_a_cut_answer_is_asked_to_resume_at_once(
    workspace: Path,
) -> None:
    """Claude Code 2.1.x (measured): requests ask 32,000 tokens and a cut answer is asked
    to resume with no escalated retry first; the limit stays the same."""
    model = SpyModel(Scenario.load(SCENARIOS / "max_output_tokens.json"))
    config = RunConfig(cwd=str(workspace), model="claude-sonnet-4-6")
    result = asyncio.run(arun("go", model=model, config=config, keep_log=False))
    assert "max_output_tokens_escalate" not in result.edges
    assert result.edges.count("max_output_tokens_recovery") == 3
    assert [r.max_tokens for r in model.requests] == [32_000] * 4
    assert model.requests[1].messages.items[-1].text == MAX_OUTPUT_RECOVERY_MESSAGE


def test_tool_use_cut_by_max_tokens_is_answered_with_its_error(scenario, workspace: Path) -> None:
    """As Claude Code 2.1.x (the conformance case max_tokens_in_tool_input): the cut call
    stays in the answer, is never run, and its input's error goes back to the model."""
    result = scenario("truncated_tool_input")
    assert not (workspace / "cut.txt").exists()
    assert "max_output_tokens_recovery" not in result.edges
    assert result.edges[result.edges.index("tool_use") :].count("next_turn") == 1
    blocks = [b for m in result.messages.items for b in m.content]
    calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
    answers = [b for b in blocks if isinstance(b, ToolResultBlock)]
    assert [c.id for c in calls] == [a.tool_use_id for a in answers] == ["toolu_01cut"]
    assert answers[0].is_error


def test_a_log_from_before_keeps_dropping_the_cut_call(scenario, workspace: Path) -> None:
    """What older logs recorded (their header lacks `cut_calls_answered`): the call
    dropped, the model asked to resume; their replay takes that path again."""
    result = scenario("truncated_tool_input", config=RunConfig(cut_calls_answered=False))
    assert "max_output_tokens_recovery" in result.edges
    assert not any(isinstance(b, ToolUseBlock) for m in result.messages.items for b in m.content)


def test_prompt_too_long_compacts_once_then_retries(scenario) -> None:
    result = scenario("reactive_compact")
    assert result.edges.count("reactive_compact_retry") == 1
    assert result.reason == "completed"


def test_hopeless_prompt_too_long(scenario) -> None:
    result = scenario("prompt_too_long")
    assert result.edges.count("reactive_compact_retry") == 1
    assert result.reason == "prompt_too_long"


def test_staged_collapses_drain_before_reactive_compact(workspace: Path) -> None:
    model, result = spy_run("collapse_drain", workspace)
    assert "collapse_drain_retry" in result.edges
    assert "reactive_compact_retry" not in result.edges
    assert result.reason == "completed"
    before, after = model.requests[3], model.requests[4]
    assert len(after.messages) < len(before.messages)
    assert any("collapsed" in m.text for m in after.messages.items)


def test_stop_hook_blocking_feeds_the_error_back(workspace: Path) -> None:
    model, result = spy_run("stop_hook_blocking", workspace)
    assert result.edges.count("stop_hook_blocking") == 1
    assert result.reason == "completed"
    assert "Tests are failing" in model.requests[1].messages.items[-1].text


def test_stop_hook_prevented(scenario) -> None:
    result = scenario("stop_hook_prevented")
    assert result.reason == "stop_hook_prevented"
    assert result.error == "Session budget reached"


def test_hook_stopped_during_tools(scenario, workspace: Path) -> None:
    result = scenario("hook_stopped")
    assert result.reason == "hook_stopped"
    assert (workspace / "made.txt").exists()


def test_token_budget_nudges_until_spent(workspace: Path) -> None:
    model, result = spy_run("token_budget", workspace)
    assert result.edges.count("token_budget_continuation") == 2
    assert result.reason == "completed"
    nudge = model.requests[1].messages.items[-1]
    assert nudge.is_meta and "30% of token target (300 / 1,000)" in nudge.text


def test_abort_while_streaming_fills_missing_results(scenario, workspace: Path) -> None:
    result = scenario("aborted_streaming")
    assert result.reason == "aborted_streaming"
    assert _results(result.messages.items)["toolu_01w"].is_error
    assert not (workspace / "never.txt").exists()


def test_abort_while_tools_run(scenario, workspace: Path) -> None:
    result = scenario("aborted_tools")
    assert result.reason == "aborted_tools"
    results = _results(result.messages.items)
    assert set(results) == {"toolu_01a", "toolu_02b"}
    assert all(r.is_error for r in results.values())
    assert list(workspace.iterdir()) == []


def test_model_error_fills_missing_results(scenario) -> None:
    result = scenario("model_error")
    assert result.reason == "model_error"
    assert "connection" in (result.error or "")
    assert _results(result.messages.items)["toolu_01bash"].is_error


def test_fallback_model_switch_is_a_self_edge(workspace: Path) -> None:
    model, result = spy_run("model_fallback", workspace)
    assert "model_fallback" in result.edges
    assert [r.model for r in model.requests] == ["main-model", "fallback-model"]
    assert result.reason == "completed"
    assert result.model == "fallback-model"


def test_overloaded_without_fallback_is_model_error(workspace: Path, tmp_path: Path) -> None:
    data = json.loads((SCENARIOS / "model_fallback.json").read_text())
    del data["config"]["fallback_model"]
    path = tmp_path / "no_fallback.json"
    path.write_text(json.dumps(data))
    from fsm_agent.app.session import run_scenario

    result = run_scenario(path, cwd=workspace, keep_log=False)
    assert result.reason == "model_error"


def test_api_error_completes_with_the_error(scenario) -> None:
    result = scenario("api_error")
    assert result.reason == "completed"
    assert result.text.startswith("API Error: 401")


def test_image_error(workspace: Path) -> None:
    """No older round to drop and no image to strip: the retry would be the request that
    was just refused, so the run ends `image_error` after it, as Claude Code's does when
    reactive compaction yields nothing."""
    seen: list[DriverEvent] = []
    model, result = spy_run("image_error", workspace, on_event=seen.append)
    assert result.edges[-1] == "image_error"
    assert "reactive_compact_retry" not in result.edges
    assert len(model.requests) == 1
    assert [e for e in seen if isinstance(e, Notice)] == []
    assert result.error == (
        "an image was refused: messages.0.content.1.image.source.base64: image exceeds "
        "5 MB maximum (nothing older than the last round to compact, no image to strip)"
    )


def _too_long_at(
    tmp_path: Path,
    workspace: Path,
    rounds: int,
    on_event: Callable[[DriverEvent], None] | None = None,
    **extra: object,
) -> tuple[SpyModel, LoopResult]:
    """`rounds` Glob rounds, then a prompt-too-long; a retry, if one is sent, fits."""
    glob = {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}}
    turns: list[object] = [{"content": [{**glob, "id": f"toolu_g{n}"}]} for n in range(rounds)]
    turns += [
        {"error": {"kind": "prompt_too_long", "message": TOO_LONG, "status": 400}},
        {"content": "Fits now."},
    ]
    path = tmp_path / "too_long.json"
    path.write_text(json.dumps({"prompt": "Go.", "turns": turns, **extra}))
    scenario = Scenario.load(path)
    model = SpyModel(scenario)
    result = asyncio.run(
        arun(
            "Go.",
            model=model,
            config=scenario.run_config(RunConfig(cwd=str(workspace))),
            hooks=ScriptedHooks(scenario.hooks),
            on_event=on_event,
            keep_log=False,
        )
    )
    return model, result


TOO_LONG = "prompt is too long: 219898 tokens > 200000 maximum"


def test_prompt_too_long_with_nothing_older_ends_without_resending_the_request(
    tmp_path: Path, workspace: Path
) -> None:
    """The prompt alone is too long: reactive compaction keeps the last round, so it
    leaves the messages as they are, and the "retry" was the same request again (a
    wasted request against the API). The run ends `prompt_too_long` after the one
    request and says why."""
    model, result = _too_long_at(tmp_path, workspace, rounds=0)
    assert result.reason == "prompt_too_long"
    assert "reactive_compact_retry" not in result.edges
    assert len(model.requests) == 1
    assert result.error == f"{TOO_LONG} (nothing older than the last round to compact)"


def test_prompt_too_long_after_one_round_has_nothing_older_either(
    tmp_path: Path, workspace: Path
) -> None:
    model, result = _too_long_at(tmp_path, workspace, rounds=1)
    assert result.reason == "prompt_too_long"
    assert len(model.requests) == 2


def test_a_blocking_pre_compact_hook_ends_the_run_instead_of_resending_the_request(
    tmp_path: Path, workspace: Path
) -> None:
    """A PreCompact hook that blocks the reactive compaction left the messages as they
    were, and the same request went out again. The run ends `prompt_too_long`, saying
    what the hook said."""
    hooks = {"PreCompact": [{"blocking_errors": ["keep it all"]}]}
    model, result = _too_long_at(tmp_path, workspace, rounds=2, hooks=hooks)
    assert result.reason == "prompt_too_long"
    assert "reactive_compact_retry" not in result.edges
    assert len(model.requests) == 3
    assert result.error == f"{TOO_LONG} (compaction blocked by a PreCompact hook: keep it all)"


def test_prompt_too_long_after_two_rounds_compacts_and_the_retry_differs(
    tmp_path: Path, workspace: Path
) -> None:
    seen: list[DriverEvent] = []
    model, result = _too_long_at(tmp_path, workspace, rounds=2, on_event=seen.append)
    assert [e.text for e in seen if isinstance(e, Notice)] == [
        "context too long: compacted 5 messages to 4, retrying"
    ]
    assert result.reason == "completed"
    assert result.edges.count("reactive_compact_retry") == 1
    failed, retried = model.requests[2], model.requests[3]
    assert failed.messages.digest != retried.messages.digest
    assert len(retried.messages) < len(failed.messages)


def test_blocking_limit_stops_before_the_next_request(workspace: Path) -> None:
    model, result = spy_run("blocking_limit", workspace)
    assert result.reason == "blocking_limit"
    assert len(model.requests) == 1


def _results(messages: tuple[Message, ...]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in messages for b in m.content if isinstance(b, ToolResultBlock)}


def test_reactive_compaction_is_tried_again_after_a_tool_round(
    tmp_path: Path, workspace: Path
) -> None:
    """As Claude Code's `next_turn` resets `hasAttemptedReactiveCompact`: a prompt-too-long
    in a later turn is compacted again (once per run, a long session would end
    `prompt_too_long` at its second without trying); twice in one turn still ends it."""
    too_long = {
        "error": {"kind": "prompt_too_long", "message": "prompt is too long", "status": 400}
    }
    glob = {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}}
    rounds = [{"content": [{**glob, "id": f"toolu_{n}"}]} for n in range(3)]
    data = {
        "prompt": "Go.",
        "turns": [*rounds[:2], too_long, rounds[2], too_long, too_long],
    }
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(data))
    from fsm_agent.app.session import run_scenario

    result = run_scenario(path, cwd=workspace, keep_log=False)
    assert result.edges.count("reactive_compact_retry") == 2
    last_turn = result.edges[len(result.edges) - result.edges[::-1].index("next_turn") :]
    assert last_turn.count("reactive_compact_retry") == 1
    assert result.reason == "prompt_too_long"
    assert result.error == "still too long after compaction: prompt is too long"


def test_an_in_process_stop_hook_may_give_its_blocking_errors_as_a_list() -> None:
    """Facts are made once per distinct value (`state.facts`), so what a phase passes
    them must be hashable; a hook's list of errors is taken as a tuple."""

    class ListHooks:
        async def run(self, event: str, payload: dict) -> HookOutcome:
            return HookOutcome(blocking_errors=["Run the tests first."])  # type: ignore[arg-type]

    config = RunConfig(model="scripted", cwd=".", hooked_events=("Stop",))
    effects = LiveEffects(ScriptedModel(Scenario.parse({"turns": []})), {}, ListHooks())
    run = Run(config, effects, (), lambda e: None, "s")
    state = initial_state([user("hi")], config)
    _, found = asyncio.run(stop_hooks(run, state, fresh_iteration(state)))
    assert found.blocking_errors == ("Run the tests first.",)


def test_a_blocking_stop_hook_and_a_budget_nudge_are_shown(scenario) -> None:
    """The model goes on because of them: the user sees why, as Claude Code shows it."""
    from fsm_agent.core.events import Notice

    seen: list[object] = []
    scenario("stop_hook_blocking", on_event=seen.append)
    assert [(e.kind, e.text) for e in seen if isinstance(e, Notice)] == [
        ("hook", "Stop hook: Tests are failing: run them before you stop. (the model goes on)")
    ]
    seen.clear()
    scenario("token_budget", on_event=seen.append)
    assert [(e.kind, e.text) for e in seen if isinstance(e, Notice)] == [
        ("budget", "300 of the 1,000 token budget used; the model goes on"),
        ("budget", "600 of the 1,000 token budget used; the model goes on"),
    ]


def test_output_still_cut_after_every_recovery_completes_without_stop_hooks(
    tmp_path: Path, workspace: Path
) -> None:
    """The seed's `completed`: "API error but recovery exhausted". A fifth cut answer
    ends the run: no Stop hook is asked (it would block and go on) and no budget nudge
    sends the model on, as Claude Code skips both when the last message is the
    surfaced max-output-tokens error."""
    data = json.loads((SCENARIOS / "max_output_tokens.json").read_text())
    data["hooks"] = {"Stop": [{"blocking_errors": ["Keep going."]}]}
    data["config"] = {"token_budget": 100_000, "capped_output": True}
    data["turns"].append({"content": "never asked for"})
    path = tmp_path / "cut_five_times.json"
    path.write_text(json.dumps(data))
    from fsm_agent.app.session import run_scenario

    result = run_scenario(path, cwd=workspace, keep_log=False)
    assert result.reason == "completed"
    assert result.edges.count("max_output_tokens_recovery") == 3
    assert result.path[-1].source == "recovery"
    assert "stop_hook_blocking" not in result.edges
    assert "token_budget_continuation" not in result.edges
    assert not any(step.dest == "stop_hooks" for step in result.path)
    assert result.text == "Part four"


def test_output_still_cut_after_every_recovery_is_an_api_error_answer(workspace: Path) -> None:
    """Claude Code then surfaces the max-output-tokens error it withheld, naming the last
    request's limit (the escalated 64k): the run is `completed` and still an error
    (`is_error`, exit 20), not a clean end. The cut answer stays the last message."""
    from fsm_agent.app.session import run_scenario

    result = run_scenario(SCENARIOS / "max_output_tokens.json", cwd=workspace, keep_log=False)
    assert result.reason == "completed"
    assert result.error == "API Error: Claude's response exceeded the 64000 output token maximum."
    assert result.is_error
    assert result.messages[-1].role == "assistant" and result.text == "Part four"


def test_budget_nudge_words_the_numbers_as_claude_code_does() -> None:
    """Claude Code's nudge formats both counts with en-US thousands separators and
    rounds the percentage half up (`Math.round`), not to even."""
    from fsm_agent.context.levels import budget_nudge

    assert budget_nudge(1_250, 10_000) == (
        "Stopped at 13% of token target (1,250 / 10,000). Keep working — do not summarize."
    )


def test_a_stop_hook_is_told_when_it_already_blocked(workspace: Path) -> None:
    """The seed's stopHookActive: after a stop_hook_blocking, the next Stop hook call
    says `stop_hook_active: true`, so a hook can avoid blocking forever; a tool round
    in between keeps it."""

    class Spy(ScriptedHooks):
        def __init__(self, scenario: Scenario) -> None:
            super().__init__(scenario.hooks)
            self.active: list[object] = []

        async def run(self, event: str, payload: dict) -> HookOutcome:
            self.active.append(payload["stop_hook_active"])
            return await super().run(event, payload)

    glob = {"type": "tool_use", "id": "toolu_1", "name": "Glob", "input": {"pattern": "*"}}
    scenario = Scenario.parse(
        {
            "hooks": {"Stop": [{"blocking_errors": ["Run the tests."]}]},
            "turns": [{"content": "Done."}, {"content": [glob]}, {"content": "Tested."}],
        }
    )
    hooks = Spy(scenario)
    config = scenario.run_config(RunConfig(cwd=str(workspace)))
    result = asyncio.run(
        arun("Go.", model=ScriptedModel(scenario), config=config, hooks=hooks, keep_log=False)
    )
    assert result.edges.count("stop_hook_blocking") == 1
    assert "next_turn" in result.edges
    assert hooks.active == [False, True]


def test_only_next_turn_carries_a_tool_summary(workspace: Path, tmp_path: Path) -> None:
    """The seed's pendingToolUseSummary is the previous round's tool summary, taken up
    while the next round streams: a retry or a hook's continue after that round has
    none, as the debugger shows (`p pending_tool_use_summary`)."""
    from fsm_agent.app.session import run_scenario

    glob = {"type": "tool_use", "id": "toolu_1", "name": "Glob", "input": {"pattern": "*"}}
    path = tmp_path / "summary.json"
    path.write_text(
        json.dumps(
            {
                "hooks": {"Stop": [{"blocking_errors": ["Run the tests."]}]},
                "config": {"token_budget": 10_000, "capped_output": True},
                "turns": [
                    {"content": [glob]},
                    {"content": "Cut", "stop_reason": "max_tokens"},
                    {"content": "Cut again", "stop_reason": "max_tokens"},
                    {"content": "Done."},
                    {"content": "Tested."},
                    {
                        "content": "Still going.",
                        "usage": {"input_tokens": 1, "output_tokens": 9_000},
                    },
                ],
            }
        )
    )
    log = tmp_path / "summary.jsonl"
    run_scenario(path, cwd=workspace, log=log, prompt="Go.")
    assert _summaries(log) == {
        "next_turn": "Glob",
        "max_output_tokens_escalate": None,
        "max_output_tokens_recovery": None,
        "stop_hook_blocking": None,
        "token_budget_continuation": None,
    }
    for name, retry in (
        ("collapse_drain", "collapse_drain_retry"),
        ("reactive_compact", "reactive_compact_retry"),
    ):
        log = tmp_path / f"{name}.jsonl"
        run_scenario(SCENARIOS / f"{name}.json", cwd=workspace, log=log)
        summaries = _summaries(log)
        assert summaries["next_turn"] is not None
        assert summaries[retry] is None


def _summaries(log: Path) -> dict[str, str | None]:
    """The pending tool summary the debugger shows after the first step of each
    Continue edge the log takes."""
    from fsm_agent.tape.stepper import Stepper

    stepper = Stepper(log)
    summaries: dict[str, str | None] = {}
    try:
        step = 1
        while (info := stepper.at(step)) is not None:
            if info.edge in CONTINUE_REASONS:
                summaries.setdefault(info.edge, info.state.pending_tool_use_summary)
            step += 1
    finally:
        stepper.close()
    return summaries
