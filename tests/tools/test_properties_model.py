"""Properties of everything the model hands fsm-agent: tool inputs, paths, stream events.

The promise under test: whatever the model sends becomes a tool_result it can
read (an `is_error` one for bad input), never an exception, never an action
outside the workspace; and a streamed message is assembled exactly as it was sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import re
import shlex
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, example, given, note
from hypothesis import strategies as st

from fsm_agent.app.session import arun, replay
from fsm_agent.core import jsontext
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import BlockStop, ModelCallError
from fsm_agent.core.messages import (
    ImageBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from fsm_agent.core.permission_types import PermissionRequest, PermissionSettings, RuleSource
from fsm_agent.core.tool import Tool, ToolCall, ToolEnv, ToolOutcome
from fsm_agent.core.validation import input_problem, os_string_problem, unparsable_input
from fsm_agent.engine.driver import LoopResult
from fsm_agent.engine.machine import Terminal
from fsm_agent.engine.ports import model_failed
from fsm_agent.live.anthropic_model import AnthropicModel
from fsm_agent.live.approvals import Approvals
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tools.bash import BashTool
from fsm_agent.tools.edit import EditTool
from fsm_agent.tools.glob import GlobTool
from fsm_agent.tools.grep import GrepTool
from fsm_agent.tools.patch import NO_NEWLINE, structured_patch
from fsm_agent.tools.read import ReadTool
from fsm_agent.tools.workspace import is_within
from fsm_agent.tools.write import WriteTool
from tests.conftest import examples
from tests.support.hooks import results_by_id
from tests.support.messages_server import (
    MessagesServer,
    StreamReply,
    error,
    message,
    message_events,
    messages_server_fixture,  # noqa: F401
    text,
)
from tests.support.model_request import REQUEST
from tests.support.tools import NoModel

SECRET = "SECRET-outside-the-workspace"


# --- strategies -------------------------------------------------------------------

texts = st.text(
    st.characters(codec=None, exclude_categories=()),  # every code point, NUL and lone surrogates
    max_size=40,
)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@contextmanager
def sandbox() -> Iterator[tuple[Path, Path]]:
    """A fresh workspace and, next to it, a directory outside it holding a secret, with
    symlinks from the workspace pointing out, and a `.git` (a protected directory, also
    reached through a symlink). A fresh one per example: an example's
    writes must not decide the next one's outcome."""
    with tempfile.TemporaryDirectory() as top:
        root = Path(top).resolve()
        ws, outside = root / "ws", root / "outside"
        (ws / "sub").mkdir(parents=True)
        outside.mkdir()
        (outside / "secret.txt").write_text(SECRET + "\n")
        (ws / "a.txt").write_text("alpha\nbeta\n")
        (ws / "sub" / "b.py").write_text("print('b')\n")
        (ws / "link_out").symlink_to(outside)
        (ws / "link_secret").symlink_to(outside / "secret.txt")
        (ws / "dangling").symlink_to(outside / "new.txt")
        (ws / ".git").mkdir()
        (ws / ".git" / "config").write_text("[core]\n")
        (ws / "gitlink").symlink_to(ws / ".git")
        yield ws, outside


