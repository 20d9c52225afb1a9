"""`CLAUDE_ENV_FILE`: what a SessionStart hook writes there, the session's Bash commands
see, in later runs of the conversation and after a `--resume` too; a replay touches none
of it, and the file stays out of reach of the model's tools."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import replay, run_scenario
from fsm_agent.cli.launch import Plan
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import ToolResultBlock, user
from fsm_agent.hooks.commands import parse_hooks
from fsm_agent.live.scripted import Scenario, ScriptedModel
from tests.support.cli import fsm
from tests.support.logs import reseal
from tests.support.trust import trust

APPEND = 'echo \'export GREETING="hello there"\' >> "$CLAUDE_ENV_FILE"'
SHOW = "printenv GREETING || echo unset"
"""The variable as the model's command sees it: a `$GREETING` would be asked about (the
permission check cannot know its value), `printenv` is judged as any command."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_ENV_FILE", raising=False)
    return home


def session_start(*commands: str) -> dict[str, Any]:
    hooks = [{"type": "command", "command": c} for c in commands]
    return {"hooks": {"SessionStart": [{"hooks": hooks}]}, "permissions": {"allow": ["Bash"]}}


def bash_turns(*commands: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"content": [{"type": "tool_use", "id": f"b{n}", "name": "Bash", "input": {"command": c}}]}
        for n, c in enumerate(commands)
    ]
    return [*turns, {"content": [{"type": "text", "text": "done"}]}]


def results(result: Any) -> list[ToolResultBlock]:
    return [b for m in result.messages.items for b in m.content if isinstance(b, ToolResultBlock)]


def run(ws: Path, log: Path, settings: dict[str, Any], *commands: str, **kw: Any) -> Any:
    data = {"prompt": "go", "settings": settings, "turns": bash_turns(*commands)}
    return run_scenario(Scenario.parse(data), cwd=ws, log=log, **kw)


def test_a_session_start_hook_sets_variables_for_the_sessions_commands(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "run.jsonl"
    result = run(workspace, log, session_start(APPEND), SHOW, "printenv | grep -c '^GREETING='")
    first, second = results(result)
    assert (first.content, first.is_error) == ("hello there", False)
    assert second.content == "1", "exported to the command's children"
    env_file = home / ".claude" / "session-env" / result.session_id / "sessionstart-hook-0.sh"
    assert env_file.read_text() == 'export GREETING="hello there"\n'
    assert sorted(p.name for p in workspace.iterdir()) == [], "nothing in the workspace"
    header = json.loads(log.read_text().splitlines()[0])
    assert header["config"]["session_env"] == str(env_file.parent)
    shutil.rmtree(home / ".claude")  # a replay neither reads nor writes the file
    assert replay(log).path == result.path
    assert not (home / ".claude").exists()
    check = fsm("replay", "--check", str(log))
    assert check.returncode == 0, check.stderr


def test_each_hook_has_its_own_file_sourced_in_the_hooks_order(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    """`sessionstart-hook-<n>.sh`, n the hook's place among those that matched; a hook
    that never wrote leaves no file, and a session whose hooks wrote nothing no directory."""
    silent = run(workspace, tmp_path / "a.jsonl", session_start("true"), SHOW)
    assert results(silent)[0].content == "unset"
    assert not (home / ".claude").exists(), "what was made for the hooks is gone again"
    hooks = session_start(
        "echo 'export A=first B=one' >> \"$CLAUDE_ENV_FILE\"",
        "cat >/dev/null",
        'echo \'export A="third after $A"\' >> "$CLAUDE_ENV_FILE"',
    )
    result = run(workspace, tmp_path / "b.jsonl", hooks, "printenv A B")
    assert results(result)[0].content == "third after first\none"
    folder = home / ".claude" / "session-env" / result.session_id
    assert sorted(p.name for p in folder.iterdir()) == [
        "sessionstart-hook-0.sh",
        "sessionstart-hook-2.sh",
    ]


def test_a_file_that_does_not_source_keeps_the_command_from_running(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    """Claude Code chains the file and the command with `&&`: a syntax error, or a last
    command that fails, stops the command, and the model sees why."""
    broken = run(
        workspace,
        tmp_path / "a.jsonl",
        session_start("echo 'if then' >> \"$CLAUDE_ENV_FILE\""),
        "touch ran",
    )
    (block,) = results(broken)
    assert block.is_error
    assert isinstance(block.content, str)
    assert block.content.startswith("Exit code 2\n")
    assert "sessionstart-hook-0.sh: line 1: syntax error" in block.content
    assert not (workspace / "ran").exists()
    failing = run(
        workspace,
        tmp_path / "b.jsonl",
        session_start('echo false >> "$CLAUDE_ENV_FILE"'),
        "touch ran",
    )
    (block,) = results(failing)
    assert isinstance(block.content, str)
    first, why = block.content.splitlines()
    assert first == "Exit code 1"
    assert why.startswith("fsm-agent: the command did not run: sourcing ")
    assert why.endswith(
        "/sessionstart-hook-0.sh (the CLAUDE_ENV_FILE of a SessionStart hook) returned 1"
    )
    assert not (workspace / "ran").exists()


def test_only_session_start_hooks_get_the_variable(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.txt"
    settings = {
        "hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": APPEND}]}],
            "PreToolUse": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": f'echo "${{CLAUDE_ENV_FILE-unset}}" > {seen}',
                        }
                    ]
                }
            ],
        },
        "permissions": {"allow": ["Bash"]},
    }
    result = run(workspace, tmp_path / "run.jsonl", settings, SHOW)
    assert results(result)[0].content == "hello there"
    assert seen.read_text() == "unset\n"


