"""A version 4 log stores each large text once (issue 26): small, read back as written,
and a blob changed after it was written is named by its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm_agent.app.history import describe
from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core import jsontext
from fsm_agent.live.scripted import Scenario
from fsm_agent.tape.blobs import LONG, blob_id
from fsm_agent.tape.log import LogError, LogWriter, SessionLog
from fsm_agent.tape.stepper import LogIndex
from tests.support.logs import large_text, logged_writes, reseal

MB = 2**20


@pytest.fixture(scope="module")
def three_writes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    workspace = tmp_path_factory.mktemp("ws")
    contents = [large_text(MB, seed) for seed in range(3)]
    return logged_writes(workspace, tmp_path_factory.mktemp("log") / "w.jsonl", contents), contents


def test_each_large_text_is_one_blob_before_the_lines_that_use_it(
    three_writes: tuple[Path, list[str]],
) -> None:
    log, contents = three_writes
    rows = [jsontext.loads(line) for line in log.read_bytes().splitlines()]
    blobs = [(i, r) for i, r in enumerate(rows) if r.get("t") == "blob"]
    assert sorted(r["id"] for _, r in blobs) == sorted(blob_id(text) for text in contents)
    for i, blob in blobs:
        users = [
            j for j, r in enumerate(rows) if any(ref[0] == blob["id"] for ref in r.get("blobs", []))
        ]
        assert users and min(users) > i
    records = [r for _, r in SessionLog(log).records()]
    assert all(r["t"] != "blob" for r in records)
    tools = [r for r in records if r["t"] == "effect" and r["name"] == "tool"]
    assert [t["args"]["input"]["content"] for t in tools] == contents


def test_the_debugger_reads_a_record_with_its_texts(three_writes: tuple[Path, list[str]]) -> None:
    log, contents = three_writes
    index = LogIndex(SessionLog(log))
    assert index.damage is None
    shown = [
        e["args"]["input"]["content"]
        for step in range(1, index.steps + 1)
        for e in index.effects_of(step)
        if e["name"] == "permission"
    ]
    assert shown == contents


def _blob_line(log: Path) -> int:
    lines = log.read_bytes().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith(b'{"t":"blob"'))


def test_a_blob_changed_is_named_by_its_line(
    three_writes: tuple[Path, list[str]], tmp_path: Path
) -> None:
    log, _ = three_writes
    at = _blob_line(log)
    lines = log.read_bytes().splitlines(keepends=True)
    lines[at - 1] = lines[at - 1].replace(b'"text":"', b'"text":"x', 1)
    changed = tmp_path / "w.jsonl"
    changed.write_bytes(b"".join(lines))
    with pytest.raises(
        LogError, match=rf"w\.jsonl:{at}: changed after it was written \(its digest"
    ):
        replay(changed)
    with pytest.raises(LogError, match=rf"w\.jsonl:{at}: changed after it was written \(blob "):
        replay(reseal(changed))  # its digest made again: its id still names another text


def test_a_record_whose_blob_is_gone_is_named(
    three_writes: tuple[Path, list[str]], tmp_path: Path
) -> None:
    log, _ = three_writes
    at = _blob_line(log)
    lines = log.read_bytes().splitlines(keepends=True)
    changed = tmp_path / "w.jsonl"
    changed.write_bytes(b"".join(lines[: at - 1] + lines[at:]))
    with pytest.raises(LogError, match=rf'w\.jsonl:{at}: refers to blob "\w+", which no line'):
        replay(reseal(changed))


def test_a_blob_in_a_version_3_log_is_refused(
    three_writes: tuple[Path, list[str]], tmp_path: Path
) -> None:
    log, _ = three_writes
    lines = log.read_bytes().splitlines(keepends=True)
    changed = tmp_path / "w.jsonl"
    changed.write_bytes(b"".join([lines[0].replace(b'"version":4', b'"version":3'), *lines[1:]]))
    with pytest.raises(LogError, match=rf"w\.jsonl:{_blob_line(log)}: not a session record"):
        replay(reseal(changed))


def test_a_listing_shows_a_long_prompt(tmp_path: Path) -> None:
    prompt = large_text(5 * LONG, 7)
    scenario = Scenario.parse({"turns": [{"content": [{"type": "text", "text": "ok"}]}]})
    log = tmp_path / "p.jsonl"
    run_scenario(scenario, cwd=tmp_path, prompt=prompt, log=log)
    assert b'{"t":"blob"' in log.read_bytes().splitlines()[1]
    info = describe(log)
    assert info.status == "complete" and info.prompt == prompt


# Records a log holds, made at random: long texts (some used twice) anywhere in them, and
# a model stream whose deltas build, or do not build, the blocks it ends with.
_long = st.builds(
    lambda piece, n: piece * n, st.text(min_size=1, max_size=12), st.integers(90, 300)
)
_texts = st.one_of(st.text(max_size=40), _long)


@st.composite
def _stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"id": "m", "event": "MessageStart"}]
    for index in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "thinking", "input_json"]))
        if kind == "input_json":
            value = {"content": draw(_texts), "n": draw(st.integers())}
            form = draw(st.sampled_from(["json", "compact", "repr"]))
            text = json.dumps(value) if form == "json" else repr(value)
            if form == "compact":
                text = jsontext.dumps(value).decode()
            block: dict[str, Any] = {"type": "tool_use", "input": value}
        else:
            text = draw(_texts)
            said = draw(st.sampled_from([text, text + "?"]))
            block = {"type": kind, kind: said}
        cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        events.append({"index": index, "block": {}, "event": "BlockStart"})
        events += [
            {"index": index, "kind": kind, "delta": p, "event": "BlockDelta"} for p in pieces
        ]
        if draw(st.booleans()):
            events.append({"index": index, "block": block, "event": "BlockStop"})
    return events


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=_stream(), texts=st.lists(_texts, max_size=4), data=st.data())
def test_packed_records_read_back_as_they_werelogged_writes(
    tmp_path: Path, events: list[dict[str, Any]], texts: list[str], data: st.DataObject
) -> None:
    again = data.draw(st.sampled_from(texts)) if texts else "x"
    records: list[dict[str, Any]] = [
        {"t": "start",
         "messages": [{"role": "user", "content": [{"type": "text", "text": again}]}]},
        {"t": "effect", "step": 1, "name": "model", "request": "r", "args": {"last": again},
         "result": {"events": events, "error": None}},
        {"t": "effect", "step": 1, "name": "tool", "request": "t",
         "args": {"input": {"texts": texts, "again": again}}, "result": {"content": again}},
        {"t": "transition", "step": 1, "from": "a", "to": "b", "edge": "e", "turn": 1,
         "state": "0" * 16},
        {"t": "result", "reason": "completed", "turns": 1, "steps": 1},
    ]  # fmt: skip
    log = tmp_path / "r.jsonl"
    log.unlink(missing_ok=True)
    writer = LogWriter(log, {"session_id": "s", "fingerprint": "f", "config": {}})
    for record in records:
        writer.write(record)
    writer.close()
    read = SessionLog(log)
    assert [{k: v for k, v in r.items() if k != "h"} for _, r in read.records()] == records
    index = LogIndex(SessionLog(log))
    shown = [{k: v for k, v in r.items() if k != "h"} for r in index.effects_of(1)]
    assert index.damage is None and shown == records[1:3]
