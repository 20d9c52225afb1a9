"""The Python API given a bad argument: a clear exception before anything runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from fsm_agent.app.session import replay, run, run_scenario
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tools.read import ReadTool

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


class Echo:
    name = "Echo"
    description = "Says its input back."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"x": {"type": "string"}},
    }

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return ToolOutcome(f"echo {input.get('x')}")


def test_a_tool_of_ones_own_runs() -> None:
    scenario = Scenario.parse(
        {
            "config": {"permission_mode": "bypassPermissions"},
            "turns": [
                {
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "Echo", "input": {"x": "hi"}}
                    ]
                },
                {"content": "done"},
            ],
        }
    )
    result = run_scenario(scenario, cwd=".", prompt="go", keep_log=False, tools={"Echo": Echo()})
    assert result.reason == "completed"
    assert result.messages[-2].content[0].content == "echo hi"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tools", "error", "message"),
    [
        ({"Other": Echo()}, ValueError, r"tools\['Other'\] is the tool 'Echo'"),
        ({"Read": object()}, TypeError, r"tools\['Read'\] is not a tool: a tool has a str 'name'"),
        ({"Read": ReadTool}, TypeError, r"tools\['Read'\] is the class ReadTool, not a tool"),
        (["Read"], TypeError, r"tools is a mapping of names to tools, not list"),
    ],
)
def test_a_tools_argument_that_cannot_work_is_refused(
    tmp_path: Path, tools: Any, error: type[Exception], message: str
) -> None:
    """A key other than the tool's name offered the model a tool no call could reach
    ('No such tool available'); an object that is not a tool failed with an
    AttributeError from inside the API, or at the model's first call."""
    with pytest.raises(error, match=message):
        run_scenario(WRITES, cwd=tmp_path, tools=tools)
    assert list(tmp_path.iterdir()) == []


class Careless(Echo):
    """Returns what it should have put in a `ToolOutcome`, or a content that is none."""

    name = "Careless"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return self.answer  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("echo hi", "it returned str, not a ToolOutcome"),
        (None, "it returned NoneType, not a ToolOutcome"),
        (
            ToolOutcome(123),
            "its ToolOutcome's content is int, not a str or a tuple of TextBlock and ImageBlock",
        ),  # type: ignore[arg-type]
    ],
)
def test_a_tool_that_answers_wrongly_fails_its_call_not_the_run(
    tmp_path: Path, answer: Any, said: str
) -> None:
    """A tool that raises fails its call (`is_error`); one that returned the wrong thing
    ended the run with a TypeError from deep in the log's codec."""
    scenario = Scenario.parse(
        {
            "config": {"permission_mode": "bypassPermissions"},
            "turns": [
                {"content": [{"type": "tool_use", "id": "t1", "name": "Careless", "input": {}}]},
                {"content": "done"},
            ],
        }
    )
    log = tmp_path / "l.jsonl"
    result = run_scenario(
        scenario, cwd=tmp_path, prompt="go", log=log, tools={"Careless": Careless(answer)}
    )
    assert result.reason == "completed"
    block = result.messages[-2].content[0]
    assert isinstance(block, ToolResultBlock) and block.is_error
    assert block.content == f"<tool_use_error>Careless failed: {said}</tool_use_error>"
    assert replay(log).path == result.path


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("max_turns", 0, "'max_turns' must be >= 1: 0"),
        ("max_turns", -1, "'max_turns' must be >= 1: -1"),
        ("token_budget", 0, "'token_budget' must be >= 1: 0"),
    ],
)
def test_a_limit_the_command_line_refuses_is_refused_by_runconfig(
    option: str, value: int, message: str
) -> None:
    """`max_turns=0` ran a whole turn, tools and all, then ended `max_turns` ('the
    maximum number of turns (0)'); `--max-turns` and a scenario take 1 or more."""
    with pytest.raises(ValueError, match=re.escape(message)):
        RunConfig(**{option: value})


def test_an_unknown_permission_mode_is_refused(tmp_path: Path) -> None:
    """A misspelt mode ran as `default` without a word, where `--permission-mode` and a
    scenario refuse it: `acceptedits` denied the writes it was meant to allow."""
    config = RunConfig(permission_mode="acceptedits")
    with pytest.raises(ValueError, match="unknown permission mode 'acceptedits'; choose one of"):
        run_scenario(WRITES, cwd=tmp_path, config=config)
    assert list(tmp_path.iterdir()) == []


def test_manual_is_default_in_the_log_as_on_the_command_line(tmp_path: Path) -> None:
    """`manual`, Claude Code's newer name for `default`, ran as default but the log's
    header and the denial the model read said `manual`, where the command line says
    `default`."""
    scenario = Scenario.parse(
        {
            "turns": [
                {"content": [{"type": "tool_use", "id": "t1", "name": "Write",
                              "input": {"file_path": "a.txt", "content": "x"}}]},
                {"content": "done"},
            ]
        }
    )  # fmt: skip
    log = tmp_path / "run.jsonl"
    config = RunConfig(model="scripted", cwd=str(tmp_path), permission_mode="manual")
    result = run("go", model=ScriptedModel(scenario), config=config, log=log)
    assert result.reason == "completed"
    assert '"permission_mode":"manual"' not in log.read_text()
    (denial,) = [
        b.text for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)
    ]
    assert "(permission mode default)" in denial