def test_the_variables_do_not_undo_what_keeps_commands_in_the_workspace(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    """A hook's CDPATH would send `cd sub` out of the workspace, while the permission
    check judges what follows from the workspace's own `sub`; its GIT_CONFIG_COUNT would
    drop `safe.bareRepository=explicit`; its `cd` would run the command elsewhere. All
    are set again after the files."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (workspace / "sub").mkdir()
    lines = f"export CDPATH={outside} GIT_CONFIG_COUNT=0; cd {outside}"
    hook = f"echo '{lines}' >> \"$CLAUDE_ENV_FILE\""
    result = run(
        workspace,
        tmp_path / "run.jsonl",
        session_start(hook),
        "pwd",
        "cd sub >/dev/null && pwd",
        "git config --get safe.bareRepository",
    )
    here, where, bare = results(result)
    assert here.content == str(workspace)
    assert where.content == str(workspace / "sub")
    assert bare.content == "explicit"


@pytest.mark.parametrize("body", ['cd() { builtin cd "$@" && ls; }', "cd {outside}; cd() { :; }"])
def test_a_cd_function_of_the_files_neither_speaks_nor_stays_elsewhere(
    body: str, home: Path, workspace: Path, tmp_path: Path
) -> None:
    """Dotfiles define `cd` as a function (`cd and list`, nvm's, rvm's): the return to
    the workspace is the shell's own `cd`, so the function neither adds its listing to
    every command's output nor, doing nothing, leaves the command where the file went."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "marker").write_text("")
    hook = f"echo '{body.replace('{outside}', str(outside))}' >> \"$CLAUDE_ENV_FILE\""
    result = run(workspace, tmp_path / "run.jsonl", session_start(hook), "pwd")
    (here,) = results(result)
    assert here.content == str(workspace)


def test_the_file_is_protected_where_the_workspace_holds_it(home: Path, tmp_path: Path) -> None:
    """With the home as workspace, `~/.claude` is a protected directory: a Write there is
    asked about in every mode (denied without a terminal), so the model cannot put code
    into what its next read-only command sources."""
    session_id = "0f2a6b1e-0000-4000-8000-000000000001"
    target = home / ".claude" / "session-env" / session_id / "sessionstart-hook-0.sh"
    data = {
        "prompt": "go",
        "settings": session_start(APPEND),
        "config": {"permission_mode": "acceptEdits"},
        "turns": [
            {"content": [{"type": "tool_use", "id": "w", "name": "Write",
                          "input": {"file_path": str(target), "content": "touch pwned\n"}}]},
            *bash_turns(SHOW),
        ],
    }  # fmt: skip
    result = run_scenario(
        Scenario.parse(data), cwd=home, log=tmp_path / "run.jsonl", session_id=session_id
    )
    write, show = results(result)
    assert write.is_error and "protected path" in str(write.content)
    assert show.content == "hello there"
    assert not (home / "pwned").exists()


def test_a_chats_later_runs_keep_the_variables_and_clear_starts_afresh(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    counter = tmp_path / "count"
    counter.write_text("0")
    hook = (
        f"n=$(($(cat {counter}) + 1)); echo $n > {counter}; "
        'echo "export RUN=$n" >> "$CLAUDE_ENV_FILE"'
    )
    matchers = parse_hooks(session_start(hook)["hooks"], "settings")
    config = RunConfig(
        model="scripted", cwd=str(workspace), hooks=matchers, permission_mode="bypassPermissions"
    )
    show = "printenv RUN"
    turns = [*bash_turns(show)] * 3
    model = ScriptedModel(Scenario.parse({"turns": turns}))
    plan = Plan(
        model=model, config=config, hooks=None, abort=AbortSignal(), log=tmp_path / "c.jsonl"
    )
    first = asyncio.run(plan.arun([user("one")], None))
    second = asyncio.run(plan.arun([user("two")], None))
    plan.clear()
    third = asyncio.run(plan.arun([user("three")], None))
    assert [results(r)[-1].content for r in (first, second, third)] == [
        "1",
        "1",
        "2",
    ]
    folders = sorted(p.name for p in (home / ".claude" / "session-env").iterdir())
    assert folders == sorted([first.session_id, third.session_id])


def test_a_resumed_session_keeps_its_variables(home: Path, workspace: Path, tmp_path: Path) -> None:
    """Claude Code resumes a session under its own id, so its directory, files and all:
    the resumed run sees them even with the hook gone from the settings; a SessionStart
    hook run again (source `resume`) appends to its file."""
    claude = workspace / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(json.dumps(session_start(APPEND)))
    scenario = tmp_path / "show.json"
    scenario.write_text(json.dumps({"prompt": "go", "turns": bash_turns(SHOW)}))
    env = {"HOME": str(trust(home, workspace))}
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    args = ("--scripted", str(scenario), "--cwd", str(workspace))
    done = fsm("run", *args, "--log", str(first), env=env)
    assert done.returncode == 0, done.stderr
    assert "hello there" in done.stdout
    (claude / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
    again = fsm("run", "--resume", str(first), "more", *args, "--log", str(second), env=env)
    assert again.returncode == 0, again.stderr
    assert "hello there" in again.stdout
    headers = [json.loads(p.read_text().splitlines()[0]) for p in (first, second)]
    assert headers[0]["config"]["session_env"] == headers[1]["config"]["session_env"]
    assert os.path.dirname(headers[0]["config"]["session_env"]) == str(
        home / ".claude" / "session-env"
    )
    for log in (first, second):
        check = fsm("replay", "--check", str(log))
        assert check.returncode == 0, check.stderr


def test_a_home_where_no_directory_can_be_made_runs_the_hooks_without_the_variable(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.write_text("a file, not a directory")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_ENV_FILE", raising=False)
    seen = tmp_path / "seen.txt"
    hook = f'echo "${{CLAUDE_ENV_FILE-unset}}" > {seen}'
    result = run(workspace, tmp_path / "run.jsonl", session_start(hook), SHOW)
    assert result.reason == "completed"
    assert results(result)[0].content == "unset"
    assert seen.read_text() == "unset\n"
    assert home.read_text() == "a file, not a directory"


def test_a_resumed_log_cannot_point_the_commands_at_files_of_the_workspace(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    """The log is in the workspace (`.fsm-agent/sessions/`), where the model's Write and
    Edit reach in `acceptEdits`: a header whose `session_env` names a directory of its own
    files made the resumed session's auto-allowed `ls` source them first. Only a
    directory of `~/.claude/session-env` is taken from a log; any other is dropped."""
    scenario = tmp_path / "ls.json"
    scenario.write_text(json.dumps({"prompt": "go", "turns": bash_turns("ls")}))
    env = {"HOME": str(home)}
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    args = ("--scripted", str(scenario), "--cwd", str(workspace))
    done = fsm("run", *args, "--log", str(first), env=env)
    assert done.returncode == 0, done.stderr
    planted = workspace / "planted"
    planted.mkdir()
    pwned = tmp_path / "pwned"
    (planted / "sessionstart-hook-0.sh").write_text(f"touch {pwned}\n")
    lines = first.read_text().splitlines()
    header = json.loads(lines[0])
    header["config"]["session_env"] = str(planted)
    first.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    reseal(first)
    again = fsm("run", "--resume", str(first), "more", *args, "--log", str(second), env=env)
    assert again.returncode == 0, again.stderr
    assert "planted" in again.stdout  # the ls ran
    assert not pwned.exists()
    assert "session_env" not in json.loads(second.read_text().splitlines()[0])["config"]


def test_a_relative_home_still_gives_the_hook_and_the_commands_one_file(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook runs in the workspace, the process elsewhere: a relative `HOME` once named
    a directory made under the one and a file written under the other."""
    (tmp_path / "rel").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "rel")
    monkeypatch.delenv("CLAUDE_ENV_FILE", raising=False)
    result = run(workspace, tmp_path / "run.jsonl", session_start(APPEND), SHOW)
    assert results(result)[0].content == "hello there"
    assert list((tmp_path / "rel" / ".claude" / "session-env").iterdir())
