"""Configuration assembly below the CLI: what cannot make a run is a `ConfigError`,
and warnings reach the callback in the order they are found."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_agent.app.configure import RunOptions, config_with, configure, is_http_url, real_model
from fsm_agent.app.environment import (
    IDLE_NOTIFY_S,
    ConfigError,
    idle_notify_s,
    stop_hook_block_cap,
    whole_number_variable,
)
from fsm_agent.core.config import RunConfig
from tests.conftest import ROOT

TOOL_ROUND = ROOT / "replays" / "scenarios" / "tool_round.json"


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "ten", "1" * 5000])
def test_a_variable_that_is_not_a_whole_number_of_one_or_more_is_refused(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_VARIABLE", value)
    with pytest.raises(ConfigError, match=r"^SOME_VARIABLE must be a count, not '"):
        whole_number_variable("SOME_VARIABLE", "a count")


def test_an_unset_or_blank_variable_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_VARIABLE", "  ")
    assert whole_number_variable("SOME_VARIABLE", "a count") is None
    monkeypatch.delenv("SOME_VARIABLE")
    assert whole_number_variable("SOME_VARIABLE", "a count") is None


def test_the_stop_hook_cap_takes_a_sign_and_the_idle_wait_is_in_milliseconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "-3")
    assert stop_hook_block_cap() == -3
    monkeypatch.delenv("FSM_AGENT_IDLE_NOTIFY_MS", raising=False)
    assert idle_notify_s() == IDLE_NOTIFY_S
    monkeypatch.setenv("FSM_AGENT_IDLE_NOTIFY_MS", "1500")
    assert idle_notify_s() == 1.5


def test_an_option_not_given_keeps_what_the_config_has() -> None:
    base = RunConfig(model="a")
    assert config_with(base, model=None, max_turns=3) == RunConfig(model="a", max_turns=3)


def test_a_real_model_needs_a_key_and_an_http_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        real_model(None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with pytest.raises(ConfigError, match=r"^ANTHROPIC_BASE_URL 'localhost:8080' is not an"):
        real_model("localhost:8080", "ANTHROPIC_BASE_URL")
    assert is_http_url("http://127.0.0.1:4000")
    assert not is_http_url("http://host:port")


def test_a_scripted_run_is_configured_from_its_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    warnings: list[str] = []
    options = RunOptions(
        scripted=TOOL_ROUND, cwd=str(tmp_path), max_turns=4, permission_mode="auto"
    )
    made = configure(options, warnings.append)
    assert made.config.cwd == str(tmp_path.resolve())
    assert made.config.max_turns == 4
    assert made.config.permission_mode == "default"
    assert made.hooks is not None
    assert made.resumed is None
    assert [w.split(":")[0] for w in warnings] == ["fsm-agent"]
    assert "auto" in warnings[0]


def test_a_fallback_that_is_the_main_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    options = RunOptions(scripted=TOOL_ROUND, cwd=str(tmp_path), fallback_model="scripted")
    with pytest.raises(ConfigError, match="is the main model"):
        configure(options, print)


def test_disable_bypass_permissions_mode_runs_a_bypass_run_in_default_mode(
    tmp_path: Path,
) -> None:
    """`"disableBypassPermissionsMode": "disable"` in a settings file: the real CLI runs
    `--permission-mode bypassPermissions` as default (its Write asked, so refused);
    fsm-agent does too, with a warning naming the file."""
    import json

    from tests.support.cli import fsm

    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    settings = ws / ".claude" / "settings.json"
    settings.write_text(json.dumps({"permissions": {"disableBypassPermissionsMode": "disable"}}))
    scenario = tmp_path / "write.json"
    write = {"type": "tool_use", "id": "w", "name": "Write",
             "input": {"file_path": "f.txt", "content": "x"}}  # fmt: skip
    scenario.write_text(
        json.dumps({"prompt": "go", "turns": [{"content": [write]}, {"content": "ok"}]})
    )
    env = {"HOME": str(tmp_path / "home")}
    args = (
        "run",
        "--scripted",
        str(scenario),
        "--cwd",
        str(ws),
        "--log",
        str(tmp_path / "a.jsonl"),
    )
    done = fsm(*args, "--permission-mode", "bypassPermissions", env=env)
    assert done.returncode == 0, done.stderr
    assert f"{settings}: permissions.disableBypassPermissionsMode" in done.stderr
    assert not (ws / "f.txt").exists()
    settings.write_text(json.dumps({"permissions": {"disableBypassPermissionsMode": True}}))
    bad = fsm(*args[:-1], str(tmp_path / "b.jsonl"), env=env)
    assert bad.returncode == 2
    assert 'disableBypassPermissionsMode must be "disable"' in bad.stderr
    settings.write_text("{}")
    allowed = fsm(
        *args[:-1], str(tmp_path / "c.jsonl"), "--permission-mode", "bypassPermissions", env=env
    )
    assert allowed.returncode == 0, allowed.stderr
    assert (ws / "f.txt").read_text() == "x"
