"""Recorded logs damaged, cut short, or made stale by a code change: the ways tests
make a log the engine must refuse or stop on."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from attrs import evolve

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.core import jsontext
from fsm_agent.engine import actions
from fsm_agent.live.scripted import Scenario
from fsm_agent.tape.log import CHAINED, LogError, seal

Damage = tuple[int, tuple[str | int, ...], Any]
"""A record's index in the log, the keys down to a value in it, and the value put there."""


def assert_damage_refused(
    rows: list[dict[str, Any]], damages: dict[str, Damage], schema: Any, tmp_path: Path
) -> None:
    """Each damage, made alone to a copy of `rows`, fails the schema, and replay refuses
    the log it makes with the line it is on."""
    for what, (i, keys, value) in damages.items():
        damaged = json.loads(json.dumps(rows))
        target: Any = damaged[i]
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(damaged[i], schema)
        path = tmp_path / f"{what}.jsonl"
        write_log(path, damaged)
        with pytest.raises(LogError, match=rf"{what}.jsonl:{i + 1}: "):
            replay(path)


def reseal(path: Path) -> Path:
    """A log a test edited, its chain digests made again as someone who knows the format
    could: so the edit reaches the checks behind the chain. A line that is no JSON object
    (damaged on purpose) or a torn last line is left as it is; a log from before the chain
    is left unchained."""
    lines = path.read_bytes().splitlines(keepends=True)
    try:
        version = jsontext.loads(lines[0]).get("version") if lines else None
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return path
    if type(version) is not int or version < CHAINED:
        return path
    out, last = [], b""
    for raw in lines:
        try:
            record = jsontext.loads(raw) if raw.endswith(b"\n") else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            record = None
        if not isinstance(record, dict):
            out.append(raw)
            continue
        record.pop("h", None)
        try:
            line, last = seal(jsontext.line(record), last)
        except (TypeError, ValueError, RecursionError):  # too deep to write: as it is
            line = raw
        out.append(line)
    path.write_bytes(b"".join(out))
    return path


def write_log(path: Path, rows: list[dict[str, Any]]) -> Path:
    """`rows` (a log's records, edited) written as a log, its chain made again (`reseal`)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return reseal(path)


def cut(log: Path, keep: int, to: Path) -> Path:
    """The first `keep` lines of `log`, as a killed run would have left them."""
    to.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:keep]))
    return to


def transitions_in(path: Path) -> int:
    """How many transitions a log records: a torn last line is no record."""
    whole = path.read_bytes().split(b"\n")[:-1]
    return sum(b'"t":"transition"' in line for line in whole)


def change_next_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A code change the logs do not know: `next_turn` builds a different `LoopState`."""
    original = actions.CONTINUE["next_turn"]

    async def changed(run: Any, state: Any, it: Any, facts: Any) -> Any:
        return evolve(await original(run, state, it, facts), stop_hook_active=True)

    monkeypatch.setitem(actions.CONTINUE, "next_turn", changed)


def large_text(size: int, seed: int) -> str:
    """`size` characters of text no two runs share, in lines, as a file's content is."""
    raw = base64.b64encode(random.Random(seed).randbytes(size * 3 // 4 + 3)).decode()[:size]
    return "\n".join(raw[i : i + 100] for i in range(0, len(raw), 101))


def logged_writes(workspace: Path, log: Path, contents: list[str]) -> Path:
    """A scripted run that writes each of `contents` to a file with the Write tool."""
    turns: list[dict[str, Any]] = [
        {"content": [{"type": "tool_use", "id": f"toolu_{i:02d}", "name": "Write",
                      "input": {"file_path": str(workspace / f"f{i}.txt"), "content": text}}]}
        for i, text in enumerate(contents)
    ]  # fmt: skip
    turns.append({"content": [{"type": "text", "text": "done"}]})
    scenario = Scenario.parse({"turns": turns, "settings": {"permissions": {"allow": ["Write"]}}})
    result = run_scenario(scenario, cwd=workspace, prompt="write them", log=log)
    assert result.reason == "completed"
    return log
