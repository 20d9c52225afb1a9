"""A log is at most 1.5 times the content it records (issue 26): large texts are stored
once, not in every record that needs them. tools/bench_log_size.py measures the same
on ten 5 MB Writes."""

from __future__ import annotations

from pathlib import Path

from fsm_agent.app.session import replay
from tests.support.logs import large_text, logged_writes

MB = 2**20


def test_a_log_of_large_writes_is_at_most_one_and_a_half_times_their_content(
    tmp_path: Path,
) -> None:
    contents = [large_text(MB, seed) for seed in range(3)]
    (tmp_path / "ws").mkdir()
    log = logged_writes(tmp_path / "ws", tmp_path / "w.jsonl", contents)
    content = sum(len(text.encode()) for text in contents)
    assert log.stat().st_size <= 1.5 * content, log.stat().st_size / content
    assert [(tmp_path / "ws" / f"f{i}.txt").read_text() for i in range(3)] == contents
    assert len(replay(log).path) > 0  # and it replays, every transition compared


def test_a_text_between_the_blob_size_and_a_long_line_is_stored_once(tmp_path: Path) -> None:
    """A text of 1,025–2,048 characters was stored inline where its line was short (the
    tool call, the state delta) and as a blob elsewhere: now once, wherever it is."""
    contents = [large_text(1500, seed) for seed in range(2)]
    (tmp_path / "ws").mkdir()
    log = logged_writes(tmp_path / "ws", tmp_path / "w.jsonl", contents)
    data = log.read_bytes()
    for text in contents:
        piece = text.split("\n")[3][:40].encode()  # no newline: JSON escapes it
        assert data.count(piece) == 1, data.count(piece)
    assert len(replay(log).path) > 0
