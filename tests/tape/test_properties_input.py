"""Property tests of what a user hands fsm-agent: session logs (replayed, checked,
debugged, resumed, listed, forked with an edited result), scenarios, settings files,
permission rules, memory files, command-line options and environment variables.

The promise for each (docs/cli.md): the input is accepted and behaves, or it is
refused with the documented error (`LogError`, `ScenarioError`, `SettingsError`,
`PermissionError_`; on the command line one line `fsm-agent: error: …`, exit 2),
never another exception, never a traceback. The inputs start from real ones (a log a
scripted run wrote, the shipped scenarios, settings in Claude Code's format) and are
damaged the ways files get damaged: cut anywhere, lines lost, repeated, moved or
edited, values of another type, keys dropped, junk, huge numbers, deep nesting, bytes
that are not UTF-8.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fsm_agent.app.history import ResumeError, aresume
from fsm_agent.app.session import replay, run_scenario
from fsm_agent.cli import main as cli
from fsm_agent.cli.debugger import Debugger
from fsm_agent.core.config import RunConfig
from fsm_agent.core.jsontext import finite_float, no_constant
from fsm_agent.live.scripted import Scenario, ScenarioError
from fsm_agent.live.settings import Settings, SettingsError, load_settings, parse_settings
from fsm_agent.policy.permissions import PermissionError_, Rule
from fsm_agent.tape.divergence import Divergence, LogEnded, divergence_report
from fsm_agent.tape.log import LogError, SessionLog
from fsm_agent.tape.stepper import Stepper
from tests.conftest import ROOT, SCENARIOS, examples
from tests.support.logs import reseal

# --- JSON values and how they are written ------------------------------------------

RAW = "\x00raw:"
"""A string starting so stands for a JSON token Python's encoder will not write as
given (a number of thousands of digits, `NaN`, a deep nest): `dump` puts it in raw."""


def raw(token: str) -> str:
    return f"{RAW}{token}"


def dump(value: Any) -> bytes:
    """`value` as JSON text, each `raw` placeholder replaced by its token."""
    tokens: list[str] = []

    def swap(item: Any) -> Any:
        if isinstance(item, str) and item.startswith(RAW):
            tokens.append(item[len(RAW) :])
            return f"\x00tok{len(tokens) - 1}\x00"
        if isinstance(item, dict):
            return {k: swap(v) for k, v in item.items()}
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    text = json.dumps(swap(value), ensure_ascii=False)
    for n, token in enumerate(tokens):
        text = text.replace(json.dumps(f"\x00tok{n}\x00"), token)
    return text.encode("utf-8", "surrogatepass")


ODD = {
    "NaN": raw("NaN"),
    "Infinity": raw("Infinity"),
    "-Infinity": raw("-Infinity"),
    "5000 digits": raw("1" * 5000),
    "25 digits": raw("-" + "9" * 25),
    "1e400": raw("1e400"),
    "3000 lists deep": raw("[" * 3000 + "]" * 3000),
    "200 objects deep": raw('{"a":' * 200 + "1" + "}" * 200),
    "2**64": raw("18446744073709551616"),
    "lone surrogate": "\ud800",
    "NUL": "\x00",
}
ODD_TOKENS = st.sampled_from(sorted(ODD)).map(ODD.__getitem__)
"""Values a JSON file can hold that few readers expect."""
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | ODD_TOKENS
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def paths_in(value: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value, the value itself first."""
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_in(item, (*here, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths_in(item, (*here, i))


def set_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    *head, last = path
    parent = value
    for key in head:
        parent = parent[key]
    parent[last] = new
    return value


def drop_at(value: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return value
    *head, last = path
    parent = value
    for key in head:
        parent = parent[key]
    del parent[last]
    return value


def mutate_json(data: st.DataObject, value: Any) -> Any:
    """A near-valid variant of `value`: one place given another value, dropped, or its
    number or string changed."""
    value = copy.deepcopy(value)
    path = data.draw(st.sampled_from(list(paths_in(value))), label="path")
    here: Any = value
    for key in path:
        here = here[key]
    how = data.draw(st.sampled_from(["set", "drop", "tweak", "tweak"]), label="how")
    if how == "drop" and path:
        return drop_at(value, path)
    if how == "tweak" and isinstance(here, bool | int | float) and not isinstance(here, bool):
        new: Any = data.draw(
            st.sampled_from([0, -1, -here, here + 1, here * 10**30, float(here) + 0.5, str(here)])
            | ODD_TOKENS
        )
        return set_at(value, path, new)
    if how == "tweak" and isinstance(here, str):
        new = data.draw(
            st.sampled_from(["", here + "x", here[:-1], here.upper(), " " + here, [here], 1])
            | st.text(max_size=12)
        )
        return set_at(value, path, new)
    return set_at(value, path, data.draw(JSON, label="new value"))


def lines_mutated(data: st.DataObject, lines: list[bytes]) -> bytes:
    """A log's lines (each ending in a newline) damaged one way."""
    lines = list(lines)
    how = data.draw(
        st.sampled_from(
            ["truncate", "delete", "duplicate", "swap", "junk", "edit", "edit", "bytes", "nest"]
        ),
        label="damage",
    )
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    if how == "truncate":
        whole = b"".join(lines)
        return whole[: data.draw(st.integers(0, len(whole)), label="cut at")]
    if how == "delete":
        del lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    elif how == "swap":
        j = data.draw(st.integers(0, len(lines) - 1), label="with")
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "junk":
        junk = data.draw(
            st.binary(max_size=30) | st.text(max_size=30).map(str.encode) | JSON.map(dump)
        )
        lines.insert(i, junk.replace(b"\n", b" ") + b"\n")
    elif how == "edit":
        record = json.loads(lines[i])
        lines[i] = dump(mutate_json(data, record)) + b"\n"
    elif how == "bytes":
        at = data.draw(st.integers(0, len(lines[i]) - 1), label="at")
        bad = data.draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\x80\x80", b"\x00"]))
        lines[i] = lines[i][:at] + bad + lines[i][at:]
    else:
        depth = data.draw(st.integers(50, 5000), label="depth")
        record = json.loads(lines[i])
        path = data.draw(st.sampled_from(list(paths_in(record))[1:] or [()]), label="path")
        lines[i] = dump(set_at(record, path, raw("[" * depth + "]" * depth))) + b"\n"
    return b"".join(lines)


# --- the logs damaged ----------------------------------------------------------------

SOURCE_SCENARIO = {
    "prompt": "Create notes.txt saying hello, then check it.",
    "config": {"max_turns": 5, "permission_mode": "acceptEdits"},
    "hooks": {"Stop": [{"blocking_errors": ["Run the tests first."]}]},
    "turns": [
        {
            "content": [
                {"type": "text", "text": "I'll créate the file."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Write",
                    "input": {"file_path": "notes.txt", "content": "hello ✓\n"},
                },
            ]
        },
        {
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "Read",
                    "input": {"file_path": "notes.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_03",
                    "name": "Glob",
                    "input": {"pattern": "*.txt"},
                },
            ]
        },
        {"content": "notes.txt says hello."},
        {
            "content": "No tests to run; notes.txt says hello.",
            "usage": {"input_tokens": 1200, "output_tokens": 40},
        },
    ],
}


@cache
def source_logs() -> dict[str, list[bytes]]:
    """A log a scripted run writes here (Write, Read and Glob, a Stop hook, non-ASCII
    text), and a few shipped ones (an error path, a cut tool input, a compaction)."""
    home = Path(tempfile.mkdtemp(prefix="props-input-"))
    (home / "ws").mkdir()
    (home / "s.json").write_text(json.dumps(SOURCE_SCENARIO))
    run_scenario(home / "s.json", cwd=home / "ws", log=home / "s.jsonl")
    logs = {"written": (home / "s.jsonl").read_bytes()}
    for name in ("model_fallback", "truncated_tool_input", "reactive_compact", "aborted_tools"):
        logs[name] = (ROOT / "replays" / f"{name}.jsonl").read_bytes()
    return {name: text.splitlines(keepends=True) for name, text in logs.items()}


def damaged_log(data: st.DataObject, where: Path) -> Path:
    name = data.draw(st.sampled_from(sorted(source_logs())), label="log")
    path = where / "damaged.jsonl"
    path.write_bytes(lines_mutated(data, source_logs()[name]))
    return path


def replayed(path: Path) -> str:
    """How a replay of `path` ends: `result`, `cut short`, `diverged` or `damaged`. Any
    other exception fails the test."""
    try:
        replay(path)
    except LogError as exc:
        assert str(exc).startswith(f"{path}"), exc
        return "damaged"
    except LogEnded:
        return "cut short"
    except Divergence as exc:
        report = divergence_report(exc)
        assert report.startswith(f"✗ diverged at step {exc.step}: "), report
        assert "\n  log:  " in report and "\n  code: " in report, report
        return "diverged"
    return "result"


@contextlib.contextmanager
def _workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="props-input-") as name:
        yield Path(name)


def fsm_agent(*args: str) -> tuple[int, str, str]:
    """`fsm-agent ARGS` in this process: the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["fsm-agent", *args]
    code: Any = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main()
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = argv
    return (0 if code is None else int(code)), out.getvalue(), err.getvalue()


def fsm_agent_process(*args: str, env: dict[str, str] | None = None) -> Any:
    """`fsm-agent ARGS` in a process of its own, standard input empty: for `run`, which
    reads a piped standard input."""
    import os
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip


def assert_one_error_line(code: int, err: str) -> None:
    assert "Traceback" not in err, err
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("fsm-agent: error: "), err


@examples(200)
@given(st.data())
def test_a_damaged_log_replays_or_is_refused(data: st.DataObject) -> None:
    """A damaged log is read and replayed to a result, to its end (cut short), to a
    divergence (a report with step, log and code), or refused as damaged (a `LogError`
    naming the file): never another exception. `--resume` goes on from it or refuses it
    (`ResumeError` naming the file); the stepper the debugger uses ends the same ways."""
    with _workdir() as where:
        path = damaged_log(data, where)
        try:
            list(SessionLog(path).records())
        except LogError as exc:
            assert str(exc).startswith(f"{path}"), exc
        outcome = replayed(path)
        try:
            resumed = asyncio.run(aresume(path))
        except ResumeError as exc:
            assert str(exc).startswith(f"{path}"), exc
        else:
            assert outcome in ("result", "cut short")
            assert resumed.messages
        try:
            stepper = Stepper(path)
        except LogError:
            return
        try:
            stepper.run_until(0, lambda info: False)
            assert stepper.stopped_by is None or isinstance(
                stepper.stopped_by, LogError | Divergence
            ), repr(stepper.stopped_by)
        finally:
            stepper.close()


@examples(100)
@given(st.data())
def test_a_log_cut_anywhere_reads_to_its_last_whole_record(data: st.DataObject) -> None:
    """A log cut anywhere after its header (a killed run; a cut mid-line or mid-UTF-8
    character is a torn last line) is read up to its last whole record, torn or not as
    the cut fell, and replays to its result or to its end: never refused as damaged,
    never a divergence; `--check` passes, saying the last line is torn."""
    name = data.draw(st.sampled_from(sorted(source_logs())), label="log")
    lines = source_logs()[name]
    whole = b"".join(lines)
    start = len(lines[0]) + len(lines[1])
    cut = data.draw(st.integers(start, len(whole)), label="cut at")
    with _workdir() as where:
        path = where / "cut.jsonl"
        path.write_bytes(whole[:cut])
        log = SessionLog(path)
        records = list(log.records())
        partial = whole[:cut].rsplit(b"\n", 1)[-1]
        torn = bool(partial) and whole[cut : cut + 1] != b"\n"  # cut just before it: whole
        assert log.torn == torn
        whole_lines = whole[:cut].count(b"\n") + (bool(partial) and not torn)
        assert len(records) == whole_lines - 1
        assert replayed(path) in ("result", "cut short")
        code, out, err = fsm_agent("replay", str(path), "--check")
        assert code == 0, (out, err)
        assert ("torn" in err) == log.torn, err


@examples(60)
@given(st.data())
def test_the_command_line_on_a_damaged_log(data: st.DataObject) -> None:
    """`replay --check` and `replay --path` on a damaged log: exit 0, 1 (a divergence,
    with its report) or 2 with one `fsm-agent: error:` line; `coverage` and `graph
    --highlight` take it or say why it is unreadable; `sessions` lists it; never a
    traceback."""
    with _workdir() as where:
        path = damaged_log(data, where)
        outcome = replayed(path)
        code, _, err = fsm_agent("replay", str(path), "--check")
        assert_one_error_line(code, err)
        assert code == {"result": 0, "cut short": 0, "diverged": 1, "damaged": 2}[outcome], err
        if code == 1:
            assert "✗ diverged at step " in err, err
        code, _, err = fsm_agent("replay", str(path), "--path")
        assert_one_error_line(code, err)
        assert code in (0, 2), err
        for args in (["coverage", str(path)], ["graph", "--highlight", str(path)]):
            code, _, err = fsm_agent(*args)
            assert_one_error_line(code, err) if code == 2 else None
            assert code in (0, 2) and "Traceback" not in err, err
        sessions = where / "ws" / ".fsm-agent" / "sessions"
        sessions.mkdir(parents=True)
        path.rename(sessions / "damaged.jsonl")
        code, out, err = fsm_agent("sessions", "--cwd", str(where / "ws"))
        assert (code, err) == (0, ""), err
        code, out, err = fsm_agent("sessions", "--cwd", str(where / "ws"), "--json")
        assert (code, err) == (0, ""), err
        assert [info["path"] for info in json.loads(out)] == [str(sessions / "damaged.jsonl")]


DEBUGGER_COMMANDS = [
    "n",
    "s",
    "c",
    "back",
    "g 3",
    "where",
    "list",
    "effects",
    "msgs",
    "diff",
    "p turn_count",
    "p messages",
    "return",
]


@examples(80)
@given(st.data())
def test_the_debugger_on_a_damaged_log(data: st.DataObject) -> None:
    """The debugger opens a damaged log (or refuses it with a `LogError`, which the
    command line prints as one line) and every command answers, a damaged line or a
    divergence shown where the replay stops: never another exception."""
    with _workdir() as where:
        path = damaged_log(data, where)
        try:
            debugger = Debugger(path)
        except LogError:
            return
        try:
            for command in data.draw(st.lists(st.sampled_from(DEBUGGER_COMMANDS), max_size=6)):
                debugger.text(command)
            debugger.text("c")
        finally:
            debugger.stepper.close()


def _with_line(tmp_path: Path, n: int, line: bytes) -> Path:
    """The written log with its line `n` (0: the header) replaced."""
    lines = source_logs()["written"][:]
    lines[n] = line
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines))
    reseal(path)
    return path


@pytest.mark.parametrize(
    ("n", "token", "where"),
    [
        (0, "1" * 5000, "1: not a session log (the first line is not JSON)"),
        (1, "1" * 5000, "2: corrupt record"),
        (1, "[" * 100_000 + "1" * 25 + "]" * 100_000, "2: corrupt record"),
    ],
    ids=["header", "record", "deep and long"],
)
def test_a_number_python_will_not_read_is_a_damaged_line(
    tmp_path: Path, n: int, token: str, where: str
) -> None:
    """A number of thousands of digits (Python converts at most 4300), or one deep in a
    nest (a number past 64 bits goes to the standard library, which recurses), is a
    line that cannot be read, named: not a ValueError or RecursionError traceback."""
    line = json.loads(source_logs()["written"][n])
    line["x"] = raw(token)
    path = _with_line(tmp_path, n, dump(line) + b"\n")
    with pytest.raises(LogError, match="^" + re.escape(f"{path}:{where}")):
        list(SessionLog(path).records())
    code, _, err = fsm_agent("replay", str(path), "--check")
    assert code == 2 and err.startswith(f"fsm-agent: error: {path}:{where}"), err
    assert_one_error_line(code, err)


@pytest.mark.parametrize("command", ["--check", "--path"])
def test_a_last_record_without_its_newline_is_read_not_called_torn(
    tmp_path: Path, command: str
) -> None:
    """A log whose last record lacks only its newline: the reader reads that record
    (it is whole), so no warning says the line is torn and was left out."""
    path = tmp_path / "no-newline.jsonl"
    path.write_bytes(b"".join(source_logs()["written"])[:-1])
    reseal(path)
    assert list(SessionLog(path).records())[-1][1]["t"] == "result"
    code, out, err = fsm_agent("replay", str(path), command)
    assert (code, err) == (0, "")
    assert ("completed" in out) if command == "--path" else out.startswith("✓")


# --- scenarios -------------------------------------------------------------------------

SHIPPED_SCENARIOS = sorted(p.stem for p in SCENARIOS.glob("*.json") if p.stem != "fix_bug")
"""The shipped scenarios, but the one whose settings hold command hooks: a mutation of
those would run whatever text it made in a shell."""


@cache
def shipped_scenario(name: str) -> Any:
    return json.loads((SCENARIOS / f"{name}.json").read_text())


def parsed_scenario(data: Any) -> Scenario | None:
    """The scenario `data` holds, or None when it is refused with a `ScenarioError`
    naming the file; any other exception fails the test."""
    try:
        return Scenario.parse(data, "s.json")
    except ScenarioError as exc:
        assert str(exc).startswith("s.json: "), exc
        return None


def _slow(scenario: Scenario) -> bool:
    return any(t.delay > 0.05 or t.event_delay > 0.01 for t in scenario.turns)


@examples(150)
@given(JSON)
def test_any_json_is_a_scenario_or_a_scenario_error(data: Any) -> None:
    """Any JSON value given as a scenario file is one, or a `ScenarioError` naming the
    file: never another exception."""
    with _workdir() as where:
        path = where / "s.json"
        path.write_bytes(dump(data))
        try:
            Scenario.load(path)
        except ScenarioError as exc:
            assert str(exc).startswith(f"{path}"), exc


@examples(150)
@given(st.data())
def test_a_near_valid_scenario_runs_or_is_refused(data: st.DataObject) -> None:
    """A shipped scenario changed in one to three places is refused with a
    `ScenarioError`, or it runs to one of the machine's final states (in plan mode, in
    a fresh workspace) and its log replays: never another exception."""
    value = shipped_scenario(data.draw(st.sampled_from(SHIPPED_SCENARIOS), label="scenario"))
    for _ in range(data.draw(st.integers(1, 2), label="changes")):
        value = mutate_json(data, value)
    with _workdir() as where:
        (where / "ws").mkdir()
        (where / "s.json").write_bytes(dump(value))
        try:
            scenario = Scenario.load(where / "s.json")
        except ScenarioError as exc:
            assert str(exc).startswith(f"{where / 's.json'}"), exc
            event("refused")
            return
        event("accepted")
        if _slow(scenario):
            return
        try:
            result = run_scenario(
                scenario,
                cwd=where / "ws",
                prompt="go",
                log=where / "s.jsonl",
                config=RunConfig(permission_mode="plan"),
            )
        except ScenarioError:
            return
        event(f"ran: {result.reason}")
        assert replayed(where / "s.jsonl") == "result"


@examples(60)
@given(st.data())
def test_a_damaged_scenario_file_is_read_or_refused(data: st.DataObject) -> None:
    """A scenario file cut anywhere, holding bytes that are not UTF-8, a huge number,
    `NaN` or a deep nest: read, or refused by `Scenario.load` with a `ScenarioError`
    naming the file; never another exception."""
    text = json.dumps(
        shipped_scenario(data.draw(st.sampled_from(SHIPPED_SCENARIOS))), indent=1
    ).encode()
    lines = text.splitlines(keepends=True)
    value = json.loads(text)
    damaged = data.draw(
        st.sampled_from(["lines", "json"]),
        label="how",
    )
    if damaged == "lines":
        raw_bytes = lines_mutated_raw(data, lines)
    else:
        raw_bytes = dump(mutate_json(data, value))
    with _workdir() as where:
        path = where / "s.json"
        path.write_bytes(raw_bytes)
        try:
            Scenario.load(path)
        except ScenarioError as exc:
            assert str(exc).startswith(f"{path}"), exc


def lines_mutated_raw(data: st.DataObject, lines: list[bytes]) -> bytes:
    """Text lines damaged without reading them as JSON: cut, lost, repeated, swapped,
    junk or bytes that are not UTF-8."""
    lines = list(lines)
    how = data.draw(st.sampled_from(["truncate", "delete", "duplicate", "swap", "junk", "bytes"]))
    i = data.draw(st.integers(0, len(lines) - 1))
    if how == "truncate":
        whole = b"".join(lines)
        return whole[: data.draw(st.integers(0, len(whole)))]
    if how == "delete":
        del lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    elif how == "swap":
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "junk":
        lines.insert(i, data.draw(st.binary(max_size=30) | JSON.map(dump)) + b"\n")
    else:
        at = data.draw(st.integers(0, len(lines[i])))
        bad = data.draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\x80\x80", b"\x00"]))
        lines[i] = lines[i][:at] + bad + lines[i][at:]
    return b"".join(lines)


# --- settings files ----------------------------------------------------------------------

TOOLS = st.sampled_from(
    ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "WebFetch", "mcp__x__y", "*"]
)
SPECIFIERS = st.sampled_from(
    [
        "npm test *",
        "git * main",
        "* --version",
        "src/**",
        "/abs/**",
        "//tmp/x",
        "~/notes",
        "./a.txt",
        "*",
        "",
        "a(b)",
        "domain:example.com",
    ]
) | st.text(max_size=12)
RULE_TEXT = st.one_of(
    TOOLS,
    st.builds(lambda t, s: f"{t}({s})", TOOLS, SPECIFIERS),
    st.text(max_size=20),
)
HOOK_EVENTS = st.sampled_from(
    [
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "UserPromptSubmit",
        "SessionStart",
        "Notification",
        "PreCompact",
    ]
)
HARMLESS = ("true", "cat >/dev/null")
HOOK = st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.sampled_from(HARMLESS)},
    optional={
        "timeout": st.integers(1, 60) | st.floats(0.1, 60),
        "if": RULE_TEXT,
    },
)
MATCHER_ENTRY = st.fixed_dictionaries(
    {"hooks": st.lists(HOOK, max_size=2)},
    optional={
        "matcher": st.sampled_from(["", "*", "Bash", "Edit|Write", "Edit.*", "(", "mcp__.*"])
    },
)
SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "permissions": st.fixed_dictionaries(
            {},
            optional={
                "allow": st.lists(RULE_TEXT, max_size=3),
                "ask": st.lists(RULE_TEXT, max_size=3),
                "deny": st.lists(RULE_TEXT, max_size=3),
                "additionalDirectories": st.lists(
                    st.sampled_from(["../other", "/tmp", "~/x", "sub"]), max_size=2
                ),
                "defaultMode": st.sampled_from(
                    [
                        "default",
                        "acceptEdits",
                        "plan",
                        "dontAsk",
                        "bypassPermissions",
                        "manual",
                        "auto",
                        "yolo",
                    ]
                ),
            },
        ),
        "hooks": st.dictionaries(HOOK_EVENTS, st.lists(MATCHER_ENTRY, max_size=2), max_size=2),
        "env": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
        "model": st.text(max_size=10),
    },
)


def parsed_settings(data: Any) -> Settings | None:
    """The settings `data` holds, or None when refused with a `SettingsError` naming
    the file; any other exception fails the test."""
    try:
        return parse_settings(data, "/p/.claude/settings.json", "/p", "/p")
    except SettingsError as exc:
        assert str(exc).startswith("/p/.claude/settings.json"), exc
        return None


@examples(150)
@given(JSON)
def test_any_json_is_settings_or_a_settings_error(data: Any) -> None:
    """Any JSON value as a settings file: settings, or a `SettingsError` naming the
    file; never another exception."""
    with _workdir() as where:
        path = where / "ws" / ".claude" / "settings.json"
        path.parent.mkdir(parents=True)
        path.write_bytes(dump(data))
        try:
            load_settings(str(where / "ws"), str(where / "home"))
        except SettingsError as exc:
            assert str(exc).startswith(str(path)), exc


@examples(150)
@given(st.data())
def test_near_valid_settings_are_read_or_refused(data: st.DataObject) -> None:
    """Settings in Claude Code's format, changed in up to two places: read (a mode
    fsm-agent lacks with a warning naming the file), or a `SettingsError` naming it;
    never another exception. What is read is a mode fsm-agent has, and rules that
    parse."""
    value = data.draw(SETTINGS, label="settings")
    for _ in range(data.draw(st.integers(0, 2), label="changes")):
        value = mutate_json(data, value)
    try:
        value = json.loads(dump(value))
    except (ValueError, RecursionError):
        return
    read = parsed_settings(value)
    if read is None:
        return
    mode = read.permissions.default_mode
    assert mode is None or mode in (
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
    )
    for warning in read.warnings:
        assert "/p/.claude/settings.json" in warning
    for source in (*read.permissions.allow, *read.permissions.ask, *read.permissions.deny):
        Rule.parse(source.rule)


@examples(80)
@given(st.data())
def test_a_settings_file_as_found_on_disk(data: st.DataObject) -> None:
    """A settings file's bytes as they may be found (cut, not UTF-8, junk, a huge
    number, a deep nest), in the workspace or the home directory: `load_settings`
    reads it or raises a `SettingsError` naming the file; never another exception."""
    text = json.dumps(data.draw(SETTINGS, label="settings"), indent=1).encode()
    raw_bytes = lines_mutated_raw(data, text.splitlines(keepends=True))
    with _workdir() as where:
        (where / "ws" / ".claude").mkdir(parents=True)
        (where / "home" / ".claude").mkdir(parents=True)
        place = data.draw(st.sampled_from(["ws", "home"]), label="where")
        name = data.draw(st.sampled_from(["settings.json", "settings.local.json"]))
        path = where / place / ".claude" / (name if place == "ws" else "settings.json")
        path.write_bytes(raw_bytes)
        try:
            load_settings(str(where / "ws"), str(where / "home"))
        except SettingsError as exc:
            assert str(exc).startswith(str(path)), exc


def _settings_error(where: Path, text: bytes) -> str:
    """The `SettingsError` a workspace's settings file holding `text` gives."""
    path = where / "ws" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(text)
    with pytest.raises(SettingsError) as info:
        load_settings(str(where / "ws"), str(where / "home"))
    return str(info.value).replace(str(path), "SETTINGS")


