"""The model tries to leave the workspace; every attempt is refused, nothing outside changes.

Driven through the engine with scripted scenarios, in `default` mode
without a terminal (no prompter): an ask is a denial.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.app.session import run_scenario
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.live.scripted import Scenario


def _scenario(
    *calls: dict[str, Any], settings: dict[str, Any] | None = None, **config: Any
) -> Scenario:
    content = [
        {"type": "tool_use", "id": f"toolu_{n:02d}", "name": c["name"], "input": c["input"]}
        for n, c in enumerate(calls)
    ]
    return Scenario.parse(
        {
            "prompt": "try it",
            "config": config,
            "settings": settings or {},
            "turns": [{"content": content}, {"content": [{"type": "text", "text": "ok"}]}],
        }
    )


def _results(result: Any) -> list[ToolResultBlock]:
    return [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]


def _snapshot(root: Path) -> dict[str, tuple[float, bytes]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p)] = (p.lstat().st_mtime, p.read_bytes() if not p.is_symlink() else b"")
    return out


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside)
    return {"ws": ws, "outside": outside, "root": tmp_path}


def _run(world: dict[str, Path], scenario: Scenario, tmp_path: Path, **kw: Any) -> Any:
    return run_scenario(scenario, cwd=world["ws"], log=tmp_path / "log.jsonl", **kw)


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "../../{root_name}/outside/secret.txt",
        "{abs}",
        "link",
        "linkdir/secret.txt",
    ],
)
def test_reads_outside_the_workspace_are_refused(world, tmp_path: Path, path: str) -> None:
    path = path.format(root_name=world["root"].name, abs=world["outside"] / "secret.txt")
    result = _run(world, _scenario({"name": "Read", "input": {"file_path": path}}), tmp_path)
    [res] = _results(result)
    assert res.is_error
    assert "TOP SECRET" not in res.text
    assert "outside the workspace" in res.text
    assert "no terminal to ask" in res.text
    assert result.reason == "completed"


def test_glob_and_grep_outside_are_refused(world, tmp_path: Path) -> None:
    outside = str(world["outside"])
    scenario = _scenario(
        {"name": "Grep", "input": {"pattern": "SECRET", "path": outside}},
        {"name": "Glob", "input": {"pattern": "*", "path": "../outside"}},
    )
    results = _results(_run(world, scenario, tmp_path))
    assert [r.is_error for r in results] == [True, True]
    assert all("secret.txt" not in r.text.replace(outside, "") for r in results)
    assert all("SECRET" not in r.text.split("outside the workspace")[-1] for r in results)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions", "dontAsk"])
def test_writes_and_edits_outside_are_refused_and_nothing_changes(
    world, tmp_path: Path, mode: str
) -> None:
    before = _snapshot(world["outside"])
    target = world["outside"] / "secret.txt"
    scenario = _scenario(
        {"name": "Read", "input": {"file_path": "link"}},
        {
            "name": "Write",
            "input": {"file_path": str(world["outside"] / "new.txt"), "content": "x"},
        },
        {"name": "Write", "input": {"file_path": "../outside/secret.txt", "content": "pwned"}},
        {"name": "Edit", "input": {"file_path": "link", "old_string": "TOP", "new_string": "NO"}},
        {"name": "Write", "input": {"file_path": "linkdir/planted.txt", "content": "x"}},
        permission_mode=mode,
    )
    results = _results(_run(world, scenario, tmp_path))
    assert all(r.is_error for r in results), [r.text for r in results]
    assert all("outside the workspace" in r.text for r in results)
    assert _snapshot(world["outside"]) == before
    assert target.read_text() == "TOP SECRET\n"


@pytest.mark.parametrize(
    "command",
    [
        "echo pwned > {out}/written.txt",
        "cp {out}/secret.txt ./stolen.txt",
        "touch {out}/touched",
        "ls && rm -f {out}/secret.txt",
        "python3 -c \"open('{out}/py.txt','w').write('x')\"",
        "timeout 5 tee {out}/tee.txt < /dev/null",
        "cat link",
        "cat < link",
        "head -n 1 linkdir/secret.txt",
        "cd .. && cat outside/secret.txt",
        "cat l*/secret.txt",
        "cat lin?",
        "head -n 1 [l]ink",
        "cat $PWD/../outside/secret.txt",
        "cat ${{PWD}}/../outside/secret.txt",
        'cat "$PWD"/../outside/secret.txt',
        "cat {{../outside/secret.txt,x}}",
        "cat ..{{/outside/secret.txt,}}",
        "cat 0<../outside/secret.txt",
        "cat <../outside/secret.txt",
        "wc -c <{out}/secret.txt",
        "cat ~+/../outside/secret.txt",
        "diff --from-file=../outside/secret.txt x",
        "grep -r --file={out}/secret.txt .",
        "grep -rf../outside/secret.txt .",
        "grep -f{out}/secret.txt -r .",
    ],
)
def test_bash_that_reaches_outside_is_refused(world, tmp_path: Path, command: str) -> None:
    before = _snapshot(world["outside"])
    command = command.format(out=world["outside"])
    result = _run(world, _scenario({"name": "Bash", "input": {"command": command}}), tmp_path)
    [res] = _results(result)
    assert res.is_error
    assert "no terminal to ask" in res.text
    assert "TOP SECRET" not in res.text
    assert _snapshot(world["outside"]) == before
    assert not (world["ws"] / "stolen.txt").exists()


def test_inside_the_workspace_reads_run_and_read_only_bash_runs(world, tmp_path: Path) -> None:
    (world["ws"] / "a.txt").write_text("hello\n")
    scenario = _scenario(
        {"name": "Read", "input": {"file_path": "a.txt"}},
        {"name": "Bash", "input": {"command": "cat a.txt | wc -l"}},
        {"name": "Write", "input": {"file_path": "b.txt", "content": "x"}},
    )
    results = _results(_run(world, scenario, tmp_path))
    assert "hello" in results[0].text and not results[0].is_error
    assert results[1].text.strip() == "1" and not results[1].is_error
    assert results[2].is_error and "Write on" in results[2].text
    assert not (world["ws"] / "b.txt").exists()


def test_an_allow_rule_opens_one_outside_path_for_reading(world, tmp_path: Path) -> None:
    secret = world["outside"] / "secret.txt"
    scenario = Scenario.parse(
        {
            **{"prompt": "p"},
            "settings": {"permissions": {"allow": [f"Read(/{secret})"]}},
            "turns": [
                {"content": [{"type": "tool_use", "id": "t1", "name": "Read",
                              "input": {"file_path": str(secret)}},
                             {"type": "tool_use", "id": "t2", "name": "Write",
                              "input": {"file_path": str(secret), "content": "x"}}]},
                {"content": [{"type": "text", "text": "ok"}]},
            ],
        }
    )  # fmt: skip
    read, write = _results(_run(world, scenario, tmp_path))
    assert "TOP SECRET" in read.text and not read.is_error
    assert write.is_error
    assert secret.read_text() == "TOP SECRET\n"


def test_deny_rule_beats_bypass_and_bare_deny_removes_the_tool(world, tmp_path: Path) -> None:
    (world["ws"] / "secrets").mkdir()
    (world["ws"] / "secrets" / "k").write_text("KEY")
    scenario = Scenario.parse(
        {
            "prompt": "p",
            "config": {"permission_mode": "bypassPermissions"},
            "settings": {"permissions": {"deny": ["Read(./secrets/**)", "Bash"]}},
            "turns": [
                {"content": [{"type": "tool_use", "id": "t1", "name": "Read",
                              "input": {"file_path": "secrets/k"}},
                             {"type": "tool_use", "id": "t2", "name": "Bash",
                              "input": {"command": "cat secrets/k"}}]},
                {"content": [{"type": "text", "text": "ok"}]},
            ],
        }
    )  # fmt: skip
    read, bash = _results(_run(world, scenario, tmp_path))
    assert read.is_error and "denied by the rule Read(./secrets/**)" in read.text
    assert bash.is_error and "No such tool available: Bash" in bash.text


def test_glob_and_grep_leave_out_files_a_read_deny_rule_covers(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / ".env").write_text("TOKEN=hunter2\n")
    (ws / "secrets" / "key.txt").write_text("TOKEN=abc\n")
    (ws / "app.py").write_text("TOKEN = os.environ['TOKEN']\n")
    deny = {"permissions": {"deny": ["Read(./.env)", "Read(./secrets/**)"]}}
    scenario = _scenario(
        {"name": "Grep", "input": {"pattern": "TOKEN", "output_mode": "content"}},
        {"name": "Grep", "input": {"pattern": "TOKEN", "path": "secrets"}},
        {"name": "Glob", "input": {"pattern": "**/*"}},
        {"name": "Read", "input": {"file_path": ".env"}},
        settings=deny,
    )
    result = run_scenario(scenario, cwd=ws, log=tmp_path / "log.jsonl")
    grep_all, grep_dir, glob_all, read_env = _results(result)
    assert "app.py" in grep_all.text
    assert "hunter2" not in grep_all.text and "abc" not in grep_all.text
    assert grep_dir.is_error and "abc" not in grep_dir.text
    assert "app.py" in glob_all.text
    assert ".env" not in glob_all.text and "key.txt" not in glob_all.text
    assert read_env.is_error and "hunter2" not in read_env.text


def test_without_read_deny_rules_glob_lists_everything(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("TOKEN=hunter2\n")
    scenario = _scenario({"name": "Glob", "input": {"pattern": "**/*"}})
    [listed] = _results(run_scenario(scenario, cwd=ws, log=tmp_path / "log.jsonl"))
    assert ".env" in listed.text


def test_a_glob_that_stays_inside_runs(world, tmp_path: Path) -> None:
    (world["ws"] / "a.txt").write_text("one\n")
    (world["ws"] / "b.txt").write_text("two\n")
    scenario = _scenario({"name": "Bash", "input": {"command": "cat *.txt"}})
    [res] = _results(_run(world, scenario, tmp_path))
    assert not res.is_error
    assert res.text.split() == ["one", "two"]


@pytest.mark.parametrize(
    "command",
    [
        "cd && cat secret.txt",
        "cd; cat secret.txt",
        "cd -P && cat secret.txt",
        "cd - && cat secret.txt",
        "cd - >/dev/null; cat secret.txt",
        "cd sub && cat link2",
        "cd sub && cat < link2",
        "cd sub && cat l*2",
        "cd sub; cd inner && cat ../link2",
        "cd sub | cat link",
    ],
)
def test_bash_that_changes_directory_is_judged_from_where_it_goes(
    world, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """A later part of a compound command runs where a `cd` took it: its paths are
    judged from there, and a bare `cd` (home) or `cd -` (the shell's previous
    directory) goes outside."""
    monkeypatch.setenv("HOME", str(world["outside"]))
    monkeypatch.setenv("OLDPWD", str(world["outside"]))
    (world["ws"] / "sub" / "inner").mkdir(parents=True)
    (world["ws"] / "sub" / "link2").symlink_to(world["outside"] / "secret.txt")
    result = _run(world, _scenario({"name": "Bash", "input": {"command": command}}), tmp_path)
    [res] = _results(result)
    assert res.is_error
    assert "TOP SECRET" not in res.text


def test_bash_paths_after_a_cd_inside_are_judged_from_there(world, tmp_path: Path) -> None:
    (world["ws"] / "sub").mkdir()
    (world["ws"] / "sub" / "a.txt").write_text("hello\n")
    scenario = _scenario({"name": "Bash", "input": {"command": "cd sub && cat a.txt"}})
    [res] = _results(_run(world, scenario, tmp_path))
    assert not res.is_error
    assert res.text.strip() == "hello"


@pytest.mark.parametrize(
    "command",
    [
        "grep -R SECRET .",
        "grep -nR SECRET",
        "grep --dereference-recursive SECRET sub",
        "find -L . -name secret.txt",
        "find . -follow -name '*.txt'",
        "diff -r sub other",
        "du -L -a",
        "ls -RL sub",
        "cd sub && grep -R SECRET",
    ],
)
def test_bash_that_follows_links_while_recursing_is_judged_by_them(
    world, tmp_path: Path, command: str
) -> None:
    """grep -R, find -L, diff -r… follow the symlinks they meet in the directories they
    walk: a link to the outside there reaches outside, as if it were an operand."""
    sub = world["ws"] / "sub"
    (sub / "deep").mkdir(parents=True)
    (sub / "deep" / "up").symlink_to(world["outside"])
    (sub / "secret.txt").write_text("x\n")
    (world["ws"] / "other").mkdir()
    (world["ws"] / "other" / "deep").mkdir()
    (world["ws"] / "other" / "deep" / "up").mkdir()
    (world["ws"] / "other" / "deep" / "up" / "secret.txt").write_text("y\n")
    (world["ws"] / "link").unlink()
    (world["ws"] / "linkdir").unlink()
    result = _run(world, _scenario({"name": "Bash", "input": {"command": command}}), tmp_path)
    [res] = _results(result)
    assert res.is_error
    assert "no terminal to ask" in res.text
    assert "TOP SECRET" not in res.text


@pytest.mark.parametrize("command", ["cp -rL sub copy", "cp -R --dereference sub copy"])
def test_accept_edits_copies_that_follow_links_out_are_refused(
    world, tmp_path: Path, command: str
) -> None:
    """`cp -rL` would copy what a link under the directory leads to into the workspace,
    for a later Read to show."""
    (world["ws"] / "sub").mkdir()
    (world["ws"] / "sub" / "up").symlink_to(world["outside"])
    scenario = _scenario(
        {"name": "Bash", "input": {"command": command}}, permission_mode="acceptEdits"
    )
    [res] = _results(_run(world, scenario, tmp_path))
    assert res.is_error
    assert "no terminal to ask" in res.text
    assert not (world["ws"] / "copy").exists()


def test_bash_that_follows_links_inside_the_workspace_runs(world, tmp_path: Path) -> None:
    (world["ws"] / "link").unlink()
    (world["ws"] / "linkdir").unlink()
    (world["ws"] / "real").mkdir()
    (world["ws"] / "real" / "a.txt").write_text("needle\n")
    (world["ws"] / "sub").mkdir()
    (world["ws"] / "sub" / "to_real").symlink_to(world["ws"] / "real")
    scenario = _scenario({"name": "Bash", "input": {"command": "grep -R needle sub"}})
    [res] = _results(_run(world, scenario, tmp_path))
    assert not res.is_error
    assert res.text.strip() == "sub/to_real/a.txt:needle"


def test_the_links_a_recursive_command_follows_are_found_once_through_loops(
    tmp_path: Path,
) -> None:
    from fsm_agent.live.paths import default_links

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "back").symlink_to(tmp_path / "d")
    (tmp_path / "d" / "out").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "f").write_text("x")
    links = default_links(str(tmp_path))
    assert links("f") is None
    found = links("d")
    assert found is not None
    assert sorted(found) == sorted([str(tmp_path / "d")] * 2 + [str(tmp_path / "elsewhere")])


@pytest.mark.parametrize(
    "command",
    ["cat /proc/self/cwd/../outside/secret.txt", "ls /proc/self/cwd/..", "cat /dev/fd/../cwd/x"],
)
def test_bash_paths_through_the_process_own_proc_entries_are_outside(
    world, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """/proc/self is the command's own process, not fsm-agent's: the check cannot resolve
    it as the command will (here fsm-agent runs in a directory below the workspace's)."""
    (world["ws"] / "sub").mkdir()
    monkeypatch.chdir(world["ws"] / "sub")
    result = _run(world, _scenario({"name": "Bash", "input": {"command": command}}), tmp_path)
    [res] = _results(result)
    assert res.is_error
    assert "no terminal to ask" in res.text
    assert "TOP SECRET" not in res.text


@pytest.mark.parametrize("pattern", ["{out}/*.txt", "../outside/*.txt", "linkdir/*.txt"])
def test_a_glob_pattern_leading_outside_is_judged_as_its_path(
    world, tmp_path: Path, pattern: str
) -> None:
    """A Glob pattern that starts with directories (`/x/*.txt`, `../x/*`) searches from
    them: the permission check judges them as it judges `path`, so an allow rule (or
    the user) can open them, and without one the denial names the rule to add."""
    pattern = pattern.format(out=world["outside"])
    call = {"name": "Glob", "input": {"pattern": pattern}}
    [denied] = _results(_run(world, _scenario(call), tmp_path))
    assert denied.is_error
    assert f"Read(/{world['outside']})" in denied.text
    rule = {"permissions": {"allow": [f"Read(/{world['outside']}/**)"]}}
    (tmp_path / "log.jsonl").unlink()
    [listed] = _results(_run(world, _scenario(call, settings=rule), tmp_path))
    assert not listed.is_error
    assert listed.text == str(world["outside"] / "secret.txt")


GIT_CONFIG = '[core]\n\tfsmonitor = "cat ../outside/secret.txt >&2; echo"\n'


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize(
    "call",
    [
        {"name": "Write", "input": {"file_path": ".git/config", "content": GIT_CONFIG}},
        {"name": "Write", "input": {"file_path": ".GIT/hooks/pre-commit", "content": "x"}},
        {"name": "Write", "input": {"file_path": ".claude/settings.json", "content": "{}"}},
        {"name": "Edit", "input": {"file_path": "sub/.vscode/tasks.json", "old_string": "",
                                   "new_string": "{}"}},
        {"name": "Write", "input": {"file_path": ".bashrc", "content": "x"}},
        {"name": "Write", "input": {"file_path": "cfg", "content": GIT_CONFIG}},
        {"name": "Write", "input": {"file_path": ".fsm-agent/sessions/forged.jsonl",
                                    "content": "{}"}},
    ],
)  # fmt: skip
def test_no_mode_writes_a_protected_path_without_asking(
    world, tmp_path: Path, mode: str, call: dict[str, Any]
) -> None:
    """.git, .claude, .vscode, .idea and the shell's and git's configuration files hold
    what other programs run (a .git/config fsmonitor runs on the read-only `git status`):
    as in Claude Code, no mode writes them without the user (or a rule naming them)."""
    ws = world["ws"]
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "cfg").symlink_to(ws / ".git" / "config")
    before = _snapshot(ws)
    [res] = _results(_run(world, _scenario(call, permission_mode=mode), tmp_path))
    assert res.is_error
    assert "protected" in res.text
    assert _snapshot(ws) == before


