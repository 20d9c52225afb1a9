"""Every transcript the real Claude Code CLI writes in the conformance suite imports and
passes `replay --check` (issue 28's done-when).

The CLI's run of a case is the one its differential test made (`claude_side`, shared
across the session's workers), so no case runs the CLI twice. `fsm-agent replay
--check TRANSCRIPT` imports the transcript on the way (re-enacting each run through
the engine with the effects the transcript recorded) and checks the logs it wrote;
the import must take the path Claude Code took, so a `differs:` line fails the test
as a failed check does. The cases go in the corpus's reverse order: two workers that
start one file each then run the CLI for different cases, and meet in the middle,
rather than one waiting on the other's run of the same case.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.cli import fsm
from tests.support.conformance import Case, Observed
from tests.support.conformance_cases import CASES
from tests.support.real_claude import require_claude

OPEN: dict[str, str] = {}
"""Cases whose transcript does not yet import to Claude Code's path, with the reason."""


def _param(case: Case) -> object:
    reason = OPEN.get(case.name)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=case.name, marks=marks)


def test_every_open_case_is_a_case() -> None:
    assert set(OPEN) <= {c.name for c in CASES}


@pytest.mark.parametrize("case", [_param(c) for c in reversed(CASES)])
def test_the_real_cli_s_transcript_imports_and_replays(
    case: Case, claude_side: Callable[[Case], Observed]
) -> None:
    require_claude()
    claude = claude_side(case)
    assert claude.transcript is not None, "the real CLI wrote no transcript (or several)"
    check = fsm("replay", "--check", claude.transcript)
    assert "Traceback" not in check.stderr, check.stderr
    assert "differs:" not in check.stderr, check.stderr
    assert check.returncode == 0, check.stdout + check.stderr