def test_a_settings_file_with_a_number_python_will_not_read(tmp_path: Path) -> None:
    """A number of thousands of digits is no JSON the reader takes: the file is named,
    not a ValueError traceback."""
    text = b'{"permissions": {"allow": ["Read"]}, "n": ' + b"1" * 5000 + b"}"
    assert _settings_error(tmp_path, text).startswith("SETTINGS: not valid JSON: ")


@pytest.mark.parametrize("mode", [[], {}, ["plan"], 5, True])
def test_a_default_mode_that_is_not_a_string(tmp_path: Path, mode: Any) -> None:
    """`defaultMode` of another JSON type (a list, an object: unhashable, which a
    lookup in the table of modes raised a TypeError on) names the file and the key."""
    text = json.dumps({"permissions": {"defaultMode": mode}}).encode()
    assert _settings_error(tmp_path, text) == (
        "SETTINGS: permissions.defaultMode must be a string, one of default, acceptEdits, "
        f"plan, dontAsk, bypassPermissions (not {json.dumps(mode)})"
    )


def test_a_hook_timeout_too_large_for_a_float(tmp_path: Path) -> None:
    """A hook's `timeout` of 400 digits is a number no float holds (an OverflowError
    traceback): refused as any timeout that is not a usable number of seconds is."""
    hook = {"type": "command", "command": "true", "timeout": raw("9" * 400)}
    text = dump({"hooks": {"Stop": [{"hooks": [hook]}]}})
    assert _settings_error(tmp_path, text) == (
        "SETTINGS: hooks.Stop[0]: 'timeout' must be a positive number of seconds"
    )


