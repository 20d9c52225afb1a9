"""Context injection: CLAUDE.md files as Claude Code loads them, date, cwd, git status."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fsm_agent.context.claude_md import CLAUDE_MD_HEADER, claude_md_text, imports, strip_comments
from fsm_agent.context.levels import prepend_user_context
from fsm_agent.core.messages import user
from fsm_agent.core.transcript import Transcript
from fsm_agent.live.memory_files import gather, git_status, memory_files
from tests.conftest import SCENARIOS
from tests.support.cli import fsm


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A HOME and a workspace two levels below a project root."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    root = tmp_path / "proj"
    cwd = root / "pkg" / "sub"
    cwd.mkdir(parents=True)
    return home, cwd


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def names(files: list, base: Path) -> list[str]:
    return [str(f.path.relative_to(base)) for f in files]


def test_load_order_user_then_root_down_to_cwd(tree: tuple[Path, Path], tmp_path: Path) -> None:
    home, cwd = tree
    root = cwd.parent.parent
    write(home / ".claude" / "CLAUDE.md", "user rules")
    write(root / "CLAUDE.local.md", "root local")
    write(root / "CLAUDE.md", "root project")
    write(root / "pkg" / ".claude" / "CLAUDE.md", "pkg dot-claude")
    write(root / "pkg" / "CLAUDE.md", "pkg project")
    write(cwd / "CLAUDE.md", "sub project")
    write(cwd / "deeper" / "CLAUDE.md", "not loaded: below the cwd")
    files = memory_files(cwd, home, managed=None)
    assert names(files, tmp_path) == [
        "home/.claude/CLAUDE.md",
        "proj/CLAUDE.md",
        "proj/CLAUDE.local.md",
        "proj/pkg/CLAUDE.md",
        "proj/pkg/.claude/CLAUDE.md",
        "proj/pkg/sub/CLAUDE.md",
    ]
    assert [f.kind for f in files] == ["user", "project", "local", "project", "project", "project"]


def test_managed_file_comes_first(tree: tuple[Path, Path], tmp_path: Path) -> None:
    home, cwd = tree
    managed = write(tmp_path / "etc" / "CLAUDE.md", "policy")
    write(cwd / "CLAUDE.md", "project")
    files = memory_files(cwd, home, managed=managed)
    assert [f.kind for f in files] == ["managed", "project"]


def test_imports_resolve_relative_to_the_importer_at_most_four_hops(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    home, cwd = tree
    write(cwd / "CLAUDE.md", "See @docs/one.md and `@not/in/code.md`.")
    write(cwd / "docs" / "one.md", "one @two.md")
    write(cwd / "docs" / "two.md", "two @../three.md")
    write(cwd / "three.md", "three @four.md")
    write(cwd / "four.md", "four @five.md")
    write(cwd / "five.md", "five: too deep")
    write(cwd / "not" / "in" / "code.md", "never")
    files = memory_files(cwd, home, managed=None)
    assert [f.content.split()[0] for f in files] == ["See", "one", "two", "three", "four"]


def test_imports_home_paths_and_cycles(tree: tuple[Path, Path]) -> None:
    home, cwd = tree
    write(home / "shared.md", "shared @~/shared.md @~/.claude/CLAUDE.md")
    write(home / ".claude" / "CLAUDE.md", "user @~/shared.md @missing.md")
    files = memory_files(cwd, home, managed=None)
    assert [f.content for f in files] == [
        "user @~/shared.md @missing.md",
        "shared @~/shared.md @~/.claude/CLAUDE.md",
    ]


def test_a_project_file_imports_nothing_from_outside_the_workspace(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    """Claude Code loads a project's "external" imports only once the user approved
    them; `claude -p` never asks. So a cloned repository's CLAUDE.md cannot send
    `~/.ssh/id_rsa` or `/etc/...` to the model."""
    home, cwd = tree
    root = cwd.parent.parent
    secret = write(tmp_path / "secret.md", "SECRET")
    write(home / "key.md", "HOME KEY")
    write(root / "pkg" / "sibling.md", "SIBLING")
    write(cwd / "docs" / "in.md", "inside @../../sibling.md")
    write(cwd / "CLAUDE.md", f"top @docs/in.md @~/key.md @{secret} @../sibling.md")
    write(root / "CLAUDE.md", "ancestor @pkg/sub/docs/in.md @pkg/sibling.md")
    files = memory_files(cwd, home, managed=None)
    assert [f.content.split()[0] for f in files] == ["ancestor", "inside", "top"]
    assert names(files, tmp_path) == [
        "proj/CLAUDE.md",
        "proj/pkg/sub/docs/in.md",
        "proj/pkg/sub/CLAUDE.md",
    ]


def test_nested_memory_imports_stay_in_the_workspace_and_show_clean_paths(
    tmp_path: Path,
) -> None:
    from fsm_agent.live.memory_files import read_nested

    ws = tmp_path / "ws"
    write(tmp_path / "outside.md", "OUTSIDE")
    write(ws / "docs" / "style.md", "style")
    sub = write(ws / "sub" / "CLAUDE.md", "sub @../docs/style.md @../../outside.md")
    found = read_nested([str(sub)], tmp_path / "home", ws)
    assert list(found) == [str(sub), str(ws / "docs" / "style.md")]
    assert "OUTSIDE" not in "".join(found.values())


def test_a_claude_md_that_is_not_utf8_is_read_with_replacement_not_dropped(
    tree: tuple[Path, Path],
) -> None:
    """A Windows-1252 CLAUDE.md (a curly quote) was dropped whole, silently;
    Claude Code reads it as UTF-8 with replacement characters."""
    home, cwd = tree
    (cwd / "CLAUDE.md").write_bytes(b"Use \x93tabs\x94 in this repo.\n")
    (cwd / "CLAUDE.local.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    files = memory_files(cwd, home, managed=None)
    assert [f.content for f in files] == ["Use \ufffdtabs\ufffd in this repo."]


def test_import_syntax() -> None:
    text = "a @x.md b\n```\n@fenced.md\n```\nmail me@example.com `@span.md` @dir/y.md"
    assert imports(text) == ["x.md", "dir/y.md"]


def test_block_comments_are_stripped_outside_code() -> None:
    text = "keep <!-- drop\nthis --> me\n```\n<!-- kept in code -->\n```\n"
    assert strip_comments(text) == "keep  me\n```\n<!-- kept in code -->\n```\n"


def test_claude_md_text_format(tree: tuple[Path, Path]) -> None:
    home, cwd = tree
    path = write(cwd / "CLAUDE.md", "Use tabs. <!-- internal note -->")
    text = claude_md_text(memory_files(cwd, home, managed=None))
    assert text == (
        f"{CLAUDE_MD_HEADER}\n\nContents of {path} "
        "(project instructions, checked into the codebase):\n\nUse tabs."
    )
    assert claude_md_text([]) is None


def test_gather_puts_claude_md_and_date_in_user_context(tree: tuple[Path, Path]) -> None:
    home, cwd = tree
    write(home / ".claude" / "CLAUDE.md", "Be brief.")
    user_context, system_context, memory_paths = gather(
        cwd, home, "2026-11-30", managed=None, git=False
    )
    assert list(user_context) == ["claudeMd", "currentDate"]
    assert "Be brief." in user_context["claudeMd"]
    assert user_context["currentDate"] == "Today's date is 2026-11-30."
    assert system_context == {"workingDirectory": str(cwd)}
    assert memory_paths == (str(home / ".claude" / "CLAUDE.md"),)
    first = prepend_user_context(Transcript.of([user("hi")]), user_context)[0]
    assert first.is_meta
    assert first.text.startswith("<system-reminder>\nAs you answer the user's questions")
    assert "# claudeMd\n" in first.text and "# currentDate\n" in first.text


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def test_git_status_is_short_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    who = ["-c", "user.email=a@b", "-c", "user.name=a"]
    _git(repo, *who, "commit", "-q", "--allow-empty", "-m", "first")
    for n in range(400):
        (repo / f"untracked_file_{n:04d}.txt").write_text("x")
    status = git_status(repo)
    assert status is not None
    assert "Current branch: main" in status
    assert "Recent commits:\n" in status and "first" in status
    assert "truncated because it exceeds 2k characters" in status
    assert len(status) < 2_600
    assert git_status(tmp_path / "nowhere") is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_status(plain) is None


def test_run_records_the_context_in_the_log_header(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    write(home / ".claude" / "CLAUDE.md", "Always answer in English.")
    write(workspace / "CLAUDE.md", "This project keeps notes.")
    write(workspace / ".claude" / "rules" / "py.md", "---\npaths: '**/*.py'\n---\nType hints.")
    log = tmp_path / "run.jsonl"
    args = ["run", "--scripted", str(SCENARIOS / "tool_round.json"), "--cwd", str(workspace)]
    proc = fsm(*args, "--log", str(log), env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    header = json.loads(log.read_text().splitlines()[0])["config"]
    assert "Always answer in English." in header["user_context"]["claudeMd"]
    assert "This project keeps notes." in header["user_context"]["claudeMd"]
    assert header["system_context"]["workingDirectory"] == str(workspace.resolve())
    assert "context_window" not in header
    [rule] = header["path_rules"]
    assert rule["globs"] == ["**/*.py"] and rule["text"].endswith("Type hints.")
    start = json.loads(log.read_text().splitlines()[1])
    assert start["t"] == "start"
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr


def test_nested_candidates_are_the_directories_below_the_workspace(tmp_path: Path) -> None:
    from fsm_agent.context.claude_md import nested_candidates

    ws = str(tmp_path)
    found = nested_candidates(
        [ws], [f"{ws}/top.txt", f"{ws}/a/b/c.py", f"{ws}/a/d.py", "/etc/hosts"]
    )
    assert found == [
        f"{ws}/a/CLAUDE.md",
        f"{ws}/a/.claude/CLAUDE.md",
        f"{ws}/a/CLAUDE.local.md",
        f"{ws}/a/b/CLAUDE.md",
        f"{ws}/a/b/.claude/CLAUDE.md",
        f"{ws}/a/b/CLAUDE.local.md",
    ]


def _reads(*paths: str) -> dict:
    turns = [
        {
            "content": [
                {"type": "tool_use", "id": f"r{n}", "name": "Read", "input": {"file_path": p}}
            ]
        }
        for n, p in enumerate(paths)
    ]
    return {"prompt": "look", "turns": [*turns, {"content": [{"type": "text", "text": "ok"}]}]}


def test_a_subdirectorys_claude_md_is_shown_once_when_a_file_there_is_first_read(
    workspace: Path, tmp_path: Path
) -> None:
    from fsm_agent.app.session import replay, run_scenario
    from fsm_agent.live.scripted import Scenario

    write(workspace / "pkg" / "CLAUDE.md", "Use tabs in pkg.\n@extra.md\n")
    write(workspace / "pkg" / "extra.md", "Extra pkg rule.")
    write(workspace / "pkg" / "a.py", "a = 1\n")
    write(workspace / "pkg" / "b.py", "b = 2\n")
    write(workspace / "top.py", "t = 0\n")
    log = tmp_path / "m.jsonl"
    result = run_scenario(
        Scenario.parse(_reads("top.py", "pkg/a.py", "pkg/b.py")), cwd=workspace, log=log
    )
    assert result.reason == "completed"
    user_turns = [m for m in result.messages if m.role == "user"][1:]
    texts = [[b.text for b in m.content if b.__class__.__name__ == "TextBlock"] for m in user_turns]
    assert texts[0] == []
    [note, imported] = texts[1]
    real = workspace.resolve()
    assert note == (
        f"<system-reminder>\nContents of {real}/pkg/CLAUDE.md (project instructions, checked "
        "into the codebase):\n\nUse tabs in pkg.\n@extra.md\n</system-reminder>"
    )
    assert imported.startswith(f"<system-reminder>\nContents of {real}/pkg/extra.md")
    assert texts[2] == []
    memory = [
        json.loads(line)
        for line in log.read_text().splitlines()
        if json.loads(line).get("name") == "memory"
    ]
    assert len(memory) == 1
    assert replay(log).messages.digest == result.messages.digest


def test_a_file_already_in_context_is_not_shown_again_by_a_nested_import(
    workspace: Path, tmp_path: Path
) -> None:
    """The root CLAUDE.md's import is in the context from the start, and a file one
    nested CLAUDE.md imported is shown once: another that imports it adds only itself."""
    from fsm_agent.app.session import replay

    write(workspace / "CLAUDE.md", "Root rules.\n@docs/style.md\n")
    write(workspace / "docs" / "style.md", "Style guide.")
    write(workspace / "pkg" / "CLAUDE.md", "Pkg rules.\n@../docs/style.md\n@shared.md\n")
    write(workspace / "pkg" / "shared.md", "Shared rule.")
    write(workspace / "lib" / "CLAUDE.md", "Lib rules.\n@../pkg/shared.md\n")
    write(workspace / "pkg" / "a.py", "a = 1\n")
    write(workspace / "lib" / "b.py", "b = 2\n")
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(_reads("pkg/a.py", "lib/b.py")))
    log = tmp_path / "m.jsonl"
    run = fsm("run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log))
    assert run.returncode == 0, run.stderr
    header = json.loads(log.read_text().splitlines()[0])
    assert "Style guide." in header["config"]["user_context"]["claudeMd"]
    messages = replay(log).messages
    real = workspace.resolve()
    shown = [
        line.removeprefix("<system-reminder>\nContents of ").split(" (")[0]
        for m in messages
        if m.role == "user"
        for b in m.content
        if b.__class__.__name__ == "TextBlock"
        for line in [b.text]
        if line.startswith("<system-reminder>\nContents of ")
    ]
    assert shown == [f"{real}/pkg/CLAUDE.md", f"{real}/pkg/shared.md", f"{real}/lib/CLAUDE.md"]
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_after_a_compaction_nested_memory_is_looked_for_again() -> None:
    from attrs import evolve

    from fsm_agent.engine.actions import _tool_context
    from fsm_agent.engine.driver import fresh_iteration
    from fsm_agent.engine.state import LoopState, ToolContext

    state = LoopState(Transcript.of([user("hi")]), ToolContext("/ws", "m", memory_checked=("a",)))
    it = evolve(fresh_iteration(state), memory_checked=("b",))
    assert _tool_context(state, it).memory_checked == ("a", "b")
    forgotten = evolve(it, memory_forgotten=True)
    assert _tool_context(state, forgotten).memory_checked == ("b",)


@pytest.mark.parametrize(
    ("head", "globs"),
    [
        ('paths:\n  - "src/**/*.ts"\n  - lib/*.py', ("src/**/*.ts", "lib/*.py")),
        ("paths: src/**/*.{ts,tsx}", ("src/**/*.{ts,tsx}",)),
        ('paths: ["a/*.md", "b/**/*.{c,h}"]', ("a/*.md", "b/**/*.{c,h}")),
        ("description: no paths here", None),
    ],
)
def test_rule_frontmatter_paths(head: str, globs: tuple[str, ...] | None) -> None:
    from fsm_agent.context.claude_md import frontmatter_paths

    found, body = frontmatter_paths(f"---\n{head}\n---\nUse strict mode.\n")
    assert found == globs
    assert body.strip() == "Use strict mode."
    assert frontmatter_paths("No frontmatter.") == (None, "No frontmatter.")


def test_rules_without_paths_load_at_start_in_claude_codes_place(tree: tuple[Path, Path]) -> None:
    cwd, home = tree
    write(home / ".claude" / "rules" / "style.md", "User rule.")
    write(cwd / ".claude" / "CLAUDE.md", "Dot-claude memory.")
    write(cwd / ".claude" / "rules" / "always.md", "Always rule.")
    write(cwd / ".claude" / "rules" / "ts.md", "---\npaths: src/**/*.ts\n---\nTS rule.")
    write(cwd / "CLAUDE.local.md", "Local memory.")
    contents = [f.content for f in memory_files(cwd, home, managed=None)]
    assert "TS rule." not in contents
    order = [
        c
        for c in contents
        if c in ("User rule.", "Dot-claude memory.", "Always rule.", "Local memory.")
    ]
    assert order == ["User rule.", "Dot-claude memory.", "Always rule.", "Local memory."]


def test_a_scoped_rule_is_shown_once_when_a_matching_file_is_read(
    workspace: Path, tmp_path: Path
) -> None:
    from fsm_agent.app.session import replay, run
    from fsm_agent.core.config import RunConfig
    from fsm_agent.live.memory_files import path_rules
    from fsm_agent.live.scripted import Scenario, ScriptedModel

    write(
        workspace / ".claude" / "rules" / "ts.md",
        '---\npaths:\n  - "src/**/*.ts"\n---\nUse strict mode.',
    )
    for name in ("README.md", "src/a.ts", "src/deep/b.ts"):
        write(workspace / name, "x\n")
    rules = path_rules(workspace)
    assert [r.globs for r in rules] == [("src/**/*.ts",)]
    config = RunConfig(model="scripted", cwd=str(workspace.resolve()), path_rules=rules)
    log = tmp_path / "r.jsonl"
    result = run(
        "look",
        model=ScriptedModel(Scenario.parse(_reads("README.md", "src/a.ts", "src/deep/b.ts"))),
        config=config,
        log=log,
    )
    user_turns = [m for m in result.messages if m.role == "user"][1:]
    texts = [[b.text for b in m.content if b.__class__.__name__ == "TextBlock"] for m in user_turns]
    assert texts[0] == [] and texts[2] == []
    [shown] = texts[1]
    assert shown.startswith("<system-reminder>\nContents of ")
    tail = "ts.md (project instructions, checked into the codebase):\n\nUse strict mode."
    assert shown.endswith(f"{tail}\n</system-reminder>")
    assert replay(log).messages.digest == result.messages.digest


def test_a_workspace_memory_file_that_links_outside_it_is_not_loaded(tmp_path: Path) -> None:
    """A cloned repository's `CLAUDE.md -> ~/.ssh/id_rsa` (or such a `.claude/rules/` file,
    scoped or not, or a subdirectory's CLAUDE.md) put the file in the model's context,
    though an `@import` of the same file is refused: each is external, as Claude Code
    drops a rule file whose link leads outside the working directory. Links that stay
    inside, and the user's own files, still load."""
    from fsm_agent.live.memory_files import path_rules, read_nested

    home, ws = tmp_path / "home", tmp_path / "ws"
    key = write(home / ".ssh" / "id_rsa", "PRIVATE KEY")
    write(ws / "docs" / "real.md", "inside rules")
    for link in ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md", ".claude/rules/a.md"):
        (ws / link).parent.mkdir(parents=True, exist_ok=True)
        (ws / link).symlink_to(key)
    write(home / "scoped.md", "---\npaths: src/**\n---\nPRIVATE scoped")
    (ws / ".claude" / "rules" / "scoped.md").symlink_to(home / "scoped.md")
    (ws / ".claude" / "rules" / "ok.md").symlink_to(ws / "docs" / "real.md")
    (ws / "sub").mkdir()
    (ws / "sub" / "CLAUDE.md").symlink_to(key)
    write(home / "shared.md", "user shared")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").symlink_to(home / "shared.md")

    user_context, _, _ = gather(ws, home, "2026-01-01", managed=None, git=False)
    assert "PRIVATE" not in json.dumps(user_context)
    assert "inside rules" in user_context["claudeMd"]
    assert "user shared" in user_context["claudeMd"]
    assert path_rules(ws) == ()
    assert read_nested([str(ws / "sub" / "CLAUDE.md")], home, ws) == {}


def test_a_symlink_loop_among_memory_files_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """`Path.resolve` raises RuntimeError on a symlink loop (Python 3.11): an import
    through a looping directory, or a CLAUDE.local.md, rule or subdirectory CLAUDE.md
    that is a looping link, ended the run with a traceback."""
    from fsm_agent.live.memory_files import path_rules, read_nested

    home, ws = tmp_path / "home", tmp_path / "ws"
    write(ws / "CLAUDE.md", "top @loop/x.md @loop")
    (ws / "loop").symlink_to("loop")
    (ws / "CLAUDE.local.md").symlink_to("CLAUDE.local.md")
    (ws / ".claude" / "rules").mkdir(parents=True)
    (ws / ".claude" / "rules" / "r.md").symlink_to("r.md")
    (ws / "sub").mkdir()
    (ws / "sub" / "CLAUDE.md").symlink_to("CLAUDE.md")
    user_context, _, paths = gather(ws, home, "2026-01-01", managed=None, git=False)
    assert paths == (str(ws / "CLAUDE.md"),)
    assert "top @loop/x.md @loop" in user_context["claudeMd"]
    assert path_rules(ws) == ()
    assert read_nested([str(ws / "sub" / "CLAUDE.md")], home, ws) == {}