def tree(path: Path) -> dict[str, tuple[bytes, int] | None]:
    """Every entry under `path`: a file's bytes and mtime, None for a directory."""
    found: dict[str, tuple[bytes, int] | None] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for d in dirnames:
            found[os.path.join(dirpath, d)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            found[p] = (Path(p).read_bytes(), os.stat(p).st_mtime_ns)
    return found


def all_reads(*dirs: Path) -> dict[str, float]:
    """Every file under `dirs` as read: the read-before-write rule is then no guard, and
    only confinement keeps a tool inside the workspace."""
    return {
        os.path.realpath(os.path.join(d, f)): os.stat(os.path.join(d, f)).st_mtime
        for top in dirs
        for d, _, files in os.walk(top)
        for f in files
        if os.path.exists(os.path.join(d, f))
    }


def run_tool(tool: Tool, tool_input: Any, env: ToolEnv) -> ToolOutcome:
    """The call as the engine makes it: the executor's validation (the schema, then a NUL
    in a path or a command), the permission check's denial of what it cannot resolve,
    then the tool, through the effects door that turns a tool's exception into an
    error result. What the permission check asks about runs: confinement is the
    tool's own, whatever the rules allow."""
    problem = input_problem(tool.name, tool.input_schema, tool_input)
    if problem is None and isinstance(tool_input, dict):
        problem = os_string_problem(tool.name, tool_input)
    if problem is not None:
        return ToolOutcome.error(problem)
    verdict = Approvals(PermissionSettings(), env.cwd).check(
        PermissionRequest(tool.name, tool_input, "bypassPermissions")
    )
    if verdict.behavior == "deny":
        return ToolOutcome.error(f"<tool_use_error>{verdict.reason}</tool_use_error>")
    effects = LiveEffects(NoModel(), {tool.name: tool})
    try:
        return asyncio.run(effects.run_tool(ToolCall("toolu_prop", tool.name, tool_input), env))
    finally:
        close = getattr(tool, "close", None)
        if close is not None:
            close()


def result_text(outcome: ToolOutcome) -> str:
    content = outcome.content
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def assert_readable(outcome: ToolOutcome) -> None:
    """A result the model can read and the log can hold whole; an error says something."""
    assert isinstance(outcome, ToolOutcome)
    content = outcome.content
    if isinstance(content, str):
        assert jsontext.loads(jsontext.line(content)) == content
    else:
        assert all(isinstance(b, TextBlock | ImageBlock) for b in content)
    if outcome.is_error:
        assert result_text(outcome).strip()
        # the door catches what a tool raises, worded generically: fair for what the OS
        # says of a path (its own words, naming it), not for an input the tool mishandled
        generic = re.search(r" failed: (\w+): (\[Errno \d+\])?", result_text(outcome))
        assert generic is None or generic[2], result_text(outcome)


# --- tool inputs ------------------------------------------------------------------

TOOLS: dict[str, type] = {
    "Read": ReadTool,
    "Write": WriteTool,
    "Edit": EditTool,
    "Glob": GlobTool,
    "Grep": GrepTool,
}

path_parts = st.sampled_from(
    ["..", ".", "~", "", "a.txt", "sub", "b.py", "link_out", "link_secret", "dangling",
     "secret.txt", "new.txt", "é", "名前", "x" * 300, " ", "*", "**", "?", "\ud800", "\udc80",
     ".git", ".GIT", "gitlink", "config", ".claude", "settings.json", ".bashrc"]
)  # fmt: skip


@st.composite
def paths(draw: st.DrawFn) -> str:
    """Relative, absolute, `..` chains, `~`, through symlinks out, unicode, trailing
    slashes, very long: what a model might put where a path goes."""
    parts = draw(st.lists(path_parts, max_size=5))
    start = draw(st.sampled_from(["", "/", "~/", "WS/", "OUT/", "/tmp/", "../outside/"]))
    path = start + "/".join(parts)
    if draw(st.booleans()):
        path += "/"
    if draw(st.integers(0, 9)) == 0:
        path = draw(texts)
    return path


globs = st.text(st.sampled_from("*?[]{},!/\\^-.a"), max_size=10)
"""Glob syntax, well formed or not: classes, braces, escapes, negations."""


def located(path: str, ws: Path, outside: Path) -> str:
    return path.replace("WS/", f"{ws}/", 1).replace("OUT/", f"{outside}/", 1)


def schema_shaped(name: str, *, wild: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Inputs shaped like the tool's schema. Valid-looking (`wild` False): every required
    key, each value of its type. `wild`: a value may be anything at all, a required key
    may be left out, an unknown one added."""
    schema = TOOLS[name].input_schema if name in TOOLS else BashTool.input_schema
    props: dict[str, Any] = schema["properties"]

    def value(key: str) -> st.SearchStrategy[Any]:
        kind = props[key].get("type")
        if key in ("file_path", "path"):
            right: st.SearchStrategy[Any] = paths()
        elif name == "Glob" and key == "pattern":
            right = paths() | globs
        elif key == "command":
            right = st.builds(lambda t: "echo " + shlex.quote(t), texts)
        elif key == "glob":
            right = globs
        elif name == "Grep" and key == "pattern":
            right = st.sampled_from(["alpha", "b", "^", ".*", "(", "a|b", "\\", "[", "x{2,"])
            right |= texts
        elif kind == "string":
            right = texts
        elif kind == "integer":
            right = st.integers(-5, 2**66) | st.integers(-5, 50) | st.floats(-5, 1e20).map(round)
        elif kind == "number":
            right = st.floats(min_value=-1, max_value=1e300) | st.integers(-5, 2**66)
        elif kind == "boolean":
            right = st.booleans()
        else:
            right = json_values
        if "enum" in props[key]:
            right = st.sampled_from(props[key]["enum"]) | (texts if wild else st.nothing())
        return right | json_values if wild and key != "command" else right

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in props:
            required = key in schema["required"] and (not wild or draw(st.integers(0, 9)) > 0)
            if required or draw(st.booleans()):
                out[key] = draw(value(key))
        if wild and draw(st.integers(0, 9)) == 0:
            out[draw(texts)] = draw(json_values)
        return out

    return build()


def any_input(name: str) -> st.SearchStrategy[Any]:
    return (
        schema_shaped(name, wild=False)
        | schema_shaped(name)
        | st.dictionaries(texts, json_values, max_size=4)
        | json_values
    )


@examples(150)
@given(name=st.sampled_from(sorted(TOOLS)), data=st.data())
def test_any_input_to_a_file_tool_is_a_result_and_stays_in_the_workspace(
    name: str, data: st.DataObject
) -> None:
    """Any JSON the model sends a file tool (wrong types, missing or extra keys, NUL,
    lone surrogates, huge numbers, paths anywhere) gives a result, not an exception: an
    error says what was wrong in the tool's own words, and nothing outside the
    workspace is changed or shown."""
    with sandbox() as (ws, outside):
        tool_input = data.draw(any_input(name), label="input")
        if isinstance(tool_input, dict):
            for key in ("file_path", "path", "pattern"):
                if isinstance(tool_input.get(key), str):
                    tool_input[key] = located(tool_input[key], ws, outside)
        env = ToolEnv(cwd=str(ws), read_files=all_reads(ws, outside))
        before = tree(outside)
        outcome = run_tool(TOOLS[name](), tool_input, env)
        note(repr(outcome))
        said = ascii(result_text(outcome)[:40]) if outcome.is_error else "ok"
        event(f"{name}: {said}")
        assert_readable(outcome)
        assert tree(outside) == before
        assert SECRET not in result_text(outcome)
        assert all(is_within(os.path.realpath(p), str(ws)) for p in outcome.read_files)
        if name in ("Glob", "Grep") and not outcome.is_error:
            assert str(outside) not in result_text(outcome)


@examples(60)
@given(
    name=st.sampled_from(sorted(TOOLS)),
    data=st.data(),
)
def test_an_additional_directory_is_reached_and_nothing_else(
    name: str, data: st.DataObject
) -> None:
    """With an additional directory allowed, a file tool given any path acts in the
    workspace or that directory only: what changes is under one of them, and a file
    the call reports as read is too."""
    with sandbox() as (ws, outside):
        extra = ws.parent / "extra"
        extra.mkdir()
        (extra / "c.txt").write_text("gamma\n")
        tool_input = located_input(
            data.draw(schema_shaped(name, wild=False), label="in"), ws, outside
        )
        for key in ("file_path", "path", "pattern"):
            if isinstance(tool_input.get(key), str) and data.draw(st.booleans()):
                tool_input[key] = tool_input[key].replace(str(outside), str(extra), 1)
        env = ToolEnv(
            cwd=str(ws), read_files=all_reads(ws, outside, extra), additional_dirs=(str(extra),)
        )
        before = tree(outside)
        outcome = run_tool(TOOLS[name](), tool_input, env)
        note(repr(outcome))
        assert_readable(outcome)
        assert tree(outside) == before
        assert SECRET not in result_text(outcome)
        roots = (str(ws), str(extra))
        assert all(
            any(is_within(os.path.realpath(p), r) for r in roots) for p in outcome.read_files
        )


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("Glob", {"pattern": "WS/*", "path": "\ud800"}),
        ("Glob", {"pattern": "WS/sub/*.py", "path": "x/\ud83d"}),
    ],
)
def test_a_path_no_file_name_can_be_is_the_models_input_error(
    name: str, tool_input: dict[str, Any]
) -> None:
    """A path with a lone surrogate (a JSON escape such as "\\ud800" the model sent), which
    no file name can hold, where the permission check does not look (Glob's `path` when
    its pattern is absolute): the tool says the path cannot be resolved, in its own
    words, not `Glob failed: UnicodeEncodeError`."""
    with sandbox() as (ws, outside):
        result = scripted_run(
            ws,
            ws.parent / "run.jsonl",
            [{"type": "tool_use", "id": "t1", "name": name,
              "input": located_input(tool_input, ws, outside)}],
            "default",
        )  # fmt: skip
        answer = results_by_id(result)["t1"]
        assert answer.is_error
        assert "failed: UnicodeEncodeError" not in answer.text
        assert "cannot be resolved" in answer.text
        assert replay(ws.parent / "run.jsonl").path == result.path


@examples(40)
@given(tool_input=schema_shaped("Bash") | schema_shaped("Bash", wild=False))
def test_any_input_to_bash_is_a_result(tool_input: dict[str, Any]) -> None:
    """Bash with any input (the command kept harmless: `echo` of any text; timeouts tiny,
    huge or of the wrong type; unknown keys) gives a readable result, not an exception."""
    with sandbox() as (ws, outside):
        before = tree(outside)
        outcome = run_tool(BashTool(), tool_input, ToolEnv(cwd=str(ws)))
        note(repr(outcome))
        assert_readable(outcome)
        assert tree(outside) == before


ENGINE_TOOLS = sorted([*TOOLS, "Bash"])
MODES = ["default", "acceptEdits", "bypassPermissions", "dontAsk", "plan"]


def located_input(tool_input: dict[str, Any], ws: Path, outside: Path) -> dict[str, Any]:
    return {
        k: located(v, ws, outside) if k in ("file_path", "path", "pattern") and isinstance(v, str)
        else v
        for k, v in tool_input.items()
    }  # fmt: skip


def scripted_run(ws: Path, log: Path, blocks: list[dict[str, Any]], mode: str) -> LoopResult:
    """One turn of `blocks`, then an answer; the log written to `log`."""
    scenario = Scenario.parse({"prompt": "go", "turns": [{"content": blocks}, {"content": "done"}]})
    return asyncio.run(
        arun(
            "go",
            model=ScriptedModel(scenario),
            config=RunConfig(cwd=str(ws), model="scripted", permission_mode=mode),
            log=log,
        )
    )


@examples(50)
@given(
    names=st.lists(st.sampled_from(ENGINE_TOOLS), min_size=1, max_size=4),
    mode=st.sampled_from(MODES),
    data=st.data(),
)
def test_any_calls_through_the_engine_are_answered_in_order_and_replay(
    names: list[str], mode: str, data: st.DataObject
) -> None:
    """Calls of any shape, in any permission mode, safe and unsafe mixed in one turn,
    through the whole engine (validation, permission check, tool, recording): the run
    completes, the next message answers every call once, in the calls' order, with
    text the log holds; nothing outside the workspace changes, nor a protected path
    (`.git`, `.claude`, `.bashrc`: no mode writes them unasked); the log replays."""
    with sandbox() as (ws, outside):
        blocks = []
        for n, name in enumerate(names):
            shape = schema_shaped(name) | schema_shaped(name, wild=False)
            tool_input = located_input(data.draw(shape, label=name), ws, outside)
            target = tool_input.get("file_path")
            if name in ("Write", "Edit") and isinstance(target, str):  # read first, as asked
                read = {"file_path": target}
                blocks.append({"type": "tool_use", "id": f"r{n}", "name": "Read", "input": read})
            blocks.append({"type": "tool_use", "id": f"t{n}", "name": name, "input": tool_input})
        log = ws.parent / "run.jsonl"
        before, git_before = tree(outside), tree(ws / ".git")
        result = scripted_run(ws, log, blocks, mode)
        assert result.reason == "completed", result.error
        answer = result.messages[2]
        assert answer.role == "user"
        assert [b.tool_use_id for b in answer.content] == [b["id"] for b in blocks]
        for block in answer.content:
            assert isinstance(block, ToolResultBlock)
            assert jsontext.loads(jsontext.line(block.text)) == block.text
            assert SECRET not in block.text
        assert tree(outside) == before
        assert tree(ws / ".git") == git_before, "a protected path was written unasked"
        assert not (ws / ".claude").exists() and not (ws / ".bashrc").exists()
        assert replay(log).path == result.path


# --- tool semantics ---------------------------------------------------------------

unicode_text = st.text(st.characters(codec="utf-8"), max_size=60)
"""Text a file can hold: any code point UTF-8 encodes (no lone surrogates), NUL included."""
line_text = st.text(st.characters(codec="utf-8", exclude_characters="\r\n\0"), max_size=12)
lf_text = st.lists(line_text, max_size=6).map("\n".join) | st.text(
    st.characters(codec="utf-8", exclude_characters="\r"), max_size=40
)


def edited(content: str, old: str, new: str, replace_all: bool) -> str | None:
    """The model of Edit on an existing file: its content after the edit, or None when
    the edit is refused. Emptying a whole line deletes its newline too; a match made
    only with curly quotes read as straight ones is left to the example tests."""
    if old == new:
        return None
    if not old:
        return None if content.strip() else new
    count = content.count(old)
    assume(count or straight(old) not in straight(content))  # a curly-quote match
    if count == 0 or (count > 1 and not replace_all):
        return None
    if not new and not old.endswith("\n"):
        whole_line = f"(?<![^\n]){re.escape(old)}\n|{re.escape(old)}"
        return re.sub(whole_line, "", content, count=0 if replace_all else 1)
    return content.replace(old, new) if replace_all else content.replace(old, new, 1)


def straight(text: str) -> str:
    return text.translate(str.maketrans("\u2018\u2019\u201c\u201d", "''\"\""))


@st.composite
def edits(draw: st.DrawFn, text: st.SearchStrategy[str] = lf_text) -> tuple[str, str, str, bool]:
    """A file's text and an edit of it: `old_string` often a piece of the text (so it
    matches once or more), sometimes anything."""
    content = draw(text)
    if content and draw(st.integers(0, 3)):
        start = draw(st.integers(0, len(content) - 1))
        end = draw(st.integers(start, min(len(content), start + 8)))
        old = content[start:end]
    else:
        old = draw(text)
    new = draw(text | st.just(old))
    return content, old, new, draw(st.booleans())


def edit_file(ws: Path, raw: bytes, old: str, new: str, replace_all: bool) -> ToolOutcome:
    path = ws / "f.txt"
    path.write_bytes(raw)
    env = ToolEnv(cwd=str(ws), read_files={str(path): os.stat(path).st_mtime})
    tool_input = {"file_path": str(path), "old_string": old, "new_string": new}
    if replace_all or old:
        tool_input["replace_all"] = replace_all
    return run_tool(EditTool(), tool_input, env)


@examples(150)
@given(edits())
def test_edit_is_str_replace_under_the_uniqueness_rule(edit: tuple[str, str, str, bool]) -> None:
    """Edit does what `str.replace` does when `old_string` occurs once (or every time with
    replace_all), refuses with the file unchanged when it occurs more often without
    replace_all, not at all, or equals `new_string`; an empty `old_string` fills only
    a blank file."""
    content, old, new, replace_all = edit
    with sandbox() as (ws, _):
        outcome = edit_file(ws, content.encode(), old, new, replace_all)
        expected = edited(content, old, new, replace_all)
        after = (ws / "f.txt").read_bytes().decode()
        assert_readable(outcome)
        if expected is None:
            assert outcome.is_error
            assert after == content
        else:
            assert not outcome.is_error, result_text(outcome)
            assert after == expected


@examples(60)
@given(edits(st.lists(line_text, min_size=1, max_size=6).map(lambda ls: "\r\n".join(ls) + "\r\n")))
def test_edit_of_a_crlf_file_is_the_edit_of_its_lf_text(edit: tuple[str, str, str, bool]) -> None:
    """A file whose every line ends in CRLF is edited as the LF text Read shows and
    written back all CRLF."""
    content, old, new, replace_all = edit
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    assume("\r" not in old + new and old)  # an empty old_string replaces a blank file whole
    with sandbox() as (ws, _):
        outcome = edit_file(ws, content.encode(), old, new, replace_all)
        lf = edited(content.replace("\r\n", "\n"), old, new, replace_all)
        after = (ws / "f.txt").read_bytes().decode()
        if lf is None:
            assert outcome.is_error
            assert after == content
        else:
            assert not outcome.is_error, result_text(outcome)
            assert after == lf.replace("\n", "\r\n")


def shown_file(text: str, offset: int | None, limit: int | None) -> str:
    """The model of Read's text: the text's lines (split on LF, a CR before it dropped; a
    final newline is followed by an empty line; a leading byte order mark is no
    character of them), numbered from 1, from `offset` on, at most `limit` (2000 by
    default), each cut at 2000 characters, with a note if lines are left."""
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    if not text:
        return (
            "<system-reminder>Warning: the file exists but the contents are empty."
            "</system-reminder>"
        )
    first = max(offset or 1, 1)
    limit = limit or 2000
    shown = lines[first - 1 : first - 1 + limit]
    if not shown:
        return (
            "<system-reminder>Warning: the file exists but is shorter than the provided "
            f"offset ({first}). The file has {len(lines)} lines.</system-reminder>"
        )
    shown = [line if len(line) <= 2000 else line[:2000] + "… [line truncated]" for line in shown]
    out = "\n".join(f"{n:>6}→{line}" for n, line in enumerate(shown, start=first))
    rest = lines[first - 1 + limit :]
    if rest and rest != [""]:  # the empty line after a final newline is not "more"
        last = first + len(shown) - 1
        out += (
            f"\n\n(Showing lines {first}-{last}; the file continues. "
            f"Use offset={last + 1} to read more.)"
        )
    return out


file_texts = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\n\0"), max_size=10), max_size=12
).map("\n".join)


@examples(150)
@given(
    text=file_texts,
    offset=st.none() | st.integers(0, 15),
    limit=st.none() | st.integers(1, 15),
)
def test_read_numbers_the_lines_of_the_file(
    text: str, offset: int | None, limit: int | None
) -> None:
    """Read shows the file's lines numbered from 1, `offset` the first shown, at most
    `limit` of them, and says how to read on when more are left; what a PostToolUse
    hook is given counts the same lines and holds their text."""
    assume(not text.startswith(("GIF87a", "GIF89a", "RIFF")))  # image magic, read as images
    with sandbox() as (ws, _):
        path = ws / "f.txt"
        path.write_bytes(text.encode())
        tool_input: dict[str, Any] = {"file_path": str(path)}
        if offset is not None:
            tool_input["offset"] = offset
        if limit is not None:
            tool_input["limit"] = limit
        outcome = run_tool(ReadTool(), tool_input, ToolEnv(cwd=str(ws), wants_response=True))
        assert not outcome.is_error, result_text(outcome)
        assert result_text(outcome) == shown_file(text, offset, limit)
        assert outcome.read_files == {str(path): os.stat(path).st_mtime}
        lines = text.removeprefix("\ufeff").split("\n") if text else []
        first = max(offset or 1, 1)
        shown = lines[first - 1 : first - 1 + (limit or 2000)]
        assert outcome.response is not None
        assert outcome.response["file"] == {
            "filePath": str(path),
            "content": "\n".join(shown) + ("\n" if first - 1 + len(shown) < len(lines) else ""),
            "numLines": len(shown),
            "startLine": first,
            "totalLines": len(lines),
        }


@examples(20)
@given(
    lines=st.integers(1995, 2005),
    long=st.lists(
        st.tuples(st.integers(0, 2004), st.sampled_from("aé€😀"), st.integers(1995, 2005)),
        max_size=3,
    ),
    final_newline=st.booleans(),
    offset=st.none() | st.integers(1, 2006),
)
def test_read_of_a_long_file_pages_and_cuts_long_lines(
    lines: int,
    long: list[tuple[int, str, int]],
    final_newline: bool,
    offset: int | None,
) -> None:
    """Past 2000 lines Read shows the first 2000 (or 2000 from `offset`) and says where to
    go on; a line past 2000 characters (of 1 to 4 UTF-8 bytes each) is cut there."""
    body = [f"line {n}" for n in range(1, lines + 1)]
    for at, char, size in long:
        if at < len(body):
            body[at] = char * size
    text = "\n".join(body) + ("\n" if final_newline else "")
    with sandbox() as (ws, _):
        path = ws / "long.txt"
        path.write_bytes(text.encode())
        tool_input: dict[str, Any] = {"file_path": str(path)}
        if offset is not None:
            tool_input["offset"] = offset
        outcome = run_tool(ReadTool(), tool_input, ToolEnv(cwd=str(ws)))
        assert result_text(outcome) == shown_file(text, offset, None)


@examples(100)
@given(text=unicode_text | file_texts, where=st.sampled_from(["new.txt", "sub/deeper/new.txt"]))
def test_write_then_read_gives_back_the_text(text: str, where: str) -> None:
    """What Write writes is the text's UTF-8, byte for byte, and Read shows it back line
    by line (a NUL makes it a binary file, which Read refuses in words)."""
    assume(not text.startswith(("GIF87a", "GIF89a", "RIFF")))
    with sandbox() as (ws, _):
        env = ToolEnv(cwd=str(ws))
        wrote = run_tool(WriteTool(), {"file_path": where, "content": text}, env)
        assert not wrote.is_error, result_text(wrote)
        path = ws / where
        assert path.read_bytes() == text.encode()
        read = run_tool(ReadTool(), {"file_path": str(path)}, env)
        assert_readable(read)
        if "\0" in text:
            assert read.is_error
            assert "binary" in result_text(read)
        elif len(text.split("\n")) <= 2000:
            assert result_text(read) == shown_file(text, None, None)


@examples(40)
@given(
    text=st.tuples(
        unicode_text, st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), unicode_text
    ).map("".join)
)
def test_write_of_text_utf8_cannot_hold_leaves_the_file(text: str) -> None:
    """Text with a lone surrogate (a JSON escape such as "\\ud800" the model sent) is
    refused in words, and an existing file is left as it was."""
    with sandbox() as (ws, _):
        path = ws / "a.txt"
        env = ToolEnv(cwd=str(ws), read_files={str(path): os.stat(path).st_mtime})
        outcome = run_tool(WriteTool(), {"file_path": str(path), "content": text}, env)
        assert_readable(outcome)
        assert outcome.is_error
        assert path.read_text() == "alpha\nbeta\n"


# --- the stream -------------------------------------------------------------------

FAULTS = ("cut", "end", "error")
_MESSAGE_STOP = b'event: message_stop\ndata: {"type": "message_stop"}\n\n'


@dataclasses.dataclass(frozen=True)
class Raw:
    """Bytes the server sends as one chunk of the body: a piece of the event stream cut
    anywhere (inside an event, a JSON escape, a UTF-8 character), where `Sse` is one
    whole event."""

    data: bytes

    def encode(self) -> bytes:
        return self.data


def pieces(draw: st.DrawFn, text: str, *, allow_empty: bool = False) -> list[str]:
    """`text` cut at arbitrary points (so a piece may end inside a JSON escape)."""
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=6))
    bounds = sorted({0, len(text), *cuts})
    parts = [text[a:b] for a, b in itertools.pairwise(bounds)]
    if allow_empty and draw(st.booleans()):
        parts.insert(0, "")  # the API's first input_json_delta is empty
    return parts or ([""] if allow_empty else [])


def stream_text(draw: st.DrawFn, ascii_only: bool) -> str:
    chars = st.characters(codec=None) if ascii_only else st.characters(codec="utf-8")
    return draw(st.text(chars, max_size=30))


@st.composite
def streamed(
    draw: st.DrawFn, fixed: list[Any] | None = None, ascii_only: bool | None = None
) -> tuple[list[Any], list[bytes]]:
    """A message (text, thinking, redacted thinking and tool_use blocks) and the SSE
    events that stream it: text, thinking and tool input JSON split into deltas at
    arbitrary points, `ping`s anywhere, JSON written with `\\u` escapes (lone surrogates
    too) or as raw UTF-8."""
    if ascii_only is None:
        ascii_only = draw(st.booleans())
    blocks: list[Any] = list(fixed or [])
    for n in range(0 if fixed is not None else draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "tool_use", "thinking", "redacted"]))
        if kind == "text":
            blocks.append(TextBlock(stream_text(draw, ascii_only)))
        elif kind == "thinking":
            signature = draw(st.text("abcdef0123456789+/=", max_size=20))
            blocks.append(ThinkingBlock(stream_text(draw, ascii_only), signature))
        elif kind == "redacted":
            blocks.append(RedactedThinkingBlock(draw(st.text("abcdef0123+/=", min_size=1))))
        else:
            keys = st.text(st.characters(codec="utf-8"), max_size=8)
            tool_input = draw(st.dictionaries(keys, json_values, max_size=4))
            if not ascii_only:
                assume(_utf8_ok(tool_input))
            blocks.append(
                ToolUseBlock(f"toolu_{n}", draw(st.sampled_from(["Read", "x"])), tool_input)
            )

    eol = draw(st.sampled_from(["\n", "\r\n"]))  # SSE lines may end either way

    def sse(data: dict[str, Any]) -> bytes:
        body = json.dumps(data, ensure_ascii=ascii_only)
        return f"event: {data['type']}{eol}data: {body}{eol}{eol}".encode()

    usage = {"input_tokens": 10, "output_tokens": 1}
    events = [
        sse({"type": "message_start", "message": {
            "id": "msg_prop", "type": "message", "role": "assistant", "model": "claude-test-1",
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
    ]  # fmt: skip
    for index, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(draw, block.text)]
        elif isinstance(block, ThinkingBlock):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            parts = pieces(draw, block.thinking)
            deltas = [{"type": "thinking_delta", "thinking": p} for p in parts]
            if block.signature:
                deltas.append({"type": "signature_delta", "signature": block.signature})
        elif isinstance(block, RedactedThinkingBlock):
            start, deltas = {"type": "redacted_thinking", "data": block.data}, []
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            raw = json.dumps(block.input, ensure_ascii=ascii_only)
            parts = pieces(draw, raw, allow_empty=True)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in parts]
        events.append(sse({"type": "content_block_start", "index": index, "content_block": start}))
        for delta in deltas:
            events.append(sse({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(sse({"type": "content_block_stop", "index": index}))
    stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
    events.append(sse({"type": "message_delta", "delta": {"stop_reason": stop,
                       "stop_sequence": None}, "usage": {"output_tokens": 5}}))  # fmt: skip
    events.append(_MESSAGE_STOP.replace(b"\n", eol.encode()))
    for _ in range(draw(st.integers(0, 3))):
        events.insert(draw(st.integers(1, len(events))), sse({"type": "ping"}))
    return blocks, events


def _utf8_ok(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def chunked(draw: st.DrawFn, events: list[bytes]) -> list[Raw]:
    """The stream's bytes in chunks cut anywhere: across events, inside one, inside a
    multi-byte character."""
    body = b"".join(events)
    cuts = draw(st.lists(st.integers(0, len(body)), max_size=8))
    if draw(st.booleans()):  # or on the events' own boundaries
        return [Raw(e) for e in events]
    bounds = sorted({0, len(body), *cuts})
    return [Raw(body[a:b]) for a, b in itertools.pairwise(bounds)]


def emptied(server: MessagesServer) -> MessagesServer:
    """The server with nothing queued: what an earlier example left unserved is not
    this example's."""
    with server._lock:
        server._queues.clear()
        server.requests.clear()
    return server


def streamed_blocks(server: Any, chunks: list[Raw], **fault: Any) -> tuple[list[Any], Any]:
    """The blocks the real model assembles from `chunks` served over HTTP, and the
    `ModelCallError` the stream ended with, if any; any other exception goes on."""
    emptied(server).reply(StreamReply(tuple(chunks), **fault))  # type: ignore[arg-type]
    model = AnthropicModel(api_key="test-key", base_url=server.url, max_retries=0, timeout=10)

    async def go() -> tuple[list[Any], Any]:
        stops: list[Any] = []
        try:
            async for event in model.stream(REQUEST):
                if isinstance(event, BlockStop):
                    stops.append(event)
        except ModelCallError as exc:
            return stops, exc
        finally:
            await model.aclose()
        return stops, None

    return asyncio.run(go())


@examples(60)
@given(message=streamed(), data=st.data())
def test_a_streamed_message_is_assembled_exactly(
    messages_server: MessagesServer, message: tuple[list[Any], list[bytes]], data: st.DataObject
) -> None:
    """Through the real SDK over HTTP: text and tool input however split into deltas,
    pings anywhere, the bytes cut anywhere into chunks, the blocks assembled are the
    blocks sent, and every tool input parses."""
    blocks, events = message
    chunks = data.draw(st.composite(chunked)(events), label="chunks")
    stops, error = streamed_blocks(messages_server, chunks)
    assert error is None, error
    assert [s.block for s in stops] == blocks
    assert all(s.error is None for s in stops)


def error_event(kind: str) -> bytes:
    body = {"type": "error", "error": {"type": kind, "message": f"{kind} mid-stream"}}
    return f"event: error\ndata: {json.dumps(body)}\n\n".encode()


@examples(60)
@given(
    message=streamed(),
    fault=st.sampled_from(FAULTS),
    kind=st.sampled_from(["overloaded_error", "api_error", "invalid_request_error"]),
    data=st.data(),
)
def test_a_stream_cut_anywhere_ends_in_a_model_error(
    messages_server: MessagesServer,
    message: tuple[list[Any], list[bytes]],
    fault: str,
    kind: str,
    data: st.DataObject,
) -> None:
    """A stream cut (the connection dropped, or the body ended early) or an `error` event
    at any point ends in a `ModelCallError` the loop knows, never another exception;
    the blocks completed before it are the blocks sent. A stream whose `message_stop`
    got through is whole, and so is a body that ended cleanly after `message_delta`."""
    blocks, events = message
    stop = next(i for i, e in enumerate(events) if e.startswith(b"event: message_stop"))
    stop_at = len(b"".join(events[: stop + 1]))
    if fault == "error":
        at = data.draw(st.integers(1, len(events)), label="error at")
        events = [*events[:at], error_event(kind), *events[at:]]
        whole = stop_at <= len(b"".join(events[:at]))
        chunks = [Raw(e) for e in events]
        stops, error = streamed_blocks(messages_server, chunks)
    else:
        chunks = data.draw(st.composite(chunked)(events), label="chunks")
        k = data.draw(st.integers(0, len(chunks)), label="after")
        sent = sum(len(c.data) for c in chunks[:k])
        delta = next(i for i, e in enumerate(events) if e.startswith(b"event: message_delta"))
        # A body that ends cleanly once `message_delta` is through is whole (Claude Code's
        # reading too): every block has stopped and the stop reason came.
        whole = stop_at <= sent or (fault == "end" and len(b"".join(events[: delta + 1])) <= sent)
        stops, error = streamed_blocks(
            messages_server, chunks, **{"cut_after" if fault == "cut" else "end_after": k}
        )
    note(f"{error!r}")
    if whole:
        assert error is None, error
        assert [s.block for s in stops] == blocks
    else:
        assert isinstance(error, ModelCallError)
        assert error.kind in ("connection", "incomplete_stream", "invalid_response", "overloaded",
                              "server", "api")  # fmt: skip
        assert [s.block for s in stops] == blocks[: len(stops)]


CALLS = [
    ("Read", {"file_path": "a.txt"}),
    ("Glob", {"pattern": "**/*.py"}),
    ("Grep", {"pattern": "alpha"}),
    ("Write", {"file_path": "new.txt", "content": "new\n"}),
    ("Bash", {"command": "echo hi"}),
    ("Read", {"file_path": "link_secret"}),
    ("Edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
]


RETRIED = [
    (529, "overloaded_error"),
    (500, "api_error"),
    (429, "rate_limit_error"),
    (408, "timeout_error"),
]
"""Failed responses the SDK sends the request again after."""


@st.composite
def faulty_turn(draw: st.DrawFn) -> tuple[list[Any], list[bytes], list[bytes]]:
    """A turn of text and real tool calls, streamed, then a fault at a random point."""
    ascii_only = draw(st.booleans())
    blocks: list[Any] = []
    for n in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 3)) == 0:
            blocks.append(TextBlock(stream_text(draw, ascii_only)))
        else:
            name, tool_input = draw(st.sampled_from(CALLS))
            blocks.append(ToolUseBlock(f"toolu_{n}", name, tool_input))
    _, events = draw(streamed(blocks, ascii_only))
    fault = draw(st.sampled_from([*FAULTS, "none"]))
    at = draw(st.integers(1, len(events)))
    kept, dropped = events[:at], events[at:]
    if fault == "error":
        kept = [*kept, error_event(draw(st.sampled_from(["overloaded_error", "api_error"])))]
    elif fault == "none":
        kept, dropped = events, []
    return blocks, kept, dropped


