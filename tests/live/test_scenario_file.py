"""Reading a scenario file: the shorthand it allows, and what a mistake in it reads as."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import run_scenario
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import TextBlock, ToolResultBlock, Usage
from fsm_agent.live.scripted import Scenario, ScenarioError
from tests.conftest import ROOT
from tests.support.cli import fsm


def test_a_string_content_is_one_text_block(workspace: Path) -> None:
    scenario = Scenario.parse({"turns": [{"content": "All done."}]})
    result = run_scenario(scenario, cwd=workspace, prompt="go", log=None)
    assert result.reason == "completed"
    assert result.messages[-1].text == "All done."


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as caught:
        Scenario.parse(data, "s.json")
    return str(caught.value)


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            {"content": [{"type": "txt", "text": "x"}]},
            "unknown type 'txt' for a content block (known: text, thinking, redacted_thinking, "
            "image, tool_use, tool_result) @ $.turns[0].content[0]",
        ),
        (
            {"content": [{"text": "x"}]},
            "a content block needs a 'type' (text, thinking, redacted_thinking, image, tool_use, "
            "tool_result) @ $.turns[0].content[0]",
        ),
        (
            {"content": ["x"]},
            "invalid value for type, expected a content block @ $.turns[0].content[0]",
        ),
        (
            {"content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "x"}]}]},
            "unknown type 'x' for a text or image block (known: text, image) "
            "@ $.turns[0].content[0].content[0]",
        ),
        (
            {"content": [{"type": "tool_use", "id": "t", "name": "Read", "input": 3}]},
            "invalid value for type, expected object @ $.turns[0].content[0].input",
        ),
        (
            {"stop_reason": "max_token"},
            "invalid value, expected one of 'end_turn', 'max_tokens', 'stop_sequence', "
            "'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded' or null "
            "@ $.turns[0].stop_reason",
        ),
        (
            {"error": {"kind": "overload", "message": "busy"}},
            "invalid value, expected one of 'prompt_too_long', 'media', 'overloaded', 'api', "
            "'rate_limit', 'connection', 'server', 'incomplete_stream', 'invalid_response' "
            "@ $.turns[0].error.kind",
        ),
        (
            {"interrupt": "later"},
            "invalid value, expected one of 'streaming', 'tools' or null @ $.turns[0].interrupt",
        ),
        ({"delay": -1}, "invalid value ('delay' must be >= 0: -1.0) @ $.turns[0]"),
        ({"event_delay": -0.5}, "invalid value ('event_delay' must be >= 0: -0.5) @ $.turns[0]"),
        ({"cut_after": -1}, "invalid value ('cut_after' must be >= 0: -1) @ $.turns[0]"),
        (
            {"usage": {"input_tokens": "many"}},
            "invalid value for type, expected int @ $.turns[0].usage.input_tokens",
        ),
        (
            {"cut_tool_input": "false"},
            "invalid value for type, expected bool @ $.turns[0].cut_tool_input",
        ),
        (
            {"usage": {"input_tokens": True}},
            "invalid value for type, expected int @ $.turns[0].usage.input_tokens",
        ),
        (
            {"usage": {"output_tokens": 1.5}},
            "invalid value for type, expected int @ $.turns[0].usage.output_tokens",
        ),
        ({"delay": "1"}, "invalid value for type, expected float @ $.turns[0].delay"),
        (
            {"expect_model": 4},
            "invalid value for type, expected str or null @ $.turns[0].expect_model",
        ),
        (
            {"content": {"type": "text", "text": "x"}},
            "invalid value for type, expected list @ $.turns[0].content",
        ),
        (
            {"content": [{"type": "text", "text": ["x"]}]},
            "invalid value for type, expected str @ $.turns[0].content[0].text",
        ),
        ("Done.", "invalid value for type, expected ScriptedTurn @ $.turns[0]"),
        (
            {"usage": {"input_tokens": -5}},
            "invalid value ('input_tokens' must be >= 0: -5) @ $.turns[0].usage",
        ),
        (
            {"usage": {"cache_read_input_tokens": -1}},
            "invalid value ('cache_read_input_tokens' must be >= 0: -1) @ $.turns[0].usage",
        ),
    ],
)
def test_a_mistake_in_a_turn_is_named_and_placed(turn: dict[str, Any], message: str) -> None:
    assert _error({"turns": [turn]}) == f"s.json: not a valid Scenario: {message}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"hooks": {"Stop": 3}}, "invalid value for type, expected list @ $.hooks['Stop']"),
        ({"hooks": {"Stop": "x"}}, "invalid value for type, expected list @ $.hooks['Stop']"),
        (
            {"hooks": {"Stop": [{"blocking_errors": "run tests"}]}},
            "invalid value for type, expected list @ $.hooks['Stop'][0].blocking_errors",
        ),
        (
            {"hooks": {"Stop": [{"prevent_continuation": 1}]}},
            "invalid value for type, expected bool @ $.hooks['Stop'][0].prevent_continuation",
        ),
        ({"hooks": []}, "invalid value for type, expected object @ $.hooks"),
        ({"prompt": ["a"]}, "invalid value for type, expected str or null @ $.prompt"),
        ({"description": 3}, "invalid value for type, expected str @ $.description"),
        ({"config": "x"}, "invalid value for type, expected ScenarioConfig @ $.config"),
        ({"config": []}, "invalid value for type, expected ScenarioConfig @ $.config"),
        (
            {"config": {"autocompact": "false"}},
            "invalid value for type, expected bool or null @ $.config.autocompact",
        ),
        (
            {"config": {"max_turns": "5"}},
            "invalid value for type, expected int or null @ $.config.max_turns",
        ),
        (
            {"config": {"max_turns": True}},
            "invalid value for type, expected int or null @ $.config.max_turns",
        ),
        ({"settings": [1]}, "invalid value for type, expected object or null @ $.settings"),
        ({"config": {"max_turns": 0}}, "invalid value ('max_turns' must be >= 1: 0) @ $.config"),
        ({"config": {"max_turns": -1}}, "invalid value ('max_turns' must be >= 1: -1) @ $.config"),
        (
            {"config": {"context_window": 5}},
            "invalid value ('context_window' must be >= 40000: 5) @ $.config",
        ),
        (
            {"config": {"token_budget": 0}},
            "invalid value ('token_budget' must be >= 1: 0) @ $.config",
        ),
        (
            {"config": {"snip_threshold": -1}},
            "invalid value ('snip_threshold' must be >= 0: -1) @ $.config",
        ),
        (
            {"config": {"permission_mode": "yolo"}},
            "invalid value ('permission_mode': unknown permission mode 'yolo'; choose one of "
            "default, acceptEdits, plan, dontAsk, bypassPermissions) @ $.config",
        ),
        (
            {"settings": {"permissions": {"allow": 3}}},
            "invalid value (settings: permissions.allow must be a list of rule strings) @ $",
        ),
        (
            {"settings": {"permissions": {"deny": ["Bash("]}}},
            "invalid value (settings: permissions.deny: ",
        ),
        ({"settings": {"hooks": {"Stop": 3}}}, "invalid value (settings: hooks.Stop must be"),
    ],
)
def test_a_mistake_outside_the_turns_is_named_and_placed(
    data: dict[str, Any], message: str
) -> None:
    assert _error({"turns": [], **data}).startswith(f"s.json: not a valid Scenario: {message}")


TURN_KEYS = (
    "content, stop_reason, usage, error, delay, event_delay, cut_after, cut_tool_input, "
    "interrupt, expect_model"
)
OUTCOME_KEYS = (
    "blocking_errors, prevent_continuation, stop_reason, additional_context, "
    "permission_decision, permission_reason, updated_input, updated_outputs, messages, "
    "interrupted, interrupt, updated_permissions, files_changed"
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"turns": [], "hook": {}},
            "unknown key 'hook' (known: turns, description, prompt, config, hooks, settings) @ $",
        ),
        (
            {"turns": [], "config": {"max_turn": 2, "permision_mode": "acceptEdits"}},
            "unknown keys 'max_turn', 'permision_mode' (known: model, fallback_model, max_turns, "
            "token_budget, context_window, permission_mode, autocompact, snip_threshold, "
            "capped_output) @ $.config",
        ),
        (
            {"turns": [{"stopreason": "max_tokens"}]},
            f"unknown key 'stopreason' (known: {TURN_KEYS}) @ $.turns[0]",
        ),
        (
            {"turns": [{"content": "x"}, {"interupt": "tools"}]},
            f"unknown key 'interupt' (known: {TURN_KEYS}) @ $.turns[1]",
        ),
        (
            {"turns": [{"error": {"kind": "server", "message": "m", "code": 500}}]},
            "unknown key 'code' (known: kind, message, status) @ $.turns[0].error",
        ),
        (
            {"turns": [{"usage": {"input_token": 50000}}]},
            "unknown key 'input_token' (known: input_tokens, output_tokens, "
            "cache_creation_input_tokens, cache_read_input_tokens) @ $.turns[0].usage",
        ),
        (
            {"turns": [], "hooks": {"Stop": [{"blocking_error": ["Run the tests first."]}]}},
            f"unknown key 'blocking_error' (known: {OUTCOME_KEYS}) @ $.hooks['Stop'][0]",
        ),
        (
            {"turns": [], "hooks": {"Stpo": [{"blocking_errors": ["Run the tests first."]}]}},
            "invalid value, expected one of 'SessionStart', 'UserPromptSubmit', 'PreToolUse', "
            "'PostToolUse', 'PostToolUseFailure', 'PermissionRequest', 'PostToolBatch', 'Stop', "
            "'PreCompact', 'PostCompact' "
            "@ $.hooks['Stpo']",
        ),
    ],
)
def test_a_misspelt_key_is_refused_with_the_keys_there_are(
    data: dict[str, Any], message: str
) -> None:
    assert _error(data) == f"s.json: not a valid Scenario: {message}"


def test_content_blocks_keep_the_messages_apis_extra_fields() -> None:
    """A block copied from an API answer may carry fields the loop does not use."""
    text = {"type": "text", "text": "x", "citations": None}
    scenario = Scenario.parse({"turns": [{"content": [text]}]})
    assert scenario.turns[0].content == (TextBlock("x"),)


def test_a_logs_hook_outcome_still_ignores_fields_it_does_not_know() -> None:
    """Session logs ignore unknown fields (docs/log-format.md); only a scenario is strict."""
    from fsm_agent.hooks.outcomes import HookOutcome
    from fsm_agent.tape.effects import read_result

    outcome = read_result("hooks", {"blocking_errors": ["x"], "from_a_later_version": 1})
    assert outcome == HookOutcome(blocking_errors=("x",))


def test_the_config_takes_what_the_command_line_takes() -> None:
    """The floors are `--max-turns`' and `--context-window`'s (models.MIN_CONTEXT_WINDOW)."""
    config = {"max_turns": 1, "context_window": 40_000, "token_budget": 1, "snip_threshold": 0}
    scenario = Scenario.parse({"turns": [], "config": config})
    assert scenario.config.context_window == 40_000
    assert scenario.config.max_turns == 1


@pytest.mark.parametrize(
    ("cls", "good"), [(dict[str, int], {}), (tuple[str, ...], []), (list[str], []), (Usage, {})]
)
def test_a_value_stays_checked_after_cattrs_forgets_its_hooks(cls: Any, good: Any) -> None:
    """cattrs clears its hook cache when it registers a hook it made for a new type (as a
    replay does); a hook it had registered for this type must not then stand in for the
    codec's checked one."""
    from attrs import frozen

    from fsm_agent.core.codec import CodecError, converter, structure

    @frozen
    class Fresh:
        n: int

    structure(good, cls)
    converter.gen_structure_mapping(dict[str, Fresh])
    with pytest.raises(CodecError):
        structure("ab", cls)


