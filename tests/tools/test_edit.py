import os
from pathlib import Path

import pytest
from attrs import evolve

from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.tools.edit import EditTool
from fsm_agent.tools.read import ReadTool
from tests.support.tools import after, call, make_env, text

EDIT = EditTool()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("original\n")
    return tmp_path / "ws"


def read_first(ws: Path, path: Path) -> ToolEnv:
    env = make_env(ws)
    return after(env, call(ReadTool(), {"file_path": str(path)}, env))


def edit(env: ToolEnv, path: Path, old: str, new: str, **extra: object) -> ToolOutcome:
    return call(EDIT, {"file_path": str(path), "old_string": old, "new_string": new, **extra}, env)


def test_replaces_a_unique_string(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("def f():\n    return 1\n")
    out = edit(read_first(ws, f), f, "return 1", "return 2")
    assert not out.is_error
    assert text(out) == f"The file {f} has been updated successfully."
    assert f.read_text() == "def f():\n    return 2\n"
    assert out.read_files == {str(f): os.stat(f).st_mtime}


def test_unread_file_is_refused(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("a = 1\n")
    out = edit(make_env(ws), f, "1", "2")
    assert text(out) == (
        "<tool_use_error>File has not been read yet. Read it first before writing to it."
        "</tool_use_error>"
    )
    assert f.read_text() == "a = 1\n"


def test_file_changed_since_read_is_refused(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("a = 1\n")
    env = read_first(ws, f)
    f.write_text("a = 1  # formatted\n")
    os.utime(f, (2_000_000, 2_000_000))
    out = edit(env, f, "1", "2")
    assert out.is_error
    assert "File has been modified since read" in text(out)
    assert f.read_text() == "a = 1  # formatted\n"


def test_string_not_found(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("a = 1\n")
    out = edit(read_first(ws, f), f, "b = 1", "b = 2")
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>String to replace not found in file.\nString: b = 1</tool_use_error>"
    )
    assert f.read_text() == "a = 1\n"


def test_ambiguous_match_needs_replace_all(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("x = 0\nx = 0\nx = 0\n")
    out = edit(read_first(ws, f), f, "x = 0", "x = 1")
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>Found 3 matches of the string to replace, but replace_all is false. "
        "To replace all occurrences, set replace_all to true. To replace only one occurrence, "
        "please provide more context to uniquely identify the instance.\nString: x = 0"
        "</tool_use_error>"
    )
    assert f.read_text() == "x = 0\nx = 0\nx = 0\n"


def test_replace_all_replaces_every_occurrence(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("x = 0\ny = x\nx = 0\n")
    out = edit(read_first(ws, f), f, "x = 0", "x = 1", replace_all=True)
    assert not out.is_error
    assert f.read_text() == "x = 1\ny = x\nx = 1\n"


def test_identical_strings_are_refused(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("a\n")
    out = edit(read_first(ws, f), f, "a", "a")
    assert text(out) == (
        "<tool_use_error>No changes to make: old_string and new_string are exactly the same."
        "</tool_use_error>"
    )


def test_empty_old_string_creates_a_missing_file(ws: Path) -> None:
    f = ws / "pkg" / "new.py"
    out = edit(make_env(ws), f, "", "print('hi')\n")
    assert not out.is_error
    assert f.read_text() == "print('hi')\n"
    assert out.read_files == {str(f): os.stat(f).st_mtime}


def test_empty_old_string_on_a_non_empty_file_is_refused(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("keep\n")
    out = edit(read_first(ws, f), f, "", "replace\n")
    assert out.is_error
    assert "already exists" in text(out)
    assert f.read_text() == "keep\n"


def test_empty_old_string_fills_an_empty_file_once_read(ws: Path) -> None:
    f = ws / "empty.py"
    f.write_text("")
    assert edit(make_env(ws), f, "", "x\n").is_error
    assert not edit(read_first(ws, f), f, "", "x\n").is_error
    assert f.read_text() == "x\n"


def test_missing_file_with_an_old_string(ws: Path) -> None:
    out = edit(make_env(ws), ws / "nope.py", "a", "b")
    assert text(out) == (
        "<tool_use_error>File does not exist. Note: your current working directory is "
        f"{ws}.</tool_use_error>"
    )
    assert not (ws / "nope.py").exists()


def test_crlf_file_matches_lf_strings_and_stays_crlf(ws: Path) -> None:
    f = ws / "dos.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = edit(read_first(ws, f), f, "one\ntwo\n", "1\n2\n")
    assert not out.is_error
    assert f.read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_consecutive_edits_use_the_returned_mtime(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("a b\n")
    env = read_first(ws, f)
    env = after(env, edit(env, f, "a", "A"))
    second = edit(env, f, "b", "B")
    assert not second.is_error
    assert f.read_text() == "A B\n"


def test_non_utf8_file_is_refused_unchanged(ws: Path) -> None:
    f = ws / "latin1.txt"
    f.write_bytes("café\n".encode("latin-1"))
    out = edit(read_first(ws, f), f, "caf", "CAF")
    assert out.is_error
    assert "UTF-8" in text(out)
    assert f.read_bytes() == "café\n".encode("latin-1")


def test_schema_requires_new_string(ws: Path) -> None:
    out = call(EDIT, {"file_path": str(ws / "m.py"), "old_string": "a"}, make_env(ws))
    assert "InputValidationError" in text(out)


def assert_refused(out: ToolOutcome, ws: Path) -> None:
    assert out.is_error
    assert "outside the workspace" in text(out)
    assert out.read_files == {}
    outside = ws.parent / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "original\n"


def test_refuses_every_way_out(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link.txt").symlink_to(outside / "keep.txt")
    env = make_env(ws, read={str(outside / "keep.txt"): os.stat(outside / "keep.txt").st_mtime})
    for path in (ws / ".." / "outside" / "keep.txt", outside / "keep.txt", ws / "link.txt"):
        assert_refused(edit(env, path, "original", "pwned"), ws)
    assert_refused(edit(env, ws / ".." / "outside" / "new.txt", "", "planted"), ws)


@pytest.mark.parametrize(
    ("before", "old", "new", "after"),
    [
        (b"one\r\ntwo\r\nthree\r\n", "two", "two\ntwo and a half",
         b"one\r\ntwo\r\ntwo and a half\r\nthree\r\n"),
        (b"one\r\ntwo\r\n", "one\r\n", "1\n", b"1\r\ntwo\r\n"),
        (b"a\r\nb\nc\r\n", "b", "B", b"a\r\nB\nc\r\n"),
    ],
    ids=["lines_added_to_a_crlf_file_end_in_crlf", "crlf_strings_keep_it_crlf",
         "a_mixed_file_keeps_its_other_endings"],
)  # fmt: skip
def test_line_endings_of_a_crlf_file(
    ws: Path, before: bytes, old: str, new: str, after: bytes
) -> None:
    f = ws / "dos.txt"
    f.write_bytes(before)
    out = edit(read_first(ws, f), f, old, new)
    assert not out.is_error, out.content
    assert f.read_bytes() == after


def test_creating_under_a_file_or_at_a_slash_is_refused(ws: Path) -> None:
    (ws / "f.txt").write_text("keep\n")
    under = edit(make_env(ws), ws / "f.txt" / "new.py", "", "x")
    assert "f.txt is a file, not a directory" in text(under)
    slash = call(EDIT, {"file_path": "new/", "old_string": "", "new_string": "x"}, make_env(ws))
    assert "new/ ends in /" in text(slash)
    assert not (ws / "new").exists()


def test_text_utf8_cannot_hold_leaves_the_file_as_it_was(ws: Path) -> None:
    """A lone surrogate (a model's `"\\ud800"`) cannot be written: the file is not
    truncated first and left empty."""
    f = ws / "f.txt"
    f.write_text("hello world\n")
    out = edit(read_first(ws, f), f, "world", "w\ud800")
    assert out.is_error
    assert "\\ud800" in text(out) and "lone surrogate" in text(out)
    assert f.read_text() == "hello world\n"


VIEWS = [
    "cat m.py",
    "cat -n ./m.py",
    "head -n 5 m.py",
    "head -5 m.py",
    "tail -n 3 m.py",
    "sed -n '1,2p' m.py",
    "grep -n 'return' m.py",
    "grep -e return -- m.py",
]
NOT_VIEWS = [
    "cat m.py other.py",
    "cat m.py | wc -l",
    "cat m.py > copy.py",
    "sed 's/1/2/' m.py",
    "sed -n -i 's/1/2/p' m.py",
    "cat $(echo m.py)",
    "cat m*.py",
    "grep return",
    "echo m.py",
]


@pytest.mark.parametrize("command", VIEWS)
def test_viewing_the_file_with_bash_counts_as_reading_it(ws: Path, command: str) -> None:
    """Claude Code: "Viewing a single file with cat, head, tail, sed -n, grep or rg in
    Bash also counts" as the read an Edit needs."""
    from fsm_agent.tools.bash import BashTool

    f = ws / "m.py"
    f.write_text("def f():\n    return 1\n")
    (ws / "other.py").write_text("x\n")
    env = make_env(ws)
    viewed = call(BashTool(), {"command": command}, env)
    assert not viewed.is_error, viewed.content
    assert viewed.read_files == {str(f): os.stat(f).st_mtime}
    out = edit(after(env, viewed), f, "return 1", "return 2")
    assert not out.is_error, out.content
    assert f.read_text() == "def f():\n    return 2\n"


@pytest.mark.parametrize("command", NOT_VIEWS)
def test_other_commands_do_not_count_as_reading_a_file(ws: Path, command: str) -> None:
    from fsm_agent.tools.bash import BashTool

    (ws / "m.py").write_text("def f():\n    return 1\n")
    (ws / "other.py").write_text("x\n")
    assert call(BashTool(), {"command": command}, make_env(ws)).read_files == {}


def test_viewing_a_file_outside_the_workspace_with_bash_records_nothing(ws: Path) -> None:
    from fsm_agent.tools.bash import BashTool

    out = call(BashTool(), {"command": "cat ../outside/keep.txt"}, make_env(ws))
    assert out.read_files == {}


@pytest.mark.parametrize(
    ("command", "file"),
    [
        ("rg return m.py", "m.py"),
        ("rg -n -C 2 'def f' src/m.py", "src/m.py"),
        ("rg -e x -e y m.py", "m.py"),
        ("sed -n '10,$p' m.py", "m.py"),
        ("tail -n 20 'my file.txt'", "my file.txt"),
        ("rg return", None),
        ("rg return src m.py", None),
        ("sed -n 'w out' m.py", None),
        ("head m.py; rm m.py", None),
        ("cat ~/m.py", None),
        ('cat "$HOME/m.py"', None),
        ("less m.py", None),
        ("cat " + "d/" * 2000 + "m.py", "d/" * 2000 + "m.py"),
        ('cat "' + "x" * 100_000 + '"', None),
    ],
)
def test_which_file_a_command_views(command: str, file: str | None) -> None:
    from fsm_agent.tools.viewed import viewed_file

    assert viewed_file(command) == file


@pytest.mark.parametrize(
    ("before", "old", "new", "after"),
    [
        (b"a\r\nb\nc\r\n", "a\nb\nc", "x\ny", b"x\r\ny\r\n"),
        (b"a\nb\r\nc\nd\n", "a\nb\nc", "X\nY", b"X\nY\nd\n"),
        (b"a\nb\r\nc\nd\n", "b\nc", "B\nC", b"a\nB\r\nC\nd\n"),
        (b"keep\r\none\r\ntwo\nkeep\n", "one\ntwo", "1", b"keep\r\n1\nkeep\n"),
    ],
    ids=[
        "crlf_majority_writes_crlf",
        "lf_majority_writes_lf",
        "a_crlf_span_keeps_crlf",
        "untouched_lines_keep_theirs",
    ],
)  # fmt: skip
def test_an_old_string_across_mixed_endings_is_found(
    ws: Path, before: bytes, old: str, new: str, after: bytes
) -> None:
    """Claude Code matches against the file with CRLF read as LF, so a string that
    spans a CRLF line and an LF line is found. The text put in its place takes the
    ending of the text it replaces, or the file's commoner one when that has both, and
    the lines the edit does not touch keep theirs."""
    f = ws / "mixed.txt"
    f.write_bytes(before)
    out = edit(read_first(ws, f), f, old, new)
    assert not out.is_error, out.content
    assert f.read_bytes() == after


@pytest.mark.parametrize(
    ("before", "old", "new", "after"),
    [
        ("print(“hello”)\n", 'print("hello")', 'print("bye")', "print(“bye”)\n"),
        ("it’s ‘odd’\n", "it's 'odd'", "it's 'even'", "it’s ‘even’\n"),
        ('say "hi"\n', "say “hi”", "say “bye”", 'say “bye”\n'),
    ],
    ids=["double_quotes", "single_quotes_and_apostrophe", "straight_in_file_curly_given"],
)  # fmt: skip
def test_curly_quotes_match_straight_ones(
    ws: Path, before: str, old: str, new: str, after: str
) -> None:
    """Claude Code's findActualString: a model writes straight quotes where the file
    has curly ones (and the reverse); the match is made with quotes normalised, and
    the new text takes the file's curly style when the match needed it."""
    f = ws / "q.py"
    f.write_text(before, encoding="utf-8")
    out = edit(read_first(ws, f), f, old, new)
    assert not out.is_error, out.content
    assert f.read_text(encoding="utf-8") == after


def test_deleting_a_whole_line_takes_its_newline(ws: Path) -> None:
    """Claude Code's applyEditToFile: an empty new_string for a line given without
    its newline deletes the line, not leaving an empty one in its place."""
    f = ws / "m.py"
    f.write_bytes(b"a\r\nb\r\nc\r\n")
    out = edit(read_first(ws, f), f, "b", "")
    assert not out.is_error, out.content
    assert f.read_bytes() == b"a\r\nc\r\n"


def test_deleting_the_end_of_a_line_keeps_the_line_break(ws: Path) -> None:
    """Claude Code would take the newline after any deleted string, joining the next
    line onto this one; fsm-agent takes it only after a whole line."""
    f = ws / "m.py"
    f.write_text("x = 1  # note\ny = 2\n")
    out = edit(read_first(ws, f), f, "  # note", "")
    assert not out.is_error, out.content
    assert f.read_text() == "x = 1\ny = 2\n"


def test_replace_all_says_every_occurrence_was_replaced(ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("x\nx\n")
    out = edit(read_first(ws, f), f, "x", "y", replace_all=True)
    assert text(out) == (
        f"The file {f} has been updated. All occurrences were successfully replaced."
    )


def test_a_utf16le_file_is_edited_and_stays_utf16le(ws: Path) -> None:
    """Claude Code edits a file with the UTF-16LE byte order mark as UTF-16LE text
    and writes it back so; the mark stays."""
    f = ws / "win.txt"
    f.write_bytes(b"\xff\xfe" + "héllo\r\nwörld\r\n".encode("utf-16-le"))
    out = edit(read_first(ws, f), f, "héllo\nwörld", "hello\nworld\nagain")
    assert not out.is_error, out.content
    assert f.read_bytes() == b"\xff\xfe" + "hello\r\nworld\r\nagain\r\n".encode("utf-16-le")


def test_a_bom_stays_and_the_first_line_is_a_whole_line(ws: Path) -> None:
    f = ws / "bom.txt"
    f.write_bytes(b"\xef\xbb\xbfone\ntwo\n")
    out = edit(read_first(ws, f), f, "one", "")
    assert not out.is_error, out.content
    assert f.read_bytes() == b"\xef\xbb\xbftwo\n"


def test_a_hook_is_told_the_old_string_as_the_file_has_it(ws: Path) -> None:
    """Claude Code's Edit result names the string it replaced (`actualOldString`):
    with the file's curly quotes when the model wrote straight ones."""
    f = ws / "q.txt"
    f.write_text("say “hi”\n", encoding="utf-8")
    env = evolve(read_first(ws, f), wants_response=True)
    out = edit(env, f, 'say "hi"', 'say "bye"')
    assert out.response is not None
    assert out.response["oldString"] == "say “hi”"
    assert out.response["newString"] == 'say "bye"'