def _nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    "schema",
    [
        _nested_schema(60),  # fastjsonschema writes code Python refuses: IndentationError
        _nested_schema(150),  # SyntaxError: too many nested parentheses
        {"type": "object", "properties": {"a": {"type": raw("[" * 656 + "]" * 656)}}},  # recursion
    ],
    ids=["60 levels", "150 levels", "656 lists"],
)
def test_a_header_tool_schema_nested_too_deeply(tmp_path: Path, schema: Any) -> None:
    """A tool's input_schema in a damaged header, nested deeper than fastjsonschema
    compiles (its generated code too deep for Python, or its own recursion): the
    debugger (`replay LOG` in a terminal) refuses the log naming line 1, as for any
    schema that does not compile, rather than a SyntaxError or RecursionError."""
    header = json.loads(source_logs()["written"][0])
    header["tools"][0]["input_schema"] = schema
    path = _with_line(tmp_path, 0, dump(header) + b"\n")
    with pytest.raises(LogError, match=re.escape(f"{path}:1: the header's tools: tool ")):
        Debugger(path)


@pytest.mark.parametrize(
    ("token", "last", "says"),
    [
        ("1" * 5000, False, "corrupt record"),
        ("9" * 25, False, "record of step 9999999999999999999999999 where step "),
        ("1" * 5000, True, None),
        ("[" * 100_000 + "1" * 25 + "]" * 100_000, True, None),
    ],
    ids=["5000 digits", "25 digits", "5000 digits, last line", "deep, last line"],
)
def test_the_debugger_on_a_step_number_python_will_not_read(
    tmp_path: Path, token: str, last: bool, says: str | None
) -> None:
    """The debugger's index reads a record's step by a quick match: a step of thousands
    of digits (Python converts at most 4300) raised a ValueError, as did such a number in
    a last line without its newline (the torn-line test). The debugger opens the log and
    names the line where the replay stops, as `--check` does; a last line that is no
    JSON is torn, as the reader has it."""
    lines = source_logs()["written"][:]
    n = len(lines) - 1 if last else 10
    record = json.loads(lines[n])
    lines[n] = dump({"t": record.pop("t"), **record, "step": raw(token)})
    lines[n] += b"" if last else b"\n"
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines))
    reseal(path)
    # Wide enough that the message after the path is one line however long tmp_path is.
    debugger = Debugger(path, width=len(str(path)) + 200)
    try:
        shown = debugger.text("c")
    finally:
        debugger.stepper.close()
    if says is None:
        assert "the log ends after step 26 without a result" in shown, shown
    else:
        assert f"{path}:11: " in shown and says in shown, shown


