"""A workspace's repository whose config makes git run programs: its git commands are
not read-only (asked about, so denied without a terminal), and the program never runs;
a repository that configures none keeps `git status` read-only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fsm_agent.app.session import run_scenario
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.live.git_config import repository_programs
from fsm_agent.live.scripted import Scenario


def repo(path: Path, config: str = "") -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True)
    (path / "a.txt").write_text("b\n")
    with open(path / ".git" / "config", "a") as f:
        f.write(config)
    return path


def bash_results(ws: Path, tmp_path: Path, command: str, mode: str = "default") -> ToolResultBlock:
    use = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": command}}
    scenario = Scenario.parse(
        {
            "prompt": "look",
            "config": {"permission_mode": mode},
            "turns": [{"content": [use]}, {"content": [{"type": "text", "text": "ok"}]}],
        }
    )
    log = tmp_path / f"{mode}.jsonl"
    result = run_scenario(scenario, cwd=ws, log=log)
    [res] = [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]
    return res


@pytest.mark.parametrize(
    ("config", "command", "setting"),
    [
        ('[core]\n\tfsmonitor = "touch {pwned}; false"\n', "git status", "core.fsmonitor"),
        ('[diff]\n\texternal = "touch {pwned}"\n', "git diff", "diff.external"),
        (
            '[diff "t"]\n\ttextconv = "touch {pwned}; cat"\n',
            "git log -p",
            "diff.t.textconv",
        ),
        ('[filter "f"]\n\tclean = "touch {pwned}; cat"\n', "git status", "filter.f.clean"),
        ('[include]\n\tpath = "../elsewhere"\n', "git status", "include.path"),
        ("[Core]\n\tHooksPath = hooks\n", "git status", "core.hookspath"),
    ],
)
def test_git_configured_to_run_programs_is_not_read_only(
    tmp_path: Path, config: str, command: str, setting: str
) -> None:
    pwned = tmp_path / "pwned"
    ws = repo(tmp_path / "ws", config.format(pwned=pwned))
    (ws / ".gitattributes").write_text("*.txt diff=t filter=f\n")
    assert setting in repository_programs(str(ws))
    res = bash_results(ws, tmp_path, command)
    assert res.is_error
    assert "git configuration runs programs" in res.text
    assert not pwned.exists()
    assert bash_results(ws, tmp_path, command, "plan").is_error
    assert not pwned.exists()


def test_a_dot_git_file_pointing_elsewhere_is_not_read_only(tmp_path: Path) -> None:
    elsewhere = repo(tmp_path / "elsewhere", '[core]\n\tfsmonitor = "touch pwned"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    assert repository_programs(str(ws / "sub"))
    assert bash_results(ws, tmp_path, "git log").is_error


def test_a_repository_that_runs_nothing_keeps_read_only_git(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws", "[core]\n\tfsmonitor = false\n[user]\n\tname = x\n")
    assert repository_programs(str(ws)) == ()
    res = bash_results(ws, tmp_path, "git status --short")
    assert not res.is_error, res.text
    assert "a.txt" in res.text
