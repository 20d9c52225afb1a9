"""`fsm-agent graph` and the rendered diagram in docs/."""

from __future__ import annotations

from click.testing import CliRunner

from fsm_agent.cli import cli
from fsm_agent.graph import count_path, dot, machine_doc, mermaid
from fsm_agent.machine import EDGES, STATES
from tests.conftest import ROOT


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
