import base64
import os
from pathlib import Path

import pytest
from attrs import evolve

from fsm_agent.core.messages import ImageBlock
from fsm_agent.core.tool import ToolOutcome
from fsm_agent.tools.read import ReadTool
from tests.support.tools import call, make_env, text

READ = ReadTool()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET\n")
    return tmp_path / "ws"


def read(ws: Path, **input: object) -> ToolOutcome:
    return call(READ, dict(input), make_env(ws))


def test_numbers_lines_and_reports_the_read(ws: Path) -> None:
    f = ws / "a.txt"
    f.write_text("alpha\n  beta\n")
    out = read(ws, file_path=str(f))
    assert not out.is_error
    assert text(out) == "     1→alpha\n     2→  beta\n     3→"
    assert out.read_files == {str(f): os.stat(f).st_mtime}


def test_relative_paths_start_at_cwd(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "b.txt").write_text("x\n")
    out = read(ws, file_path="sub/b.txt")
    assert text(out) == "     1→x\n     2→"
    assert list(out.read_files) == [str(ws / "sub" / "b.txt")]


def test_offset_and_limit_select_lines_and_say_more_follows(ws: Path) -> None:
    f = ws / "ten.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = text(read(ws, file_path=str(f), offset=3, limit=2))
    assert out.startswith("     3→line 3\n     4→line 4\n")
    assert "line 5" not in out
    assert "offset=5" in out


def test_reading_to_the_end_has_no_continuation_note(ws: Path) -> None:
    f = ws / "ten.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert text(read(ws, file_path=str(f), offset=9)) == "     9→line 9\n    10→line 10\n    11→"


def test_default_limit_is_2000_lines(ws: Path) -> None:
    f = ws / "long.txt"
    f.write_text("".join(f"{i}\n" for i in range(1, 2501)))
    out = text(read(ws, file_path=str(f)))
    assert "  2000→2000\n" in out
    assert "→2001" not in out
    assert "offset=2001" in out


def test_long_lines_are_cut_at_2000_chars(ws: Path) -> None:
    f = ws / "wide.txt"
    f.write_text("x" * 2500 + "\nshort\n")
    first, second, last = text(read(ws, file_path=str(f))).split("\n")
    assert first.startswith("     1→" + "x" * 2000)
    assert "x" * 2001 not in first
    assert "truncated" in first
    assert second == "     2→short"
    assert last == "     3→"


def test_crlf_lines_are_shown_without_carriage_returns(ws: Path) -> None:
    f = ws / "dos.txt"
    f.write_bytes(b"one\r\ntwo\r\n")
    assert text(read(ws, file_path=str(f))) == "     1→one\n     2→two\n     3→"


def test_empty_file_says_so_and_counts_as_read(ws: Path) -> None:
    f = ws / "empty.txt"
    f.write_text("")
    out = read(ws, file_path=str(f))
    assert not out.is_error
    assert text(out) == (
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    )
    assert str(f) in out.read_files


def test_offset_past_the_end_says_how_long_the_file_is(ws: Path) -> None:
    f = ws / "three.txt"
    f.write_text("a\nb\nc\n")
    out = text(read(ws, file_path=str(f), offset=10))
    assert "shorter than the provided offset (10)" in out
    assert "4 lines" in out


def test_missing_file(ws: Path) -> None:
    out = read(ws, file_path=str(ws / "nope.txt"))
    assert out.is_error
    assert text(out) == (
        "<tool_use_error>File does not exist. Note: your current working directory is "
        f"{ws}.</tool_use_error>"
    )
    assert out.read_files == {}


def test_missing_file_names_one_with_another_extension(ws: Path) -> None:
    """Claude Code's findSimilarFile: the same name with another extension, in the
    same directory."""
    (ws / "src").mkdir()
    (ws / "src" / "app.ts").write_text("x\n")
    (ws / "src" / "app.test.ts").write_text("x\n")
    out = read(ws, file_path="src/app.js")
    assert text(out) == (
        "<tool_use_error>File does not exist. Note: your current working directory is "
        f"{ws}. Did you mean app.ts?</tool_use_error>"
    )


def test_directory_is_an_error(ws: Path) -> None:
    (ws / "d").mkdir()
    out = read(ws, file_path=str(ws / "d"))
    assert out.is_error
    assert "is a directory" in text(out)


def test_binary_file_is_an_error(ws: Path) -> None:
    f = ws / "blob.bin"
    f.write_bytes(b"ELF\x00\x01\x02" + b"a" * 100)
    out = read(ws, file_path=str(f))
    assert out.is_error
    assert "binary" in text(out)
    assert out.read_files == {}


def test_undecodable_text_is_shown_with_replacement_characters(ws: Path) -> None:
    f = ws / "latin1.txt"
    f.write_bytes("café\n".encode("latin-1"))
    assert text(read(ws, file_path=str(f))) == "     1→caf\ufffd\n     2→"


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 20
IMAGES = [
    ("pic.png", PNG, "image/png"),
    ("pic.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg"),
    ("pic.gif", b"GIF89a\x01\x00\x01\x00\x00\x00", "image/gif"),
    ("pic.webp", b"RIFF\x1a\x00\x00\x00WEBPVP8 \x00\x00", "image/webp"),
]