# --- permission rules and the command line's rule options -------------------------------

CALLS = [
    ("Bash", {"command": "git log --oneline | head -3"}),
    ("Bash", {"command": "cd sub && rm -rf build; echo $HOME > out.txt"}),
    ("Bash", {"command": "npm test -- --watch"}),
    ("Read", {"file_path": "notes.txt"}),
    ("Read", {"file_path": "/etc/hostname"}),
    ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
    ("Edit", {"file_path": "src/a.py", "old_string": "a", "new_string": "b"}),
    ("Glob", {"pattern": "**/*.py", "path": "src"}),
    ("Grep", {"pattern": "x", "path": "."}),
    ("WebFetch", {"url": "https://example.com/x"}),
]
MODES_ALL = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]


@examples(200)
@given(RULE_TEXT, st.sampled_from(["allow", "ask", "deny"]), st.sampled_from(MODES_ALL))
def test_a_rule_parses_and_judges_every_call_or_is_refused(text: str, kind: str, mode: str) -> None:
    """A permission rule string is a `Rule` or a `PermissionError_` naming it; one that
    parses, as an allow, ask or deny rule in any mode, decides every kind of call
    (allow, ask or deny), covers it or not as a hook's `if`, and filters Glob and Grep
    as a Read deny rule: never an exception."""
    from fsm_agent.core.permission_types import PermissionSettings, RuleSource
    from fsm_agent.live.paths import default_resolve, read_denied
    from fsm_agent.policy.permissions import (
        Place,
        Workspace,
        call_facts,
        evaluate,
        removed_tools,
        rule_covers_call,
    )

    try:
        rule = Rule.parse(text)
    except PermissionError_ as exc:
        assert "not a permission rule" in str(exc), exc
        return
    with _workdir() as where:
        ws = Workspace(str(where), str(where / "home"))
        source = (RuleSource(text.strip(), str(where), "settings.json"),)
        permissions = PermissionSettings(**{kind: source})
        for tool, tool_input in CALLS:
            facts = call_facts(tool, tool_input, ws, default_resolve(ws.cwd))
            decision = evaluate(facts, permissions, mode, ws)
            assert decision.behavior in ("allow", "ask", "deny")
            place = Place(ws.cwd, ws.home)
            rule_covers_call(rule, tool, tool_input, place, default_resolve(ws.cwd))
        removed_tools(permissions)
        denied = read_denied(permissions, ws)
        if denied is not None:
            denied(str(where / "notes.txt"))


