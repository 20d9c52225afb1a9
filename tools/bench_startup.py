"""Start-up time of each subcommand next to a bare `python -c pass`.

Target: within 100 ms of bare Python for every subcommand that needs no
model (`--help`, `graph`, `replay`). `run --scripted` is shown for scale.

Timed as a user starts it: with the package's bytecode compiled, as
`pip install` leaves it (or as Python writes it on the first run). The
package is compiled first, because where PYTHONDONTWRITEBYTECODE is set
(this sandbox sets it) every start would otherwise recompile every module,
about 70 ms that no installed copy pays. The two lines in brackets show
what third-party imports alone cost: those every run of the engine needs,
then all that `replay --check` loads, the floor under its figure.

    python tools/bench_startup.py [repeats]
"""

from __future__ import annotations

import compileall
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "replays" / "scenarios" / "tool_round.json"


def timed(argv: list[str], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(repeats: int) -> None:
    py = sys.executable
    fsm = [py, "-m", "fsm_agent.cli"]
    compileall.compile_dir(ROOT / "fsm_agent", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "s.jsonl"
        subprocess.run(
            [*fsm, "run", "--scripted", str(SCENARIO), "--cwd", tmp, "--log", str(log)],
            capture_output=True,
            check=True,
        )
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "(asyncio, click, attrs, cattrs)": [py, "-c", "import asyncio, click, attrs, cattrs"],
            "(+ transitions, orjson, fastjsonschema)": [
                py,
                "-c",
                "import asyncio, click, attrs, cattrs, transitions, orjson, fastjsonschema",
            ],
            "fsm-agent --help": [*fsm, "--help"],
            "fsm-agent graph": [*fsm, "graph"],
            "fsm-agent replay --path": [*fsm, "replay", str(log), "--path"],
            "fsm-agent replay --check": [*fsm, "replay", str(log), "--check"],
            # No --log: each run writes its own log under the workspace (a log never
            # overwrites a file, so a fixed path would fail from the second run on).
            "fsm-agent run --scripted": [*fsm, "run", "--scripted", str(SCENARIO), "--cwd", tmp],
        }
        base = None
        print(f"{'command':<40} {'median ms':>10} {'vs bare python':>15}")
        for name, argv in cases.items():
            ms = 1000 * timed(argv, repeats)
            base = ms if base is None else base
            print(f"{name:<40} {ms:>10.0f} {ms - base:>+14.0f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
