"""`fsm-agent` as a user runs it: real processes, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsm_agent.cli.main import EXIT_CODES
from tests.conftest import ROOT, SCENARIOS
from tests.support.cli import fsm, one_error_line, run_scripted
from tests.support.logs import reseal, write_log


def test_run_scripted_end_to_end(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    proc = run_scripted("tool_round", workspace, log)
    assert proc.returncode == 0, proc.stderr
    assert "notes.txt now says hello." in proc.stdout
    assert "completed" in proc.stdout
    assert (workspace / "notes.txt").read_text() == "hello\n"
    check = fsm("replay", str(log), "--check")
    assert check.returncode == 0, check.stderr
    assert "steps match" in check.stdout


def test_exit_code_names_the_terminal_reason(workspace: Path, tmp_path: Path) -> None:
    proc = run_scripted("max_turns", workspace, tmp_path / "l.jsonl")
    assert proc.returncode == EXIT_CODES["max_turns"]


def test_max_turns_option_overrides_the_scenario(workspace: Path, tmp_path: Path) -> None:
    proc = run_scripted("tool_round", workspace, tmp_path / "l.jsonl", "--max-turns", "1")
    assert proc.returncode == EXIT_CODES["max_turns"]


def test_claude_codes_max_turns_variable_sets_it_and_the_option_wins(
    workspace: Path, tmp_path: Path
) -> None:
    scenario = str(SCENARIOS / "tool_round.json")
    args = ("run", "--scripted", scenario, "--cwd", str(workspace))
    proc = fsm(*args, "--log", str(tmp_path / "a.jsonl"), env={"CLAUDE_CODE_MAX_TURNS": "1"})
    assert proc.returncode == EXIT_CODES["max_turns"], proc.stderr
    options = ("--log", str(tmp_path / "b.jsonl"), "--max-turns", "5")
    proc = fsm(*args, *options, env={"CLAUDE_CODE_MAX_TURNS": "1"})
    assert proc.returncode == 0, proc.stderr
    bad = fsm(*args, env={"CLAUDE_CODE_MAX_TURNS": "zero"})
    one_error_line(bad, "CLAUDE_CODE_MAX_TURNS must be a whole number of 1 or more, not 'zero'")


def test_malformed_scenario(tmp_path: Path, workspace: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"turns": [{"content": [{"type": "bogus"}]}]}')
    one_error_line(fsm("run", "--scripted", str(bad), "--cwd", str(workspace), "x"), "bad.json")
    bad.write_text("{not json")
    one_error_line(fsm("run", "--scripted", str(bad), "x"), "not valid JSON")
    bad.write_text("[]")
    one_error_line(fsm("run", "--scripted", str(bad), "x"), "'turns' list")
    bad.write_text('{"turns": [{"content": "hi"}], "hooks": {"Stop": [{"blocking_error": []}]}}')
    one_error_line(
        fsm("run", "--scripted", str(bad), "x"),
        "bad.json: not a valid Scenario: unknown key 'blocking_error'",
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"config": {"permission_mode": "yolo"}}, "unknown permission mode 'yolo'"),
        ({"settings": {"permissions": {"allow": 3}}}, "settings: permissions.allow must be a list"),
    ],
)
def test_a_scenario_mistake_found_at_run_time_names_the_file_too(
    data: dict, problem: str, tmp_path: Path, workspace: Path
) -> None:
    """A mode or settings the run cannot use are found where the file is read."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"turns": [{"content": "hi"}], **data}))
    proc = fsm("run", "--scripted", str(bad), "--cwd", str(workspace), "x")
    one_error_line(proc, f"{bad}: not a valid Scenario: ")
    assert problem in proc.stderr


def test_bad_option_value_and_missing_workspace(tmp_path: Path) -> None:
    one_error_line(fsm("run", "--max-turns", "zero", "x"), "--max-turns")
    one_error_line(fsm("run", "--cwd", str(tmp_path / "missing"), "x"), "does not exist")
    missing = fsm("run", "--add-dir", str(tmp_path / "gone"), "x")
    one_error_line(missing, "does not exist")
    assert str(tmp_path / "gone") in missing.stderr


def test_missing_key_names_the_variable_and_the_offline_ways() -> None:
    proc = fsm("run", "hello")
    one_error_line(proc, "ANTHROPIC_API_KEY")
    assert "--scripted" in proc.stderr and "replay" in proc.stderr


def test_replay_path_and_json(scenario, tmp_path: Path) -> None:
    result = scenario("unknown_tool")
    log = tmp_path / "unknown_tool.jsonl"
    text = fsm("replay", str(log), "--path")
    assert text.stdout.splitlines() == [str(s) for s in result.path]
    as_json = json.loads(fsm("replay", str(log), "--path", "--json").stdout)
    assert as_json[0] == {
        "from": "preprocess",
        "to": "blocking_limit_check",
        "edge": "preprocessed",
    }
    assert len(as_json) == len(result.path)