def test_a_value_is_taken_as_written_not_coerced() -> None:
    """An integer is a number of seconds too; a string is never a list of its characters."""
    scenario = Scenario.parse(
        {
            "turns": [{"delay": 1, "cut_tool_input": False}],
            "hooks": {"Stop": [{"blocking_errors": ["Run the tests first."]}]},
        }
    )
    assert scenario.turns[0].delay == 1.0
    assert isinstance(scenario.turns[0].delay, float)
    assert scenario.turns[0].cut_tool_input is False
    assert scenario.hooks["Stop"][0].blocking_errors == ("Run the tests first.",)


def _glob_turns(n: int) -> list[dict[str, Any]]:
    """`n` turns that each call Glob (a read-only tool: it runs in any mode), then an answer."""
    call = {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}}
    return [{"content": [{**call, "id": f"t{i}"}]} for i in range(n)] + [{"content": "Done."}]


def test_a_python_callers_config_wins_over_the_scenarios(workspace: Path) -> None:
    """As command-line options do: docs/testing.md's `config=RunConfig(max_turns=2)`."""
    scenario = Scenario.parse({"config": {"max_turns": 5}, "turns": _glob_turns(4)})
    config = RunConfig(max_turns=2, model="claude-sonnet-4-5")
    result = run_scenario(scenario, cwd=workspace, prompt="go", log=None, config=config)
    assert result.reason == "max_turns"
    assert result.turns == 2
    assert {m.model for m in result.messages if m.role == "assistant"} == {"claude-sonnet-4-5"}


