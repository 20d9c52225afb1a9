"""Instructions per engine iteration, counted by valgrind's callgrind.

Wall-clock figures on a shared virtual machine move by several per cent from
hour to hour; instruction counts do not. This runs `bench_engine.py`'s
iteration (scripted model, one trivial tool call, log on) under callgrind
for N = 100 and N = 300 and prints the difference over 200: what one more
iteration costs, set-up excluded.

What else moves the count is held still: the scenarios are parsed in every
run alike, the garbage collector is off (its collections land at different
moments in different memory layouts), string hashing is seeded and address
randomisation off. Compare two commits by checking each out in the same
directory, bytecode compiled (`python -m compileall -q fsm_agent`): runs of
one commit then agree within about 0.1 %, where runs without these holds (the
collector on, another checkout's directory) have differed by several per cent.

    python tools/bench_instructions.py
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_RUN = """
import asyncio, functools, gc, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tools")
import bench_engine as b
from fsm_agent.tape.log import LogWriter
LogWriter.chained = sys.argv[2] == "chained"
b.scenario = functools.lru_cache(None)(b.scenario)
for k in (20, 100, 300):
    b.scenario(k)
gc.disable()
with tempfile.TemporaryDirectory() as tmp:
    asyncio.run(b.measure(20, Path(tmp) / "warm.jsonl"))
    asyncio.run(b.measure(int(sys.argv[1]), Path(tmp) / "run.jsonl"))
"""


def instructions(n: int, chained: bool = True) -> int:
    """Instructions of a whole process that runs `n` iterations after a warm-up of 20,
    its log chained (this version's) or not (version 2, `LogWriter.chained = False`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        argv = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            ONE_RUN,
            str(n),
            "chained" if chained else "unchained",
        ]
        if shutil.which("setarch"):
            argv = ["setarch", platform.machine(), "-R", *argv]
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode or found is None:
            sys.exit(f"callgrind failed:\n{done.stderr[-2000:]}")
        return int(found[1])


def per_iteration(chained: bool = True, few: int = 100, more: int = 300) -> float:
    """Instructions one more iteration costs: two runs' difference over their sizes'."""
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt install valgrind)")
    return (instructions(more, chained) - instructions(few, chained)) / (more - few)


def main() -> None:
    print(f"{per_iteration():,.0f} instructions per iteration ({ROOT})")


if __name__ == "__main__":
    main()
