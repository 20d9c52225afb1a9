"""PostToolUse hooks get Claude Code's structured `tool_response` for each tool."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fsm_agent.app.session import replay
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.engine import tool_executor
from fsm_agent.tools import default_tools
from fsm_agent.tools.patch import structured_patch
from tests.conftest import ROOT
from tests.support.cli import fsm
from tests.support.hooks import CALLS, PNG, hooked_run


def test_each_tool_gives_a_post_tool_use_hook_claude_codes_tool_response(
    workspace: Path, tmp_path: Path
) -> None:
    _, sent, _ = hooked_run(workspace, tmp_path)
    path = os.path.join(os.path.realpath(workspace), "a.txt")

    write = sent["t1"]["tool_response"]
    assert write["type"] == "create"
    assert write["filePath"] == path
    assert write["content"] == "one\ntwo\nthree\n"
    assert write["structuredPatch"] == []
    assert write["originalFile"] is None
    assert set(write) == {"type", "filePath", "content", "structuredPatch", "originalFile"}

    read = sent["t2"]["tool_response"]
    assert read["type"] == "text"
    assert read["file"]["filePath"] == path
    assert read["file"]["content"] == "one\ntwo\nthree\n"
    # the empty line after the final newline counts, as in Claude Code
    assert read["file"]["numLines"] == 4
    assert read["file"]["startLine"] == 1
    assert read["file"]["totalLines"] == 4
    assert set(read) == {"type", "file"}

    edit = sent["t3"]["tool_response"]
    assert edit["filePath"] == path
    assert edit["oldString"] == "two"
    assert edit["newString"] == "TWO"
    assert edit["originalFile"] == "one\ntwo\nthree\n"
    assert edit["structuredPatch"] == [
        {
            "oldStart": 1,
            "oldLines": 3,
            "newStart": 1,
            "newLines": 3,
            "lines": [" one", "-two", "+TWO", " three"],
        }
    ]
    assert edit["userModified"] is False
    assert edit["replaceAll"] is False

    update = sent["t4"]["tool_response"]
    assert update["type"] == "update"
    assert update["filePath"] == path
    assert update["content"] == "one\nTWO\nfour\n"
    assert update["originalFile"] == "one\nTWO\nthree\n"
    assert update["structuredPatch"] == [
        {
            "oldStart": 1,
            "oldLines": 3,
            "newStart": 1,
            "newLines": 3,
            "lines": [" one", " TWO", "-three", "+four"],
        }
    ]

    bash = sent["t5"]["tool_response"]
    assert bash == {"stdout": "out\nerr", "stderr": "", "interrupted": False, "isImage": False,
                    "noOutputExpected": False}  # fmt: skip

    glob = sent["t6"]["tool_response"]
    assert glob["filenames"] == [path]
    assert glob["numFiles"] == 1
    assert glob["truncated"] is False
    assert isinstance(glob["durationMs"], int) and glob["durationMs"] >= 0

    grep = sent["t7"]["tool_response"]
    assert grep == {"mode": "files_with_matches", "numFiles": 1, "filenames": [path]}

    lines = sent["t8"]["tool_response"]
    assert lines["mode"] == "content"
    assert lines["numFiles"] == 1
    assert lines["filenames"] == []
    assert lines["content"] == f"{path}:1:one\n{path}:3:four"
    assert lines["numLines"] == 2

    assert sent["t1"]["tool_input"] == {"file_path": path, "content": "one\ntwo\nthree\n"}


def test_a_run_whose_hooks_got_tool_responses_replays_with_check(
    workspace: Path, tmp_path: Path
) -> None:
    result, _, log = hooked_run(workspace, tmp_path)
    tools = [json.loads(line) for line in log.read_text().splitlines() if '"name":"tool"' in line]
    assert len(tools) == len(CALLS) and all("response" in t["result"] for t in tools)
    schema = json.loads((ROOT / "docs" / "log-format.schema.json").read_text())
    for line in log.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)
    bad = {**tools[0], "result": {**tools[0]["result"], "response": "text"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert replay(log).path == result.path
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr
    assert "steps match" in check.stdout


def test_post_tool_use_hooks_get_the_recorded_duration_in_ms(
    workspace: Path, tmp_path: Path
) -> None:
    """`duration_ms`, as Claude Code sends it, is the tool effect's recorded duration,
    so a replay asks the hook with the same payload (its digest is checked)."""
    _, sent, log = hooked_run(workspace, tmp_path)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    ran = {
        r["args"]["id"]: r["result"].get("duration_s", 0.0)
        for r in records
        if r.get("name") == "tool"
    }
    assert set(ran) == set(sent)
    assert {k: p["duration_ms"] for k, p in sent.items()} == {
        k: round(s * 1000) for k, s in ran.items()
    }
    assert any(s > 0 for s in ran.values())


def test_a_log_written_before_the_field_still_replays(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `response` in the tool effect, hooks get the result's text, as before."""
    real_env = tool_executor.ToolEnv

    def no_response(**kw: Any) -> ToolEnv:
        return real_env(**{**kw, "wants_response": False})

    monkeypatch.setattr(tool_executor, "ToolEnv", no_response)
    result, sent, log = hooked_run(workspace, tmp_path)
    monkeypatch.undo()
    assert sent["t5"]["tool_response"] == "out\nerr"
    assert '"response"' not in log.read_text()
    assert replay(log).path == result.path
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr


def _run(name: str, tool_input: dict[str, Any], cwd: Path, **env: Any) -> ToolOutcome:
    tool = default_tools()[name]
    return asyncio.run(tool.run(tool_input, ToolEnv(cwd=str(cwd), **env)))


