import os
from pathlib import Path

import pytest

from fsm_agent.core.globs import compile_glob, split_globs, split_literal
from fsm_agent.tools.glob import GlobTool
from tests.support.tools import call, make_env, text

GLOB = GlobTool()


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("**/*.py", "d/a.pyc", False),
        ("src/**/*.{ts,tsx}", "src/a.ts", True),
        ("src/**/*.{ts,tsx}", "src/x/y.tsx", True),
        ("src/**/*.{ts,tsx}", "src/a.js", False),
        ("src/**/*.{ts,tsx}", "lib/a.ts", False),
        ("*.{py,{md,txt}}", "notes.txt", True),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("a/**", "a/b/c", True),
        ("**", "x/y/z", True),
        ("a**b", "axxb", True),
        ("a**b", "ax/b", False),
        (r"\*.txt", "*.txt", True),
        (r"\*.txt", "a.txt", False),
        ("a+b(1).txt", "a+b(1).txt", True),
        ("[unclosed", "[unclosed", True),
    ],
)
def test_glob_patterns(pattern: str, path: str, expected: bool) -> None:
    assert (compile_glob(pattern).fullmatch(path) is not None) is expected


def test_split_globs_keeps_braces_whole() -> None:
    assert split_globs("*.py,*.md *.{ts,tsx}") == ["*.py", "*.md", "*.{ts,tsx}"]