@examples(30)
@given(turn=faulty_turn(), failures=st.integers(0, 3), data=st.data())
def test_a_run_whose_stream_fails_anywhere_ends_as_the_seeds_say(
    messages_server: MessagesServer,
    turn: tuple[list[Any], list[bytes], list[bytes]],
    failures: int,
    data: st.DataObject,
) -> None:
    """The whole loop over HTTP: failed responses the SDK retries (at most 2; a third ends
    the run as the last one's status says), then a turn of real tool calls whose stream
    is cut, ended early or broken by an error event anywhere. The run completes or ends
    `model_error`, never with an exception; every tool_use in the conversation has its
    tool_result (a call the failure left unanswered says so); nothing outside the
    workspace changes; the log replays."""
    _blocks, kept, dropped = turn
    statuses = data.draw(st.lists(st.sampled_from(RETRIED), min_size=failures, max_size=failures))
    emptied(messages_server).reply(
        *(error(status, kind, kind, headers={"retry-after": "0.01"}) for status, kind in statuses)
    )
    how = data.draw(st.sampled_from(["cut_after", "end_after"]), label="how")
    chunks = [Raw(e) for e in kept]
    fault = {how: len(chunks)} if dropped else {}
    messages_server.reply(StreamReply(tuple(chunks), **fault), text("done"), text("done"))
    with sandbox() as (ws, outside):
        before = tree(outside)
        log = ws.parent / "run.jsonl"

        async def go() -> LoopResult:
            model = AnthropicModel(api_key="k", base_url=messages_server.url, max_retries=2)
            try:
                return await arun(
                    "go",
                    model=model,
                    config=RunConfig(
                        cwd=str(ws), model="claude-test-1", permission_mode="acceptEdits"
                    ),
                    log=log,
                )
            finally:
                await model.aclose()

        result = asyncio.run(go())
        note(f"{result.reason} {result.error}")
        event(f"{result.reason} {(result.error or '')[:50]!a}")
        assert result.reason in ("completed", "model_error")
        if failures > 2:  # the last failure is the run's, as docs/cli.md words it
            assert len(messages_server.bodies()) == 3
            if statuses[-1][0] == 408:  # a 4xx: the error is the answer
                assert result.reason == "completed"
                assert (result.error or "").startswith("API Error: API error 408")
            else:
                assert result.reason == "model_error"
        uses = [b for m in result.messages for b in m.content if isinstance(b, ToolUseBlock)]
        answers = results_by_id(result)
        assert sorted(answers) == sorted(u.id for u in uses)
        if result.reason == "model_error":  # only a safe call may have started while streaming
            failed = model_failed(result.error or "")
            for use in uses:
                ran = use.name in ("Read", "Glob", "Grep")
                assert ran or answers[use.id].text.startswith(failed.split("(")[0])
        assert tree(outside) == before
        assert all(SECRET not in a.text for a in answers.values())
        assert replay(log).path == result.path


