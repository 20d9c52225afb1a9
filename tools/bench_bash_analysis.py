"""What judging a Bash command costs: tree-sitter-bash analysis against the old lexer.

Over a corpus of commands of the kinds and sizes models write (git with a here-document
commit message, test runs, find/grep pipelines, package managers, a long `sed` script),
times, per command, the uncached `analyse` (parse and walk) and the whole pure check
(`call_facts` + `evaluate` with a made-up resolver), and the hand-written lexer this
analysis replaced (its `split_command`, `words`, `strip_wrappers`, `has_write_syntax`,
`has_expansion` per part), loaded from git history side by side in this one run.
Prints the median and 90th percentile in µs; the target is a median under 2 ms.

    python tools/bench_bash_analysis.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from fsm_agent.core.permission_types import PermissionSettings, RuleSource
from fsm_agent.policy.bash_analysis import analyse
from fsm_agent.policy.permissions import Workspace, call_facts, evaluate

OLD_LEXER = "783cff8:fsm_agent/policy/bash_lexer.py"
"""The lexer as it was on the commit before this analysis replaced it."""

COMMIT = """git commit -m "$(cat <<'EOF'
Fix the race in the session log writer

The writer flushed before the header was complete, so a reader that
opened the log at that moment saw a truncated first line.

Co-Authored-By: Claude <noreply@anthropic.com>
EOF
)\""""

CORPUS = [
    "ls -la",
    "git status",
    "git diff HEAD~1 -- src/app.py",
    "git log --oneline -n 20",
    "git add -A && git commit -m 'wip: parser'",
    COMMIT,
    "python -m pytest tests/unit -q -x 2>&1 | tail -30",
    "npm test -- --watch=false",
    "npm run build && npm run lint",
    "cargo build --release 2>&1 | head -50",
    "find . -name '*.py' -not -path './node_modules/*' | head -100",
    "grep -rn 'def analyse' --include='*.py' src tests | head -20",
    "cd frontend && npm install && npm run test -- --coverage",
    "cat package.json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"version\"])'",
    "rg -n 'TODO|FIXME' src/ | wc -l",
    "mkdir -p build/out && cp -r assets build/out/",
    "docker build -t app:dev . && docker run --rm app:dev pytest",
    "pip install -e '.[test]' && pytest -q",
    "sed -n '120,180p' src/fsm_agent/engine/machine.py",
    "head -n 40 README.md; tail -n 20 CHANGELOG.md",
    "timeout 60 python scripts/migrate.py --dry-run --verbose",
    'echo "building $(date +%Y-%m-%d)" && make -j4 all',
    'for f in src/*.ts; do npx prettier --check "$f"; done',
    "diff -u old/config.yaml new/config.yaml || true",
    "wc -l src/**/*.py | sort -n | tail -5",
    "git stash && git pull --rebase origin main && git stash pop",
    "awk -F, '{sum += $3} END {print sum}' data/sales.csv",
    "sed -i 's/old_name/new_name/g' src/a.py src/b.py src/c.py",
    "tar -czf release.tar.gz dist/ && ls -lh release.tar.gz",
    "curl -s http://localhost:8080/health | jq .status",
    "python3 - <<'PY'\nimport sys\nprint(sys.version)\nPY",
    "ls src/ tests/ docs/ 2>/dev/null | head -50",
    "go test ./... -run TestParser -count=1",
    "kubectl get pods -n staging -o wide | grep -v Running",
    " && ".join(f"test -f src/module_{i}.py" for i in range(25)),
    "sed -e " + " -e ".join(f"'s/name_{i}/label_{i}/g'" for i in range(40)) + " data.txt",
]

SETTINGS = PermissionSettings(
    allow=tuple(RuleSource(r, "/ws", "bench") for r in ("Bash(npm test:*)", "Bash(git log:*)")),
    deny=(RuleSource("Read(./secrets/**)", "/ws", "bench"),),
)
WS = Workspace("/ws", "/home/u")


def old_lexer() -> types.ModuleType:
    """The old module, from git (this script's repository), as a module object."""
    root = Path(__file__).resolve().parents[1]
    text = subprocess.run(
        ["git", "show", OLD_LEXER], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("old_bash_lexer")
    exec(compile(text, OLD_LEXER, "exec"), module.__dict__)
    return module


def timed(fn: Callable[[str], object], command: str, rounds: int) -> float:
    """The median µs of `fn(command)` over `rounds` calls."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn(command)
        times.append((time.perf_counter_ns() - start) / 1000)
    return statistics.median(times)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    old = old_lexer()
    uncached = analyse.__wrapped__

    def lexed(command: str) -> None:
        for part in old.split_command(command):
            old.words(old.strip_wrappers(part))
            old.has_write_syntax(part)
            old.has_expansion(part)

    def judged(command: str) -> None:
        analyse.cache_clear()
        facts = call_facts("Bash", {"command": command}, WS, lambda p: p)
        evaluate(facts, SETTINGS, "default", WS)

    rows = [
        (c, timed(uncached, c, rounds), timed(judged, c, rounds), timed(lexed, c, rounds))
        for c in CORPUS
    ]
    print(f"{len(CORPUS)} commands, {rounds} rounds each, µs per command (median of rounds)")
    print(f"{'chars':>6} {'analyse':>9} {'check':>9} {'old lexer':>10}  command")
    for command, a, j, o in rows:
        shown = command.replace("\n", " ")[:60]
        print(f"{len(command):>6} {a:>9.1f} {j:>9.1f} {o:>10.1f}  {shown}")
    for name, column in (("analyse", 1), ("check", 2), ("old lexer", 3)):
        values = sorted(r[column] for r in rows)
        p90 = values[int(len(values) * 0.9)]
        print(f"{name:>10}: median {statistics.median(values):8.1f} µs, p90 {p90:8.1f} µs")
    ratio = statistics.median(r[1] / r[3] for r in rows)
    print(f"analyse / old lexer, median of per-command ratios: {ratio:.2f}")
    median_check = statistics.median(r[2] for r in rows)
    print(f"target: median check under 2000 µs: {'met' if median_check < 2000 else 'MISSED'}")


if __name__ == "__main__":
    main()