@pytest.mark.parametrize(("name", "data", "media_type"), IMAGES)
def test_images_come_back_as_base64_image_blocks(
    ws: Path, name: str, data: bytes, media_type: str
) -> None:
    f = ws / name
    f.write_bytes(data)
    out = read(ws, file_path=str(f))
    assert not out.is_error
    assert isinstance(out.content, tuple)
    (block,) = out.content
    assert isinstance(block, ImageBlock)
    assert block.source.media_type == media_type
    assert base64.b64decode(block.source.data) == data
    assert str(f) in out.read_files


def test_large_file_needs_offset_or_limit(ws: Path) -> None:
    f = ws / "big.txt"
    f.write_text(("y" * 99 + "\n") * 3000)  # 300,000 bytes
    out = read(ws, file_path=str(f))
    assert out.is_error
    assert "offset" in text(out)
    assert "limit" in text(out)
    assert out.read_files == {}
    paged = read(ws, file_path=str(f), offset=2999, limit=5)
    assert text(paged) == f"  2999→{'y' * 99}\n  3000→{'y' * 99}\n  3001→"


def test_schema_is_checked_before_running(ws: Path) -> None:
    out = read(ws, path="a.txt")
    assert out.is_error
    assert "InputValidationError" in text(out)
    bad_offset = read(ws, file_path=str(ws / "a.txt"), offset=-1)
    assert "InputValidationError" in text(bad_offset)


# Confinement: each escape is refused and reveals nothing of the target.


def assert_refused(out: ToolOutcome, ws: Path) -> None:
    assert out.is_error
    assert "outside the workspace" in text(out)
    assert str(ws) in text(out)
    assert "TOP SECRET" not in text(out)
    assert out.read_files == {}


def test_refuses_dot_dot_escape(ws: Path) -> None:
    assert_refused(read(ws, file_path="../outside/secret.txt"), ws)
    assert_refused(read(ws, file_path=str(ws / ".." / "outside" / "secret.txt")), ws)


def test_refuses_absolute_path_outside(ws: Path) -> None:
    assert_refused(read(ws, file_path=str(ws.parent / "outside" / "secret.txt")), ws)


def test_refuses_symlink_pointing_outside(ws: Path) -> None:
    (ws / "innocent.txt").symlink_to(ws.parent / "outside" / "secret.txt")
    assert_refused(read(ws, file_path=str(ws / "innocent.txt")), ws)
    (ws / "dir-link").symlink_to(ws.parent / "outside")
    assert_refused(read(ws, file_path=str(ws / "dir-link" / "secret.txt")), ws)


def test_reads_in_additional_dirs(ws: Path) -> None:
    extra = ws.parent / "outside"
    out = call(READ, {"file_path": str(extra / "secret.txt")}, make_env(ws, extra=(extra,)))
    assert text(out) == "     1→TOP SECRET\n     2→"


def test_integral_float_offset_and_limit_are_line_numbers(ws: Path) -> None:
    """JSON Schema's `integer` admits 2.0, and a model may write it so: it is line 2."""
    f = ws / "n.txt"
    f.write_text("one\ntwo\nthree\n")
    out = read(ws, file_path=str(f), offset=2.0, limit=1.0)
    assert not out.is_error, out.content
    assert text(out).splitlines()[0] == "     2→two"


def test_a_file_whose_name_is_not_utf8_is_refused_by_name(ws: Path) -> None:
    """Its path could not be logged nor sent (it would be recorded as read); the model
    is told, in text that can."""
    with open(os.fsencode(ws) + b"/caf\xe9.txt", "wb") as f:
        f.write(b"x\n")
    os.symlink(b"caf\xe9.txt", os.fsencode(ws) + b"/link.txt")
    out = read(ws, file_path="link.txt")
    assert out.is_error
    assert text(out) == (
        f"<tool_use_error>link.txt leads to {ws}/caf\\xe9.txt, a name that is not UTF-8: "
        "rename it (with Bash) to use it here.</tool_use_error>"
    )
    assert out.read_files == {}


def test_lines_are_numbered_as_claude_code_shows_them(ws: Path) -> None:
    """Claude Code numbers each line `{n:>6}→` and splits the text on newlines, so a
    final newline shows as a last, empty line, counted in numLines and totalLines."""
    f = ws / "a.txt"
    f.write_text("alpha\n  beta\n")
    env = evolve(make_env(ws), wants_response=True)
    out = call(READ, {"file_path": str(f)}, env)
    assert text(out) == "     1→alpha\n     2→  beta\n     3→"
    assert out.response is not None
    assert out.response["file"] == {
        "filePath": str(f),
        "content": "alpha\n  beta\n",
        "numLines": 3,
        "startLine": 1,
        "totalLines": 3,
    }
    g = ws / "b.txt"
    g.write_text("no newline")
    assert text(read(ws, file_path=str(g))) == "     1→no newline"