NOT_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E999"]
"""Numbers no JSON value holds: JSON has no NaN or Infinity (Python's parser takes them),
and 1e400 overflows a double to Infinity, which no request or log line can carry."""


@examples(20)
@given(
    tool_input=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    key=st.text(max_size=5),
    number=st.sampled_from(NOT_FINITE),
    nested=st.booleans(),
)
@example(tool_input={"command": "echo hi"}, key="timeout", number="1e400", nested=False)
def test_a_number_json_cannot_hold_is_invalid_tool_input(
    messages_server: MessagesServer,
    tool_input: dict[str, Any],
    key: str,
    number: str,
    nested: bool,
) -> None:
    """A tool input with NaN, Infinity or a number past a double's range is the model's
    invalid JSON, reported on its block: taken as is, it would be sent back in the next
    request (which no JSON encoder writes) and logged as null (which replays otherwise)."""
    placeholder = "\ue000PLACEHOLDER\ue000"
    shaped = {**tool_input, key: [placeholder] if nested else placeholder}
    raw = json.dumps(shaped).replace(json.dumps(placeholder), number)
    events = [e.encode() for e in _tool_events(raw)]
    stops, error = streamed_blocks(messages_server, [Raw(e) for e in events])
    assert error is None
    (stop,) = stops
    assert stop.block == ToolUseBlock("toolu_n", "Bash", {})
    if number.lstrip("-").startswith(("NaN", "Infinity")):  # JavaScript's parser refuses them
        assert stop.error == unparsable_input("Bash", raw)
    else:  # Claude Code reads Infinity, then fails the schema: fsm-agent says it its way
        assert stop.error is not None and stop.error.startswith("invalid JSON in tool input: ")