@examples(150)
@given(st.lists(RULE_TEXT | st.text(max_size=30), max_size=3), st.lists(RULE_TEXT, max_size=2))
def test_rule_options_are_read_or_refused(allowed: list[str], disallowed: list[str]) -> None:
    """`--allowed-tools` / `--disallowed-tools` values (commas and spaces outside
    parentheses separate rules): read into rules that parse, or a `SettingsError`
    naming the option; never another exception."""
    with _workdir() as where:
        try:
            read = load_settings(
                str(where), str(where), allowed_tools=allowed, disallowed_tools=disallowed
            )
        except SettingsError as exc:
            assert str(exc).startswith(("--allowed-tools: rule", "--disallowed-tools: rule")), exc
            return
    for source in (*read.permissions.allow, *read.permissions.deny):
        Rule.parse(source.rule)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_a_settings_file_holding_nan_is_not_valid_json(tmp_path: Path, token: str) -> None:
    """`NaN` and `Infinity` are no JSON (Claude Code's JSON.parse refuses the file), though
    Python's reader takes them: the docs' promise for a file that is not valid JSON
    holds for them too, as it does for a scenario."""
    text = b'{"permissions": {"allow": ["Read"]}, "cleanupPeriodDays": ' + token.encode() + b"}"
    assert (
        _settings_error(tmp_path, text) == f"SETTINGS: not valid JSON: {token} is not a JSON number"
    )


