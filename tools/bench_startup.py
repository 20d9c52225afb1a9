"""Start-up time of each subcommand next to a bare `python -c pass`.

Target: within 100 ms of bare Python for every subcommand that needs no
model (`--help`, `graph`, `replay`). `run --scripted` is shown for scale.
The debugger (`replay` in a terminal) is timed to its first prompt and out
again (`q`), in a pseudo-terminal (pexpect, from the test extras).

Timed as a user starts it: with the package's bytecode compiled, as
`pip install` leaves it (or as Python writes it on the first run). The
package is compiled first, because where PYTHONDONTWRITEBYTECODE is set
(this sandbox sets it) every start would otherwise recompile every module,
about 70 ms that no installed copy pays. The two lines in brackets show
what third-party imports alone cost: those every run of the engine needs,
then all that `replay --check` loads, the floor under its figure.

`--breakdown` splits what fsm-agent adds to `replay --check`, in process and
after the third-party imports: building attrs classes, cattrs generating its
functions, fastjsonschema compiling tool schemas, and the rest. It times
them by wrapping attrs' class builder (a private name: if attrs renames it,
the breakdown says so) and cattrs' and fastjsonschema's public builders.

    python tools/bench_startup.py [repeats] [--breakdown]
"""

from __future__ import annotations

import argparse
import compileall
import json
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


def to_prompt(argv: list[str], repeats: int) -> float | None:
    """Median seconds from starting the debugger in a terminal to its first prompt and
    out again; None without pexpect (a test extra)."""
    try:
        import pexpect
    except ImportError:
        return None
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        child = pexpect.spawn(argv[0], argv[1:], timeout=30, dimensions=(40, 120))
        child.expect_exact("(fsm) ")
        child.sendline("q")
        child.expect(pexpect.EOF)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(repeats: int, split: bool = False) -> None:
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
        assert base is not None
        debugger = to_prompt([*fsm, "replay", str(log)], repeats)
        if debugger is None:
            print("fsm-agent replay (debugger): pexpect is not installed (pip install pexpect)")
        else:
            ms = 1000 * debugger
            print(f"{'fsm-agent replay (debugger, to q)':<40} {ms:>10.0f} {ms - base:>+14.0f}")
        if split:
            breakdown(log, repeats)


BREAKDOWN = r"""
import contextlib, io, json, sys, time
import asyncio, click, attrs, cattrs, transitions, orjson, fastjsonschema
import attr._make
import cattrs.gen

spent = {"attrs": 0.0, "cattrs": 0.0, "fastjsonschema": 0.0}
classes = 0
depth = {"cattrs": 0}

def timed(key, fn, nested=False):
    def wrapper(*args, **kwargs):
        global classes
        if nested and depth[key]:
            return fn(*args, **kwargs)
        start = time.perf_counter()
        if nested:
            depth[key] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            if nested:
                depth[key] -= 1
            spent[key] += time.perf_counter() - start
            classes += key == "attrs"
    return wrapper

builder = getattr(getattr(attr._make, "_ClassBuilder", None), "build_class", None)
if builder is None:
    sys.exit("attrs no longer has _ClassBuilder.build_class: the breakdown needs updating")
attr._make._ClassBuilder.build_class = timed("attrs", builder)
for name in ("make_dict_structure_fn_from_attrs", "make_dict_unstructure_fn_from_attrs"):
    setattr(cattrs.gen, name, timed("cattrs", getattr(cattrs.gen, name), nested=True))
fastjsonschema.compile = timed("fastjsonschema", fastjsonschema.compile)

start = time.perf_counter()
before = set(sys.modules)
from fsm_agent.cli.main import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(["replay", sys.argv[1], "--check"], standalone_mode=False)
    except SystemExit:
        pass
total = time.perf_counter() - start
modules = len([m for m in set(sys.modules) - before if m.startswith("fsm_agent")])
print(json.dumps({"total": total, "classes": classes, "modules": modules, **spent}))
"""


def breakdown(log: Path, repeats: int) -> None:
    """Medians over `repeats` fresh interpreters of what fsm-agent adds to `replay --check`."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", BREAKDOWN, str(log)], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(out.stdout))
    ms = {k: 1000 * statistics.median(r[k] for r in runs) for k in runs[0]}
    rows = {
        "all of it": ms["total"],
        f"building {runs[0]['classes']} attrs classes": ms["attrs"],
        "cattrs generating its functions": ms["cattrs"],
        "fastjsonschema compiling tool schemas": ms["fastjsonschema"],
        f"the rest: {runs[0]['modules']} modules' bytecode, the replay itself": ms["total"]
        - ms["attrs"]
        - ms["cattrs"]
        - ms["fastjsonschema"],
    }
    print(f"\nfsm-agent's part of replay --check, after the third-party imports ({repeats} runs):")
    for name, value in rows.items():
        print(f"  {name:<58} {value:>6.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repeats", nargs="?", type=int, default=5)
    parser.add_argument("--breakdown", action="store_true", help="split fsm-agent's part")
    args = parser.parse_args()
    main(max(1, args.repeats), args.breakdown)
