"""What a replay reports when the code and the log part: the first difference, as a
`Divergence` (or `LogEnded`, when the log stops before the run did), and the report
`replay --check`, a fork and the debugger print of it."""

from __future__ import annotations

import json
from typing import Any

from attrs import frozen

from fsm_agent.core.codec import dumps


@frozen
class Divergence(Exception):
    """Replay asked for something the log does not have at this step.

    `expected` is what the log recorded, `got` what the code asked for; `diff`
    is a few lines saying where the two differ, for the `--check` report.
    """

    step: int
    what: str
    expected: Any
    got: Any
    changes: tuple[Any, ...] = ()
    """For differing states, each `state_diff.Change`: the field, message, block and text."""

    def __str__(self) -> str:
        return f"step {self.step}: {self.what}: expected {self.expected!r}, got {self.got!r}"

    @property
    def diff(self) -> list[str]:
        return short_diff(self.expected, self.got)


@frozen
class LogEnded(Divergence):
    """The log stops before the run did: it has no `result` record (the recorded
    run was killed, or is still running). Every step it holds was matched; the
    replay cannot go past its end, so it stops at `step`, the first one missing.
    (A call started while the model streamed may find its effect missing
    before the steps recorded after it are replayed; they are matched before
    its failure surfaces, at `tool_execution`.)
    """

    WHY = "the recorded run was killed, or is still running"

    @property
    def matched(self) -> int:
        """The steps the log holds, every one replayed."""
        return self.step - 1

    def __str__(self) -> str:
        return f"the log ends after step {self.matched} without a result: {self.WHY}"


def short(value: Any, limit: int = 60) -> str:
    plain = isinstance(value, str) and value.isprintable()
    text = value if plain else dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_diff(a: str, b: str, around: int = 16, limit: int = 48) -> str:
    """Where two texts part, as `at char N: "…a's part…" → "…b's part…"`: from a little
    before the first character that differs to just past the last, each side cut short.
    A long tool result edited in one number shows that number, not its first 60 chars."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    tail = 0
    while tail < min(len(a), len(b)) - n and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    begin = max(0, n - around)

    def part(text: str) -> str:
        end = min(len(text), len(text) - tail + around)
        piece = text[begin:end]
        if len(piece) > limit:
            piece = piece[: limit - 1] + "…"
        elif end < len(text):
            piece += "…"
        return json.dumps(("…" if begin else "") + piece, ensure_ascii=False)

    return f"at char {n}: {part(a)} → {part(b)}"


def short_diff(expected: Any, got: Any, prefix: str = "", limit: int = 12) -> list[str]:
    """`key: expected → got` for each differing leaf, dicts walked by key."""
    lines: list[str] = []
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in [*expected, *(k for k in got if k not in expected)]:
            a, b = expected.get(key, "<absent>"), got.get(key, "<absent>")
            if a != b:
                lines.extend(short_diff(a, b, f"{prefix}{key}.", limit))
    elif isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (a, b) in enumerate(zip(expected, got, strict=True)):
            if a != b:
                lines.extend(short_diff(a, b, f"{prefix}{i}.", limit))
    elif isinstance(expected, str) and isinstance(got, str) and max(len(expected), len(got)) > 60:
        lines.append(f"{prefix.rstrip('.') or 'value'}: {text_diff(expected, got)}")
    elif expected != got:
        lines.append(f"{prefix.rstrip('.') or 'value'}: {short(expected)} → {short(got)}")
    return lines[:limit]


def divergence_data(exc: Divergence) -> dict[str, Any]:
    """The report as data, for `replay --check --json`."""
    data: dict[str, Any] = {
        "step": exc.step, "what": exc.what, "log": exc.expected, "code": exc.got,
    }  # fmt: skip
    if exc.changes:
        data["changes"] = [change.as_data() for change in exc.changes]
    else:
        data["diff"] = exc.diff
    return data


def divergence_report(exc: Divergence, name: str = "") -> str:
    """The step, what the log recorded, what the code asked for, and where they differ;
    `name` (the log's, when several are checked) goes before it. One report for
    `replay --check`, a fork and the debugger (docs/replay.md#divergence-reports)."""

    def show(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    lines = [
        f"✗ {name}diverged at step {exc.step}: {exc.what}",
        f"  log:  {show(exc.expected)}",
        f"  code: {show(exc.got)}",
    ]
    diff = exc.diff
    if exc.changes:
        lines.append("  what differs (log → code):")
        lines.extend(f"    {change.line()}" for change in exc.changes)
    elif diff and not isinstance(exc.expected, str) and not isinstance(exc.got, str):
        lines.append("  diff (log → code):")
        lines.extend(f"    {line}" for line in diff)
    return "\n".join(lines)