def _tool_events(raw: str) -> tuple[Any, ...]:
    call = {"type": "tool_use", "id": "toolu_n", "name": "Bash", "input_json": raw}
    return message_events([call], stop_reason="tool_use")


def test_a_call_with_an_infinite_number_is_refused_and_the_run_replays(
    messages_server: MessagesServer, tmp_path: Path
) -> None:
    """The run: the call is answered with the input error (not run with a timeout the log
    cannot hold), the next request goes out, and the log replays."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash",
            "input_json": '{"command": "echo hi", "timeout": 1e400}'}  # fmt: skip
    messages_server.reply(message([call], stop_reason="tool_use"), text("done"))
    ws = tmp_path / "ws"
    ws.mkdir()

    async def go() -> LoopResult:
        model = AnthropicModel(api_key="k", base_url=messages_server.url, max_retries=0)
        try:
            config = RunConfig(cwd=str(ws), model="claude-test-1", permission_mode="acceptEdits")
            return await arun("go", model=model, config=config, log=tmp_path / "run.jsonl")
        finally:
            await model.aclose()

    result = asyncio.run(go())
    assert (result.reason, result.error) == ("completed", None)
    answer = results_by_id(result)["t1"]
    assert answer.is_error
    assert answer.text.startswith("<tool_use_error>invalid JSON in tool input: ")
    assert "1e400" in answer.text  # Claude Code: Infinity, failing the schema (measured)
    sent = messages_server.bodies()[1]["messages"]
    assert sent[-2]["content"][0]["input"] == {}
    assert replay(tmp_path / "run.jsonl").path == result.path


def test_a_number_json_cannot_hold_in_a_block_start_is_invalid_tool_input(
    messages_server: MessagesServer,
) -> None:
    """A server that sends the whole input in `content_block_start`, with a NaN in it (the
    SDK's JSON parser takes it): the same input error, not an input the log cannot hold."""
    events = [e.encode() for e in _tool_events("")]
    start = next(i for i, e in enumerate(events) if b"content_block_start" in e)
    events[start] = events[start].replace(b'"input": {}', b'"input": {"timeout": NaN}')
    assert b"NaN" in events[start]
    stops, error = streamed_blocks(messages_server, [Raw(e) for e in events])
    assert error is None
    (stop,) = stops
    assert stop.block == ToolUseBlock("toolu_n", "Bash", {})
    assert stop.error == "invalid JSON in tool input: " + (
        "a number JSON cannot hold (NaN, Infinity, or past a double's range)"
    )


# --- the permission check of what the model asks to run ----------------------------

SHELL_WORDS = [
    "ls", "cat", "cd", "echo", "rm", "git", "npm", "test", "sed", "-n", "1,2p", "find",
    "-exec", "xargs", "env", "timeout", "5", "sudo", "bash", "-c", "sh", "..", "/", "~",
    "~root", "$HOME", "${HOME}", "$(", ")", "`", "'", '"', "\\", "|", "||", "&&", ";", "&",
    ">", ">>", "<", "<<", "<<<", "EOF", "\n", " ", "\t", "*", "?", "[", "]", "{", "}",
    "a.txt", "link_out", "link_secret", "../outside", "-rf", "2>&1", "&>", ">&", "#", "=",
    "x=1", "(", "!", "\\;", "--", "/etc/passwd", "/dev/null", "/proc/self/root", "é",
]  # fmt: skip
commands = (
    st.lists(st.sampled_from(SHELL_WORDS), max_size=12).map("".join)
    | st.lists(st.sampled_from(SHELL_WORDS), max_size=8).map(" ".join)
    | texts
)


BASH_RULES = [
    "Bash(ls:*)", "Bash(npm test *)", "Bash(cat *)", "Bash", "Bash(*)",
    "Bash(git * --help)", "Read(//tmp/**)", "Edit(~/x)", "Bash(:*)", "Bash(\\*)",
]  # fmt: skip


@examples(150)
@given(
    command=commands,
    mode=st.sampled_from(MODES),
    rules=st.lists(st.sampled_from(BASH_RULES), max_size=3),
)
def test_the_permission_check_judges_any_command(command: str, mode: str, rules: list[str]) -> None:
    """Any command line the model sends Bash (quotes, substitutions, redirections,
    heredocs, `cd`s and paths anywhere, left unbalanced) gets a verdict from the
    permission check, never an exception the run would end on; and in a mode that
    asks, one that names a path outside the workspace is not allowed without a rule."""
    with sandbox() as (ws, outside):
        settings_ = PermissionSettings(allow=tuple(RuleSource(r) for r in rules))
        approvals = Approvals(settings_, str(ws))
        decision = approvals.check(PermissionRequest("Bash", {"command": command}, mode))
        note(repr(decision))
        assert decision.behavior in ("allow", "ask", "deny")
        assert decision.reason
        if not rules and mode == "default" and str(outside) in command:
            assert decision.behavior != "allow"


# --- streams that break the protocol ------------------------------------------------


STOP_REASONS = [
    "end_turn", "tool_use", "max_tokens", "refusal", "model_context_window_exceeded",
    "pause_turn", "stop_sequence", "weird",
]  # fmt: skip


@st.composite
def mangled(draw: st.DrawFn) -> list[bytes]:
    """A message's events with the protocol broken (and any stop reason): events dropped,
    repeated or swapped, a field's value replaced by any JSON (a wrong type, a wrong
    block index), unknown events and deltas added."""
    _, events = draw(streamed(ascii_only=True))
    parsed = [json.loads(e.split(b"data: ", 1)[1]) for e in events]
    for data in parsed:
        if data["type"] == "message_delta":
            data["delta"]["stop_reason"] = draw(st.sampled_from(STOP_REASONS))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["drop", "repeat", "swap", "field", "unknown"]))
        at = draw(st.integers(0, len(parsed) - 1))
        if how == "drop" and len(parsed) > 1:
            del parsed[at]
        elif how == "repeat":
            parsed.insert(at, json.loads(json.dumps(parsed[at])))
        elif how == "swap":
            other = draw(st.integers(0, len(parsed) - 1))
            parsed[at], parsed[other] = parsed[other], parsed[at]
        elif how == "field":
            target = parsed[at]
            inner = [target, *(v for v in target.values() if isinstance(v, dict))]
            holder = draw(st.sampled_from(inner))
            known = st.sampled_from(sorted(holder)) if holder else st.nothing()
            key = draw(known | st.text(max_size=5))
            holder[key] = draw(json_values | st.integers(-2, 5))
        else:
            parsed.insert(at, draw(st.fixed_dictionaries(
                {"type": st.sampled_from(["content_block_delta", "weird", "ping"])},
                optional={"index": st.integers(-1, 5) | json_values,
                          "delta": st.fixed_dictionaries({"type": st.sampled_from(
                              ["text_delta", "input_json_delta", "thinking_delta",
                               "signature_delta", "citations_delta", "x"])},
                              optional={"text": json_values, "partial_json": json_values})},
            )))  # fmt: skip
    out = []
    for data in parsed:
        kind = data.get("type")
        name = kind if isinstance(kind, str) and kind.isascii() and "\n" not in kind else "x"
        out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    return out