def test_split_literal_pattern() -> None:
    assert split_literal("/w/src/**/*.py") == ("/w/src", "**/*.py")
    assert split_literal("/w/setup.py") == ("/w", "setup.py")
    assert split_literal("/*.py") == ("/", "*.py")
    assert split_literal("./src/*.py") == ("./src", "*.py")
    assert split_literal("**/*.py") == ("", "**/*.py")
    assert split_literal("setup.py") == ("", "setup.py")
    assert split_literal(r"a/\*b/*.py") == ("a", r"\*b/*.py")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel in ("a.py", "b.md", "src/c.py", "src/deep/d.py", ".hidden/e.py", ".git/f.py"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(rel)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.py").write_text("x")
    return ws


def glob(ws: Path, **input: object) -> str:
    out = call(GLOB, dict(input), make_env(ws))
    assert not out.is_error, out.content
    return text(out)


def test_recursive_pattern_finds_files_including_hidden_but_not_git(ws: Path) -> None:
    found = set(glob(ws, pattern="**/*.py").splitlines())
    assert found == {str(ws / p) for p in ("a.py", "src/c.py", "src/deep/d.py", ".hidden/e.py")}


def test_a_pattern_without_a_slash_matches_names_at_any_depth(ws: Path) -> None:
    """Claude Code hands the pattern to `rg --files --glob`, where (as in .gitignore) a
    pattern with no `/` matches a file's name in any directory: its Glob `.gitignore`
    finds `.pytest_cache/.gitignore` too. One with a `/` is matched from the top."""
    every = {str(ws / p) for p in ("a.py", "src/c.py", "src/deep/d.py", ".hidden/e.py")}
    assert set(glob(ws, pattern="*.py").splitlines()) == every
    assert set(glob(ws, pattern="*.py", path="src").splitlines()) == {
        str(ws / "src/c.py"),
        str(ws / "src/deep/d.py"),
    }
    assert glob(ws, pattern="d.py") == str(ws / "src/deep/d.py")
    assert glob(ws, pattern="src/*.py") == str(ws / "src/c.py")
    assert glob(ws, pattern="./*.py") == str(ws / "a.py")
    assert set(glob(ws, pattern=f"{ws}/src/*.py").splitlines()) == {
        str(ws / "src/c.py"),
        str(ws / "src/deep/d.py"),
    }


def test_oldest_first_over_every_directory(ws: Path) -> None:
    """Claude Code 2.1.332 (rg --sort=modified) lists the oldest file first, whatever
    its directory: measured with files of four mtimes in three directories."""
    for i, rel in enumerate(("src/c.py", "a.py", "src/deep/d.py", ".hidden/e.py")):
        os.utime(ws / rel, (1_000_000 + i, 1_000_000 + i))
    assert glob(ws, pattern="**/*.py").splitlines() == [
        str(ws / "src/c.py"),
        str(ws / "a.py"),
        str(ws / "src/deep/d.py"),
        str(ws / ".hidden/e.py"),
    ]


def test_at_most_100_results_with_a_note(ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(120):
        (many / f"f{i:03}.txt").write_text("")
        os.utime(many / f"f{i:03}.txt", (2_000_000 + i, 2_000_000 + i))
    lines = glob(ws, pattern="many/*.txt").splitlines()
    assert len(lines) == 101
    assert lines[0] == str(many / "f000.txt")
    assert lines[99] == str(many / "f099.txt")
    assert "truncated" in lines[100]
    assert "100 of 120" in lines[100]


def test_no_match(ws: Path) -> None:
    assert glob(ws, pattern="**/*.rs") == "No files found"


def test_directories_are_not_listed(ws: Path) -> None:
    assert glob(ws, pattern="src/*") == str(ws / "src/c.py")


def test_absolute_pattern_is_split_into_directory_and_pattern(ws: Path) -> None:
    os.utime(ws / "src/c.py", (1_000_000, 1_000_000))
    assert glob(ws, pattern=f"{ws}/src/**/*.py").splitlines() == [
        str(ws / "src/c.py"),
        str(ws / "src/deep/d.py"),
    ]


def test_symlinks_never_lead_outside(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "out-dir").symlink_to(outside)
    (ws / "out-file.py").symlink_to(outside / "secret.py")
    (ws / "in-file.py").symlink_to(ws / "a.py")
    found = glob(ws, pattern="**/*.py")
    assert "secret" not in found
    assert "out-file.py" not in found
    assert str(ws / "in-file.py") in found.splitlines()


def test_missing_directory(ws: Path) -> None:
    """Claude Code's words, with where a relative path starts."""
    out = call(GLOB, {"pattern": "*", "path": "nope"}, make_env(ws))
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>Directory does not exist: nope. "
        f"Note: your current working directory is {ws}.</tool_use_error>"
    )


@pytest.mark.parametrize("where", ["../outside", "{outside}", "link", "{ws}/../outside", "/"])
def test_search_root_outside_is_refused(ws: Path, where: str) -> None:
    (ws / "link").symlink_to(ws.parent / "outside")
    where = where.format(outside=ws.parent / "outside", ws=ws)
    out = call(GLOB, {"pattern": "**/*.py", "path": where}, make_env(ws))
    assert out.is_error
    assert "outside the workspace" in text(out)
    assert "secret" not in text(out)


def test_absolute_pattern_outside_is_refused(ws: Path) -> None:
    out = call(GLOB, {"pattern": f"{ws.parent}/outside/*.py"}, make_env(ws))
    assert out.is_error
    assert "outside the workspace" in text(out)


def test_a_file_is_not_a_search_directory(ws: Path) -> None:
    out = call(GLOB, {"pattern": "*", "path": "a.py"}, make_env(ws))
    assert out.is_error
    assert text(out) == "<tool_use_error>Path is not a directory: a.py</tool_use_error>"


@pytest.mark.parametrize("pattern", ["./src/*.py", "src/../src/*.py", "./src/deep/../*.py"])
def test_dot_segments_in_a_relative_pattern_are_resolved(ws: Path, pattern: str) -> None:
    assert glob(ws, pattern=pattern) == str(ws / "src/c.py")


def test_a_relative_pattern_climbing_out_is_refused(ws: Path) -> None:
    out = call(GLOB, {"pattern": "../outside/*.py"}, make_env(ws))
    assert out.is_error
    assert "outside the workspace" in text(out)
    assert "secret" not in text(out)


def test_a_missing_directory_in_the_pattern_finds_nothing(ws: Path) -> None:
    assert glob(ws, pattern="nope/**/*.py") == "No files found"
    assert glob(ws, pattern=f"{ws}/nope/*.py") == "No files found"
    assert glob(ws, pattern="a.py/*") == "No files found"


def test_a_file_name_that_is_not_utf8_is_listed_as_text(ws: Path) -> None:
    """The result goes into JSON (log and API): a name's stray bytes are shown escaped."""
    with open(os.fsencode(ws) + b"/caf\xe9.txt", "wb") as f:
        f.write(b"x")
    out = glob(ws, pattern="*.txt")
    assert out.encode("utf-8") == f"{ws}/caf\\xe9.txt".encode()


def test_stars_match_as_fnmatch_does_within_a_name() -> None:
    """Every pattern of a, b, * and ? up to five characters against every name of a
    and b up to six: the same answers as fnmatch (whose * also never meets a /)."""
    import fnmatch
    import itertools

    names = ["".join(p) for n in range(7) for p in itertools.product("ab", repeat=n)]
    for n in range(1, 6):
        for chars in itertools.product("ab*?", repeat=n):
            pattern = "".join(chars)
            regex = compile_glob(pattern)
            for name in names:
                assert (regex.fullmatch(name) is not None) == fnmatch.fnmatchcase(name, pattern), (
                    pattern,
                    name,
                )


def test_many_stars_do_not_backtrack_without_end(tmp_path: Path) -> None:
    """`re` backtracks while holding the GIL: a freeze here would stop the whole run,
    Ctrl-C included. Tried in a child, which a hang leaves to the timeout."""
    import subprocess
    import sys

    code = (
        "from fsm_agent.core.globs import compile_glob\n"
        "assert compile_glob('*a*a*a*a*a*a*a*a*a*a*b').fullmatch('a' * 80) is None\n"
        "assert compile_glob('{x,*a*a*a*a*a*a*a*a*a*a*b}').fullmatch('a' * 80) is None\n"
        "name = 'd/' + 'a' * 80 + '/x'\n"
        "assert compile_glob('d/*a*a*a*a*a*a*a*a*a*a*b/**').fullmatch(name) is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_reversed_range_matches_nothing(ws: Path) -> None:
    assert glob(ws, pattern="[z-a].py") == "No files found"
    assert glob(ws, pattern="{[z-a],a}.py") == str(ws / "a.py")