def test_replay_of_a_non_log(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    one_error_line(fsm("replay", str(junk), "--check"), "not a session log")
    one_error_line(fsm("replay", str(tmp_path / "nope.jsonl")), "no such log file")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    one_error_line(fsm("replay", str(empty), "--check"), f"{empty}: empty, not a session log")
    one_error_line(fsm("replay", os.devnull, "--check"), f"{os.devnull}: not a file")


def test_replay_check_reports_divergence(scenario, tmp_path: Path) -> None:
    scenario("unknown_tool")
    log = tmp_path / "unknown_tool.jsonl"
    rows = [json.loads(r) for r in log.read_text().splitlines()]
    for row in rows:
        if row.get("edge") == "completed":
            row["edge"] = row["to"] = "max_turns"
    write_log(log, rows)
    proc = fsm("replay", str(log), "--check")
    assert proc.returncode == 1
    assert "diverged at step" in proc.stderr and "max_turns" in proc.stderr


def test_replay_check_takes_several_logs_and_exits_with_the_worst(tmp_path: Path) -> None:
    good = ROOT / "replays" / "tool_round.jsonl"
    other = ROOT / "replays" / "fix_bug.jsonl"
    rows = [json.loads(r) for r in good.read_text().splitlines()]
    next(r for r in rows if r.get("edge") == "next_turn")["turn"] = 9
    changed = tmp_path / "changed.jsonl"
    write_log(changed, rows)
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")

    proc = fsm("replay", "--check", str(good), str(other))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"✓ {good}: 20 steps match the log; ends completed",
        f"✓ {other}: 34 steps match the log; ends completed",
        "2 logs: 2 match, 0 diverged, 0 unreadable",
    ]

    proc = fsm("replay", "--check", str(good), str(changed))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"✗ {changed}: diverged at step 7: transition")
    assert proc.stdout.splitlines()[-1] == "2 logs: 1 match, 1 diverged, 0 unreadable"

    proc = fsm("replay", "--check", str(junk), str(changed), str(good))
    assert proc.returncode == 2
    assert f"fsm-agent: error: {junk}:1: not a session log" in proc.stderr
    assert proc.stdout.splitlines()[-1] == "3 logs: 1 match, 1 diverged, 1 unreadable"
    assert "Traceback" not in proc.stderr


def test_only_check_takes_several_logs(tmp_path: Path) -> None:
    good = str(ROOT / "replays" / "tool_round.jsonl")
    one_error_line(fsm("replay", good, good, "--path"), "got 2 logs: only --check takes several")
    one_error_line(
        fsm("replay", good, "--check", "--fork-at", "3"), "a fork (--fork-at, --edit-effect)"
    )


@pytest.mark.parametrize(
    "command", [["--help"], ["graph"], ["graph", "--help"], ["replay", "--help"]]
)
def test_help_and_light_commands_do_not_import_the_sdk(command: list[str]) -> None:
    code = (
        "import sys\n"
        "from fsm_agent.cli.main import main\n"
        f"sys.argv = ['fsm-agent', *{command!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
        "assert 'asyncio' not in sys.modules, 'asyncio imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_settings_files_rules_and_hooks_apply_to_a_cli_run(workspace: Path, tmp_path: Path) -> None:
    """A Claude Code project's .claude/settings.json, used as is."""
    hooks_dir = workspace / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    guard = hooks_dir / "guard.sh"
    guard.write_text(
        "#!/bin/sh\n"
        "cmd=$(python3 -c 'import json,sys; "
        'print(json.load(sys.stdin)["tool_input"]["command"])\')\n'
        'case "$cmd" in *secret*) echo "no secrets please" >&2; exit 2 ;; esac\n'
    )
    guard.chmod(0o755)
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {"allow": ["Bash(touch *)"], "deny": ["Bash(rm *)"]},
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
                                }
                            ],
                        }
                    ]
                },
            }
        )
    )
    calls = [("a", "touch made"), ("b", "touch secret"), ("c", "rm made")]
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "prompt": "p",
                "turns": [
                    {"content": [{"type": "tool_use", "id": i, "name": "Bash",
                                  "input": {"command": c}} for i, c in calls]},
                    {"content": [{"type": "text", "text": "done"}]},
                ],
            }
        )
    )  # fmt: skip
    log = tmp_path / "run.jsonl"
    args = ("--scripted", str(scenario), "--cwd", str(workspace), "--log", str(log), "--trust")
    proc = fsm("run", *args)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "made").exists()
    assert not (workspace / "secret").exists()
    header = json.loads(log.read_text().splitlines()[0])
    assert header["config"]["permissions"]["deny"][0]["rule"] == "Bash(rm *)"
    assert fsm("replay", "--check", str(log)).returncode == 0


