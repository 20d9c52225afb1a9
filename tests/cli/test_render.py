"""What a person sees: the live renderer's output for real runs of scripted scenarios."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from rich.console import Console

from fsm_agent.app.session import run_scenario
from fsm_agent.cli.render import LiveRenderer, QuietRenderer
from fsm_agent.core.events import AssistantMessage, Notice, ResponseUsage, TextDelta, Transition
from fsm_agent.core.messages import Message, TextBlock, Usage
from tests.conftest import SCENARIOS

MARKDOWN_ANSWER = {
    "turns": [{"content": [{"type": "text", "text": "Done:\n\n- **one**\n- two\n"}]}],
    "prompt": "go",
}


def console(*, terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=100, color_system=None)


def output(c: Console) -> str:
    return c.file.getvalue()  # type: ignore[attr-defined]


def test_plain_output_streams_text_and_one_line_per_tool(workspace: Path, tmp_path: Path) -> None:
    c = console(terminal=False)
    renderer = LiveRenderer(c)
    assert renderer.live is False
    result = run_scenario(
        SCENARIOS / "tool_round.json", cwd=workspace, log=tmp_path / "l.jsonl", on_event=renderer
    )
    renderer.summary(result)
    lines = output(c).splitlines()
    assert lines[0] == "I'll create the file."
    assert lines[1] == "● Write(notes.txt)"
    assert lines[2].startswith("  ⎿ File created successfully")
    assert lines[3] == "● Read(notes.txt)"
    assert "notes.txt now says hello." in lines
    assert lines[-2].startswith("■ completed  turns 3 · tokens in 300 out 60")
    assert lines[-1] == f"  log: {tmp_path / 'l.jsonl'}"


def test_terminal_output_renders_markdown(workspace: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "md.json"
    scenario.write_text(json.dumps(MARKDOWN_ANSWER))
    c = console(terminal=True)
    renderer = LiveRenderer(c)
    renderer.start()
    result = run_scenario(scenario, cwd=workspace, log=tmp_path / "l.jsonl", on_event=renderer)
    renderer.summary(result)
    text = output(c)
    assert "• one" in text and "• two" in text
    assert "■ completed" in text


def test_spinner_names_the_phase_and_the_footer_counts(workspace: Path) -> None:
    renderer = LiveRenderer(console(terminal=True))
    renderer(Transition(2, "blocking_limit_check", "api_call", "under_limit", 2))
    usage = Usage(input_tokens=1200, output_tokens=34)
    renderer(ResponseUsage("claude-sonnet-4-5", usage))
    renderer(AssistantMessage(Message("assistant", (TextBlock("x"),), usage=usage)))
    renderer(TextDelta("half a sen"))
    shown = console(terminal=False)
    shown.print(renderer)
    frame = output(shown)
    assert "Waiting for the model…" in frame
    assert "turn 2 · ↑1200 · ↓34 tokens" in frame
    assert "half a sen" in frame


def test_notices_show_as_they_happen() -> None:
    c = console(terminal=False)
    renderer = LiveRenderer(c)
    renderer(TextDelta("partial"))
    renderer(Notice("fallback", "m1 is overloaded; switching to m2"))
    assert output(c) == "partial\n↻ m1 is overloaded; switching to m2\n"


def test_fallback_notice_in_a_real_run(workspace: Path, tmp_path: Path) -> None:
    c = console(terminal=False)
    renderer = LiveRenderer(c)
    result = run_scenario(
        SCENARIOS / "model_fallback.json",
        cwd=workspace,
        log=tmp_path / "l.jsonl",
        on_event=renderer,
    )
    renderer.summary(result)
    assert "↻ " in output(c) and "switching to" in output(c)


def test_quiet_prints_only_the_answer(workspace: Path, tmp_path: Path) -> None:
    c = console(terminal=False)
    renderer = QuietRenderer(c)
    result = run_scenario(
        SCENARIOS / "tool_round.json", cwd=workspace, log=tmp_path / "l.jsonl", on_event=renderer
    )
    renderer.summary(result)
    assert output(c) == "notes.txt now says hello.\n"


RM = {"command": "rm -rf build"}


def test_a_refused_call_shows_with_its_reason(workspace: Path, tmp_path: Path) -> None:
    c = console(terminal=False)
    renderer = LiveRenderer(c)
    scenario = {
        "prompt": "go",
        "turns": [
            {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": RM}]},
            {"content": [{"type": "text", "text": "ok"}]},
        ],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    run_scenario(path, cwd=workspace, log=tmp_path / "l.jsonl", on_event=renderer)
    lines = output(c).splitlines()
    at = lines.index("● Bash(rm -rf build)")
    assert lines[at + 1].startswith("  ✗ <tool_use_error>Permission to use Bash was denied")


def test_a_result_that_does_not_follow_its_call_repeats_the_call_s_line() -> None:
    """Calls that run together finish in any order: each result says whose it is."""
    from fsm_agent.core.events import ToolFinished, ToolStarted
    from fsm_agent.core.messages import ToolResultBlock, ToolUseBlock

    c = console(terminal=False)
    renderer = LiveRenderer(c)
    read = ToolUseBlock("t1", "Read", {"file_path": "a.txt"})
    grep = ToolUseBlock("t2", "Grep", {"pattern": "def"})
    glob = ToolUseBlock("t3", "Glob", {"pattern": "*.md"})
    renderer(ToolStarted(read))
    renderer(ToolStarted(grep))
    renderer(ToolFinished(ToolResultBlock("t2", "x.py:1:def f():"), "Grep", 0.01))
    renderer(ToolFinished(ToolResultBlock("t1", "1: first line"), "Read", 0.02))
    renderer(ToolStarted(glob))
    renderer(ToolFinished(ToolResultBlock("t3", "README.md"), "Glob", 0.0))
    assert output(c).splitlines() == [
        "● Read(a.txt)",
        "● Grep(def)",
        "  ⎿ x.py:1:def f():  (0.01s)",
        "● Read(a.txt)",
        "  ⎿ 1: first line  (0.02s)",
        "● Glob(*.md)",
        "  ⎿ README.md  (0.00s)",
    ]


def test_the_summary_is_red_when_the_answer_is_an_error(workspace: Path, tmp_path: Path) -> None:
    """An API error answer ends the loop `completed`, but nothing was done."""
    c = Console(file=io.StringIO(), force_terminal=True, width=100, color_system="standard")
    renderer = LiveRenderer(c, live=False)
    result = run_scenario(SCENARIOS / "api_error.json", cwd=workspace, log=tmp_path / "l.jsonl")
    renderer.summary(result)
    assert "\x1b[1;31m■ completed with an error" in output(c)
    c.file = io.StringIO()
    renderer.summary(
        run_scenario(SCENARIOS / "tool_round.json", cwd=workspace, log=tmp_path / "m.jsonl")
    )
    assert "\x1b[1;32m■ completed" in output(c)


CLEAR, CLIPBOARD = "\x1b[2J", "\x1b]52;c;aGk=\x07"


def test_escape_sequences_from_the_model_or_a_tool_never_reach_the_terminal() -> None:
    """A tool's output (a file `cat`ed, a colored test run) or the model's text may hold
    terminal escapes: printed raw, they cleared the screen or wrote the clipboard."""
    from fsm_agent.core.events import ToolFinished, ToolRefused, ToolStarted
    from fsm_agent.core.messages import ToolResultBlock, ToolUseBlock

    for terminal in (False, True):
        c = console(terminal=terminal)
        renderer = LiveRenderer(c)
        renderer.start()
        bash = ToolUseBlock("t1", "Bash", {"command": f"cat {CLEAR}notes"})
        renderer(TextDelta(f"Here {CLEAR}you go\x1b"))
        renderer(TextDelta(f"[2J {CLIPBOARD}"))
        renderer(AssistantMessage(Message("assistant", (TextBlock("x"),))))
        renderer(ToolStarted(bash))
        renderer(ToolFinished(ToolResultBlock("t1", f"{CLEAR}{CLIPBOARD}ok"), "Bash", 0.1))
        renderer(ToolRefused(bash, ToolResultBlock("t1", f"no {CLEAR}", is_error=True)))
        renderer(Notice("hook", f"Stop hook: {CLIPBOARD}said so"))
        renderer.stop()
        shown = output(c)
        assert CLEAR not in shown and "\x1b]" not in shown and "\x1b[" + "2J" not in shown
        assert terminal or "\x1b" not in shown, repr(shown)
        assert "ok" in output(c) and "Here" in output(c) and "said so" in output(c)


def test_a_tool_name_the_model_made_up_never_reaches_the_terminal_as_escapes() -> None:
    """The model names the tool: an unknown name with escapes in it was printed raw in
    the `●` line, the refusal's line and the spinner's label."""
    from fsm_agent.core.events import ToolFinished, ToolRefused, ToolStarted
    from fsm_agent.core.messages import ToolResultBlock, ToolUseBlock

    for terminal in (False, True):
        c = console(terminal=terminal)
        renderer = LiveRenderer(c)
        renderer.start()
        evil = ToolUseBlock("t1", f"Evil{CLEAR}{CLIPBOARD}", {"x": 1})
        renderer(ToolRefused(evil, ToolResultBlock("t1", "No such tool", is_error=True)))
        renderer(ToolStarted(evil))
        assert CLEAR not in renderer._label and "\x1b" not in renderer._label
        renderer(ToolFinished(ToolResultBlock("t1", "ok"), "Evil", 0.1))
        renderer.stop()
        shown = output(c)
        assert CLEAR not in shown and "\x1b]" not in shown, repr(shown)
        assert terminal or "\x1b" not in shown, repr(shown)
        assert "● Evil[2J]52;c;aGk=(" in shown


def test_the_summary_of_an_error_answer_does_not_read_as_success(
    workspace: Path, tmp_path: Path
) -> None:
    """The exit code of an API error's answer is 20: the headline says so too, where it
    said `■ completed` as a clean run's does."""
    c = console(terminal=False)
    renderer = LiveRenderer(c)
    result = run_scenario(SCENARIOS / "api_error.json", cwd=workspace, log=tmp_path / "l.jsonl")
    renderer.summary(result)
    assert output(c).startswith("■ completed with an error  turns 1")


