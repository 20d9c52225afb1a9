"""Checking that damage to a recorded log is refused, by its schema and by replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fsm_agent.app.session import replay
from fsm_agent.replay.log import LogError

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
        path.write_text("".join(json.dumps(r) + "\n" for r in damaged))
        with pytest.raises(LogError, match=rf"{what}.jsonl:{i + 1}: "):
            replay(path)