def test_a_huge_line_is_read_past_not_into_memory(ws: Path) -> None:
    """A paged read of a file with one line of 64 MB (minified, a log without
    newlines) holds the part it shows, not the line: a line of gigabytes must not
    take the memory with it."""
    import tracemalloc

    f = ws / "big.txt"
    with open(f, "wb") as out:
        out.write(b"first\r\n")
        for _ in range(64):
            out.write(b"b" * (1 << 20))
        out.write(b"\r\nlast\r\n")
    tracemalloc.start()
    try:
        outcome = READ._read(str(f), 1, 3, str(ws), respond=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * (1 << 20)
    lines = text(outcome).split("\n")
    assert lines[0] == "     1→first"
    assert lines[1] == "     2→" + "b" * 2000 + "… [line truncated]"
    assert lines[2] == "     3→last"
    assert outcome.response is not None
    file = outcome.response["file"]
    assert file["content"] == "first\r\n" + "b" * 2000 + "… [line truncated]\r\nlast\r\n"
    assert file["totalLines"] == 4


@pytest.mark.parametrize("part", ["_text", "_image"])
def test_a_fifo_put_in_a_file_s_place_after_the_check_is_refused_not_waited_on(
    tmp_path: Path, part: str
) -> None:
    """Read checks that the path is a regular file, then opens it; a command still running
    could put a FIFO there in between, and the open waited for a writer for ever, in a
    thread no Ctrl-C reaches. The read past the check now meets the FIFO."""
    import threading

    from fsm_agent.core.tool import ToolInputError

    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    tool = ReadTool()
    outcome: list[BaseException | ToolOutcome] = []

    def read() -> None:
        try:
            if part == "_text":
                outcome.append(tool._text(str(fifo), 1, 10))
            else:
                outcome.append(tool._image(str(fifo), "image/png", 10, False))
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():  # the old open: let it go, so the test ends
        with open(fifo, "wb"):
            pass
        reader.join()
    assert len(outcome) == 1 and isinstance(outcome[0], ToolInputError), outcome
    assert "is not a regular file" in str(outcome[0])


UTF16 = b"\xff\xfe" + "héllo\r\nwörld\r\n".encode("utf-16-le")


def test_a_utf16le_file_with_its_bom_is_shown_as_text(ws: Path) -> None:
    """Claude Code reads a file starting with the UTF-16LE byte order mark as UTF-16LE
    (`readFileSyncWithMetadata`); its NUL bytes do not make it binary."""
    f = ws / "win.txt"
    f.write_bytes(UTF16)
    out = call(READ, {"file_path": str(f)}, evolve(make_env(ws), wants_response=True))
    assert not out.is_error, out.content
    assert text(out) == "     1→héllo\n     2→wörld\n     3→"
    assert out.response is not None
    assert out.response["file"]["content"] == "héllo\r\nwörld\r\n"
    assert out.response["file"]["totalLines"] == 3
    paged = call(READ, {"file_path": str(f), "limit": 1}, evolve(make_env(ws), wants_response=True))
    assert text(paged) == (
        "     1→héllo\n\n(Showing lines 1-1; the file continues. Use offset=2 to read more.)"
    )
    assert paged.response is not None
    assert paged.response["file"]["totalLines"] == 3


def test_a_utf8_bom_is_not_shown(ws: Path) -> None:
    """Claude Code's Read strips a UTF-8 byte order mark: it is no character of line 1."""
    f = ws / "bom.txt"
    f.write_bytes(b"\xef\xbb\xbfone\ntwo\n")
    assert text(read(ws, file_path=str(f))) == "     1→one\n     2→two\n     3→"


def test_a_read_of_more_than_25000_tokens_is_refused(ws: Path) -> None:
    """Claude Code's Read refuses content over 25,000 tokens (`maxTokens`), estimated
    at 4 characters a token (2 for JSON): an offset without a limit, or lines of 2,000
    characters, must not send megabytes the context cannot hold."""
    f = ws / "wide.txt"
    f.write_text(("x" * 1500 + "\n") * 3000)
    for paged in ({"offset": 1}, {"offset": 1, "limit": 2000}):
        out = read(ws, file_path=str(f), **paged)
        assert out.is_error
        assert text(out) == (
            "<tool_use_error>File content (750500 tokens) exceeds maximum allowed tokens "
            "(25000). Use offset and limit parameters to read specific portions of the file, "
            "or search for specific content instead of reading the whole file."
            "</tool_use_error>"
        )
        assert out.read_files == {}
    assert not read(ws, file_path=str(f), offset=10, limit=60).is_error
    data = ws / "data.json"
    data.write_text(("v" * 1499 + "\n") * 40)
    assert "(30000 tokens)" in text(read(ws, file_path=str(data)))
    data.rename(ws / "data.txt")
    assert not read(ws, file_path=str(ws / "data.txt")).is_error
