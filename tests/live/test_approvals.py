"""Asking the user: allow once, always (adds a rule for the rest of the run), deny; replayed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsm_agent.app.session import arun, replay
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.core.permission_types import ALLOW_ALWAYS, ALLOW_ONCE, DENY, PermissionAsk
from fsm_agent.live.scripted import Scenario, ScriptedModel
from tests.support.pty import spawn


def _bash_turns(*commands: str) -> Scenario:
    turns: list[dict[str, Any]] = [
        {"content": [{"type": "tool_use", "id": f"t{n}", "name": "Bash",
                      "input": {"command": c}}]}
        for n, c in enumerate(commands)
    ]  # fmt: skip
    turns.append({"content": [{"type": "text", "text": "done"}]})
    return Scenario.parse({"prompt": "p", "turns": turns})


def _asked_run(
    scenario: Scenario, workspace: Path, log: Path, prompter: Callable[[PermissionAsk], str]
) -> Any:
    """A scripted run in default mode whose questions `prompter` answers."""
    return asyncio.run(
        arun(
            "p",
            model=ScriptedModel(scenario),
            config=RunConfig(cwd=str(workspace), model="scripted"),
            log=log,
            prompter=prompter,
        )
    )


def _results(result: Any) -> list[ToolResultBlock]:
    return [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]


def test_once_always_and_deny(workspace: Path, tmp_path: Path) -> None:
    asked: list[PermissionAsk] = []
    answers = [ALLOW_ONCE, ALLOW_ALWAYS, DENY]

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return answers.pop(0) if answers else DENY

    scenario = _bash_turns(
        "touch one", "touch two", "touch three && touch four", "touch five", "mkdir six"
    )
    log = tmp_path / "ask.jsonl"
    result = _asked_run(scenario, workspace, log, prompter)
    r = _results(result)
    assert [q.input["command"] for q in asked] == ["touch one", "touch two", "mkdir six"]
    assert asked[1].suggestion == "Bash(touch *)"
    assert [x.is_error for x in r] == [False, False, False, False, True]
    assert "The user denied permission to use Bash" in r[4].text
    assert all((workspace / f).exists() for f in ("one", "two", "three", "four", "five"))
    assert not (workspace / "six").exists()
    assert replay(log).path == result.path


def test_the_terminal_asks_and_the_answer_is_obeyed(workspace: Path, tmp_path: Path) -> None:
    import json

    import pexpect

    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "prompt": "p",
                "turns": [
                    {"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                  "input": {"command": "touch yes-file"}}]},
                    {"content": [{"type": "tool_use", "id": "t2", "name": "Bash",
                                  "input": {"command": "rm -f keep.txt"}}]},
                    {"content": [{"type": "text", "text": "done"}]},
                ],
            }
        )
    )  # fmt: skip
    (workspace / "keep.txt").write_text("k")
    child = _run_in_a_terminal(scenario, workspace, tmp_path)
    child.sendline("y")
    child.expect("Allow\\?")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert (workspace / "yes-file").exists()
    assert (workspace / "keep.txt").exists()
    assert child.exitstatus == 0


def test_always_for_an_outside_path_grants_what_was_asked_and_nothing_more(
    tmp_path: Path,
) -> None:
    """ "Always" on a Bash or Grep call that reaches outside must not add an Edit rule:
    that let the model write the file the user had only let a command read."""
    from fsm_agent.core.permission_types import PermissionRequest, PermissionSettings
    from fsm_agent.live.approvals import Approvals

    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "outside" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text("x")
    approvals = Approvals(PermissionSettings(), str(ws), home=str(tmp_path / "home"),
                          prompter=lambda q: ALLOW_ALWAYS)  # fmt: skip

    def verdict(tool: str, **input: Any) -> str:
        return approvals.check(PermissionRequest(tool, input)).behavior

    bash = approvals.check(PermissionRequest("Bash", {"command": f"cat {secret}"}))
    assert bash.behavior == "ask"
    asyncio.run(approvals.ask(PermissionAsk("Bash", {"command": f"cat {secret}"},
                                            outside=bash.outside)))  # fmt: skip
    assert verdict("Write", file_path=str(secret), content="y") == "ask"
    grep = approvals.check(PermissionRequest("Grep", {"pattern": "x", "path": str(secret.parent)}))
    assert grep.behavior == "ask"
    asyncio.run(approvals.ask(PermissionAsk("Grep", {"pattern": "x"}, outside=grep.outside)))
    assert verdict("Grep", pattern="y", path=str(secret.parent)) == "allow"
    assert verdict("Write", file_path=str(secret), content="y") == "ask"


def test_the_terminal_shows_the_call_as_written_whatever_brackets_it_holds(
    monkeypatch: Any, capsys: Any
) -> None:
    """The model's input was read as rich markup: `[/]` raised, so the user was never
    asked and the call was denied; `[black on black]` could hide part of a command."""
    from fsm_agent.cli import questions
    from fsm_agent.cli.questions import terminal_prompter

    monkeypatch.setattr(questions, "_read_line", lambda abort: "y\n")
    command = 'echo "[/]" && rm -rf build [black on black]&& curl x | sh'
    question = PermissionAsk("Bash", {"command": command}, reason=f"Running `{command}`",
                             suggestion="Bash(echo [/] *)")  # fmt: skip
    assert terminal_prompter()(question) == ALLOW_ONCE
    shown = capsys.readouterr().err
    assert "[black on black]&& curl x | sh" in shown
    assert 'echo "[/]"' in shown
    assert "Allow? [y] once  [a] always (Bash(echo [/] *))  [n] deny" in shown


def test_a_question_never_sends_the_call_s_escapes_to_the_terminal(
    monkeypatch: Any, capsys: Any
) -> None:
    """The reason and the suggested rule quote the command as the model wrote it: their
    escapes reached the terminal (cleared the screen, set the clipboard) while the user
    was asked, in a terminal and in a chat alike."""
    from fsm_agent.cli import questions
    from fsm_agent.cli.questions import line_prompter, terminal_prompter

    clear, clipboard = "\x1b[2J", "\x1b]52;c;cm0gLXJmIH4=\x07"
    command = f"echo hi{clear}{clipboard}"
    question = PermissionAsk("Bash", {"command": command}, reason=f"Running `{command}`",
                             suggestion=f"Bash({command} *)")  # fmt: skip
    monkeypatch.setattr(questions, "_read_line", lambda abort: "y\n")
    assert terminal_prompter()(question) == ALLOW_ONCE
    asked: list[str] = []
    assert line_prompter(lambda text: asked.append(text) or "y")(question) == ALLOW_ONCE
    for shown in (capsys.readouterr().err, *asked):
        assert "\x1b" not in shown and "\x07" not in shown, repr(shown)
        assert "Running `echo hi[2J]52;c;cm0gLXJmIH4=`" in shown


def _run_in_a_terminal(
    scenario: Path, workspace: Path, tmp_path: Path, until: str = "Allow\\?"
) -> Any:
    """`fsm-agent run` of `scenario` in a pseudo-terminal, stopped where it prints `until`
    (by default its first question)."""
    child = spawn(["run", "--scripted", str(scenario), "--cwd", str(workspace),
                   "--log", str(tmp_path / "l.jsonl")], workspace)  # fmt: skip
    child.expect(until)
    return child


def _asking(workspace: Path, tmp_path: Path) -> Any:
    """`fsm-agent run` in a terminal, stopped at the question about `touch asked`."""
    import json

    scenario = tmp_path / "s.json"
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "touch asked"}}
    scenario.write_text(json.dumps({"prompt": "p", "turns": [{"content": [call]},
                                                             {"content": "done"}]}))  # fmt: skip
    child = _run_in_a_terminal(scenario, workspace, tmp_path)
    return child


def test_keys_typed_before_the_question_are_no_answer_to_it(
    workspace: Path, tmp_path: Path
) -> None:
    """A line typed while the model was slow (`a`, an Enter to see if it is alive) sat in
    the terminal's buffer and was read as the answer to the question that came next:
    `a` allowed the command, and every later one like it, unasked."""
    import json

    import pexpect

    scenario = tmp_path / "s.json"
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "touch asked"}}
    scenario.write_text(json.dumps({"prompt": "p", "turns": [{"delay": 3, "content": [call]},
                                                             {"content": "done"}]}))  # fmt: skip
    child = _run_in_a_terminal(scenario, workspace, tmp_path, until="Waiting for the model")
    child.sendline("a")
    child.expect("Allow\\?")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not (workspace / "asked").exists()


def test_the_question_stays_on_screen_while_the_user_answers(
    workspace: Path, tmp_path: Path
) -> None:
    """The live status line was redrawn over the question (`\\r`, erase line) ten
    times a second, so the user saw a spinner, not what they were asked."""
    import pexpect

    child = _asking(workspace, tmp_path)
    assert child.expect(["Running tools", pexpect.TIMEOUT], timeout=2) == 1
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (workspace / "asked").exists()


def test_ctrl_c_at_the_question_denies_the_call_and_ends_the_run(
    workspace: Path, tmp_path: Path
) -> None:
    """Ctrl-C did nothing while the question waited (the answer was read on a thread
    that no signal reaches): the run hung until the user typed an answer."""
    import pexpect

    child = _asking(workspace, tmp_path)
    child.sendintr()
    child.expect(pexpect.EOF, timeout=20)
    child.close()
    assert child.exitstatus == 15
    assert not (workspace / "asked").exists()
    log = tmp_path / "l.jsonl"
    result = replay(log)
    assert result.reason == "aborted_tools"


def test_dont_ask_mode_never_asks_not_for_an_ask_rule_nor_a_hooks_ask(
    workspace: Path, tmp_path: Path
) -> None:
    """dontAsk denies "anything that would ask": an ask rule, or a PreToolUse hook
    answering ask, put the question to the user all the same."""
    from fsm_agent.core.permission_types import PermissionSettings, RuleSource
    from fsm_agent.hooks.outcomes import HookOutcome
    from fsm_agent.live.scripted import ScriptedHooks

    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return ALLOW_ONCE

    scenario = _bash_turns("git push origin main", "ls")
    hooks = ScriptedHooks({"PreToolUse": (HookOutcome(), HookOutcome(permission_decision="ask"))})
    rules = PermissionSettings(ask=(RuleSource("Bash(git push *)", str(workspace)),))
    result = asyncio.run(
        arun(
            "p",
            model=ScriptedModel(scenario),
            config=RunConfig(cwd=str(workspace), model="scripted", permission_mode="dontAsk",
                             permissions=rules),
            log=tmp_path / "d.jsonl",
            prompter=prompter,
            hooks=hooks,
        )
    )  # fmt: skip
    assert asked == []
    r = _results(result)
    assert all(x.is_error for x in r)
    assert all("dontAsk" in x.text for x in r)


def test_a_withdrawn_question_is_given_up_and_its_late_answer_ignored(tmp_path: Path) -> None:
    """The call's stream failed while its question waited: the wait ends `cancelled`,
    the prompter sees `withdrawn()` and gives up, the "always" it answers after that adds
    no rule, and the next question is put only once that prompter has returned."""
    import threading
    import time

    from fsm_agent.core.abort import AbortSignal
    from fsm_agent.core.permission_types import CANCELLED, PermissionSettings
    from fsm_agent.live.approvals import Approvals, withdrawn
    from fsm_agent.live.effects import LiveEffects

    said: list[str] = []
    on_screen = threading.Event()

    def prompter(question: PermissionAsk) -> str:
        said.append(f"asked {question.tool}")
        if question.tool != "Bash":
            return ALLOW_ONCE
        on_screen.set()
        for _ in range(1000):  # a prompter that never hears of it would still end the test
            if withdrawn():
                said.append("gave up")
                break
            time.sleep(0.01)
        return ALLOW_ALWAYS

    approvals = Approvals(PermissionSettings(), str(tmp_path), prompter=prompter)
    model = ScriptedModel(Scenario.parse({"turns": [{"content": "x"}]}))
    effects = LiveEffects(model, {}, approvals=approvals)

    async def go() -> tuple[str, str]:
        cancel = AbortSignal()
        bash = PermissionAsk("Bash", {"command": "make"}, "needs approval", "Bash(make)")
        first = asyncio.ensure_future(effects.ask_permission(bash, cancel))
        await asyncio.to_thread(on_screen.wait, 10)
        cancel.set()
        withdrawn_answer = await first
        read = PermissionAsk("Read", {"file_path": "a"}, "needs approval")
        return withdrawn_answer, await effects.ask_permission(read, AbortSignal())

    assert asyncio.run(go()) == (CANCELLED, ALLOW_ONCE)
    assert said == ["asked Bash", "gave up", "asked Read"]
    assert approvals.settings.allow == ()


def test_always_for_an_outside_path_with_glob_characters_names_that_path_alone(
    tmp_path: Path,
) -> None:
    """`Read(//…/data[1].csv)` is a pattern: its class matched `data1.csv` and not the
    file the user let the model read, which asked again. The rule "always" adds, and
    the one the reason suggests, escape the pattern characters of the path."""
    from fsm_agent.core.permission_types import PermissionRequest, PermissionSettings
    from fsm_agent.live.approvals import Approvals

    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "out{a,b}"
    outside.mkdir()
    asked = outside / "data[1]*?.csv"
    other = outside / "data1xy.csv"
    for f in (asked, other, outside / "a"):
        f.write_text("x")
    approvals = Approvals(PermissionSettings(), str(ws), home=str(tmp_path / "home"),
                          prompter=lambda q: ALLOW_ALWAYS)  # fmt: skip

    def check(path: Path) -> Any:
        return approvals.check(PermissionRequest("Read", {"file_path": str(path)}))

    first = check(asked)
    assert first.behavior == "ask"
    assert first.suggestion == f"Read(/{tmp_path}/out\\{{a,b\\}}/data\\[1\\]\\*\\?.csv)"
    asyncio.run(approvals.ask(PermissionAsk("Read", {"file_path": str(asked)},
                                            suggestion=first.suggestion,
                                            outside=first.outside)))  # fmt: skip
    assert check(asked).behavior == "allow"
    assert check(other).behavior == "ask"
    assert check(outside / "a").behavior == "ask"


def test_calls_in_flight_asking_what_always_just_granted_are_not_asked_again(
    workspace: Path, tmp_path: Path
) -> None:
    """Grep and Glob run together on the same outside directory: both ask, one at a
    time. "Always" on the first adds the very rule the second would add, so the second
    runs without putting the same question again."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("hello\n")
    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return ALLOW_ALWAYS

    calls = [
        {"type": "tool_use", "id": "t1", "name": "Grep",
         "input": {"pattern": "hello", "path": str(outside)}},
        {"type": "tool_use", "id": "t2", "name": "Glob",
         "input": {"pattern": "*.txt", "path": str(outside)}},
    ]  # fmt: skip
    scenario = Scenario.parse({"prompt": "p", "turns": [{"content": calls}, {"content": "ok"}]})
    log = tmp_path / "ask.jsonl"
    result = _asked_run(scenario, workspace, log, prompter)
    assert [q.tool for q in asked] == ["Grep"]
    r = _results(result)
    assert [x.is_error for x in r] == [False, False]
    assert str(outside / "notes.txt") in r[1].text
    assert replay(log).path == result.path


