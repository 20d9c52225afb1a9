"""Engine speed: µs per iteration, and whether it grows with the history.

N iterations of the scripted model, one trivial tool call each, session log
on; timed between consecutive `next_turn` transitions, so start-up is not
counted. An allow rule lets the Noop tool run (without it, the default mode
asks, there is no terminal, and the call would be refused, not run), so each
iteration takes the tool pipeline: validation, the permission check, the
tool (no hook is configured, so none is asked). The scenario's N prepared
turns are built before the clock starts and frozen out of the garbage
collector's reach (`gc.freeze`): a real model holds no such script, and
scanning it made the first iterations of a long run look slow. Prints µs
per iteration and the ratio of the mean cost of the last 10% of iterations
to the first 10% (flat is 1.0). Target: ≤ 200 µs, ratio ≤ 1.2.

Next to the wall-clock figure, `cpu µs/iter` is the process's CPU time over
the same spans (user and system, so the log's writes count): what the code
costs, without the time a shared machine gives to someone else. On a quiet
machine the two agree; when they do not, the wall figure is the machine's.

`--no-writes` runs the same with each log record made but not written (this
process's `LogWriter.write` stops short of the system call), so the
difference from a normal run is what writing the log costs. (Keeping the log
in memory instead, `keep_log=False`, holds every line until the end, and at
N = 1000 that costs about as much as the writes.)

The last line times a plain two-state `transitions.Machine` trigger on this
machine, the yardstick the issue gives (about 6 µs on the machine it was
written on): an iteration fires seven such triggers, and the figure tells
how fast this machine is when comparing results across machines.

`--versus-unchained` runs each size with the chained log (digests and state deltas)
and with the log before the chain, interleaved, and prints the ratio of their CPU
µs per iteration: what the chain costs (target ≤ 1.05). CPU time on a shared machine
moves by more than the 5 % the target allows, so `--versus-unchained --instructions`
counts instead what one more iteration costs in instructions, chained and unchained, under
valgrind's callgrind (`bench_instructions.py`'s method: runs of 100 and 100 + N
iterations, their difference over N); runs of one tree agree within about 0.1 %.

    python tools/bench_engine.py [N ...] [--repeat R] [--no-writes] [--versus-unchained]
    python tools/bench_engine.py --versus-unchained --instructions [N ...]   # default N 200
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar

from fsm_agent.app.session import arun
from fsm_agent.core import jsontext
from fsm_agent.core.config import RunConfig
from fsm_agent.core.events import DriverEvent, Transition
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.core.tool import ToolEnv, ToolOutcome
from fsm_agent.live.scripted import Scenario, ScriptedModel
from fsm_agent.tape.log import LogWriter


class Noop:
    name = "Noop"
    description = "Does nothing."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        return ToolOutcome("ok")


def scenario(n: int) -> Scenario:
    turns: list[dict[str, Any]] = [
        {
            "content": [
                {"type": "tool_use", "id": f"toolu_{i:06d}", "name": "Noop", "input": {"n": i}}
            ],
            "usage": {"input_tokens": 100, "output_tokens": 10},
        }
        for i in range(n)
    ]
    turns.append({"content": [{"type": "text", "text": "done"}]})
    return Scenario.parse({"turns": turns})


def bench_config(cwd: Path) -> RunConfig:
    """The scripted model, a window that never fills, an allow rule for Noop, and
    a user context (the date, as every `fsm-agent run` has) sent before the history."""
    return RunConfig(
        model="scripted",
        cwd=str(cwd),
        context_window=10**9,
        permissions=PermissionSettings(allow=(RuleSource("Noop"),)),
        user_context={"currentDate": "Today's date is 2026-11-30."},
    )


async def measure(n: int, log: Path) -> list[tuple[float, float]]:
    """Wall-clock and CPU seconds of each iteration, `next_turn` to `next_turn`."""
    stamps: list[tuple[float, float]] = []

    def on_event(event: DriverEvent) -> None:
        if isinstance(event, Transition) and event.edge == "next_turn":
            stamps.append((time.perf_counter(), time.process_time()))

    model = ScriptedModel(scenario(n))
    gc.collect()
    gc.freeze()
    try:
        result = await arun(
            "go",
            model=model,
            config=bench_config(log.parent),
            tools={"Noop": Noop()},
            log=log,
            on_event=on_event,
        )
    finally:
        gc.unfreeze()
    assert result.reason == "completed", result.reason
    refused = [
        b
        for m in result.messages.items
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.is_error
    ]
    assert not refused, f"Noop did not run: {refused[0].content}"
    return [(b[0] - a[0], b[1] - a[1]) for a, b in pairwise(stamps)]


def plain_trigger_us(n: int = 20_000) -> float:
    """µs per trigger of a bare two-state `transitions.Machine`, the best of three runs."""
    from transitions import Machine

    class Model:
        pass

    model = Model()
    machine = Machine(model=model, states=["a", "b"], initial="a", auto_transitions=False)
    machine.add_transition("go", "a", "b")
    machine.add_transition("back", "b", "a")
    go, back = machine.events["go"].trigger, machine.events["back"].trigger
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            go(model)
            back(model)
        best = min(best, (time.perf_counter() - start) / (2 * n))
    return best * 1e6


def one_run(n: int) -> tuple[float, float, float, int]:
    """µs per iteration (wall, CPU), the last-10%/first-10% ratio, and the log's size."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "bench.jsonl"
        spans = asyncio.run(measure(n, log))
        times = [wall for wall, _ in spans]
        tenth = max(1, len(times) // 10)
        head = sum(times[:tenth]) / tenth
        tail = sum(times[-tenth:]) / tenth
        cpu = sum(c for _, c in spans) / len(spans)
        return 1e6 * sum(times) / len(times), 1e6 * cpu, tail / head, log.stat().st_size


def unwritten(self: LogWriter, record: dict[str, Any]) -> None:
    """`LogWriter.write` up to the system call: the record is made, not written."""
    jsontext.line(record)


def spans_of(n: int) -> tuple[list[float], int]:
    """Each iteration's CPU µs of one run of `n`, and the log's size."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "bench.jsonl"
        spans = asyncio.run(measure(n, log))
        return [1e6 * cpu for _, cpu in spans], log.stat().st_size


def versus_unchained(sizes: list[int], repeat: int) -> None:
    """Each size run `repeat` times chained (this version's log) and as many times
    unchained (`LogWriter.chained = False`: version 2, no digest, no state delta), the two
    interleaved so a shared machine's drift falls on both. The ratio is of the median
    iteration, all runs' iterations pooled, and of the 10th percentile: a busy machine
    (another process on the core, its caches) stretches some iterations several times
    over, which moves a run's mean (the other columns) far more than the two figures."""
    print(f"{'N':>6} {'chained cpu µs':>15} {'unchained cpu µs':>17} {'ratio':>7} "
          f"{'p50 ratio':>9} {'p10 ratio':>9} {'sizes':>14}")  # fmt: skip
    for n in sizes:
        runs: dict[bool, list[list[float]]] = {True: [], False: []}
        size: dict[bool, int] = {}
        for _ in range(repeat):
            for flag in (True, False):
                LogWriter.chained = flag
                spans, size[flag] = spans_of(n)
                runs[flag].append(spans)
        LogWriter.chained = True
        a, b = (statistics.median(sum(r) / len(r) for r in runs[f]) for f in (True, False))
        pooled = {f: [x for r in runs[f] for x in r] for f in (True, False)}
        cuts = {f: statistics.quantiles(pooled[f], n=10) for f in (True, False)}
        p50 = statistics.median(pooled[True]) / statistics.median(pooled[False])
        p10 = cuts[True][0] / cuts[False][0]
        sizes_k = f"{size[True] / 1024:.0f}K/{size[False] / 1024:.0f}K"
        print(f"{n:>6} {a:>15.1f} {b:>17.1f} {a / b:>7.3f} {p50:>9.3f} {p10:>9.3f} {sizes_k:>14}")
    print(f"(medians of {repeat} interleaved runs each; ratio ≤ 1.05 is the target)")


def versus_unchained_instructions(sizes: list[int]) -> None:
    """Instructions one more iteration costs with the chained log and with version 2's,
    counted by callgrind, and their ratio: the chain's cost free of the machine's load."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_instructions import per_iteration

    print(f"{'N':>6} {'chained instr/iter':>19} {'unchained instr/iter':>21} {'ratio':>7}")
    for n in sizes:
        chained, unchained = (per_iteration(flag, 100, 100 + n) for flag in (True, False))
        print(f"{n:>6} {chained:>19,.0f} {unchained:>21,.0f} {chained / unchained:>7.3f}")
    print("(callgrind: runs of 100 and 100 + N iterations, their difference over N; "
          "ratio ≤ 1.05 is the target)")  # fmt: skip


def main(sizes: list[int], repeat: int, note: str = "") -> None:
    """Each size runs `repeat` times and each column shows its median over the runs,
    so one hiccup of a shared machine does not make a figure. (At N = 10 the
    ratio compares one iteration with another, and a single hiccup moves it.)"""
    print(f"{'N':>6} {'µs/iter':>10} {'cpu µs/iter':>12} {'last10%/first10%':>18} {'log size':>10}")
    for n in sizes:
        runs = [one_run(n) for _ in range(repeat)]
        columns = zip(*runs, strict=True)
        mean_us, cpu_us, ratio, size = (statistics.median(column) for column in columns)
        print(f"{n:>6} {mean_us:>10.1f} {cpu_us:>12.1f} {ratio:>18.2f} {size / 1024:>9.0f}K")
    print(f"(each the median of {repeat} runs{note})")
    print(f"a plain transitions trigger here: {plain_trigger_us():.1f} µs (7 per iteration)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int)
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (default 3)")
    parser.add_argument(
        "--no-writes", action="store_true", help="make each log record but do not write it"
    )
    parser.add_argument(
        "--versus-unchained",
        action="store_true",
        help="time chained and unchained logs side by side (what the chain costs)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --versus-unchained: count instructions under callgrind, not CPU time",
    )
    args = parser.parse_args()
    if args.instructions:
        if not args.versus_unchained:
            parser.error("--instructions goes with --versus-unchained")
        versus_unchained_instructions(args.sizes or [200])
        sys.exit(0)
    args.sizes = args.sizes or [10, 100, 1000]
    if args.versus_unchained:
        versus_unchained(args.sizes, max(1, args.repeat))
        sys.exit(0)
    if args.no_writes:
        LogWriter.write = unwritten  # type: ignore[method-assign]
    main(args.sizes, max(1, args.repeat), "; log records made, not written" * args.no_writes)