def test_the_scenarios_config_holds_where_the_caller_left_the_default(workspace: Path) -> None:
    """A caller's `RunConfig` with the default mode keeps the scenario's acceptEdits, and the
    scenario's settings add their rules to the caller's."""
    write = {"type": "tool_use", "id": "w", "name": "Write"}
    scenario = Scenario.parse(
        {
            "config": {"permission_mode": "acceptEdits", "max_turns": 5},
            "settings": {"permissions": {"deny": ["Bash"]}},
            "turns": [
                {"content": [{**write, "input": {"file_path": "a.txt", "content": "x"}}]},
                {
                    "content": [
                        {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "ls"}}
                    ]
                },
                {"content": "Done."},
            ],
        }
    )
    config = RunConfig(max_turns=3)
    result = run_scenario(scenario, cwd=workspace, prompt="go", log=None, config=config)
    assert result.reason == "completed"
    assert (workspace / "a.txt").read_text() == "x"
    bash_result = result.messages[-2].content[0]
    assert isinstance(bash_result, ToolResultBlock) and bash_result.is_error


def test_the_docs_first_example_runs_as_written(tmp_path: Path, workspace: Path) -> None:
    """docs/scenarios.md's first JSON block, saved and run with the command it gives."""
    doc = (ROOT / "docs" / "scenarios.md").read_text()
    block = re.search(r"```json\n(.*?)```", doc, re.S)
    assert block is not None
    assert 'fsm-agent run --scripted ex.json --cwd "$(mktemp -d)"' in doc
    example = tmp_path / "ex.json"
    example.write_text(block.group(1))
    log = tmp_path / "ex.jsonl"
    proc = fsm("run", "--scripted", str(example), "--cwd", str(workspace), "--log", str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (workspace / "notes.txt").read_text() == "hello\n"
    assert "● Read(notes.txt)" in proc.stdout
    assert "Run the tests first." in proc.stdout
    assert proc.stdout.index("Run the tests first.") < proc.stdout.index("There are no tests")
    edges = [json.loads(line).get("edge") for line in log.read_text().splitlines()]
    assert "stop_hook_blocking" in edges and edges.count("next_turn") == 2


def test_a_file_nested_too_deeply_for_json_is_one_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"turns": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ScenarioError, match=r"deep\.json: not valid JSON: nested too deeply"):
        Scenario.load(deep)


