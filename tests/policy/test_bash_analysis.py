"""Bash analysed on tree-sitter-bash, failing closed: every construct the analysis does not
fully understand is asked about in every mode (denied in plan and dontAsk, and without a
terminal), whatever allow rule or mode would have let the command run; deny and ask rules
still see each command inside; Read and Edit deny rules cover the files a command names."""

from __future__ import annotations

import pytest

from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.live.paths import default_resolve
from fsm_agent.policy.bash_analysis import ESCAPES, analyse
from fsm_agent.policy.permissions import Workspace, call_facts, evaluate, is_read_only

WS = Workspace("/ws", "/home/u")
MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


def rules(allow=(), ask=(), deny=()) -> PermissionSettings:
    def src(xs):
        return tuple(RuleSource(x, "/ws", "test") for x in xs)

    return PermissionSettings(allow=src(allow), ask=src(ask), deny=src(deny))


def judge(command: str, settings=PermissionSettings(), mode="default"):
    facts = call_facts("Bash", {"command": command}, WS, default_resolve(WS.cwd))
    return evaluate(facts, settings, mode, WS)


NOT_UNDERSTOOD = [
    "cat $'../outside/secret.txt'",
    "head -n 3 $'../outside/secret.txt'",
    "grep -r secret $'..'/outside",
    "diff a.txt $'../outside/secret.txt'",
    "cat .$'\\56'/outside/secret.txt",
    "cat $'\\u002e\\u002e'/outside/secret.txt",
    "cat $'/proc/self/environ'",
    "touch $'\\x2e\\x2e/outside/new'",
    "cp a.txt $'\\x2e\\x2e/outside/copy'",
    "mkdir $'\\x2e\\x2e/outside/dir'",
    "mv a.txt $'\\x2e\\x2e/outside/moved'",
    'echo $"../outside"',
    "xargs cat < paths.txt",
    "cat paths.txt | xargs cat",
    "xargs cat <<< ../outside/secret.txt",
    "xargs touch < p.txt",
    "cat $HOME/.ssh/id_rsa",
    "cat ${OLDPWD}/x",
    "cat $(echo ../outside/secret.txt)",
    "cat `echo ../outside/secret.txt`",
    "cat <(cat ../outside/secret.txt)",
    "cat < <(cat ../outside/secret.txt)",
    "echo $((1+2))",
    "eval cat ../outside/secret.txt",
    "sh -c 'cat ../outside/secret.txt'",
    "bash -c 'touch ../outside/x'",
    "env cat ../outside/secret.txt",
    "env",
    "sudo cat /etc/shadow",
    "nohup -x cat a",
    "timeout --bogus 5 cat a",
    "find . -exec cat {} \\;",
    "find . -name '*.py' -execdir touch x \\;",
    "parallel cat ::: ../outside/secret.txt",
    "for f in ../outside/*; do cat $f; done",
    "while true; do ls; done",
    "if true; then ls; fi",
    "f() { cat ../outside/x; }; f",
    "export A=1",
    "cat {..,x}/outside/secret.txt",
    "cat ~root/x",
    "cat ~+/../outside/secret.txt",
    "cat \x01a.txt",
    "cat a.txt\u00a0../outside/secret.txt",
    "cat ../outside\\\nsecret.txt",
    "cat \\ ../outside/secret.txt",
    'cat "a"\\b',
    'echo "unterminated',
    "cat <<EOF\n$(cat ../outside/secret.txt)\nEOF",
    "du --files0-from=list",
    "git diff --pathspec-from-file=list",
]


@pytest.mark.parametrize("command", NOT_UNDERSTOOD)
def test_what_the_analysis_does_not_understand_is_asked_in_every_mode(command: str) -> None:
    assert analyse(command).problem is not None
    assert not is_read_only(command)
    for mode in MODES:
        decision = judge(command, mode=mode)
        expected = "deny" if mode in ("plan", "dontAsk") else "ask"
        assert decision.behavior == expected, (mode, decision)
    broad = judge(command, rules(allow=("Bash", "Bash(cat:*)", "Bash(xargs:*)")), "acceptEdits")
    assert broad.behavior == "ask"


def test_escape_codes_are_refused_in_claude_codes_words() -> None:
    assert judge("cat $'../outside/secret.txt'").reason == ESCAPES


