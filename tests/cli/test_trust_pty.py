"""The trust question in a terminal, as a user answers it: an interactive session in a
folder the state file does not trust asks first, as Claude Code 2.1.332's first run in
a folder does (measured in a pseudo-terminal: "Quick safety check: Is this a project you
created or one you trust?", "No, exit" first; Yes writes
`projects[<git root or folder>].hasTrustDialogAccepted: true` to `.claude.json`; No
exits 1 with nothing started). A run given its PROMPT never asks, as `claude -p`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pexpect
import pytest

from fsm_agent.live.claude_home import UserFiles
from fsm_agent.live.settings import SettingsError, accept_trust, project_key
from tests.support.pty import leave, spawn

TOUCH = {"type": "tool_use", "id": "toolu_t", "name": "Bash", "input": {"command": "touch made"}}
ASKED = "Quick safety check: Is this a project you created or one you trust?"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """An untrusted workspace whose own settings allow `touch`, a scenario that touches,
    and a config directory of its own."""
    ws, config = tmp_path / "ws", tmp_path / "config"
    (ws / ".claude").mkdir(parents=True)
    config.mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(touch:*)"]}})
    )
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"turns": [{"content": [TOUCH]}, {"content": "done"}]}))
    return {"ws": ws, "config": config, "scenario": scenario, "root": tmp_path}


def chat(world: dict[str, Path], **env: str) -> pexpect.spawn:
    args = ["chat", "--scripted", str(world["scenario"]), "--cwd", str(world["ws"])]
    return spawn(
        args, world["ws"], trusted=False, env={"CLAUDE_CONFIG_DIR": str(world["config"]), **env}
    )


def state(world: dict[str, Path]) -> dict:
    path = world["config"] / ".claude.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_yes_trusts_the_folder_for_good_and_its_settings_apply(world: dict[str, Path]) -> None:
    child = chat(world)
    child.expect(ASKED)
    child.expect(r"\[y\] Yes, I trust this folder  \[n\] No, exit")
    child.sendline("y")
    child.expect("› ")
    child.sendline("touch it")
    child.expect("done")
    child.expect("› ")
    assert leave(child) == 0
    assert (world["ws"] / "made").exists()  # the workspace's allow rule applied: no question
    entry = state(world)["projects"][str(world["ws"].resolve())]
    assert entry == {"hasTrustDialogAccepted": True}
    assert (world["config"] / ".claude.json").stat().st_mode & 0o777 == 0o600
    (world["ws"] / "made").unlink()
    again = chat(world)  # asked once: the next session starts at the prompt
    index = again.expect([ASKED, "› "])
    assert index == 1
    assert leave(again) == 0


@pytest.mark.parametrize("answer", ["", "n", "\x04"])
def test_no_or_nothing_exits_1_before_anything_starts(world: dict[str, Path], answer: str) -> None:
    child = chat(world)
    child.expect(ASKED)
    child.expect(r"No, exit")
    if answer == "\x04":
        child.sendeof()
    else:
        child.sendline(answer)
    child.expect("the session did not start: this folder isn't trusted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "Traceback" not in child.before
    assert state(world) == {}
    assert not (world["ws"] / ".fsm-agent").exists()  # no session log: nothing ran


def test_the_home_folder_is_trusted_for_the_session_only(world: dict[str, Path]) -> None:
    child = chat(world, HOME=str(world["ws"]))
    child.expect("This is your home folder, so Yes lasts for this session only.")
    child.sendline("y")
    child.expect("› ")
    assert leave(child) == 0
    assert state(world) == {}


def test_a_run_given_its_prompt_never_asks(world: dict[str, Path]) -> None:
    args = ["run", "--scripted", str(world["scenario"]), "--cwd", str(world["ws"]), "go"]
    child = spawn(args, world["ws"], trusted=False, env={"CLAUDE_CONFIG_DIR": str(world["config"])})
    child.expect(r"Allow\?")  # the workspace's allow rule is not honoured: asked
    seen = child.before
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert ASKED not in seen and "not been trusted" in seen
    assert not (world["ws"] / "made").exists() and state(world) == {}


def test_the_key_is_the_git_root_and_the_rest_of_the_file_is_kept(tmp_path: Path) -> None:
    repo, config = tmp_path / "repo", tmp_path / "config"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert project_key(str(repo / "sub")) == str(repo.resolve())
    assert project_key(str(tmp_path)) == str(tmp_path.resolve())
    config.mkdir()
    user = UserFiles.at(config)
    user.state_file.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {"a": 1}}}))
    accept_trust(str(repo / "sub"), user)
    assert json.loads(user.state_file.read_text()) == {
        "numStartups": 3,
        "projects": {"/x": {"a": 1}, str(repo.resolve()): {"hasTrustDialogAccepted": True}},
    }
    user.state_file.write_text("[1]")
    with pytest.raises(SettingsError, match="not a state file"):
        accept_trust(str(repo), user)
    assert user.state_file.read_text() == "[1]"
