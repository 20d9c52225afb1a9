import asyncio
import os
from pathlib import Path

import pytest

from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.tool import ToolCall, ToolEnv, ToolOutcome
from fsm_agent.engine.ports import INTERRUPTED
from fsm_agent.live.effects import LiveEffects
from fsm_agent.tools import grep as grep_module
from fsm_agent.tools.grep import GrepTool
from fsm_agent.tools.walk import GitIgnore
from tests.support.tools import NoModel, call, make_env, text

GREP = GrepTool()

FILES = {
    "a.py": "import os\ndef foo():\n    return os.getcwd()\n",
    "src/b.py": "def bar():\n    pass\n\n\ndef foo_bar():\n    pass\n",
    "README.md": "Foo docs\n",
    ".hidden/h.py": "foo = 1\n",
    ".git/x.py": "def foo(): ...\n",
    "build/gen.py": "def foo(): ...\n",
    "debug.log": "foo happened\n",
    "keep.log": "foo kept\n",
    ".gitignore": "build/\n*.log\n!keep.log\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for i, (rel, content) in enumerate(FILES.items()):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
        os.utime(ws / rel, (1_000_000 + i, 1_000_000 + i))
    (ws / "blob.bin").write_bytes(b"def foo\x00\x01")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.py").write_text("def foo(): return 'TOP SECRET'\n")
    return ws


def grep(ws: Path, **input: object) -> ToolOutcome:
    return call(GREP, dict(input), make_env(ws))


def ok(ws: Path, **input: object) -> str:
    out = grep(ws, **input)
    assert not out.is_error, out.content
    return text(out)


def test_files_with_matches_newest_first_skipping_git_binary_and_ignored(ws: Path) -> None:
    assert ok(ws, pattern="foo") == "\n".join(
        [
            "Found 4 files",
            str(ws / "keep.log"),
            str(ws / ".hidden/h.py"),
            str(ws / "src/b.py"),
            str(ws / "a.py"),
        ]
    )


def test_case_insensitive(ws: Path) -> None:
    assert str(ws / "README.md") in ok(ws, pattern="foo", **{"-i": True}).splitlines()
    assert str(ws / "README.md") not in ok(ws, pattern="foo").splitlines()


def test_glob_and_type_filters(ws: Path) -> None:
    py = {str(ws / p) for p in ("a.py", "src/b.py", ".hidden/h.py")}
    assert set(ok(ws, pattern="foo", glob="*.py").splitlines()[1:]) == py
    assert set(ok(ws, pattern="foo", type="py").splitlines()[1:]) == py
    assert ok(ws, pattern="foo", glob="src/*.py").splitlines()[1:] == [str(ws / "src/b.py")]
    both = ok(ws, pattern="foo", glob="*.{md,log}", **{"-i": True}).splitlines()[1:]
    assert set(both) == {str(ws / "README.md"), str(ws / "keep.log")}


def test_bad_filters_are_input_errors(ws: Path) -> None:
    assert "Unknown file type 'cobol'" in text(grep(ws, pattern="x", type="cobol"))
    assert "InputValidationError" in text(grep(ws, pattern="x", output_mode="lines"))


def test_content_mode_with_line_numbers(ws: Path) -> None:
    out = ok(ws, pattern=r"def \w+\(", output_mode="content", glob="*.py")
    assert out.splitlines() == [
        f"{ws}/a.py:2:def foo():",
        f"{ws}/src/b.py:1:def bar():",
        f"{ws}/src/b.py:5:def foo_bar():",
    ]


def test_content_mode_without_line_numbers_in_a_single_file(ws: Path) -> None:
    out = ok(ws, pattern="def", output_mode="content", path="src/b.py", **{"-n": False})
    assert out == "def bar():\ndef foo_bar():"


def test_context_lines_and_separators(ws: Path) -> None:
    out = ok(ws, pattern="def", output_mode="content", path="src/b.py", **{"-C": 1})
    assert out == "1:def bar():\n2-    pass\n--\n4-\n5:def foo_bar():\n6-    pass"
    after = ok(ws, pattern="bar", output_mode="content", path="src/b.py", **{"-A": 1})
    assert after == "1:def bar():\n2-    pass\n--\n5:def foo_bar():\n6-    pass"
    before = ok(ws, pattern="return", output_mode="content", path="a.py", **{"-B": 2})
    assert before == "1-import os\n2-def foo():\n3:    return os.getcwd()"
    assert ok(ws, pattern="return", output_mode="content", path="a.py", context=1) == (
        "2-def foo():\n3:    return os.getcwd()"
    )


def test_context_separates_files(ws: Path) -> None:
    out = ok(ws, pattern="getcwd|foo_bar", output_mode="content", type="py", **{"-A": 1})
    assert out.splitlines() == [
        f"{ws}/a.py:3:    return os.getcwd()",
        "--",
        f"{ws}/src/b.py:5:def foo_bar():",
        f"{ws}/src/b.py-6-    pass",
    ]


def test_count_mode(ws: Path) -> None:
    out = ok(ws, pattern="pass|def", output_mode="count", type="py")
    assert out.splitlines() == [
        f"{ws}/a.py:1",
        f"{ws}/src/b.py:4",
        "",
        "Found 5 matching lines in 2 files.",
    ]


def test_head_limit_and_offset_page_through_entries(ws: Path) -> None:
    out = ok(ws, pattern="def|pass", output_mode="content", path="src/b.py", head_limit=2)
    assert out.splitlines()[:2] == ["1:def bar():", "2:    pass"]
    assert "entries 1-2 of 4" in out
    assert "offset=2" in out
    page2 = ok(ws, pattern="def|pass", output_mode="content", path="src/b.py", offset=2)
    assert page2 == "5:def foo_bar():\n6:    pass"


JS_ORDER = ["A.txt", "B.txt", "Z/x.txt", "_x.txt", "a-b.txt", "a.b/c.txt", "a.txt", "a/B.txt",
            "a/c.txt", "a0.txt", "a_b.txt", "ab.txt", "b/a.txt", "~t.txt", "\u00e9.txt",
            "\U0001f600.txt", "\ue000.txt"]  # fmt: skip
"""The order Claude Code 2.1.x lists Grep's content and count results in, measured:
JavaScript's sort of the path, by UTF-16 code unit (the emoji's surrogates before U+E000)."""


@pytest.mark.parametrize("mode", ["count", "content"])
def test_content_and_count_list_files_in_claude_codes_order(tmp_path: Path, mode: str) -> None:
    """Whatever order the files were made (or walked) in, so `head_limit` keeps the files
    Claude Code's would."""
    for i, rel in enumerate(reversed(JS_ORDER)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("hit\n")
        os.utime(tmp_path / rel, (1_000_000 + i, 1_000_000 + i))
    listed = ok(tmp_path, pattern="hit", output_mode=mode).splitlines()
    suffix = ":1" if mode == "count" else ":1:hit"
    assert [line for line in listed if line.endswith(suffix)] == [
        f"{tmp_path / rel}{suffix}" for rel in JS_ORDER
    ]
    first = ok(tmp_path, pattern="hit", output_mode=mode, head_limit=3).splitlines()[:3]
    assert first == [f"{tmp_path / rel}{suffix}" for rel in JS_ORDER[:3]]


def test_multiline_matches_span_lines(ws: Path) -> None:
    out = ok(
        ws,
        pattern=r"def bar\(\):\n\s+pass",
        output_mode="content",
        path="src/b.py",
        multiline=True,
    )
    assert out == "1:def bar():\n2:    pass"
    assert ok(ws, pattern=r"def bar\(\):\n\s+pass", path="src/b.py") == "No files found"


def test_invalid_regex(ws: Path) -> None:
    out = grep(ws, pattern="(unclosed")
    assert out.is_error
    assert "Invalid regular expression" in text(out)


def test_no_matches(ws: Path) -> None:
    assert ok(ws, pattern="zebra") == "No files found"
    assert ok(ws, pattern="zebra", output_mode="content") == "No matches found"
    assert ok(ws, pattern="zebra", output_mode="count") == "No matches found"


def test_an_ignored_file_named_explicitly_is_searched(ws: Path) -> None:
    assert ok(ws, pattern="happened", output_mode="content", path="debug.log") == ("1:foo happened")


def test_huge_output_is_capped(ws: Path) -> None:
    (ws / "big.txt").write_text("needle " + "x" * 500 + "\n" * 1 + ("needle\n" * 10_000))
    out = ok(ws, pattern="needle", output_mode="content", path="big.txt", head_limit=0)
    assert len(out) < 30_200
    assert "Output truncated at 30000 characters" in out


def test_missing_path(ws: Path) -> None:
    """Claude Code's words, with where a relative path starts."""
    out = grep(ws, pattern="x", path="nope")
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>Path does not exist: nope. "
        f"Note: your current working directory is {ws}.</tool_use_error>"
    )


@pytest.mark.parametrize(
    "where", ["../outside", "{outside}/secret.py", "link", "link/secret.py", "/"]
)
def test_search_outside_is_refused(ws: Path, where: str) -> None:
    (ws / "link").symlink_to(ws.parent / "outside")
    out = grep(
        ws, pattern="foo", output_mode="content", path=where.format(outside=ws.parent / "outside")
    )
    assert out.is_error
    assert "outside the workspace" in text(out)
    assert "TOP SECRET" not in text(out)


def test_symlinks_inside_are_not_followed_out(ws: Path) -> None:
    (ws / "link").symlink_to(ws.parent / "outside")
    (ws / "alias.py").symlink_to(ws.parent / "outside" / "secret.py")
    assert "TOP SECRET" not in ok(ws, pattern="SECRET", output_mode="content")


def test_additional_dirs_can_be_searched(ws: Path) -> None:
    extra = ws.parent / "outside"
    out = call(GREP, {"pattern": "SECRET", "path": str(extra)}, make_env(ws, extra=(extra,)))
    assert text(out) == f"Found 1 file\n{extra / 'secret.py'}"


@pytest.mark.parametrize(
    ("rules", "path", "is_dir", "ignored"),
    [
        ("*.log", "a/b/x.log", False, True),
        ("*.log\n!keep.log", "sub/keep.log", False, False),
        ("build/", "build", True, True),
        ("build/", "build", False, False),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "sub/top.txt", False, False),
        ("docs/*.md", "docs/a.md", False, True),
        ("docs/*.md", "x/docs/a.md", False, False),
        ("**/cache", "a/b/cache", True, True),
        ("# comment\n\n", "comment", False, False),
        ("node_modules", "web/node_modules", True, True),
    ],
)
def test_gitignore_subset(
    tmp_path: Path, rules: str, path: str, is_dir: bool, ignored: bool
) -> None:
    (tmp_path / ".gitignore").write_text(rules)
    ignore = GitIgnore.load(str(tmp_path))
    result = ignore is not None and ignore.ignores(str(tmp_path / path), is_dir=is_dir)
    assert result is ignored