@pytest.mark.parametrize(
    "command",
    [
        "cat a.txt",
        "ls -la && git status | head -5",
        "grep 'a$' f",
        "grep foo$ f",
        "echo 'cost: $5'",
        "cat f 2>&1",
        "ls 2>/dev/null",
        "timeout 5 cat a.txt",
        "nice -n 5 nohup cat a.txt",
        "cat ./notes",
        "cat <<'EOF'\nhi $x\nEOF",
        "wc -l <<< 'a b'",
        "find . -name '*.py'",
        "git log --oneline -n 5 # recent",
        "(cd sub && ls)",
        "! grep -q x a.txt",
        "cat a\\ b.txt 'c d.txt' \"e f.txt\"",
    ],
)
def test_what_it_understands_is_judged_as_before(command: str) -> None:
    assert analyse(command).problem is None
    assert is_read_only(command)
    assert judge(command, mode="plan").behavior == "allow"


def test_a_commit_message_in_a_quoted_here_document_is_understood() -> None:
    command = "git commit -m \"$(cat <<'EOF'\nFix $x, `y`\n\nMore.\nEOF\n)\""
    [part] = analyse(command).parts
    assert analyse(command).problem is None
    assert part.words == ("git", "commit", "-m", "Fix $x, `y`\n\nMore.")
    assert judge(command, rules(allow=("Bash(git commit:*)",))).behavior == "allow"
    assert judge(command).behavior == "ask"


def test_quotes_do_not_hide_a_command_from_a_deny_rule() -> None:
    deny = rules(deny=("Bash(rm -rf:*)",))
    for command in ('r"m" -rf x', "'rm' '-rf' x", "timeout 5 rm -rf x", "ls; rm -rf x"):
        assert judge(command, deny, "bypassPermissions").behavior == "deny", command


def test_deny_rules_see_the_commands_inside_what_is_not_understood() -> None:
    deny = rules(deny=("Bash(rm:*)",))
    for command in ("for f in a b; do rm $f; done", "echo $(rm -rf x)", "f() { rm x; }"):
        assert judge(command, deny, "bypassPermissions").behavior == "deny", command


@pytest.mark.parametrize("command", ["env", "printenv", "printenv ANTHROPIC_API_KEY", "set"])
def test_commands_that_print_the_environment_are_never_read_only(command: str) -> None:
    assert not is_read_only(command)
    assert judge(command).behavior == "ask"
    assert judge(command, mode="plan").behavior == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "cat secrets/key.txt",
        "cat ./secrets/../secrets/key.txt",
        'cat "secrets/key.txt"',
        "head -n1 secrets/key.txt",
        "tail secrets/key.txt",
        "grep -r token secrets",
        "less secrets/key.txt",
        "cp secrets/key.txt out.txt",
        "cat < secrets/key.txt",
        "cd secrets && cat key.txt",
        "diff --from-file=secrets/key.txt a.txt",
    ],
)
def test_a_read_deny_rule_covers_the_files_a_command_names(command: str) -> None:
    """Claude Code refuses `cat secrets/key.txt` under `Read(./secrets/**)` even with
    `Bash(cat:*)` allowed; so does fsm-agent, in every mode."""
    settings = rules(allow=("Bash(cat:*)", "Bash"), deny=("Read(./secrets/**)",))
    for mode in MODES:
        decision = judge(command, settings, mode)
        assert decision.behavior == "deny", (mode, decision)
        assert "Read(./secrets/**)" in decision.reason


def test_an_edit_deny_rule_covers_what_a_writing_command_names_not_what_a_reader_reads() -> None:
    settings = rules(deny=("Edit(./locked/**)",))
    for command in ("touch locked/x", "cp a.txt locked/", "echo x > locked/f", "mv locked/a b"):
        assert judge(command, settings, "acceptEdits").behavior == "deny", command
    assert judge("cat locked/a", settings).behavior == "allow"


def test_an_ask_rule_on_reads_asks_before_a_command_reads_there() -> None:
    settings = rules(ask=("Read(./private/**)",))
    assert judge("cat private/x", settings, "bypassPermissions").behavior == "ask"
    assert judge("cat public/x", settings, "bypassPermissions").behavior == "allow"
