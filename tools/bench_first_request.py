"""Time to the first request: `fsm-agent run` next to the real `claude -p`.

Both start as a user starts them, in a fresh process, against the project's local
Messages server (tests/support/messages_server.py, real HTTP on loopback), on the
same one-word prompt answered with one word. For each run the benchmark takes the
time from the process's start to the first `POST /v1/messages` reaching the
server, and to the process's end. Runs are interleaved (fsm-agent, claude,
fsm-agent, …) so that a busy machine slows both alike; the figures are medians,
and the ratio is fsm-agent's median over the CLI's, measured in this one run.

The real CLI is the one `claude-agent-sdk` bundles (the conformance extra), run
offline in a fresh trusted HOME as tests/support/real_claude.py runs it; without
it only fsm-agent's figures are printed. Target: fsm-agent's first request at
most 1.25x the CLI's.

    python tools/bench_first_request.py [runs] [--scripted] [--baseline CHECKOUT]

`--baseline` also times the fsm-agent of another checkout (an earlier commit's
tree, `git worktree add` or `git archive` of it), interleaved in the same run, so
that a change's before and after are measured side by side.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.messages_server import MESSAGES, MessagesServer, Recorded, text  # noqa: E402
from tests.support.real_claude import claude_binary, claude_env, trusted_home  # noqa: E402

MODEL = "claude-sonnet-4-6"
PROMPT = "hi"
REPLIES = 8
"""Replies queued per run: the CLI may ask more than once (a title, a quota probe)."""


@dataclass
class TimedServer(MessagesServer):
    """The test server, noting when each request to the Messages path arrives."""

    arrivals: list[float] = field(default_factory=list)
    _arrived: threading.Lock = field(default_factory=threading.Lock)

    def record(self, request: Recorded) -> None:
        if request.path.split("?", 1)[0] == MESSAGES:
            with self._arrived:
                self.arrivals.append(time.perf_counter())
        super().record(request)

    def first_arrival(self) -> float | None:
        with self._arrived:
            return self.arrivals[0] if self.arrivals else None


@dataclass(frozen=True)
class Sample:
    first_request: float | None
    whole: float
    returncode: int


def timed(server: TimedServer, argv: list[str], env: dict[str, str], cwd: Path) -> Sample:
    """One run of `argv`: seconds to the first request the server saw, and to its end."""
    with server._arrived:
        server.arrivals.clear()
    server.reply(*(text("Hello.", model=MODEL) for _ in range(REPLIES)))
    start = time.perf_counter()
    proc = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    end = time.perf_counter()
    with server._lock:
        server._queues.clear()
    first = server.first_arrival()
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace")[-2000:])
    return Sample(None if first is None else first - start, end - start, proc.returncode)


def fsm_case(
    server: TimedServer, work: Path, scripted: bool, root: Path = ROOT
) -> tuple[list[str], dict[str, str]]:
    """fsm-agent's run; its compiled SDK rewrites (live/rewrite_cache) are kept beside the
    workspaces, so the dropped first round fills them as a user's first run does."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key", "PYTHONPATH": str(root)}
    env["FSM_AGENT_CACHE_DIR"] = str(work.parent / "cache")
    env.pop("ANTHROPIC_BASE_URL", None)
    argv = [sys.executable, "-m", "fsm_agent.cli", "run", PROMPT, "--cwd", str(work)]
    if scripted:
        scenario = ROOT / "replays" / "scenarios" / "tool_round.json"
        return [sys.executable, "-m", "fsm_agent.cli", "run", "--scripted", str(scenario),
                "--cwd", str(work)], env  # fmt: skip
    return [*argv, "--base-url", server.url, "--model", MODEL], env


def claude_case(server: TimedServer, work: Path, home: Path) -> tuple[list[str], dict[str, str]]:
    binary = claude_binary()
    assert binary is not None
    argv = [str(binary), "-p", PROMPT, "--model", MODEL, "--output-format", "text"]
    return argv, claude_env(server, home)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def line(name: str, samples: list[Sample]) -> tuple[float, float]:
    firsts = [s.first_request for s in samples if s.first_request is not None]
    wholes = [s.whole for s in samples]
    first, whole = median(firsts), median(wholes)
    shown = " / ".join(f"{v:.2f}" for v in firsts) or "—"
    print(f"{name:<24} first request {first:6.3f} s  ({shown})")
    print(f"{'':<24} whole run     {whole:6.3f} s  ({' / '.join(f'{v:.2f}' for v in wholes)})")
    failed = [s.returncode for s in samples if s.returncode != 0]
    if failed:
        print(f"{'':<24} FAILED runs: exit codes {failed}")
    return first, whole


def main(runs: int, scripted: bool, baseline: Path | None = None) -> int:
    compileall.compile_dir(ROOT / "fsm_agent", quiet=1)
    if baseline is not None:
        compileall.compile_dir(baseline / "fsm_agent", quiet=1)
    before: list[Sample] = []
    binary = claude_binary()
    if binary is None:
        print("the real Claude Code CLI is not installed (pip install -e '.[conformance]'):")
        print("fsm-agent alone")
    fsm: list[Sample] = []
    claude: list[Sample] = []
    with TimedServer() as server, tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for n in range(runs + 1):  # the first round warms the disk cache, and is dropped
            work = base / f"w{n}"
            work.mkdir()
            argv, env = fsm_case(server, work, scripted)
            sample = timed(server, argv, env, work)
            if n:
                fsm.append(sample)
            if baseline is not None:
                argv, env = fsm_case(server, work, scripted, baseline)
                sample = timed(server, argv, env, work)
                if n:
                    before.append(sample)
            if binary is not None:
                home = trusted_home(base / f"home{n}", work)
                argv, env = claude_case(server, work, home)
                sample = timed(server, argv, env, work)
                if n:
                    claude.append(sample)
    print(f"{runs} runs each, interleaved, prompt {PROMPT!r}, one reply")
    name = "fsm-agent run --scripted" if scripted else "fsm-agent run"
    fsm_first, fsm_whole = line(name, fsm)
    if baseline is not None:
        base_first, base_whole = line(f"{name} (baseline)", before)
        print(f"{'':<24} baseline {baseline}")
    if binary is None:
        return 0
    cli_first, cli_whole = line("claude -p", claude)
    if not scripted:
        print(f"ratio fsm-agent / claude: first request {fsm_first / cli_first:.2f}x "
              f"(target <= 1.25x), whole run {fsm_whole / cli_whole:.2f}x")  # fmt: skip
        if baseline is not None:
            print(f"ratio baseline / claude:  first request {base_first / cli_first:.2f}x, "
                  f"whole run {base_whole / cli_whole:.2f}x")  # fmt: skip
    else:
        print(f"ratio fsm-agent / claude: whole run {fsm_whole / cli_whole:.2f}x")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=5)
    parser.add_argument("--scripted", action="store_true", help="time run --scripted instead")
    parser.add_argument("--baseline", type=Path, help="another checkout's fsm-agent, timed too")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "fsm_agent").is_dir():
        parser.error(f"--baseline {args.baseline}: no fsm_agent package there")
    raise SystemExit(main(args.runs, args.scripted, args.baseline))
