"""The session log: written per record, read back, and refused clearly when broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.tape.log import VERSION, LogError, SessionLog
from tests.support.logs import reseal, write_log


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_run_writes_header_start_transitions_effects_result(scenario, tmp_path: Path) -> None:
    result = scenario("tool_round")
    records = lines(tmp_path / "tool_round.jsonl")
    header = records[0]
    assert header["format"] == "fsm-agent-session" and header["version"] == VERSION
    assert header["session_id"] == result.session_id
    assert header["config"]["cwd"].endswith("ws")
    assert records[1]["t"] == "start"
    kinds = {r["t"] for r in records[1:]}
    assert kinds == {"start", "transition", "effect", "result"}
    transitions = [r for r in records if r.get("t") == "transition"]
    assert [r["edge"] for r in transitions] == list(result.edges)
    assert [r["step"] for r in transitions] == list(range(1, len(transitions) + 1))
    assert records[-1] == {
        "t": "result",
        "reason": "completed",
        "turns": 3,
        "usage": records[-1]["usage"],
        "steps": len(transitions),
        "h": records[-1]["h"],
    }
    tools = [r for r in records if r.get("t") == "effect" and r["name"] == "tool"]
    assert [t["args"]["name"] for t in tools] == ["Write", "Read"]


def test_default_log_location_is_in_the_workspace(scenario, workspace: Path) -> None:
    result = scenario("unknown_tool", log=None)
    logs = list((workspace / ".fsm-agent" / "sessions").glob("*.jsonl"))
    assert [p.stem for p in logs] == [result.session_id]


def _recorded(scenario, tmp_path: Path) -> Path:
    scenario("tool_round")
    return tmp_path / "tool_round.jsonl"


def test_torn_last_line_is_tolerated(scenario, tmp_path: Path) -> None:
    path = _recorded(scenario, tmp_path)
    text = path.read_text()
    path.write_text(text[: len(text) - 20])
    log = SessionLog(path)
    records = list(log.records())
    assert log.torn
    assert len(records) == len(text.splitlines()) - 2


def test_corrupt_middle_line_names_the_line(scenario, tmp_path: Path) -> None:
    path = _recorded(scenario, tmp_path)
    rows = path.read_text().splitlines(keepends=True)
    rows[4] = "{not json\n"
    path.write_text("".join(rows))
    reseal(path)
    with pytest.raises(LogError, match=r":5: corrupt record"):
        list(SessionLog(path).records())


@pytest.mark.parametrize(
    ("first", "message"),
    [
        ("hello world\n", "not a session log"),
        ('{"format": "something-else"}\n', "not a session log"),
        ('{"format": "fsm-agent-session", "version": 99}\n', "unknown log format version 99"),
        ('{"format": "fsm-agent-session", "version": 5}\n', "reads versions 1, 2, 3, 4"),
    ],
)
def test_not_a_log(tmp_path: Path, first: str, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(first)
    with pytest.raises(LogError, match=message):
        SessionLog(path)


def test_a_first_line_that_is_not_utf_8_says_so(tmp_path: Path) -> None:
    """A gzipped log (or any binary file) is not text at all, which "not JSON" did not say."""
    import gzip

    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"format": "fsm-agent-session", "version": 2}\n'))
    with pytest.raises(LogError, match=r":1: not a session log \(the first line is not UTF-8"):
        SessionLog(path)
    text = tmp_path / "x.jsonl"
    text.write_text("hello world\n")
    with pytest.raises(LogError, match=r"\(the first line is not JSON\)"):
        SessionLog(text)


def test_offsets_index_every_record(scenario, tmp_path: Path) -> None:
    path = _recorded(scenario, tmp_path)
    log = SessionLog(path)
    offsets = log.offsets()
    assert len(offsets) == len(path.read_text().splitlines()) - 1
    assert log.read_at(offsets[-1])["t"] == "result"


def test_every_line_matches_the_documented_schema(scenario, tmp_path: Path) -> None:
    import jsonschema

    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    for name in ("tool_round", "model_fallback", "hook_stopped", "autocompact"):
        scenario(name)
        for record in lines(tmp_path / f"{name}.jsonl"):
            jsonschema.validate(record, schema)


def test_the_fields_a_record_must_have_are_the_schema_s() -> None:
    from fsm_agent.tape.log import REQUIRED
    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    required = {
        variant["properties"]["t"]["const"]: set(variant["required"]) - {"t"}
        for variant in schema["oneOf"]
        if "t" in variant.get("properties", {})
    }
    assert required == {kind: set(fields) for kind, fields in REQUIRED.items()}


def test_the_fields_a_header_must_have_and_their_types_are_the_schema_s() -> None:
    from fsm_agent.tape.log import HEADER_REQUIRED, HEADER_TYPES
    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    (header,) = [v for v in schema["oneOf"] if "t" not in v.get("properties", {})]
    assert set(header["required"]) == set(HEADER_REQUIRED)
    json_types = {"string": str, "object": dict, "array": list}
    typed = {k: json_types[p["type"]] for k, p in header["properties"].items() if "type" in p}
    assert typed == {key: kind for key, (kind, _) in HEADER_TYPES.items()}


def test_a_record_without_a_field_it_needs_names_the_line_and_the_field(
    scenario, tmp_path: Path
) -> None:
    path = _recorded(scenario, tmp_path)
    rows = lines(path)
    i = next(i for i, r in enumerate(rows) if r.get("t") == "transition")
    del rows[i]["edge"]
    write_log(path, rows)
    with pytest.raises(LogError, match=rf":{i + 1}: a transition record without 'edge'$"):
        list(SessionLog(path).records())


def test_the_record_field_types_checked_are_the_schema_s() -> None:
    from fsm_agent.tape.log import FIELD_TYPES
    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    json_types = {str: "string", int: "integer"}
    for variant in schema["oneOf"]:
        kind = variant.get("properties", {}).get("t", {}).get("const")
        if kind not in FIELD_TYPES:
            continue
        for key, (cls, _) in FIELD_TYPES[kind].items():
            prop = variant["properties"][key]
            strings = "enum" in prop and all(isinstance(v, str) for v in prop["enum"])
            assert prop.get("type", "string" if strings else None) == json_types[cls], (kind, key)
            assert key in variant["required"], (kind, key)


def test_hooks_permission_and_retry_records_match_the_schema_and_their_damage_does_not(
    workspace: Path, tmp_path: Path
) -> None:
    """The schema types what a replay reads from a hooks, ask_permission, discarded or
    model record and the header's cap: a log the engine wrote validates, and a value a
    replay refuses as damaged (exit 2) the schema refuses too."""
    import jsonschema

    from fsm_agent.app.session import run_scenario
    from fsm_agent.core.config import RunConfig
    from fsm_agent.live.scripted import Scenario
    from tests.conftest import ROOT
    from tests.support.logs import assert_damage_refused

    replacement = {"stdout": "X", "stderr": "", "interrupted": False, "isImage": False}
    calls = [
        {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": c}}
        for n, c in enumerate(["echo hi", "touch made"], 1)
    ]
    data = {
        "prompt": "go",
        "hooks": {
            "PostToolUse": [{"updated_outputs": [replacement]}],
            "PermissionRequest": [{"permission_decision": "deny", "interrupt": True}],
        },
        "turns": [{"content": calls}],
    }
    log = tmp_path / "run.jsonl"
    config = RunConfig(stop_hook_block_cap=3)
    run_scenario(Scenario.parse(data), cwd=workspace, log=log, config=config)
    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    rows = lines(log)
    for record in rows:
        jsonschema.validate(record, schema)
    retry = {
        "attempt": 1,
        "status": 400,
        "error": "overflow",
        "delay_s": 0.0,
        "event": "ModelRetry",
    }
    model = next(i for i, r in enumerate(rows) if r.get("name") == "model")
    rows[model]["result"]["events"].insert(0, retry)
    for record in rows:
        jsonschema.validate(record, schema)

    def at(name: str, args: str | None = None) -> int:
        return next(
            i
            for i, r in enumerate(rows)
            if r.get("name") == name and (args is None or r.get("args") == args)
        )

    damages = {
        "updated_outputs": (at("hooks", "PostToolUse"), ("result", "updated_outputs"), "oops"),
        "interrupt": (at("hooks", "PermissionRequest"), ("result", "interrupt"), "yes"),
        "cap": (0, ("config", "stop_hook_block_cap"), "3"),
        "retry": (model, ("result", "events", 0, "attempt"), "1"),
    }
    assert_damage_refused(rows, damages, schema, tmp_path)