@pytest.mark.parametrize("where", ["updated_outputs", "input"])
def test_a_value_nested_too_deeply_for_the_log_is_one_error(
    tmp_path: Path, workspace: Path, where: str
) -> None:
    """JSON that parses but that the log cannot hold (a hook's `updated_outputs`, a
    tool's input, 400 levels deep) once died with a RecursionError mid-run, the log
    cut short; it is refused as the scenario loads."""
    junk: list[Any] = []
    for _ in range(400):
        junk = [junk]
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo hi"}}
    data: dict[str, Any] = {"prompt": "go", "turns": [{"content": [call]}, {"content": "ok"}]}
    if where == "input":
        call["input"]["j"] = junk
    else:
        out = {"stdout": "X", "stderr": "", "interrupted": False, "j": junk}
        data["hooks"] = {"PostToolUse": [{"updated_outputs": [out]}]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(data))
    done = fsm("run", "--scripted", str(path), "--cwd", str(workspace))
    assert done.returncode == 2
    assert done.stderr == (
        f"fsm-agent: error: {path}: not a valid Scenario: nested more than 100 levels deep\n"
    )


def test_a_scenarios_manual_mode_runs_and_is_reported_as_default(
    tmp_path: Path, workspace: Path
) -> None:
    """`manual` is Claude Code's newer name for `default`: stream-json's init line and
    the log header say the mode the run uses, as they do for the command line's."""
    data = json.loads((ROOT / "replays" / "scenarios" / "tool_round.json").read_text())
    data["config"] = {**data.get("config", {}), "permission_mode": "manual"}
    scenario = tmp_path / "manual.json"
    scenario.write_text(json.dumps(data))
    log = tmp_path / "m.jsonl"
    proc = fsm(
        "run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log),
        "--output-format", "stream-json",
    )  # fmt: skip
    init = json.loads(proc.stdout.splitlines()[0])
    assert init["permissionMode"] == "default"
    header = json.loads(log.read_text().splitlines()[0])
    assert header["config"].get("permission_mode", "default") == "default"
    assert not (workspace / "notes.txt").exists()


