"""The read-before-write rule as Claude Code 2.1.332 has it (measured by the conformance
suite): which unread files Edit and Write may change, a touch that is no change, an
Edit over a change since the read."""

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.core.tool import Tool, ToolCall, ToolEnv, ToolOutcome
from fsm_agent.live.approvals import Approvals
from fsm_agent.live.effects import LiveEffects
from fsm_agent.tools.edit import EditTool
from fsm_agent.tools.read import ReadTool
from fsm_agent.tools.read_state import STALE_NOTE, canonical_model, reads_first
from fsm_agent.tools.write import WriteTool
from tests.support.tools import NoModel, after, text

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = "File has been modified since read, either by the user or by a linter."
SRC = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "app.py").write_text(SRC)
    return tmp_path / "ws"


def run(
    tool: Tool, input: dict[str, Any], env: ToolEnv, settings: PermissionSettings | None = None
) -> ToolOutcome:
    """The call as a live run makes it, judged in the workspace `env.cwd`."""
    approvals = Approvals(settings or PermissionSettings(), env.cwd, mode=env.permission_mode)
    effects = LiveEffects(NoModel(), {tool.name: tool}, approvals=approvals)
    return asyncio.run(effects.run_tool(ToolCall("toolu_test", tool.name, input), env))


def env_in(ws: Path, model: str = "claude-sonnet-4-6", mode: str = "acceptEdits") -> ToolEnv:
    return ToolEnv(cwd=str(ws), model=model, permission_mode=mode)


def edit(ws: Path, old: str = "a - b", new: str = "a + b") -> dict[str, Any]:
    return {"file_path": str(ws / "app.py"), "old_string": old, "new_string": new}


def write(ws: Path, content: str = "x = 2\n") -> dict[str, Any]:
    return {"file_path": str(ws / "app.py"), "content": content}


def read_then(ws: Path, env: ToolEnv) -> ToolEnv:
    return after(env, run(ReadTool(), {"file_path": str(ws / "app.py")}, env))


def later(path: Path) -> None:
    """Move `path`'s mtime on, as a `touch` a moment later does."""
    stamp = os.stat(path).st_mtime + 5
    os.utime(path, (stamp, stamp))


@pytest.mark.parametrize(
    ("model", "canonical"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("eu.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("CLAUDE-SONNET-4-5[1m]", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4-0"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("claude-opus-4-7", "claude-opus-4-7"),
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
    ],
)
def test_model_ids_reduce_to_the_clis_canonical_names(model: str, canonical: str) -> None:
    assert canonical_model(model) == canonical


def test_the_read_first_list_is_the_clis() -> None:
    assert reads_first("claude-haiku-4-5") and reads_first("claude-opus-4-6")
    assert reads_first("claude-sonnet-4-5-20250929")
    assert not reads_first("claude-sonnet-4-6") and not reads_first("claude-opus-4-7")


def test_write_over_an_unread_file_the_model_could_read_goes_through(ws: Path) -> None:
    out = run(WriteTool(), write(ws), env_in(ws))
    assert not out.is_error, out.content
    assert (ws / "app.py").read_text() == "x = 2\n"


def test_edit_of_an_unread_file_applies_and_says_it_was_not_in_context(ws: Path) -> None:
    env = evolve(env_in(ws), wants_response=True)
    out = run(EditTool(), edit(ws), env)
    assert not out.is_error, out.content
    assert (ws / "app.py").read_text() == SRC.replace("a - b", "a + b")
    assert out.response is not None and out.response["contentNotInModelContext"] is True
    assert "staleRecovered" not in out.response
    assert out.seen == {str(ws / "app.py"): ""}


@pytest.mark.parametrize("model", ["claude-sonnet-4-5-20250929", "claude-haiku-4-5"])
def test_a_read_first_model_must_read_before_writing_or_editing(ws: Path, model: str) -> None:
    for tool, input in ((WriteTool(), write(ws)), (EditTool(), edit(ws))):
        out = run(tool, input, env_in(ws, model))
        assert out.is_error and NOT_READ in text(out)
    assert (ws / "app.py").read_text() == SRC


def test_a_read_rule_that_asks_makes_the_model_read_first(ws: Path) -> None:
    asks = PermissionSettings(ask=(RuleSource("Read(./app.py)", str(ws), "test"),))
    out = run(WriteTool(), write(ws), env_in(ws), asks)
    assert out.is_error and NOT_READ in text(out)


def test_an_edit_of_an_unread_file_whose_old_string_is_absent_says_so(ws: Path) -> None:
    out = run(EditTool(), edit(ws, old="a * b"), env_in(ws))
    assert out.is_error and "String to replace not found in file." in text(out)


def test_a_touch_since_the_read_is_no_change(ws: Path) -> None:
    env = read_then(ws, env_in(ws, "claude-haiku-4-5", "bypassPermissions"))
    later(ws / "app.py")
    out = run(WriteTool(), write(ws), env)
    assert not out.is_error, out.content
    assert (ws / "app.py").read_text() == "x = 2\n"


def test_a_write_after_a_change_since_the_read_is_refused(ws: Path) -> None:
    env = read_then(ws, env_in(ws, mode="bypassPermissions"))
    (ws / "app.py").write_text(SRC + "x = 1\n")
    later(ws / "app.py")
    out = run(WriteTool(), write(ws), env)
    assert out.is_error and MODIFIED in text(out)
    assert (ws / "app.py").read_text() == SRC + "x = 1\n"


def test_an_edit_after_a_change_applies_with_the_clis_note(ws: Path) -> None:
    env = evolve(read_then(ws, env_in(ws, mode="bypassPermissions")), wants_response=True)
    (ws / "app.py").write_text(SRC + "x = 1\n")
    later(ws / "app.py")
    out = run(EditTool(), edit(ws), env)
    assert not out.is_error, out.content
    assert text(out) == f"The file {ws / 'app.py'} has been updated successfully.{STALE_NOTE}"
    assert (ws / "app.py").read_text() == SRC.replace("a - b", "a + b") + "x = 1\n"
    assert out.response is not None
    assert out.response["staleRecovered"] is True
    assert out.response["contentNotInModelContext"] is True


def test_an_edit_after_a_change_that_took_its_old_string_is_refused(ws: Path) -> None:
    env = read_then(ws, env_in(ws, mode="bypassPermissions"))
    (ws / "app.py").write_text(SRC.replace("a - b", "a * b"))
    later(ws / "app.py")
    out = run(EditTool(), edit(ws), env)
    assert out.is_error and MODIFIED in text(out)


def test_a_whole_read_remembers_the_text_and_a_partial_one_does_not(ws: Path) -> None:
    env = env_in(ws)
    whole = run(ReadTool(), {"file_path": str(ws / "app.py")}, env)
    part = run(ReadTool(), {"file_path": str(ws / "app.py"), "offset": 2, "limit": 1}, env)
    assert set(whole.seen) == {str(ws / "app.py")}
    assert part.seen == {}


def test_an_edit_after_a_whole_read_is_in_the_models_context(ws: Path) -> None:
    env = evolve(read_then(ws, env_in(ws)), wants_response=True)
    out = run(EditTool(), edit(ws), env)
    assert out.response is not None and "contentNotInModelContext" not in out.response
    assert out.seen[str(ws / "app.py")] != ""