def test_verbose_output_shows_each_call_once(workspace: Path, tmp_path: Path) -> None:
    """The step lines between a call and its result are notes: the result still follows
    its call, whose `●` line was printed twice around them."""
    c = console(terminal=False)
    renderer = LiveRenderer(c, verbose=True)
    result = run_scenario(
        SCENARIOS / "tool_round.json", cwd=workspace, log=tmp_path / "l.jsonl", on_event=renderer
    )
    renderer.summary(result)
    lines = output(c).splitlines()
    calls = [line for line in lines if line.startswith("● ")]
    assert calls == ["● Write(notes.txt)", "● Read(notes.txt)"]
    assert any(line.startswith("  [") for line in lines)  # the steps are shown


def test_piped_output_keeps_lines_whole(workspace: Path, tmp_path: Path) -> None:
    """A pipe has no width: rich's default of 80 columns cut result lines
    (`has been updated successfu…`) that the README shows whole."""
    import os

    from tests.support.cli import run_scripted

    deep = workspace / ("d" * 60)
    deep.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    os.environ.pop("COLUMNS", None)
    try:
        proc = run_scripted("fix_bug", deep, tmp_path / "l.jsonl")
    finally:
        os.environ.update(env)
    assert proc.returncode == 0, proc.stderr
    updated = [line for line in proc.stdout.splitlines() if "has been updated" in line]
    assert updated, proc.stdout
    assert re.search(r"has been updated successfully\.  \(\d+\.\d\ds\)$", updated[0]), updated
    assert len(updated[0]) > 80
