"""Replay speed and memory: `replay --check` on a long scripted session.

Records an N-iteration scripted session (one trivial tool call per
iteration, as in bench_engine.py), then replays it with every effect answered
from the log and every transition compared. Prints transitions per second
(target ≥ 20,000) (best of three) and the peak memory the replay allocated (tracemalloc)
next to the log's size, for several N, so memory that grows with the log
shows as a growing peak/size column. Then times the debugger on the same
log: opening it (index only), `g LAST` (replays to the end), `back` (cached).

    python tools/bench_replay.py [N ...]        # default: 1000 10000
    python tools/bench_replay.py --versus-unchained [N ...]   # what the chain costs
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsm_agent.app.replaying import areplay
from fsm_agent.app.session import arun
from fsm_agent.live.scripted import ScriptedModel
from fsm_agent.tape.log import LogWriter
from tools.bench_engine import Noop, bench_config, scenario


def record(n: int, log: Path) -> None:
    """An n-iteration scripted session, logged to `log`."""
    result = asyncio.run(
        arun(
            "go",
            model=ScriptedModel(scenario(n)),
            config=bench_config(log.parent),
            tools={"Noop": Noop()},
            log=log,
        )
    )
    assert result.reason == "completed", result.reason


def measure(log: Path) -> tuple[int, float, int]:
    """(transitions, seconds, peak bytes) of one `replay --check`."""
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    result = asyncio.run(areplay(log))
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return len(result.path), elapsed, peak


def timed(log: Path, repeat: int = 3) -> tuple[int, float]:
    """Transitions and the best of `repeat` times, without tracemalloc (it slows Python)."""
    best = float("inf")
    steps = 0
    for _ in range(repeat):
        start = time.perf_counter()
        steps = len(asyncio.run(areplay(log)).path)
        best = min(best, time.perf_counter() - start)
    return steps, best


def debugger_times(log: Path) -> tuple[float, float, float]:
    """Seconds to open the debugger, to go to the last step, and to step back one."""
    from fsm_agent.cli.debugger import Debugger

    start = time.perf_counter()
    debugger = Debugger(log)
    opened = time.perf_counter() - start
    last = debugger.stepper.index.steps
    start = time.perf_counter()
    debugger.onecmd(f"g {last}")
    to_end = time.perf_counter() - start
    start = time.perf_counter()
    debugger.onecmd("back")
    back = time.perf_counter() - start
    debugger.stepper.close()
    return opened, to_end, back


def main(sizes: list[int]) -> None:
    print(
        f"{'N':>6} {'steps':>7} {'transitions/s':>14} {'log size':>9} "
        f"{'peak mem':>9} {'peak/log':>8}  {'debugger: open':>14} {'g last':>7} {'back':>7}"
    )
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "bench.jsonl"
            record(n, log)
            steps, seconds = timed(log)
            _, _, peak = measure(log)
            size = log.stat().st_size
            opened, to_end, back = debugger_times(log)
            print(
                f"{n:>6} {steps:>7} {steps / seconds:>14,.0f} {size / 2**20:>8.1f}M "
                f"{peak / 2**20:>8.1f}M {peak / size:>8.2f}  {opened:>13.3f}s "
                f"{to_end:>6.2f}s {back * 1000:>5.1f}ms"
            )


def versus_unchained(sizes: list[int], repeat: int = 5) -> None:
    """`replay --check` of the same session logged chained and unchained (version 2, as
    before the chain), timed in turn so a shared machine's drift falls on both: the
    ratio is what checking the chain costs."""
    print(f"{'N':>6} {'chained t/s':>12} {'unchained t/s':>14} {'ratio':>7}")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            logs = {True: Path(tmp) / "chained.jsonl", False: Path(tmp) / "unchained.jsonl"}
            for flag, log in logs.items():
                LogWriter.chained = flag
                record(n, log)
            LogWriter.chained = True
            best = {True: float("inf"), False: float("inf")}
            steps = 0
            for _ in range(repeat):
                for flag, log in logs.items():
                    steps, seconds = timed(log, 1)
                    best[flag] = min(best[flag], seconds)
            a, b = steps / best[True], steps / best[False]
            print(f"{n:>6} {a:>12,.0f} {b:>14,.0f} {a / b:>7.3f}")
    print(f"(best of {repeat} interleaved replays each; ratio ≥ 0.95 is the target)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--versus-unchained"]:
        versus_unchained([int(a) for a in sys.argv[2:]] or [1000, 10000])
    else:
        main([int(a) for a in sys.argv[1:]] or [1000, 10000])