def _read(name: str, path: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": name, "name": "Read", "input": {"file_path": path}}


def test_a_tool_use_id_used_twice_in_a_turn_is_refused(tmp_path: Path, workspace: Path) -> None:
    """Two calls of one turn sharing an id ran as one (the second got the first's result,
    and the log did not replay): the file is refused. A later turn may use an id again
    (tests/context/test_context.py: a server may)."""
    both = {"turns": [{"content": [_read("t1", "a.txt"), _read("t1", "b.txt")]}, {"content": "ok"}]}
    assert _error(both) == (
        "s.json: not a valid Scenario: tool_use id 't1' is used again in the turn (first "
        "@ $.turns[0].content[0]; its calls are told apart by id) @ $.turns[0].content[1]"
    )
    later = {"turns": [{"content": [_read("t1", "a.txt")]}, {"content": [_read("t1", "b.txt")]}]}
    assert len(Scenario.parse(later).turns) == 2
    bad = tmp_path / "dup.json"
    bad.write_text(json.dumps(both))
    proc = fsm("run", "--scripted", str(bad), "--cwd", str(workspace), "go")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"fsm-agent: error: {bad}: not a valid Scenario: tool_use id")
    assert "Traceback" not in proc.stderr and not (workspace / ".fsm-agent").exists()


@pytest.mark.parametrize(
    "block",
    [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
    ],
)
def test_a_block_a_model_never_answers_with_is_refused(block: dict[str, Any]) -> None:
    assert _error({"turns": [{"content": [{"type": "text", "text": "x"}, block]}]}) == (
        f"s.json: not a valid Scenario: a model's answer has no '{block['type']}' block "
        "(its blocks: text, thinking, redacted_thinking, tool_use) @ $.turns[0].content[1]"
    )


def test_a_hooks_permission_decision_is_one_claude_code_knows() -> None:
    """A misspelt decision was taken as no decision: the call ran as if no hook spoke."""
    hooks = {"PreToolUse": [{}, {"permission_decision": "Deny"}]}
    assert _error({"turns": [], "hooks": hooks}) == (
        "s.json: not a valid Scenario: invalid value, expected one of 'deny', 'defer', 'ask', "
        "'allow' or null @ $.hooks['PreToolUse'][1].permission_decision"
    )


@pytest.mark.parametrize("key", ["delay", "event_delay"])
def test_an_endless_delay_is_refused(tmp_path: Path, key: str) -> None:
    """`1e999` reads as infinity (and Python's JSON takes `Infinity`): the run waited forever."""
    assert _error({"turns": [{key: float("inf")}]}) == (
        f"s.json: not a valid Scenario: invalid value ('{key}' must be < inf: inf) @ $.turns[0]"
    )
    endless = tmp_path / "endless.json"
    endless.write_text(json.dumps({"turns": [{"content": "x", key: float("inf")}]}))
    with pytest.raises(ScenarioError, match=r"endless\.json: not valid JSON: Infinity is not a"):
        Scenario.load(endless)


def test_a_number_past_a_double_in_a_scenario_is_not_valid_json(tmp_path: Path) -> None:
    """Python's reader takes `1e400` as infinity; a tool input holding it ran, and the
    log, which writes it as null, then diverged on replay."""
    path = tmp_path / "s.json"
    path.write_text(
        '{"turns": [{"content": [{"type": "tool_use", "id": "t", "name": "Bash", '
        '"input": {"command": "echo hi", "timeout": 1e400}}]}]}'
    )
    with pytest.raises(ScenarioError, match=r"not valid JSON: 1e400 is beyond a double's range"):
        Scenario.load(path)


def test_a_json_error_names_its_line_and_column_and_reads_whole(tmp_path: Path) -> None:
    """The decoder's message stops at "at" where it goes on with the position: the error
    line said `broken.json:23: not valid JSON: Invalid control character at`."""
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "prompt": "hel\tlo",\n  "turns": []\n}\n')
    with pytest.raises(ScenarioError) as caught:
        Scenario.load(broken)
    assert str(caught.value) == f"{broken}:2:17: not valid JSON: Invalid control character"
    unterminated = tmp_path / "cut.json"
    unterminated.write_text('{"prompt": "go')
    with pytest.raises(ScenarioError) as caught:
        Scenario.load(unterminated)
    assert str(caught.value) == f"{unterminated}:1:12: not valid JSON: Unterminated string"


def test_one_mistake_made_in_several_places_is_said_once(tmp_path: Path) -> None:
    """A typo repeated over a file (`tool_usee` in two turns) said the whole sentence once
    per place; now once, naming every place."""
    typo = {"type": "tool_usee", "id": "t", "name": "Read", "input": {}}
    path = tmp_path / "typo.json"
    path.write_text(json.dumps({"turns": [{"content": [typo]}, {"content": [typo]}]}))
    with pytest.raises(ScenarioError) as caught:
        Scenario.load(path)
    message = str(caught.value)
    assert message.count("unknown type 'tool_usee'") == 1
    assert message.endswith("@ $.turns[0].content[0], $.turns[1].content[0]")
