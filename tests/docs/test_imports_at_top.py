"""Every import is at the top of its module, but for the lazy loads docs/architecture.md
lists with their reasons: an import inside a function hides a dependency (and the cycles
the layers forbid) from the reader and from the import contracts' first glance."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGE = ROOT / "fsm_agent"
SECTION = "## What loads on first use"


def _type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def lazy_loads(tree: ast.AST) -> set[str]:
    """What a module imports inside its functions, or by `import_module`: `mod` for
    `import mod` / `from mod import x`, `import_module` for a computed name."""
    found: set[str] = set()

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                continue
            if nested and isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif nested and isinstance(child, ast.ImportFrom) and child.module:
                found.add(child.module)
            elif (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name)
                and child.func.id == "import_module"
            ):
                found.add("import_module")
            inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, inner)

    visit(tree, False)
    return found


def in_the_code() -> set[tuple[str, str]]:
    pairs = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        module = module.removesuffix(".__init__")
        pairs |= {(module, loaded) for loaded in lazy_loads(ast.parse(path.read_text()))}
    return pairs


def in_the_docs() -> set[tuple[str, str]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert SECTION in text, f"docs/architecture.md has no '{SECTION}' section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    pairs = set()
    for row in rows:
        module, loads, why = (cell.strip() for cell in row.strip("|").split("|")[:3])
        assert why, f"no reason given for {module} loading {loads}"
        for name in loads.split(","):
            pairs.add((module.strip("`"), name.strip().strip("`")))
    return pairs


def test_every_lazy_load_is_listed_with_its_reason() -> None:
    assert sorted(in_the_code() - in_the_docs()) == []


def test_every_listed_lazy_load_is_in_the_code() -> None:
    assert sorted(in_the_docs() - in_the_code()) == []


def test_an_import_in_a_function_is_found() -> None:
    """The scan sees what it is meant to, so the two tests above can fail."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import hidden\n"
        "import top\n"
        "def f():\n    import inner\n    from pkg.mod import x\n"
        "    return import_module('y')\n"
    )
    assert lazy_loads(tree) == {"inner", "pkg.mod", "import_module"}