def test_no_response_is_built_unless_a_hook_wants_it(workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    read = _run("Read", {"file_path": "a.txt"}, workspace)
    fresh = {str(workspace / "a.txt"): os.stat(workspace / "a.txt").st_mtime}
    outcomes = [
        read,
        _run(
            "Edit",
            {"file_path": "a.txt", "old_string": "x", "new_string": "y"},
            workspace,
            read_files=fresh,
        ),
        _run("Write", {"file_path": "b.txt", "content": "z"}, workspace),
        _run("Bash", {"command": "true"}, workspace),
        _run("Glob", {"pattern": "*"}, workspace),
        _run("Grep", {"pattern": "y"}, workspace),
    ]
    assert [o.is_error for o in outcomes] == [False] * 6
    assert [o.response for o in outcomes] == [None] * 6


def test_read_response_of_a_page_counts_the_whole_file(workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {n}\r\n" for n in range(1, 11)) + "end")
    out = _run(
        "Read", {"file_path": "long.txt", "offset": 3, "limit": 2}, workspace, wants_response=True
    )
    assert out.response is not None
    assert out.response["file"] == {
        "filePath": str(workspace / "long.txt"),
        "content": "line 3\r\nline 4\r\n",
        "numLines": 2,
        "startLine": 3,
        "totalLines": 11,
    }
    empty = workspace / "empty.txt"
    empty.write_text("")
    out = _run("Read", {"file_path": "empty.txt"}, workspace, wants_response=True)
    assert out.response == {
        "type": "text",
        "file": {
            "filePath": str(empty),
            "content": "",
            "numLines": 0,
            "startLine": 1,
            "totalLines": 0,
        },
    }


def test_read_response_of_an_image(workspace: Path) -> None:
    (workspace / "dot.png").write_bytes(PNG)
    out = _run("Read", {"file_path": "dot.png"}, workspace, wants_response=True)
    assert out.response == {
        "type": "image",
        "file": {
            "base64": base64.b64encode(PNG).decode(),
            "type": "image/png",
            "originalSize": len(PNG),
        },
    }


def test_glob_response_says_when_it_is_truncated(workspace: Path) -> None:
    for n in range(105):
        (workspace / f"f{n:03}.txt").write_text("")
    out = _run("Glob", {"pattern": "*.txt"}, workspace, wants_response=True)
    assert out.response is not None
    assert out.response["numFiles"] == 100 and len(out.response["filenames"]) == 100
    assert out.response["truncated"] is True
    none = _run("Glob", {"pattern": "*.md"}, workspace, wants_response=True)
    assert none.response is not None
    assert (none.response["filenames"], none.response["numFiles"]) == ([], 0)


def test_grep_response_in_count_mode_and_with_paging(workspace: Path) -> None:
    for name, text in (("a.txt", "hit\nhit\nmiss\n"), ("b.txt", "hit\n"), ("c.txt", "no\n")):
        (workspace / name).write_text(text)
    out = _run("Grep", {"pattern": "hit", "output_mode": "count"}, workspace, wants_response=True)
    assert out.response is not None
    a, b = (str(workspace / n) for n in ("a.txt", "b.txt"))
    assert out.response["mode"] == "count"
    assert out.response["numFiles"] == 2
    assert out.response["filenames"] == []
    assert sorted(out.response["content"].split("\n")) == [f"{a}:2", f"{b}:1"]
    assert out.response["numMatches"] == 3
    (workspace / "d.txt").write_text("hit\n")
    paged = _run(
        "Grep", {"pattern": "hit", "head_limit": 1, "offset": 1}, workspace, wants_response=True
    )
    assert paged.response is not None
    assert paged.response["numFiles"] == 1 and len(paged.response["filenames"]) == 1
    assert (paged.response["appliedLimit"], paged.response["appliedOffset"]) == (1, 1)
    last = _run(
        "Grep", {"pattern": "hit", "head_limit": 1, "offset": 2}, workspace, wants_response=True
    )
    assert last.response is not None
    assert "appliedLimit" not in last.response, "as in Claude Code: only a limit that cut"
    assert last.response["appliedOffset"] == 2


@pytest.mark.parametrize(
    ("old", "new", "hunks"),
    [
        ("a\nb", "a\nb\n", [(1, 2, 1, 2, [" a", "-b", "\\ No newline at end of file", "+b"])]),
        ("", "x\ny\n", [(0, 0, 1, 2, ["+x", "+y"])]),
        ("x\n", "", [(1, 1, 0, 0, ["-x"])]),
        ("same\n", "same\n", []),
        (
            "".join(f"{n}\n" for n in range(1, 21)),
            "".join(f"{n}\n" for n in range(1, 21))
            .replace("2\n", "two\n", 1)
            .replace("19\n", "nineteen\n"),
            [
                (1, 5, 1, 5, [" 1", "-2", "+two", " 3", " 4", " 5"]),
                (16, 5, 16, 5, [" 16", " 17", " 18", "-19", "+nineteen", " 20"]),
            ],
        ),
    ],
)
def test_structured_patch_hunks(old: str, new: str, hunks: list[tuple[Any, ...]]) -> None:
    keys = ("oldStart", "oldLines", "newStart", "newLines", "lines")
    assert structured_patch(old, new) == [dict(zip(keys, h, strict=True)) for h in hunks]


def test_grep_response_lists_only_what_the_capped_result_shows(workspace: Path) -> None:
    for n in range(400):
        (workspace / f"{n:03}{'x' * 100}.txt").write_text("hit\n")
    out = _run("Grep", {"pattern": "hit"}, workspace, wants_response=True)
    assert out.response is not None and isinstance(out.content, str)
    shown = out.content.split("\n")[1:]
    names = out.response["filenames"]
    assert 0 < len(names) < 400
    assert names == shown[: len(names)]
    assert shown[len(names)].startswith("[Output truncated")
    assert out.response["numFiles"] == len(names)