SETTINGS_RUN = {
    "prompt": "go",
    "turns": [
        {
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {"command": "echo hi > out.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "Read",
                    "input": {"file_path": "notes.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "t3",
                    "name": "Write",
                    "input": {"file_path": "new.txt", "content": "x"},
                },
                {"type": "tool_use", "id": "t4", "name": "Glob", "input": {"pattern": "*.txt"}},
            ]
        },
        {"content": "done"},
    ],
}


def _commands(settings_value: Any) -> set[Any]:
    hooks = settings_value.get("hooks") if isinstance(settings_value, dict) else None
    if not isinstance(hooks, dict):
        return set()
    return {
        h.get("command")
        for entries in hooks.values()
        if isinstance(entries, list)
        for entry in entries
        if isinstance(entry, dict) and isinstance(entry.get("hooks"), list)
        for h in entry["hooks"]
        if isinstance(h, dict)
    }


@examples(40)
@given(st.data())
def test_settings_a_run_accepts_are_obeyed_to_a_final_state(data: st.DataObject) -> None:
    """Settings (a scenario's `settings`, read as a settings file is) changed in up to
    two places: refused with a `ScenarioError`, or the run with them (rules, mode,
    command hooks, extra directories) ends in a final state and its log replays;
    never an exception."""
    value = data.draw(SETTINGS, label="settings")
    for _ in range(data.draw(st.integers(0, 2), label="changes")):
        value = mutate_json(data, value)
    if not _commands(value) <= set(HARMLESS):
        return  # a command the mutation made up is not run in a shell
    with _workdir() as where:
        (where / "ws").mkdir()
        (where / "ws" / "notes.txt").write_text("hello\n")
        (where / "s.json").write_bytes(dump({**SETTINGS_RUN, "settings": value}))
        try:
            scenario = Scenario.load(where / "s.json")
        except ScenarioError as exc:
            assert str(exc).startswith(f"{where / 's.json'}"), exc
            event("refused")
            return
        result = run_scenario(scenario, cwd=where / "ws", log=where / "s.jsonl")
        event(f"ran: {result.reason}")
        assert replayed(where / "s.jsonl") == "result"


# --- an edited effect result (`replay LOG --edit-effect K FILE`) --------------------------


def _parent(where: Path) -> Path:
    parent = where / "parent.jsonl"
    parent.write_bytes(b"".join(source_logs()["written"]))
    reseal(parent)
    (where / "answer.json").write_text(json.dumps({"turns": [{"content": "ok"}] * 4}))
    return parent


