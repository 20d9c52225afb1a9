"""The Python API given a bad argument: a clear exception before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_agent.config import RunConfig
from fsm_agent.scripted import Scenario, ScriptedModel
from fsm_agent.session import run, run_scenario

WRITES = Scenario.parse(
    {
        "prompt": "go",
        "config": {"permission_mode": "acceptEdits"},
        "turns": [
            {"content": [{"type": "tool_use", "id": "t1", "name": "Write",
                          "input": {"file_path": "a.txt", "content": "x"}}]},
            {"content": "done"},
        ],
    }
)  # fmt: skip


def test_a_workspace_that_does_not_exist_is_refused_not_created(tmp_path: Path) -> None:
    """The command line refuses such a `--cwd`; the API made the directory (for the
    log, or for Write) and ran there, a misspelt path quietly becoming a new workspace."""
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError, match=r"the workspace .*/no/such does not exist"):
        run_scenario(WRITES, cwd=missing)
    config = RunConfig(cwd=str(missing), permission_mode="acceptEdits")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        run("go", model=ScriptedModel(WRITES), config=config, keep_log=False)
    assert not (tmp_path / "no").exists()


def test_a_workspace_that_is_a_file_is_refused(tmp_path: Path) -> None:
    afile = tmp_path / "f"
    afile.write_text("keep")
    with pytest.raises(NotADirectoryError, match=r"the workspace .*/f is not a directory"):
        run_scenario(WRITES, cwd=afile, keep_log=False)
    assert afile.read_text() == "keep"
