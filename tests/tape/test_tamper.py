"""A log changed after it was written is named by its line: the red-team set.

`mutations` makes the kinds of change a session log met (issue 26): the final
answer with its deltas, a stream's deltas alone, a tool's input, a permission's
reason, the header's tool descriptions, the model summary, a tool result, and a
generic edit of every scalar of every record. Each made naively (the chain left
as it was) must fail with the line it is on; made by someone who writes the
chain again (`reseal`), the checks behind the chain (deltas against their
block, `args` against the call, the states) must still catch those that change
what a replay shows. A property test flips any one byte of a shipped log.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm_agent.app.session import replay
from fsm_agent.core import jsontext
from fsm_agent.tape.divergence import Divergence, LogEnded
from fsm_agent.tape.log import CHAINED, LogError
from tests.conftest import ROOT
from tests.support.cli import fsm
from tests.support.logs import reseal

REPLAYS = ROOT / "replays"
FIX_BUG = REPLAYS / "fix_bug.jsonl"
Rows = list[dict[str, Any]]
Mutation = tuple[str, int, Callable[[Rows], None]]
"""A name, the index of the row it changes, and the change."""


def rows_of(path: Path) -> Rows:
    return [jsontext.loads(line) for line in path.read_bytes().splitlines()]


def written_as_is(path: Path, rows: Rows) -> None:
    """Rows written back compactly with the digests they had: an edit by hand."""
    path.write_bytes(b"".join(jsontext.line(r) for r in rows))


def _effects(rows: Rows, name: str) -> list[int]:
    return [i for i, r in enumerate(rows) if r.get("t") == "effect" and r["name"] == name]


def _events(row: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = row["result"]["events"]
    return events


def _edit_answer(i: int) -> Callable[[Rows], None]:
    """The model's text (its `BlockStop` and its deltas) changed together."""

    def change(rows: Rows) -> None:
        for event in _events(rows[i]):
            if event.get("event") == "BlockDelta" and event["kind"] == "text":
                event["delta"] = event["delta"].replace("a", "4")
            if event.get("event") == "BlockStop" and event["block"].get("type") == "text":
                event["block"]["text"] = event["block"]["text"].replace("a", "4")

    return change


def _edit_delta(i: int, kind: str) -> Callable[[Rows], None]:
    def change(rows: Rows) -> None:
        delta = next(
            e for e in _events(rows[i]) if e.get("event") == "BlockDelta" and e["kind"] == kind
        )
        delta["delta"] = delta["delta"] + "x" if kind == "text" else delta["delta"] + " "

    return change


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "h":
                yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _leaves(item, (*path, n))
    else:
        yield path, value


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Any], None]:
    def change(row: Any) -> None:
        for key in path[:-1]:
            row = row[key]
        row[path[-1]] = value

    return change