def _tool_result_with(token: str) -> bytes:
    """The written log's first tool result (effect 3) with its duration `token`."""
    record = next(json.loads(line) for line in source_logs()["written"] if b'"name":"tool"' in line)
    return dump({**record["result"], "duration_s": raw(token)})


@pytest.mark.parametrize(
    ("effect", "text", "problem"),
    [
        (1, b'{"x": ' + b"1" * 5000 + b"}", "Exceeds the limit (4300 digits) for integer string"),
        (3, _tool_result_with("NaN"), "NaN is not a JSON number"),
        (3, _tool_result_with("-Infinity"), "-Infinity is not a JSON number"),
        (3, _tool_result_with("1e400"), "1e400 is beyond a double's range"),
    ],
    ids=["5000 digits", "NaN", "-Infinity", "1e400"],
)
def test_an_edited_result_file_that_is_not_json(
    tmp_path: Path, effect: int, text: bytes, problem: str
) -> None:
    """The file of `--edit-effect K FILE` holding a number Python will not convert (a
    ValueError traceback), `NaN`/`Infinity` (no JSON; Python's reader took them, the
    fork ran with a NaN duration, and its log, which writes NaN as null, was refused as
    damaged by `replay --check`) or a number beyond a double (read as infinity, the
    same): one line naming the file, exit 2, no fork log."""
    parent, edited = _parent(tmp_path), tmp_path / "edited.json"
    edited.write_bytes(text)
    code, _, err = fsm_agent(
        "replay", str(parent), "--edit-effect", str(effect), str(edited),
        "--scripted", str(tmp_path / "answer.json"), "--log", str(tmp_path / "fork.jsonl"),
    )  # fmt: skip
    assert_one_error_line(code, err)
    assert code == 2 and err.startswith(
        f"fsm-agent: error: {edited}: cannot read the edited result: not valid JSON: {problem}"
    ), err
    assert not (tmp_path / "fork.jsonl").exists()


@examples(60)
@given(st.data())
def test_an_edited_result_forks_or_is_refused(data: st.DataObject) -> None:
    """Any effect's result replaced by a near-valid one (or any JSON): the fork is
    refused with a `ForkError` saying the result does not fit, or it runs to a final
    state and its own log replays to the same end; never another exception."""
    import asyncio

    from fsm_agent.app.fork import ForkError, ForkPoint, afork
    from fsm_agent.live.scripted import ScriptedHooks, ScriptedModel

    effects = [
        json.loads(line)["result"]
        for line in source_logs()["written"]
        if line.startswith(b'{"t":"effect"')
    ]
    k = data.draw(st.integers(1, len(effects)), label="effect")
    if data.draw(st.booleans(), label="any JSON"):
        result = data.draw(JSON, label="result")
    else:
        result = mutate_json(data, effects[k - 1])
    try:  # as the command line reads the file
        result = json.loads(dump(result), parse_constant=no_constant, parse_float=finite_float)
    except (ValueError, RecursionError):
        return  # no JSON: the command line refuses the file (test above)
    scenario = Scenario.parse({"turns": [{"content": "ok"}] * 4})
    with _workdir() as where:
        parent = _parent(where)
        try:
            outcome = asyncio.run(
                afork(
                    parent,
                    ForkPoint(effect=k, result=result),
                    model=ScriptedModel(scenario),
                    hooks=ScriptedHooks(scenario.hooks),
                    log=where / "fork.jsonl",
                )
            )
        except ForkError as exc:
            assert "does not fit" in str(exc), exc
            return
        event(f"forked: {outcome.reason}")
        assert replayed(where / "fork.jsonl") == "result"


@pytest.mark.parametrize("key", ["version", "session_id", "config"])
def test_a_header_value_nested_a_thousand_deep_is_named(tmp_path: Path, key: str) -> None:
    """A header field of the wrong type is shown in the error as the file has it, cut
    short; one nested ~1000 deep (which orjson reads but will not write back, and the
    standard library's writer recursed on) raised a RecursionError instead."""
    header = json.loads(source_logs()["written"][0])
    header[key] = raw("[" * 1000 + "]" * 1000)
    path = _with_line(tmp_path, 0, dump(header) + b"\n")
    with pytest.raises(LogError, match=re.escape(f"{path}:1: ") + r".*\[\[\[\[…"):
        SessionLog(path)
    code, _, err = fsm_agent("replay", str(path), "--check")
    assert code == 2 and err.startswith(f"fsm-agent: error: {path}:1: "), err


@pytest.mark.parametrize("n", [0, 1, -1], ids=["header", "start", "last line"])
@pytest.mark.parametrize(
    "token",
    ["1" * 5000, "[" * 2000 + "]" * 2000, "[" * 1000 + "1" * 25 + "]" * 1000],
    ids=["5000 digits", "2000 deep", "1000 deep and long"],
)
def test_sessions_lists_a_log_whose_lines_python_will_not_read(
    tmp_path: Path, n: int, token: str
) -> None:
    """`sessions` reads a log's first two lines and its last with the standard
    library, which raised a ValueError (thousands of digits) or a RecursionError (a deep
    nest): the listing goes on, showing that log as corrupt."""
    sessions = tmp_path / "ws" / ".fsm-agent" / "sessions"
    sessions.mkdir(parents=True)
    lines = source_logs()["written"][:]
    record = json.loads(lines[n])
    lines[n] = dump({**record, "x": raw(token)}) + b"\n"
    (sessions / "damaged.jsonl").write_bytes(b"".join(lines))
    reseal(sessions / "damaged.jsonl")
    code, out, err = fsm_agent("sessions", "--cwd", str(tmp_path / "ws"), "--json")
    assert (code, err) == (0, "")
    (info,) = json.loads(out)
    assert info["status"] == "corrupt", info


