"""docs/conformance.md is the report tools/conformance_report.py writes: it names every
case of the corpus, so a case added without regenerating the report fails here."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.support.conformance_cases import CASES

REPORT = ROOT / "docs" / "conformance.md"


def test_the_report_lists_every_case_of_the_corpus() -> None:
    text = REPORT.read_text()
    listed = {
        line.split("`")[1].split(" ")[0] for line in text.splitlines() if line.startswith("| `")
    }
    assert listed == {c.name for c in CASES}, "run PYTHONPATH=. python tools/conformance_report.py"


def test_the_report_names_the_cli_version_it_measured() -> None:
    assert "Measured against the real Claude Code CLI **2." in REPORT.read_text()