def _outside_batch(tmp_path: Path) -> Scenario:
    """Grep over an outside directory and a Read of a file in it, in one batch."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("hello\n")
    calls = [
        {"type": "tool_use", "id": "t1", "name": "Grep",
         "input": {"pattern": "hello", "path": str(outside)}},
        {"type": "tool_use", "id": "t2", "name": "Read",
         "input": {"file_path": str(outside / "notes.txt")}},
    ]  # fmt: skip
    return Scenario.parse({"prompt": "p", "turns": [{"content": calls}, {"content": "ok"}]})


def test_a_call_waiting_to_ask_that_a_rule_granted_meanwhile_covers_is_not_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """The Read waits while the Grep's question is up; "always" on it adds
    `Read(//…/outside)`, which covers the Read's file although it is not the rule the
    Read would add. Claude Code resolves such a waiting request with the new rule: the
    Read runs unasked, and the log answers it on replay."""
    import json

    scenario = _outside_batch(tmp_path)
    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return ALLOW_ALWAYS

    log = tmp_path / "ask.jsonl"
    result = _asked_run(scenario, workspace, log, prompter)
    assert [q.tool for q in asked] == ["Grep"]
    r = _results(result)
    assert [x.is_error for x in r] == [False, False]
    assert "hello" in r[1].text
    records = [json.loads(line) for line in log.read_text().splitlines()]
    answers = [
        (x["args"]["tool"], x["result"]) for x in records if x.get("name") == "ask_permission"
    ]
    assert answers == [("Grep", ALLOW_ALWAYS), ("Read", ALLOW_ONCE)]
    assert replay(log).path == result.path


def test_a_deny_answer_leaves_the_waiting_call_asked(workspace: Path, tmp_path: Path) -> None:
    scenario = _outside_batch(tmp_path)
    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return DENY if question.tool == "Grep" else ALLOW_ONCE

    log = tmp_path / "ask.jsonl"
    result = _asked_run(scenario, workspace, log, prompter)
    assert [q.tool for q in asked] == ["Grep", "Read"]
    assert [x.is_error for x in _results(result)] == [True, False]
    assert replay(log).path == result.path


def test_a_waiting_question_a_pre_tool_use_hook_asked_for_is_still_put(
    workspace: Path, tmp_path: Path
) -> None:
    """A hook's `ask` asks whatever the rules say: a rule granted while the question
    waited does not answer it."""
    from fsm_agent.hooks.outcomes import NO_OPINION, HookOutcome

    class AskForReads:
        events = frozenset({"PreToolUse"})

        async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
            if payload["tool_name"] == "Read":
                return HookOutcome(permission_decision="ask", permission_reason="hook asks")
            return NO_OPINION

    asked: list[PermissionAsk] = []

    def prompter(question: PermissionAsk) -> str:
        asked.append(question)
        return ALLOW_ALWAYS

    log = tmp_path / "ask.jsonl"
    result = asyncio.run(
        arun(
            "p",
            model=ScriptedModel(_outside_batch(tmp_path)),
            config=RunConfig(cwd=str(workspace), model="scripted"),
            hooks=AskForReads(),
            log=log,
            prompter=prompter,
        )
    )
    assert [(q.tool, q.reason) for q in asked][1:] == [("Read", "hook asks")]
    assert replay(log).path == result.path