def test_count_summary_in_the_singular(ws: Path) -> None:
    out = ok(ws, pattern="getcwd", output_mode="count")
    assert out == f"{ws}/a.py:1\n\nFound 1 matching line in 1 file."


def test_integral_float_numbers_are_accepted(ws: Path) -> None:
    """JSON Schema's `integer` admits 1.0, and a model may write it so."""
    out = ok(ws, pattern="def|pass", output_mode="content", path="src/b.py", head_limit=1.0,
             offset=1.0)  # fmt: skip
    assert out.splitlines()[0] == "2:    pass"
    around = ok(ws, pattern="foo_bar", output_mode="content", path="src/b.py", **{"-B": 1.0})
    assert around == "4-\n5:def foo_bar():"


def test_a_glob_with_a_bang_excludes_as_in_ripgrep(ws: Path) -> None:
    """`rg --glob '!*.py'`: everything but what the negated glob matches; a negated
    directory leaves out all under it."""
    files = {str(ws / p) for p in ("a.py", "src/b.py", ".hidden/h.py")}
    assert set(ok(ws, pattern="foo", glob="!*.log").splitlines()[1:]) == files
    assert set(ok(ws, pattern="foo", glob="*.py !src").splitlines()[1:]) == files - {
        str(ws / "src/b.py")
    }
    rest = {str(ws / "a.py"), str(ws / "keep.log")}
    assert set(ok(ws, pattern="foo", glob="!.hidden,!src").splitlines()[1:]) == rest