@examples(60)
@given(events=mangled())
def test_a_stream_that_breaks_the_protocol_ends_in_a_model_error(
    messages_server: MessagesServer, events: list[bytes]
) -> None:
    """Events out of order, missing or repeated, fields of the wrong type, unknown events
    and deltas: the stream ends normally or in a `ModelCallError` (`invalid_response`
    and the like), never in another exception."""
    stops, error = streamed_blocks(messages_server, [Raw(e) for e in events])
    note(repr(error))
    assert error is None or isinstance(error, ModelCallError)
    for stop in stops:
        assert isinstance(stop.block, TextBlock | ThinkingBlock | RedactedThinkingBlock
                          | ToolUseBlock)  # fmt: skip
        if isinstance(stop.block, ToolUseBlock):
            assert isinstance(stop.block.input, dict)
            assert isinstance(stop.block.id, str) and isinstance(stop.block.name, str)


def http_run(server: MessagesServer, ws: Path, log: Path) -> LoopResult:
    """The loop with the real model against `server`, tools on `ws`, edits allowed."""

    async def go() -> LoopResult:
        model = AnthropicModel(api_key="k", base_url=server.url, max_retries=0)
        try:
            config = RunConfig(cwd=str(ws), model="claude-test-1", permission_mode="acceptEdits")
            return await arun("go", model=model, config=config, log=log)
        finally:
            await model.aclose()

    return asyncio.run(go())