def test_permission_mode_flag_and_bad_settings(workspace: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "prompt": "p",
                "turns": [
                    {"content": [{"type": "tool_use", "id": "w", "name": "Write",
                                  "input": {"file_path": "f.txt", "content": "x"}}]},
                    {"content": [{"type": "text", "text": "done"}]},
                ],
            }
        )
    )  # fmt: skip
    args = ("run", "--scripted", str(scenario), "--cwd", str(workspace))
    assert fsm(*args, "--permission-mode", "plan").returncode == 0
    assert not (workspace / "f.txt").exists()
    assert fsm(*args, "--permission-mode", "acceptEdits").returncode == 0
    assert (workspace / "f.txt").read_text() == "x"
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.local.json").write_text('{"permissions": {"allow": 3}}')
    proc = fsm(*args)
    assert proc.returncode == 2
    one_error_line(proc, "permissions.allow must be a list of rule strings")


def test_torn_log_replays_with_a_warning(scenario, tmp_path: Path) -> None:
    scenario("tool_round")
    log = tmp_path / "tool_round.jsonl"
    text = log.read_text()
    log.write_text(text[:-25])
    for args in (["--check"], ["--path"]):
        proc = fsm("replay", str(log), *args)
        assert proc.returncode == 0, proc.stderr
        assert "the last line is torn" in proc.stderr
    assert "steps match the log" in fsm("replay", str(log), "--check").stdout


TOUCH = {
    "prompt": "make a file",
    "turns": [
        {"content": [{"type": "tool_use", "id": "toolu_t", "name": "Bash",
                      "input": {"command": "touch made.txt"}}]},
        {"content": "Done."},
    ],
}  # fmt: skip


@pytest.mark.parametrize("spelling", ["--allowed-tools", "--allowedTools"])
def test_allow_rules_on_the_command_line(workspace: Path, tmp_path: Path, spelling: str) -> None:
    """Without a terminal an unmatched Bash call is refused; an allow rule lets it run.
    Claude Code's own spelling of the option works as ours does."""
    scenario = tmp_path / "touch.json"
    scenario.write_text(json.dumps(TOUCH))
    base = ["run", "--scripted", str(scenario), "--cwd", str(workspace)]
    refused = fsm(*base, "--log", str(tmp_path / "a.jsonl"))
    assert refused.returncode == 0, refused.stderr
    assert not (workspace / "made.txt").exists()
    allowed = fsm(*base, "--log", str(tmp_path / "b.jsonl"), spelling, "Bash(touch *)")
    assert allowed.returncode == 0, allowed.stderr
    assert (workspace / "made.txt").exists()


@pytest.mark.parametrize("spelling", ["--disallowed-tools", "--disallowedTools"])
def test_deny_rules_on_the_command_line(workspace: Path, tmp_path: Path, spelling: str) -> None:
    scenario = tmp_path / "touch.json"
    scenario.write_text(json.dumps(TOUCH))
    proc = fsm(
        "run", "--scripted", str(scenario), "--cwd", str(workspace), "--log",
        str(tmp_path / "c.jsonl"), "--permission-mode", "bypassPermissions",
        spelling, "Bash(touch *)",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "made.txt").exists()
    assert "has been denied by the rule" in proc.stdout


