"""`fsm-agent graph` and the rendered diagram in docs/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fsm_agent.cli.main import cli
from fsm_agent.engine.graph import count_path, dot, machine_doc, mermaid
from fsm_agent.engine.machine import EDGES, STATES
from tests.conftest import ROOT
from tests.support.cli import fsm
from tests.support.logs import reseal


def test_mermaid_has_every_state_and_every_named_edge() -> None:
    text = mermaid()
    for edge in EDGES:
        assert f"{edge.source.value} --> {edge.dest}: {edge.name}\n" in text
    for state in STATES:
        assert state in text


def test_dot_labels_every_edge() -> None:
    text = dot()
    for edge in EDGES:
        assert f'{edge.source.value} -> {edge.dest} [label="{edge.name}"];' in text


def test_highlight_marks_taken_edges_with_counts() -> None:
    taken = count_path([("continuation", "next_turn", "preprocess")] * 3)
    assert "continuation --> preprocess: next_turn ×3" in mermaid(taken)
    assert 'label="next_turn ×3", color=red' in dot(taken)


def test_docs_diagram_is_in_sync_with_the_code() -> None:
    assert (ROOT / "docs" / "machine.md").read_text() == machine_doc()
    assert (ROOT / "docs" / "machine.dot").read_text() == dot()


def test_graph_command_formats() -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["graph"]).output == mermaid()
    assert runner.invoke(cli, ["graph", "--format", "dot"]).output == dot()
    bad = runner.invoke(cli, ["graph", "--format", "png"])
    assert bad.exit_code == 2


@pytest.mark.parametrize(
    "command",
    [["graph", "--highlight"], ["coverage"], ["replay", "--path", "--json"], ["replay", "--check"]],
)
def test_a_transition_whose_edge_is_not_text_is_a_damaged_log(
    command: list[str], tmp_path: Path
) -> None:
    lines = (ROOT / "replays" / "tool_round.jsonl").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"t":"transition"' in line)
    record = json.loads(lines[at])
    lines[at] = json.dumps({**record, "from": 5, "edge": None, "to": [1]})
    log = tmp_path / "damaged.jsonl"
    log.write_text("\n".join(lines) + "\n")
    reseal(log)
    proc = fsm(*command, str(log))
    assert proc.returncode == 2
    assert (
        proc.stderr == f"fsm-agent: error: {log}:{at + 1}: a transition's from is not a string: 5\n"
    )


def _with_an_edge_from_elsewhere(tmp_path: Path, dest: str) -> Path:
    """tool_round.jsonl with its first transition `old_state -[gone]-> dest`, an edge
    this machine does not have (a log from another version, or damaged)."""
    lines = (ROOT / "replays" / "tool_round.jsonl").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"t":"transition"' in line)
    odd = {"from": "old_state", "edge": "gone", "to": dest}
    lines[at] = json.dumps({**json.loads(lines[at]), **odd})
    log = tmp_path / "other.jsonl"
    log.write_text("\n".join(lines) + "\n")
    reseal(log)
    return log


def test_highlight_of_edges_this_machine_lacks_marks_none_and_says_so(tmp_path: Path) -> None:
    """A log from another version (or damaged) names states the diagram does not have:
    marking them would add nodes, or lines, to the Mermaid text. They are named on stderr."""
    log = _with_an_edge_from_elsewhere(tmp_path, "x\n[*] --> injected")
    proc = fsm("graph", "--highlight", str(log))
    assert proc.returncode == 0
    assert "injected" not in proc.stdout and "old_state" not in proc.stdout
    assert "    class api_call taken\n" in proc.stdout
    assert proc.stderr == (
        f"fsm-agent: warning: {log}: not in this machine's table, not marked: "
        'old_state -[gone]-> "x\\n[*] --> injected"\n'
    )


def test_coverage_and_path_name_an_unknown_edge_on_one_line(tmp_path: Path) -> None:
    log = _with_an_edge_from_elsewhere(tmp_path, "x\ny")
    path = fsm("replay", "--path", str(log)).stdout.splitlines()
    assert path[0] == 'old_state -[gone]-> "x\\ny"'
    proc = fsm("coverage", str(log))
    assert (
        proc.stdout.splitlines()[-1] == 'not in this machine\'s table: old_state -[gone]-> "x\\ny"'
    )