@examples(25)
@given(events=mangled())
def test_a_run_whose_stream_breaks_the_protocol_ends_and_replays(
    messages_server: MessagesServer, events: list[bytes]
) -> None:
    """The whole loop on a stream that breaks the protocol: the run ends by one of the
    machine's reasons, never an exception; every tool_use in the conversation has its
    tool_result; the log replays."""
    emptied(messages_server).reply(StreamReply(tuple(Raw(e) for e in events)))  # type: ignore[arg-type]
    messages_server.reply(text("done"), text("done"), text("done"))
    with sandbox() as (ws, outside):
        before = tree(outside)
        result = http_run(messages_server, ws, ws.parent / "run.jsonl")
        note(f"{result.reason} {result.error}")
        assert result.reason in {t.value for t in Terminal}
        uses = [b for m in result.messages for b in m.content if isinstance(b, ToolUseBlock)]
        assert sorted(results_by_id(result)) == sorted(u.id for u in uses)
        assert tree(outside) == before
        assert replay(ws.parent / "run.jsonl").path == result.path


@examples(20)
@given(turn=faulty_turn(), data=st.data())
def test_an_overloaded_stream_switches_to_the_fallback_and_drops_its_calls(
    messages_server: MessagesServer,
    turn: tuple[list[Any], list[bytes], list[bytes]],
    data: st.DataObject,
) -> None:
    """A turn of real tool calls broken anywhere by an `overloaded_error` event, with a
    fallback model set: the failed message and its calls are dropped (none that changes
    a file ran), the fallback answers, every tool_use left in the conversation has its
    tool_result, and the log replays."""
    kept = [e for e in turn[1] if not e.startswith(b"event: error")]
    at = data.draw(st.integers(1, len(kept)), label="error at")
    assume(not any(e.startswith(b"event: message_stop") for e in kept[:at]))  # else whole
    events = [*kept[:at], error_event("overloaded_error")]
    emptied(messages_server).reply(StreamReply(tuple(Raw(e) for e in events)), text("done"))
    with sandbox() as (ws, outside):
        before = tree(outside)
        log = ws.parent / "run.jsonl"

        async def go() -> LoopResult:
            model = AnthropicModel(api_key="k", base_url=messages_server.url, max_retries=0)
            config = RunConfig(
                cwd=str(ws),
                model="claude-test-1",
                fallback_model="claude-test-2",
                permission_mode="acceptEdits",
            )
            try:
                return await arun("go", model=model, config=config, log=log)
            finally:
                await model.aclose()

        result = asyncio.run(go())
        note(f"{result.reason} {result.error} {[s.edge for s in result.path]}")
        assert result.reason == "completed", result.error
        assert "model_fallback" in [s.edge for s in result.path]
        assert [b["model"] for b in messages_server.bodies()] == ["claude-test-1", "claude-test-2"]
        uses = [b for m in result.messages for b in m.content if isinstance(b, ToolUseBlock)]
        assert uses == []
        assert results_by_id(result) == {}
        assert not (ws / "new.txt").exists()
        assert (ws / "a.txt").read_text() == "alpha\nbeta\n"
        assert tree(outside) == before
        assert replay(log).path == result.path


