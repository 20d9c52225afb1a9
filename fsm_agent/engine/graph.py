"""The machine as a picture: Mermaid or Graphviz dot, drawn from the edge table.

`transitions`' own diagrams (`GraphMachine`) draw one arrow per pair of
states, so the four recovery edges back to `preprocess` become one arrow
labelled `collapse_drain_retry | reactive_compact_retry | …`; they colour the
model's current state, and they have no place for how often a recorded run
took each edge. Drawing from `EDGES` gives every named edge its own arrow,
and can mark the counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from fsm_agent.engine.machine import EDGES, FINAL_STATES, INITIAL, Phase

Taken = Counter[tuple[str, str, str]]


def count_path(steps: Iterable[tuple[str, str, str]]) -> Taken:
    """Count `(source, edge, dest)` triples of a recorded path."""
    return Counter(steps)


_KEYS = frozenset((e.source.value, e.name, e.dest) for e in EDGES)


def unknown(taken: Taken) -> list[tuple[str, str, str]]:
    """Edges of a recorded path this machine's table lacks (a log from another version):
    the diagram has no place for them, so they are not marked."""
    return sorted(key for key in taken if key not in _KEYS)


def _label(name: str, taken: Taken | None, key: tuple[str, str, str]) -> str:
    if taken is None or not taken.get(key):
        return name
    return f"{name} ×{taken[key]}"


def mermaid(taken: Taken | None = None) -> str:
    lines = ["stateDiagram-v2", f"    [*] --> {INITIAL}"]
    for edge in EDGES:
        key = (edge.source.value, edge.name, edge.dest)
        lines.append(f"    {edge.source.value} --> {edge.dest}: {_label(edge.name, taken, key)}")
    lines.extend(f"    {state} --> [*]" for state in FINAL_STATES)
    if taken:
        known = {key for key in taken if key in _KEYS}
        visited = sorted({s for s, _, _ in known} | {d for _, _, d in known})
        lines.append("    classDef taken fill:#fde68a,stroke:#b45309,stroke-width:2px")
        lines.extend(f"    class {state} taken" for state in visited)
    return "\n".join(lines) + "\n"


def dot(taken: Taken | None = None) -> str:
    lines = [
        "digraph fsm_agent {",
        "    rankdir=TB;",
        '    node [shape=box, style=rounded, fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        '    __start [shape=point, label=""];',
        f"    __start -> {INITIAL};",
    ]
    lines.extend(f"    {p.value};" for p in Phase)
    lines.extend(f"    {state} [shape=doubleoctagon];" for state in FINAL_STATES)
    for edge in EDGES:
        key = (edge.source.value, edge.name, edge.dest)
        attrs = f'label="{_label(edge.name, taken, key)}"'
        if taken and taken.get(key):
            attrs += ", color=red, penwidth=2"
        lines.append(f"    {edge.source.value} -> {edge.dest} [{attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


RENDERERS = {"mermaid": mermaid, "dot": dot}


def edge_table() -> str:
    """The edge table as Markdown: the order within a state is the priority."""
    rows = ["| from | edge | to | kind | guard | action |", "|---|---|---|---|---|---|"]
    for e in EDGES:
        guard = f"`{e.guard.__name__}`: {e.when}"
        if e.confirm is not None:
            guard += f" (confirmed by `{e.confirm}`)"
        rows.append(
            f"| `{e.source.value}` | `{e.name}` | `{e.dest}` | {e.kind} | {guard} | `{e.action}` |"
        )
    return "\n".join(rows) + "\n"


def machine_doc() -> str:
    """docs/machine.md, generated: `python tools/render_docs.py` rewrites it."""
    return (
        "# The machine\n\n"
        "Generated from `fsm_agent/engine/machine.py` by `python tools/render_docs.py`; "
        "a test fails when it is out of date.\n\n"
        "```mermaid\n"
        f"{mermaid()}"
        "```\n\n"
        "## Edges\n\n"
        "Edges out of one state are tried top to bottom; the first whose guard holds is "
        "taken.\n\n"
        f"{edge_table()}"
    )