@pytest.mark.parametrize("value", ["9" * 400, "9" * 5000])
def test_an_idle_timeout_no_float_holds_is_a_usage_error(tmp_path: Path, value: str) -> None:
    """`CLAUDE_STREAM_IDLE_TIMEOUT_MS` of 400 digits is a whole number of milliseconds
    no float holds (an OverflowError traceback as it became seconds), and one of 5000
    more digits than int() converts (Python's own words, not naming the variable): a
    usage error naming the variable before anything runs."""
    import os
    import subprocess

    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "CLAUDE_STREAM_IDLE_TIMEOUT_MS": value}
    done = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "run", "hi", "--cwd", str(tmp_path),
         "--base-url", "http://127.0.0.1:9"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("fsm-agent: error: CLAUDE_STREAM_IDLE_TIMEOUT_MS must be a "), (
        done.stderr
    )
    assert_one_error_line(2, done.stderr)
    assert not (tmp_path / ".fsm-agent").exists()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", "9" * 5000),
        ("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "9" * 5000),
        ("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "-" + "9" * 5000),
        ("CLAUDE_CODE_MAX_TURNS", "9" * 5000),
        ("FSM_AGENT_IDLE_NOTIFY_MS", "9" * 5000),
        ("FSM_AGENT_IDLE_NOTIFY_MS", "9" * 400),
    ],
    ids=["concurrency", "cap", "negative cap", "max turns", "idle notify", "idle notify 400"],
)
def test_a_whole_number_variable_int_will_not_read(
    tmp_path: Path, variable: str, value: str
) -> None:
    """A number of thousands of digits (more than int() converts) in a variable that
    must hold a whole number raised a ValueError traceback, and milliseconds of
    hundreds of digits an OverflowError as they became seconds: the usage error naming
    the variable, exit 2, before anything runs."""
    import os
    import subprocess

    scenario = tmp_path / "s.json"
    scenario.write_text('{"prompt": "hi", "turns": [{"content": "ok"}]}')
    done = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "run", "--scripted", str(scenario),
         "--cwd", str(tmp_path)],
        capture_output=True, text=True, env={**os.environ, variable: value},
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"fsm-agent: error: {variable} must be a whole number"), (
        done.stderr
    )
    assert_one_error_line(2, done.stderr)
    assert not (tmp_path / ".fsm-agent").exists()


# --- memory files the user writes (.claude/rules) --------------------------------------


@pytest.mark.parametrize("glob", ["[z-a]/*.py", "[?-/]*", "*.[b-a]", "[\\\\w-.]*"])
def test_a_path_rule_whose_glob_does_not_compile_matches_nothing(tmp_path: Path, glob: str) -> None:
    """A `.claude/rules` file's `paths:` glob whose class is no regex class (a range out
    of order) raised `re.error` halfway through the run, the first time the model read
    a file: the run died, its log cut short. It matches nothing, as picomatch's regex
    that does not compile does in Claude Code, and the run and its replay go on."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "rules").mkdir(parents=True)
    (ws / ".claude" / "rules" / "r.md").write_text(f'---\npaths: "{glob}"\n---\nUse tabs.\n')
    (ws / "notes.txt").write_text("hi\n")
    scenario = {
        "prompt": "read",
        "turns": [
            {"content": [{"type": "tool_use", "id": "t1", "name": "Read",
                          "input": {"file_path": "notes.txt"}}]},
            {"content": "done"},
        ],
    }  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps(scenario))
    done = fsm_agent_process(
        "run", "--scripted", str(tmp_path / "s.json"), "--cwd", str(ws),
        "--log", str(tmp_path / "s.jsonl"), "-q",
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")
    assert replayed(tmp_path / "s.jsonl") == "result"


GLOBBY = st.text(
    alphabet=st.sampled_from([*"[]{}*?!^-,\\/ab.:'\" \n#@~", "é", "\x00"]), max_size=40
)
MEMORY_TEXT = st.one_of(
    st.text(max_size=80),
    GLOBBY,
    st.builds(lambda head, body: f"---\n{head}\n---\n{body}", GLOBBY, st.text(max_size=20)),
    st.builds(lambda g: f"---\npaths:\n  - {g}\n  - '{g}'\n---\nrule", GLOBBY),
    st.builds(lambda g: f"---\npaths: [{g}, src/**]\n---\nrule", GLOBBY),
    st.builds(lambda t: f"see @{t} and @~/{t}", GLOBBY),
)


@examples(120)
@given(st.lists(MEMORY_TEXT | st.binary(max_size=40), min_size=1, max_size=3), st.data())
def test_memory_files_the_user_writes_are_read(texts: list[Any], data: st.DataObject) -> None:
    """CLAUDE.md files and `.claude/rules` files with any text (frontmatter, `paths:`
    globs of any shape, imports, bytes that are not UTF-8, NUL): read at the start of a
    run, and the path rules matched against any file the model reads; never an
    exception."""
    from fsm_agent.context.claude_md import matching_rules
    from fsm_agent.live.memory_files import gather, path_rules

    with _workdir() as where:
        ws = where / "ws"
        (ws / ".claude" / "rules" / "sub").mkdir(parents=True)
        places = ["CLAUDE.md", ".claude/CLAUDE.md", ".claude/rules/a.md", ".claude/rules/sub/b.md"]
        for text in texts:
            place = ws / data.draw(st.sampled_from(places), label="file")
            place.write_bytes(
                text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
            )
        gather(ws, where / "home", "2026-11-30", managed=None, git=False)
        rules = path_rules(ws)
        read = [str(ws / name) for name in ("a.py", "src/x/b.ts", "[z-a]", ".claude/rules/a.md")]
        matching_rules([str(ws)], rules, read, [])


@pytest.mark.parametrize("variable", ["BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS"])
def test_a_bad_bash_timeout_variable_is_a_usage_error(tmp_path: Path, variable: str) -> None:
    """Claude Code ignores a Bash timeout variable it cannot read; a run whose commands
    would then stop at 2 minutes instead of the time the user set says so first."""
    import os
    import subprocess

    scenario = tmp_path / "s.json"
    scenario.write_text('{"prompt": "hi", "turns": [{"content": "ok"}]}')
    done = subprocess.run(
        [sys.executable, "-m", "fsm_agent.cli", "run", "--scripted", str(scenario),
         "--cwd", str(tmp_path)],
        capture_output=True, text=True, env={**os.environ, variable: "30m"},
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"fsm-agent: error: {variable} must be a whole number of milliseconds, 1 or more, "
        "not '30m'\n"
    )
    assert not (tmp_path / ".fsm-agent").exists()