@examples(20)
@given(
    calls=st.lists(st.sampled_from(CALLS), min_size=1, max_size=3),
    cut=st.floats(0, 1, exclude_max=True),
    stop_reason=st.sampled_from(["max_tokens", "model_context_window_exceeded"]),
)
def test_a_call_cut_by_the_output_limit_is_never_run(
    messages_server: MessagesServer,
    calls: list[tuple[str, dict[str, Any]]],
    cut: float,
    stop_reason: str,
) -> None:
    """A turn whose output limit cut its last call's JSON anywhere: that call is never
    run, and stays in the conversation with its input's error as its result (as Claude
    Code 2.1.x answers it); the calls before it are answered, and the log replays."""
    blocks: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"t{n}", "name": name, "input": tool_input}
        for n, (name, tool_input) in enumerate(calls)
    ]
    raw = json.dumps(blocks[-1].pop("input"))
    blocks[-1]["input_json"] = raw[: max(1, int(len(raw) * cut))]  # "" would be {}
    emptied(messages_server).reply(
        StreamReply(message_events(blocks, stop_reason=stop_reason)), text("done"), text("done")
    )
    with sandbox() as (ws, outside):
        before = tree(outside)
        result = http_run(messages_server, ws, ws.parent / "run.jsonl")
        assert result.reason == "completed", result.error
        uses = [b for m in result.messages for b in m.content if isinstance(b, ToolUseBlock)]
        cut_id = blocks[-1]["id"]
        answers = results_by_id(result)
        assert cut_id in [u.id for u in uses]
        assert sorted(answers) == sorted(u.id for u in uses)
        assert answers[cut_id].is_error
        if calls[-1][0] == "Write" and all(name != "Write" for name, _ in calls[:-1]):
            assert not (ws / "new.txt").exists()
        assert tree(outside) == before
        assert replay(ws.parent / "run.jsonl").path == result.path


def patched(original: str, hunks: list[dict[str, Any]]) -> str:
    """`original` with Claude Code's `structuredPatch` hunks applied, as `patch` would,
    checking every context and removed line against it."""
    old = [p + "\n" for p in original.split("\n")[:-1]] + (
        [original.split("\n")[-1]] if original.split("\n")[-1] else []
    )
    out: list[str] = []
    at, previous = 0, ""
    for hunk in hunks:
        start = hunk["oldStart"] - 1 if hunk["oldLines"] else hunk["oldStart"]
        out += old[at:start]
        at = start
        for line in hunk["lines"]:
            if line == NO_NEWLINE:
                if out and previous == "+":
                    out[-1] = out[-1].removesuffix("\n")
                continue
            previous, body = line[0], line[1:]
            if previous in " -":
                assert old[at].removesuffix("\n") == body
                if previous == " ":
                    out.append(old[at])
                at += 1
            else:
                out.append(body + "\n")
    return "".join(out + old[at:])


@examples(100)
@given(original=lf_text | unicode_text, updated=lf_text | unicode_text)
def test_the_patch_hooks_are_given_turns_the_old_text_into_the_new(
    original: str, updated: str
) -> None:
    """The `structuredPatch` a PostToolUse hook gets for a Write or an Edit, applied to
    the file as it was, gives the file as it is."""
    assert patched(original, structured_patch(original, updated)) == updated


grep_lines = st.lists(st.text(st.sampled_from("abAB é\t"), max_size=8), max_size=6)


@examples(60)
@given(
    files=st.lists(st.tuples(grep_lines, st.booleans(), st.booleans()), min_size=1, max_size=3),
    needle=st.sampled_from(["a", "b", "ab", "é", " ", "A"]),
    ignore_case=st.booleans(),
    mode=st.sampled_from(["content", "count", "files_with_matches"]),
)
def test_grep_finds_the_lines_a_search_of_each_line_finds(
    files: list[tuple[list[str], bool, bool]], needle: str, ignore_case: bool, mode: str
) -> None:
    """Grep in each mode reports what `re.search` on each line of each file finds: the
    lines split on LF (a CR before it dropped), numbered from 1, files in name order."""
    with sandbox() as (ws, _):
        where = ws / "g"
        where.mkdir()
        expected: list[str] = []
        counts: list[str] = []
        regex = re.compile(re.escape(needle), re.IGNORECASE if ignore_case else 0)
        for n, (lines, crlf, final) in enumerate(files):
            eol = "\r\n" if crlf else "\n"
            (where / f"f{n}.txt").write_text(eol.join(lines) + (eol if final else ""), newline="")
            hits = [(i, line) for i, line in enumerate(lines, 1) if regex.search(line)]
            expected += [f"{where}/f{n}.txt:{i}:{line}" for i, line in hits]
            counts += [f"{where}/f{n}.txt:{len(hits)}"] if hits else []
        tool_input = {"pattern": re.escape(needle), "path": str(where), "output_mode": mode,
                      "-i": ignore_case}  # fmt: skip
        outcome = run_tool(GrepTool(), tool_input, ToolEnv(cwd=str(ws)))
        assert not outcome.is_error, result_text(outcome)
        shown = result_text(outcome).split("\n")
        if not expected:
            assert shown == ["No files found" if mode == "files_with_matches" else "No matches"
                             " found"]  # fmt: skip
        elif mode == "content":
            assert shown == expected
        elif mode == "count":
            assert shown[: len(counts)] == counts
        else:
            assert sorted(shown[1:]) == sorted(c.rsplit(":", 1)[0] for c in counts)