def _other(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "!"
    return "x"


def mutations(rows: Rows) -> Iterator[Mutation]:
    """The red-team set for a log: named changes first, then one per scalar of each
    record (its first few, so a long log stays quick)."""
    models, tools = _effects(rows, "model"), _effects(rows, "tool")
    yield "the final answer and its deltas", models[-1], _edit_answer(models[-1])
    yield "an earlier answer and its deltas", models[0], _edit_answer(models[0])
    for i in models:
        kinds = {e["kind"] for e in _events(rows[i]) if e.get("event") == "BlockDelta"}
        for kind in sorted(kinds):
            yield f"a {kind} delta of line {i + 1}", i, _edit_delta(i, kind)
        yield f"the model summary of line {i + 1}", i, _row(i, ("args", "last"), "user: hi")
    bash = next(i for i in tools if rows[i]["args"]["name"] == "Bash")
    yield "a tool's input", bash, _row(bash, ("args", "input", "command"), "rm -rf /")
    for i in _effects(rows, "permission"):
        yield f"the permission reason of line {i + 1}", i, _row(i, ("result", "reason"), "ok")
    for n, _tool in enumerate(rows[0]["tools"]):
        yield f"the description of tool {n}", 0, _row(0, ("tools", n, "description"), "Do it.")
    yield "the header's config", 0, _row(0, ("config", "model"), "other")
    yield "a tool result", bash, _tool_result(bash, "3.75", "9.99")
    for i, row in enumerate(rows):
        for path, value in list(_leaves(row))[:6]:
            yield f"line {i + 1}'s {'.'.join(map(str, path))}", i, _row(i, path, _other(value))


def _row(i: int, path: tuple[Any, ...], value: Any) -> Callable[[Rows], None]:
    setter = _set(path, value)

    def change(rows: Rows) -> None:
        setter(rows[i])

    return change


def _tool_result(i: int, old: str, new: str) -> Callable[[Rows], None]:
    def change(rows: Rows) -> None:
        result = rows[i]["result"]
        assert old in result["content"], result["content"]
        result["content"] = result["content"].replace(old, new)

    return change


MUTATIONS = list(mutations(rows_of(FIX_BUG)))


def test_the_red_team_set_is_large_and_takes_every_kind() -> None:
    names = [name for name, _, _ in MUTATIONS]
    assert len(names) > 61 and len(set(names)) == len(names)
    for kind in ("final answer", "text delta", "input_json delta", "tool's input",
                 "permission reason", "description of tool", "model summary"):  # fmt: skip
        assert any(kind in name for name in names), kind


@pytest.mark.parametrize("name,index,change", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_change_by_hand_is_named_by_its_line(
    tmp_path: Path, name: str, index: int, change: Callable[[Rows], None]
) -> None:
    rows = rows_of(FIX_BUG)
    before = copy.deepcopy(rows)
    change(rows)
    assert rows != before, f"{name} changed nothing"
    log = tmp_path / "fix_bug.jsonl"
    written_as_is(log, rows)
    why = "" if name.startswith("line ") else "changed after it was written"  # or its shape
    with pytest.raises(LogError, match=rf"fix_bug\.jsonl:{index + 1}: {why}"):
        replay(log)


RESEALED = {
    "a text delta of line": "deltas build",
    "a input_json delta of line": "deltas build",
    "the model summary of line": "args are not the call's",
    "a tool's input": "args are not the call's",
    "a tool result": "diverged",
}
"""Changes that the chain made again does not hide, and what then catches them. The
others (the final answer with its deltas, a tool's description, a permission's reason)
nothing else in the log repeats: the chain is what guards them."""


@pytest.mark.parametrize("name,index,change", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_change_with_its_chain_made_again_is_still_caught(
    tmp_path: Path, name: str, index: int, change: Callable[[Rows], None]
) -> None:
    caught = next((why for kind, why in RESEALED.items() if name.startswith(kind)), None)
    if caught is None:
        pytest.skip("the chain is what catches it")
    rows = rows_of(FIX_BUG)
    change(rows)
    log = tmp_path / "fix_bug.jsonl"
    written_as_is(log, rows)
    reseal(log)
    if caught == "diverged":
        with pytest.raises(Divergence) as exc:
            replay(log)
        assert not isinstance(exc.value, LogEnded)
    else:
        with pytest.raises(LogError, match=rf"fix_bug\.jsonl:{index + 1}: .*{caught}"):
            replay(log)


def test_check_names_the_line_a_hand_edit_changed(tmp_path: Path) -> None:
    rows = rows_of(FIX_BUG)
    bash = next(i for i in _effects(rows, "tool") if rows[i]["args"]["name"] == "Bash")
    rows[bash]["args"]["input"]["command"] = "rm -rf /"
    log = tmp_path / "fix_bug.jsonl"
    written_as_is(log, rows)
    proc = fsm("replay", str(log), "--check")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"fsm-agent: error: {log}:{bash + 1}: changed after it was written "
        f"(its digest {rows[bash]['h']} is not "
        + re.search(r"is not ([0-9a-f]{16})", proc.stderr).group(1)  # type: ignore[union-attr]
        + ", that of its text and the line before)"
    ]


def test_an_old_log_is_noted_once_as_unchained() -> None:
    old = ROOT / "tests" / "fixtures" / "logs_0_1_0" / "fix_bug.jsonl"
    proc = fsm("replay", str(old), "--check")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "unchained" in line]
    assert len(notes) == 1 and "version 2" in notes[0]
    shipped = fsm("replay", str(FIX_BUG), "--check")
    assert shipped.returncode == 0 and "unchained" not in shipped.stderr


def test_an_old_log_given_a_digest_is_refused(tmp_path: Path) -> None:
    """A chained log whose version was set back: its digests say it was chained."""
    lines = FIX_BUG.read_bytes().splitlines(keepends=True)
    log = tmp_path / "fix_bug.jsonl"
    log.write_bytes(re.sub(rb'"version":\d', b'"version":2', lines[0]) + b"".join(lines[1:]))
    with pytest.raises(LogError, match=r"fix_bug\.jsonl:1: changed after it was written"):
        replay(log)


SHIPPED = sorted(REPLAYS.glob("*.jsonl"))


@pytest.mark.parametrize(
    "shipped", [FIX_BUG, REPLAYS / "tool_round.jsonl"], ids=["fix_bug", "tool_round"]
)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_single_byte_changed_is_named_by_its_line_or_is_the_torn_end(
    tmp_path: Path, shipped: Path, data: st.DataObject
) -> None:
    raw = shipped.read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1), label="at")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != raw[at]), label="byte")
    changed = raw[:at] + bytes([byte]) + raw[at + 1 :]
    log = tmp_path / shipped.name
    log.write_bytes(changed)
    line = raw[:at].count(b"\n") + 1
    try:
        replay(log)
    except LogError as exc:
        assert str(exc).startswith(f"{log}:{line}: "), (at, byte, str(exc))
        return
    except LogEnded:
        pass
    assert at == len(raw) - 1, (at, byte, "passed")  # the last newline: a torn last line


def test_a_torn_last_line_is_still_read_up_to(tmp_path: Path) -> None:
    raw = FIX_BUG.read_bytes()
    log = tmp_path / "fix_bug.jsonl"
    log.write_bytes(raw[: raw.rstrip(b"\n").rfind(b"\n") + 30])
    with pytest.raises(LogEnded):
        replay(log)


def test_a_whole_last_line_with_bytes_after_it_is_not_torn(tmp_path: Path) -> None:
    raw = FIX_BUG.read_bytes()
    log = tmp_path / "fix_bug.jsonl"
    log.write_bytes(raw[:-1] + b"x")
    lines = raw.count(b"\n")
    with pytest.raises(LogError, match=rf":{lines}: changed after it was written \(bytes after"):
        replay(log)


def test_crlf_line_ends_are_a_change(tmp_path: Path) -> None:
    log = tmp_path / "fix_bug.jsonl"
    log.write_bytes(FIX_BUG.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(LogError, match=r"fix_bug\.jsonl:1: "):
        replay(log)


def test_every_shipped_log_is_chained() -> None:
    for log in SHIPPED:
        header = json.loads(log.read_bytes().split(b"\n", 1)[0])
        assert header["version"] >= CHAINED and len(header["h"]) == 16, log.name
