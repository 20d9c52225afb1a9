"""The suite's own layout: tests/ mirrors fsm_agent's layers, helpers live in tests/support/.

A test file in its layer's folder is where a newcomer changing that layer looks; a
helper imported from another test file runs that file's module (and ties the two),
so shared helpers live in the support package. This file is the one test outside a
layer: its subject is tests/ itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

TESTS = ROOT / "tests"
LAYERS = {p.parent.name for p in (ROOT / "fsm_agent").glob("*/__init__.py")}
FOLDERS = LAYERS | {"docs", "conformance"}
"""Where a test file may sit: a layer of fsm_agent, docs/ for README and docs checks, or
conformance/ for the runs measured against the real Claude Code."""


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts)


def _imported(source: str, package: str) -> set[str]:
    """Every module a file of `package` imports (and every name it imports from one,
    which may be a module), at any depth, relative imports made absolute."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, [base, node.module or ""]))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_every_test_file_sits_in_a_layer_folder() -> None:
    assert {"core", "engine", "cli"} <= LAYERS
    misplaced = [
        str(p.relative_to(TESTS))
        for p in _test_files()
        if p != Path(__file__).resolve()
        and (len(p.relative_to(TESTS).parts) != 2 or p.parent.name not in FOLDERS)
    ]
    assert not misplaced, f"put these in tests/<layer>/ ({', '.join(sorted(FOLDERS))}): {misplaced}"


def test_every_test_folder_is_a_package() -> None:
    """Two layers may each have a test_<module>.py of one name: as packages they do not
    collide."""
    folders = {p.parent for p in TESTS.rglob("*.py") if "fixtures" not in p.parts}
    assert [str(f) for f in sorted(folders) if not (f / "__init__.py").exists()] == []


def test_imports_are_found_in_functions_and_relative_ones_resolved() -> None:
    source = "from . import test_a\ndef f():\n    from ..cli.test_cli import fsm\n"
    assert {"tests.engine.test_a", "tests.cli.test_cli"} <= _imported(source, "tests.engine")


def test_no_test_file_imports_another() -> None:
    offenders = {
        str(p.relative_to(TESTS)): sorted(
            m
            for m in _imported(p.read_text(), ".".join(p.relative_to(ROOT).parent.parts))
            if m.startswith("tests.") and m.split(".")[-1].startswith("test_")
        )
        for p in _test_files()
    }
    offenders = {path: modules for path, modules in offenders.items() if modules}
    assert not offenders, f"move what these import into tests/support/: {offenders}"


def test_the_support_package_holds_no_tests() -> None:
    assert list((TESTS / "support").glob("test_*.py")) == []