@pytest.mark.parametrize(
    "command",
    [
        "cp x .git/config",
        "cd .git && cp ../x config",
        "mv x .claude",
        "touch .idea",
        "cp x .fsm-agent/sessions/forged.jsonl",
    ],
)
def test_accept_edits_file_commands_do_not_write_a_protected_path(
    world, tmp_path: Path, command: str
) -> None:
    ws = world["ws"]
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".fsm-agent" / "sessions").mkdir(parents=True)
    (ws / "x").write_text(GIT_CONFIG)
    before = _snapshot(ws)
    call = {"name": "Bash", "input": {"command": command}}
    [res] = _results(_run(world, _scenario(call, permission_mode="acceptEdits"), tmp_path))
    assert res.is_error
    assert _snapshot(ws) == before


def test_a_rule_naming_a_protected_path_opens_it(world, tmp_path: Path) -> None:
    """`Edit(.claude/**)` opens .claude to writes; `Edit(./**)`, which does not name it,
    does not; other writes in acceptEdits run as before."""
    calls = (
        {"name": "Write", "input": {"file_path": ".claude/agents/a.md", "content": "a"}},
        {"name": "Write", "input": {"file_path": ".git/config", "content": GIT_CONFIG}},
        {"name": "Write", "input": {"file_path": "src/.gitignore", "content": "x"}},
    )
    rules = {"permissions": {"allow": ["Edit(.claude/**)", "Edit(./**)"]}}
    scenario = _scenario(*calls, settings=rules)
    agents, git, ignore = _results(_run(world, scenario, tmp_path))
    assert not agents.is_error and (world["ws"] / ".claude" / "agents" / "a.md").exists()
    assert git.is_error and not (world["ws"] / ".git").exists()
    assert "Edit(/" in git.text and ".git/config)" in git.text
    assert not ignore.is_error