def test_a_file_name_that_is_not_utf8_is_shown_as_text(ws: Path) -> None:
    """The result goes into JSON (log and API): a name's stray bytes are shown escaped."""
    with open(os.fsencode(ws) + b"/caf\xe9.txt", "wb") as f:
        f.write(b"needle\n")
    name = f"{ws}/caf\\xe9.txt"
    assert ok(ws, pattern="needle") == f"Found 1 file\n{name}"
    assert ok(ws, pattern="needle", output_mode="content") == f"{name}:1:needle"
    assert ok(ws, pattern="needle", output_mode="count").startswith(f"{name}:1\n")


def test_a_pattern_that_backtracks_without_end_times_out(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's `re` backtracks (ripgrep does not) and holds the GIL while it does, so
    the search runs in a child process that a time limit stops."""
    monkeypatch.setattr(grep_module, "GREP_TIMEOUT_S", 0.5)
    (ws / "aaa.txt").write_text("a" * 26 + "!\n")
    out = grep(ws, pattern="(a+)+$", path="aaa.txt")
    assert out.is_error
    assert text(out).startswith("<tool_use_error>Grep timed out after 0.5 s")


def test_a_cancelled_search_is_stopped(ws: Path) -> None:
    """Ctrl-C (or a failed stream) stops a search stuck in the regex engine."""
    (ws / "aaa.txt").write_text("a" * 60 + "!\n")
    cancel = AbortSignal()
    env = ToolEnv(cwd=str(ws), cancel=cancel)

    async def scenario() -> ToolOutcome:
        effects = LiveEffects(NoModel(), {"Grep": GREP})
        asyncio.get_running_loop().call_later(0.3, cancel.set)
        return await effects.run_tool(
            ToolCall("toolu_1", "Grep", {"pattern": "(a+)+$", "path": "aaa.txt"}), env
        )

    out = asyncio.run(scenario())
    assert out.interrupted
    assert out.content == INTERRUPTED


def test_the_search_runs_this_fsm_agent_not_one_in_the_current_directory(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace may be a checkout of fsm-agent itself, in any state."""
    fake = ws / "fsm_agent" / "tools"
    fake.mkdir(parents=True)
    (ws / "fsm_agent" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "grep.py").write_text("print('\"not the real grep\"')\n")
    monkeypatch.chdir(ws)
    fresh = GrepTool()
    try:
        out = call(fresh, {"pattern": "getcwd"}, make_env(ws))
    finally:
        fresh.close()
    assert text(out) == f"Found 1 file\n{ws}/a.py"


def test_a_file_too_large_to_search_is_never_passed_over_in_silence(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_module, "MAX_FILE_BYTES", 20)
    (ws / "logs").mkdir()
    (ws / "logs" / "big.txt").write_text("needle " * 10 + "\n")
    (ws / "logs" / "small.txt").write_text("needle\n")
    (ws / "logs" / "big.bin").write_bytes(b"needle\x00" * 10)
    named = grep(ws, pattern="needle", path="logs/big.txt")
    assert named.is_error
    assert text(named) == (
        "<tool_use_error>logs/big.txt is 71 bytes; Grep searches files of at most 20 bytes. "
        "Search it with Bash (grep, rg) instead.</tool_use_error>"
    )
    found = ok(ws, pattern="needle", path="logs")
    assert found == (
        f"Found 1 file\n{ws}/logs/small.txt\n\n"
        f"(Not searched, being over 20 bytes: {ws}/logs/big.txt)"
    )


def test_only_matching_shows_each_match_on_a_line_of_its_own(ws: Path) -> None:
    """Claude Code's `-o` (rg --only-matching): in content mode each match alone, with its
    file and line; ignored in the other modes."""
    only = {"-o": True}
    out = ok(ws, pattern="foo|bar", output_mode="content", path="src/b.py", **only)
    assert out == "1:bar\n5:foo\n5:bar"
    bare = ok(
        ws, pattern="foo|bar", output_mode="content", path="src/b.py", **{**only, "-n": False}
    )
    assert bare == "bar\nfoo\nbar"
    many = ok(ws, pattern=r"os\.\w+", output_mode="content", type="py", **only)
    assert many == f"{ws}/a.py:3:os.getcwd"
    assert ok(ws, pattern="foo_bar", path="src/b.py", **only) == f"Found 1 file\n{ws}/src/b.py"
    spans = ok(
        ws, pattern=r"bar\(\):\n\s+pa", output_mode="content", path="src/b.py",
        multiline=True, **only,
    )  # fmt: skip
    assert spans == "1:bar():\n2:    pa\n5:bar():\n6:    pa"


def test_glob_and_type_together_filter_as_in_ripgrep(ws: Path) -> None:
    """Claude Code hands both to rg, which searches: a file an include glob matches is
    searched whatever its type, and the type filters what only `!` globs leave."""
    assert ok(ws, pattern="foo", type="py", glob="*.log") == f"Found 1 file\n{ws}/keep.log"
    assert ok(ws, pattern="foo", type="py", glob="!src") == "\n".join(
        ["Found 2 files", f"{ws}/.hidden/h.py", f"{ws}/a.py"]
    )


@pytest.mark.parametrize(
    ("file_type", "name"),
    [("php", "x.php"), ("kotlin", "x.kt"), ("csharp", "x.cs"), ("make", "Makefile")],
)
def test_more_of_ripgreps_file_types(tmp_path: Path, file_type: str, name: str) -> None:
    """Claude Code's `type` is rg --type: a model may name any of rg's common types."""
    (tmp_path / name).write_text("needle\n")
    (tmp_path / "other.txt").write_text("needle\n")
    assert ok(tmp_path, pattern="needle", type=file_type) == f"Found 1 file\n{tmp_path / name}"


def test_head_limit_defaults_to_250_entries_and_0_shows_all(tmp_path: Path) -> None:
    """Claude Code's DEFAULT_HEAD_LIMIT: a search that names no head_limit shows 250
    entries, in every mode, and says there are more; head_limit 0 shows them all."""
    (tmp_path / "many.txt").write_text("needle\n" * 300)
    for i in range(300):
        (tmp_path / f"f{i:03}.txt").write_text("needle\n")
    lines = ok(tmp_path, pattern="needle", output_mode="content", path="many.txt").splitlines()
    assert lines[249] == "250:needle"
    assert lines[250:] == ["", "(Showing entries 1-250 of 300; use offset=250 to see more.)"]
    files = ok(tmp_path, pattern="needle").splitlines()
    assert files[0] == "Found 301 files"
    assert len(files) == 1 + 250 + 2
    assert "of 301" in files[-1]
    counts = ok(tmp_path, pattern="needle", output_mode="count").splitlines()
    assert counts[249].endswith(":1")
    assert "of 301" in counts[-1]
    every = ok(tmp_path, pattern="needle", output_mode="content", path="many.txt", head_limit=0)
    assert every.splitlines() == [f"{n}:needle" for n in range(1, 301)]


def test_files_with_a_byte_order_mark_are_searched_as_text(tmp_path: Path) -> None:
    """ripgrep sniffs the mark: a UTF-8 one is no part of line 1 (`^package` matches it),
    a UTF-16 file (Windows tools write them) is decoded, not skipped as binary."""
    (tmp_path / "main.go").write_bytes(b"\xef\xbb\xbfpackage main\n")
    (tmp_path / "le.txt").write_bytes("\ufeffhello\nworld\n".encode("utf-16-le"))
    (tmp_path / "be.txt").write_bytes("\ufeffworld\n".encode("utf-16-be"))
    found = ok(tmp_path, pattern="^package", output_mode="content")
    assert found == f"{tmp_path}/main.go:1:package main"
    found = ok(tmp_path, pattern="^world$", output_mode="content")
    assert found.splitlines() == [f"{tmp_path}/be.txt:1:world", f"{tmp_path}/le.txt:2:world"]


@pytest.mark.parametrize("vcs", [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"])
def test_every_vcs_directory_claude_code_excludes_is_skipped(tmp_path: Path, vcs: str) -> None:
    """Claude Code's VCS_DIRECTORIES_TO_EXCLUDE, Sapling's `.sl` included."""
    (tmp_path / vcs).mkdir()
    (tmp_path / vcs / "store.txt").write_text("needle\n")
    (tmp_path / "a.txt").write_text("needle\n")
    assert ok(tmp_path, pattern="needle") == f"Found 1 file\n{tmp_path / 'a.txt'}"


def test_a_long_line_is_cut_at_500_characters(tmp_path: Path) -> None:
    """Claude Code runs rg with --max-columns 500, so that minified or base64 text does
    not flood the context; here the line's start is kept, with a note."""
    (tmp_path / "app.min.js").write_text("needle" + "x" * 3000 + "\nshort\n")
    out = ok(tmp_path, pattern="needle", output_mode="content", path="app.min.js", **{"-A": 1})
    first, second = out.splitlines()
    assert first == "1:" + ("needle" + "x" * 3000)[:500] + "… [line truncated]"
    assert second == "2-short"


def test_context_takes_precedence_over_c_which_takes_it_over_a_and_b(ws: Path) -> None:
    """Claude Code passes rg one of them: `context`, else `-C`, else `-B`/`-A`."""
    b = "src/b.py"
    both = ok(ws, pattern="bar", output_mode="content", path=b, context=0, **{"-C": 1})
    assert both == "1:def bar():\n5:def foo_bar():"
    c = ok(ws, pattern="foo_bar", output_mode="content", path=b, **{"-C": 1, "-A": 3, "-B": 0})
    assert c == "4-\n5:def foo_bar():\n6-    pass"


def test_a_gitignore_in_a_subdirectory_is_honoured_too(tmp_path: Path) -> None:
    """ripgrep reads the .gitignore of every directory it enters (a monorepo's
    `web/.gitignore` naming `node_modules/`), its rules anchored there and taking
    precedence over those of the directories above; searching from a subdirectory,
    those above still apply."""
    files = {
        ".gitignore": "*.log\n",
        "web/.gitignore": "node_modules/\n/dist\n!keep.log\n",
        "web/node_modules/lib/x.js": "needle\n",
        "web/dist/app.js": "needle\n",
        "web/src/dist/app.js": "needle\n",
        "web/keep.log": "needle\n",
        "web/drop.log": "needle\n",
        "web/src/a.js": "needle\n",
        "web/src/trace.log": "needle\n",
        "api/node_modules/y.js": "needle\n",
        "api/keep.log": "needle\n",
    }
    for rel, content in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    found = ok(tmp_path, pattern="needle", head_limit=0).splitlines()[1:]
    expected = ["web/src/dist/app.js", "web/keep.log", "web/src/a.js", "api/node_modules/y.js"]
    assert sorted(found) == sorted(str(tmp_path / p) for p in expected)
    below = ok(tmp_path, pattern="needle", path="web/src").splitlines()[1:]
    src = ("web/src/dist/app.js", "web/src/a.js")
    assert sorted(below) == sorted(str(tmp_path / p) for p in src)
    inside = ok(tmp_path, pattern="needle", path="web").splitlines()[1:]
    assert str(tmp_path / "web/drop.log") not in inside
    assert str(tmp_path / "web/node_modules/lib/x.js") not in inside


def test_posix_classes_in_brackets_match_as_in_ripgrep(tmp_path: Path) -> None:
    """rg (Rust's regex) knows `[[:space:]]`, `[^[:alnum:]_]`…; Python's `re` would read
    them as sets of the letters and match something else without a word."""
    (tmp_path / "a.txt").write_text("key  =value\nX9\nnothing:here\n")
    out = ok(tmp_path, pattern="key[[:space:]]+=", output_mode="content", path="a.txt")
    assert out == "1:key  =value"
    out = ok(tmp_path, pattern="^[[:upper:]][[:digit:]]$", output_mode="content", path="a.txt")
    assert out == "2:X9"
    out = ok(tmp_path, pattern="g[^[:alnum:]_ ]h", output_mode="content", path="a.txt")
    assert out == "3:nothing:here"
    assert ok(tmp_path, pattern="[[:space:]]s", path="a.txt") == "No files found"


def test_more_of_rusts_regex_syntax_is_understood(tmp_path: Path) -> None:
    """`\\<`/`\\>` (word start and end), `\\z` and `(?<name>…)` are ripgrep's; Python's
    `re` would take `\\<` for a literal `<` and refuse the others."""
    (tmp_path / "a.txt").write_text("cat concat <cat>\nlast\n")
    out = ok(tmp_path, pattern=r"\<cat\>", output_mode="content", path="a.txt", **{"-o": True})
    assert out == "1:cat\n1:cat"
    assert ok(tmp_path, pattern=r"st\z", output_mode="content", path="a.txt") == "2:last"
    named = ok(tmp_path, pattern=r"(?<animal>c.t)>", output_mode="content", path="a.txt")
    assert named == "1:cat concat <cat>"


@pytest.mark.parametrize(
    ("file_type", "name", "other"),
    [
        ("python", "x.py", "x.txt"),
        ("typescript", "x.tsx", "x.js"),
        ("protobuf", "x.proto", "x.txt"),
        ("tf", "main.tf", "x.txt"),
        ("js", "App.vue", "x.ts"),
        ("css", "x.scss", "x.less"),
        ("json", "x.json", "x.jsonl"),
    ],
)
def test_file_types_are_ripgreps(tmp_path: Path, file_type: str, name: str, other: str) -> None:
    """Claude Code's `type` is rg --type: its names (aliases included) and its globs."""
    (tmp_path / name).write_text("needle\n")
    (tmp_path / other).write_text("needle\n")
    assert ok(tmp_path, pattern="needle", type=file_type) == f"Found 1 file\n{tmp_path / name}"


def test_a_class_with_a_reversed_range_matches_nothing_rather_than_failing(
    tmp_path: Path,
) -> None:
    """`[z-a]` in a .gitignore (git lets it match nothing) failed every search below it;
    in the model's glob it matches nothing, as in ripgrep's search, which finds nothing."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("[z-a]\n*.log\n")
    (tmp_path / "sub" / "a.txt").write_text("needle\n")
    (tmp_path / "sub" / "b.log").write_text("needle\n")
    assert ok(tmp_path, pattern="needle") == f"Found 1 file\n{tmp_path / 'sub/a.txt'}"
    assert ok(tmp_path, pattern="needle", glob="[z-a]*") == "No files found"


def test_ignore_and_rgignore_files_are_read_as_ripgrep_reads_them(tmp_path: Path) -> None:
    """ripgrep also reads `.ignore` and `.rgignore`, over `.gitignore` in that order."""
    (tmp_path / ".gitignore").write_text("*.tmp\n")
    (tmp_path / ".ignore").write_text("*.gen\n!x.tmp\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".rgignore").write_text("!keep.gen\n")
    for name in ("x.tmp", "y.tmp", "a.gen", "sub/keep.gen", "sub/drop.gen", "plain.txt"):
        (tmp_path / name).write_text("needle\n")
    found = ok(tmp_path, pattern="needle").splitlines()[1:]
    assert sorted(found) == sorted(
        str(tmp_path / p) for p in ("x.tmp", "sub/keep.gen", "plain.txt")
    )
    below = ok(tmp_path, pattern="needle", path="sub").splitlines()[1:]
    assert below == [str(tmp_path / "sub/keep.gen")]


def test_the_runs_own_session_logs_are_not_searched(tmp_path: Path) -> None:
    """Claude Code keeps its transcripts outside the workspace, where its searches never
    see them; fsm-agent's go under `.fsm-agent/` in it by default, so Grep and Glob
    skip that directory: a search for a word of the prompt found it in the log of the
    very run asking. Searching it by name still works."""
    from fsm_agent.app.session import run_scenario
    from fsm_agent.live.scripted import Scenario

    (tmp_path / "app.py").write_text("WIDGET = 1\n")
    data = {
        "prompt": "where is WIDGET defined?",
        "turns": [
            {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "g1",
                        "name": "Grep",
                        "input": {"pattern": "WIDGET"},
                    },
                    {"type": "tool_use", "id": "g2", "name": "Glob", "input": {"pattern": "**/*"}},
                    {
                        "type": "tool_use",
                        "id": "g3",
                        "name": "Grep",
                        "input": {"pattern": "WIDGET", "path": ".fsm-agent"},
                    },
                ]
            },
            {"content": [{"type": "text", "text": "in app.py"}]},
        ],
    }
    result = run_scenario(Scenario.parse(data), cwd=tmp_path)
    grep_all, glob_all, grep_own = (
        b.content for m in result.messages for b in m.content if getattr(b, "tool_use_id", "")
    )
    assert grep_all == f"Found 1 file\n{tmp_path / 'app.py'}"
    assert glob_all == str(tmp_path / "app.py")
    assert result.log_path is not None and result.log_path in str(grep_own)
