"""Log size: a session of large Writes, its log against the content it records.

A scripted model writes N files of M MB each with the Write tool (the scripted
model streams each call's input in 16-character deltas, as the API streams it
in pieces). The same session is logged as this version writes it (large texts
stored once, as blobs: docs/log-format.md#blobs) and as version 3 wrote it
(every text where it is used: the model's deltas and block, the permission
request, the tool call), and for each the benchmark prints the log's size over
the content's (target ≤ 1.5), the `replay --check` time, and the peak memory
the replay allocated (tracemalloc) over the content: the conversation the
replay rebuilds holds every Write's content once, so that figure is about 1
plus what the reader holds on to, and staying so as N grows is memory flat
with the log's length.

    python tools/bench_log_size.py [--writes N ...] [--mb M]   # default: 10 files of 5 MB
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsm_agent.app.replaying import areplay
from fsm_agent.app.session import arun_scenario
from fsm_agent.live.scripted import Scenario
from fsm_agent.tape.log import LogWriter


def content(size: int, seed: int) -> str:
    """`size` bytes of text in lines of 100, different for each seed."""
    raw = base64.b64encode(random.Random(seed).randbytes(size)).decode()[:size]
    return "\n".join(raw[i : i + 100] for i in range(0, size, 100))[:size]


def scenario(workspace: Path, contents: list[str]) -> Scenario:
    turns: list[dict[str, Any]] = [
        {"content": [{"type": "tool_use", "id": f"toolu_{i:03d}", "name": "Write",
                      "input": {"file_path": str(workspace / f"f{i}.txt"), "content": text}}]}
        for i, text in enumerate(contents)
    ]  # fmt: skip
    turns.append({"content": [{"type": "text", "text": "done"}]})
    return Scenario.parse({"turns": turns, "settings": {"permissions": {"allow": ["Write"]}}})


def logged(tmp: Path, contents: list[str], packed: bool) -> Path:
    """The session run live, its log written as this version does or as version 3 did."""
    workspace = tmp / f"ws-{packed}"
    workspace.mkdir()
    log = tmp / f"{'v4' if packed else 'v3'}.jsonl"
    LogWriter.packed = packed
    try:
        result = asyncio.run(
            arun_scenario(scenario(workspace, contents), cwd=workspace, prompt="go", log=log)
        )
    finally:
        LogWriter.packed = True
    assert result.reason == "completed", result.reason
    return log


def replayed(log: Path) -> tuple[float, int]:
    """Seconds of one `replay --check`, and the peak bytes another allocated (timed apart:
    tracemalloc slows every allocation)."""
    gc.collect()
    start = time.perf_counter()
    result = asyncio.run(areplay(log))
    elapsed = time.perf_counter() - start
    assert result.reason == "completed", result.reason
    gc.collect()
    tracemalloc.start()
    asyncio.run(areplay(log))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak


def main(writes: list[int], mb: float) -> None:
    size = int(mb * 2**20)
    print(f"{'writes':>6} {'MB each':>7} {'format':>7} {'log MB':>8} {'log/content':>11} "
          f"{'replay s':>9} {'replay peak/content':>19}")  # fmt: skip
    for n in writes:
        contents = [content(size, seed) for seed in range(n)]
        total = sum(len(text.encode()) for text in contents)
        with tempfile.TemporaryDirectory() as tmp:
            for packed in (False, True):
                log = logged(Path(tmp), contents, packed)
                seconds, peak = replayed(log)
                bytes_ = log.stat().st_size
                print(
                    f"{n:>6} {mb:>7g} {'v4' if packed else 'v3':>7} {bytes_ / 2**20:>8.1f} "
                    f"{bytes_ / total:>11.2f} {seconds:>9.2f} {peak / total:>19.2f}"
                )
                log.unlink()
    print("(log/content ≤ 1.5 is the target; v3 is the format before blobs, for comparison)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, nargs="+", default=[10], help="files (default 10)")
    parser.add_argument("--mb", type=float, default=5, help="MB per file (default 5)")
    args = parser.parse_args()
    main(args.writes, args.mb)
