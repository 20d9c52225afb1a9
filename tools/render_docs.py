"""Rewrite the generated docs: docs/machine.md and docs/machine.dot."""

from __future__ import annotations

from pathlib import Path

from fsm_agent.engine.graph import dot, machine_doc

DOCS = Path(__file__).resolve().parent.parent / "docs"


def main() -> None:
    (DOCS / "machine.md").write_text(machine_doc(), encoding="utf-8")
    (DOCS / "machine.dot").write_text(dot(), encoding="utf-8")
    print(f"wrote {DOCS / 'machine.md'} and {DOCS / 'machine.dot'}")


if __name__ == "__main__":
    main()