def test_a_workspace_made_a_bare_repository_runs_nothing_on_read_only_git(
    world, tmp_path: Path
) -> None:
    """HEAD, config, objects/ and refs/ written in acceptEdits make the workspace a
    repository git finds without a .git: its core.fsmonitor would run on `git status`.
    The commands run with git's safe.bareRepository=explicit, which refuses it."""
    config = (
        "[core]\n\tbare = false\n\tworktree = .\n"
        '\tfsmonitor = "cat ../outside/secret.txt >&2; echo"\n'
    )
    calls = (
        {"name": "Write", "input": {"file_path": "HEAD", "content": "ref: refs/heads/main\n"}},
        {"name": "Write", "input": {"file_path": "config", "content": config}},
        {"name": "Bash", "input": {"command": "mkdir -p objects refs"}},
        {"name": "Bash", "input": {"command": "git status"}},
    )
    results = _results(_run(world, _scenario(*calls, permission_mode="acceptEdits"), tmp_path))
    assert [r.is_error for r in results[:3]] == [False] * 3
    assert "TOP SECRET" not in results[3].text
    assert "safe.bareRepository" in results[3].text


@pytest.mark.parametrize(
    "command",
    [
        "git --config-env=core.fsmonitor=SHELL status",
        "git --exec-path=. status",
        "git --git-dir=repo status",
        "git --work-tree=. --git-dir=repo log",
        "git -c core.fsmonitor=x status",
    ],
)
def test_git_options_that_choose_what_git_runs_are_not_read_only(
    world, tmp_path: Path, command: str
) -> None:
    """`--config-env=core.fsmonitor=SHELL` runs the shell on a script named `2` in the
    workspace (acceptEdits writes one): git's options before the subcommand that choose
    its configuration or programs make the command ask."""
    (world["ws"] / "2").write_text("cat ../outside/secret.txt >&2\n")
    call = {"name": "Bash", "input": {"command": command}}
    [res] = _results(_run(world, _scenario(call, permission_mode="acceptEdits"), tmp_path))
    assert res.is_error
    assert "no terminal to ask" in res.text
    assert "TOP SECRET" not in res.text