def test_manual_mode_is_default_under_claude_code_s_newer_name(
    workspace: Path, tmp_path: Path
) -> None:
    """docs/permissions-and-hooks.md: `manual` is accepted as an alias of `default`."""
    proc = run_scripted(
        "tool_round", workspace, tmp_path / "run.jsonl", "--permission-mode", "manual"
    )
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "notes.txt").exists()
    header = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[0])
    assert header["config"].get("permission_mode", "default") == "default"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--scripted", str(SCENARIOS / "tool_round.json"), "--log", "", "hi"],
        ["run", "--scripted", "", "hi"],
        ["replay", "--check", ""],
        ["coverage", ""],
    ],
    ids=["--log", "--scripted", "replay", "coverage"],
)
def test_an_empty_path_is_named_as_one(args: list[str], tmp_path: Path) -> None:
    """click takes "" as ".": `--log ""` said '.: already exists', `replay ""` '.: not a
    file', `--scripted ""` 'cannot read: Is a directory'."""
    proc = fsm(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.endswith(": an empty path names no file\n"), proc.stderr
    assert proc.stderr.count("\n") == 1
    assert not (tmp_path / ".fsm-agent").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--check", "--path"], "--path prints the recorded path; --check replays the log"),
        (["--path", "--fork-at", "3", "--scripted", "S"], "--path prints the recorded path; a"),
        (["--json", "--edit-effect", "1", "S", "--scripted", "S"], "--json prints the recorded"),
        (["--path", "-v"], "--verbose is for a fork: give --fork-at N or --edit-effect K FILE"),
        (["--check", "--cwd", "."], "--cwd is for a fork: give --fork-at N or --edit-effect"),
        (["--base-url", "http://127.0.0.1:9"], "--base-url is for a fork"),
    ],
)
def test_a_replay_option_that_would_do_nothing_is_refused(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """`--check --json` printed no JSON, `--path -v` nothing more, `--path --fork-at 3`
    ran a fork: each option was dropped without a word. Refused before anything runs."""
    log = str(ROOT / "replays" / "tool_round.jsonl")
    scenario = str(ROOT / "replays" / "scenarios" / "tool_round.json")
    args = [scenario if a == "S" else a for a in args]
    proc = fsm("replay", log, *args, cwd=tmp_path)
    one_error_line(proc, message)
    assert not list(tmp_path.iterdir())


def test_run_refuses_a_base_url_that_a_scripted_run_would_ignore(tmp_path: Path) -> None:
    """`replay` refuses options that would do nothing, and `run` without --scripted refuses
    a bad base URL: with --scripted, the typed one was ignored and the run exited 0.
    The variable (set for other runs) is no mistake."""
    scenario = str(SCENARIOS / "tool_round.json")
    proc = fsm("run", "--scripted", scenario, "--cwd", str(tmp_path), "--base-url", "foo")
    one_error_line(proc, "--base-url is for a real model")
    assert not (tmp_path / "notes.txt").exists()
    proc = fsm(
        "run", "--scripted", scenario, "--cwd", str(tmp_path), env={"ANTHROPIC_BASE_URL": "x"}
    )
    assert proc.returncode == 0, proc.stderr


def test_a_second_ctrl_c_during_a_bash_call_ends_cleanly(tmp_path: Path) -> None:
    """Raised from the signal handler, the second Ctrl-C closed the event loop under the
    Bash process being reaped: `Loop … that handles pid … is closed` was left on screen
    (and in a terminal the spinner line). Now the run unwinds first, then exits 130."""
    import signal
    import time

    scenario = tmp_path / "sleep.json"
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "sleep 30"}}
    scenario.write_text(
        json.dumps(
            {
                "prompt": "go",
                "config": {"permission_mode": "bypassPermissions"},
                "turns": [{"content": [call]}, {"content": "done"}],
            }
        )
    )
    work = tmp_path / "w"
    work.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsm_agent.cli", "run", "--scripted", str(scenario), "--cwd",
         str(work), "--log", str(tmp_path / "l.jsonl")],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("● Bash(sleep 30)")
    time.sleep(0.5)  # the command has started
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)  # two signals sent at once are delivered as one
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    # The first Ctrl-C kills the command at once, so the second may come while the run
    # unwinds (exit 130, one line) or after it ended (its exit code, 15): never a kill
    # by the signal itself (-2, the summary lost), never a traceback or the loop's words.
    assert proc.returncode in (130, 15), (proc.returncode, err)
    assert err in ("fsm-agent: interrupted\n", ""), err
    if proc.returncode == 15:
        assert "■ aborted_tools" in out


def test_check_json_gives_each_logs_outcome_as_data(tmp_path: Path) -> None:
    """`--check --json`: a line of JSON per log, the divergence report as data."""
    shipped = ROOT / "replays" / "fix_bug.jsonl"
    lines = shipped.read_text().splitlines(keepends=True)
    tool = next(i for i, line in enumerate(lines) if '"name":"tool"' in line and "3.75" in line)
    lines[tool] = lines[tool].replace("3.75", "9.99")
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(lines))
    reseal(edited)
    proc = fsm("replay", str(edited), str(shipped), "--check", "--json")
    assert proc.returncode == 1, proc.stderr
    first, second = (json.loads(line) for line in proc.stdout.splitlines())
    assert second == {"log": str(shipped), "chained": True, "match": True, "steps": 34,
                      "ends": "completed"}  # fmt: skip
    (change,) = first["diverged"]["changes"]
    assert change["where"].endswith("(tool_result toolu_02run).content")
    assert (change["log"], change["code"]) == ("3.75", "9.99")


def test_a_command_run_in_process_leaves_ctrl_c_working_in_the_processes_it_starts_later(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main` drops Ctrl-C once its command is over; it set SIGINT to SIG_IGN, which every
    process started afterwards inherits: a Python started so never raises
    KeyboardInterrupt (a chat in a pty, started by a later test, ignored its Ctrl-C)."""
    import contextlib
    import signal

    from fsm_agent.cli.main import main

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(sys, "argv", ["fsm-agent", "graph"])
    try:
        with contextlib.suppress(SystemExit):
            main()
        assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        child = subprocess.run(
            [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "default_int_handler" in child.stdout
    finally:
        signal.signal(signal.SIGINT, before)
    assert "preprocess" in capsys.readouterr().out