@pytest.mark.parametrize(
    "command", ["find -files0-from list", "du -a --files0-from=list", "wc --files0-from list"]
)
def test_commands_taking_their_files_from_a_file_are_not_read_only(
    world, tmp_path: Path, command: str
) -> None:
    """`--files0-from` reads the paths to work on from a file (acceptEdits writes one):
    they are not in the command for the check to judge."""
    (world["ws"] / "list").write_bytes(str(world["outside"]).encode() + b"\0")
    call = {"name": "Bash", "input": {"command": command}}
    [res] = _results(_run(world, _scenario(call), tmp_path))
    assert res.is_error
    assert "no terminal to ask" in res.text
    assert "secret.txt" not in res.text


def test_a_command_that_changes_directory_past_count_asks(tmp_path: Path) -> None:
    """Each part of a command is judged from every directory a `cd` may have left it in;
    a command with `cd`s to more than 32 places counts as reaching outside (thousands of
    them would otherwise cost seconds of checks in the event loop)."""
    from fsm_agent.core.permission_types import PermissionRequest, PermissionSettings
    from fsm_agent.live.approvals import Approvals

    approvals = Approvals(PermissionSettings(), str(tmp_path))
    many = " ; ".join(f"cd d{i}" for i in range(40))
    decision = approvals.check(PermissionRequest("Bash", {"command": many}, "default"))
    assert decision.behavior == "ask"
    assert decision.outside == ("/",)
    few = " ; ".join(f"cd d{i}" for i in range(4))  # 16 places: each cd may fail
    assert approvals.check(PermissionRequest("Bash", {"command": few}, "default")).behavior == (
        "allow"
    )
