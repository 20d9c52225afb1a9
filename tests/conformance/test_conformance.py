"""fsm-agent against the real Claude Code CLI on identical model turns, case by case.

Each case runs both (tests/support/conformance.py) and fails when they part on an
aspect that must agree (the terminal outcome, the request sequence, the workspace's
end state, each tool result's error status). A case another issue owns is an xfail
that fails the run once it agrees, so its mark is taken off when the owner lands.
Without the binary every case skips with the one install line. The real CLI's run of a
case is shared with the import of the transcript it wrote (test_claude_transcripts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.conformance import MUST_AGREE, Case, Observed, compare, explain, observe
from tests.support.conformance_cases import CASES
from tests.support.real_claude import require_claude


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
    return pytest.param(case, id=case.name, marks=marks)


def test_the_corpus_is_sixty_cases_with_distinct_names_and_reasons() -> None:
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)
    assert all(c.why.strip() for c in CASES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_fsm_agent_agrees_with_claude_code(
    case: Case, tmp_path: Path, claude_side: Callable[[Case], Observed]
) -> None:
    require_claude()
    verdicts = compare(case, observe("fsm", case, tmp_path / "fsm"), claude_side(case))
    parted = [v for v in verdicts if v.aspect in MUST_AGREE and not v.agree]
    assert not parted, explain(parted)


OUTPUT_AGREES = ("two_tools_one_turn", "thinking_text_tool_one_turn", "invalid_tool_json")
"""Cases whose `-p` stream-json output (line types, result fields) agrees too, kept
agreeing here: one `assistant` line per content block, the invalid-JSON result's text."""


@pytest.mark.parametrize("name", OUTPUT_AGREES)
def test_the_stream_json_lines_agree_too(
    name: str, tmp_path: Path, claude_side: Callable[[Case], Observed]
) -> None:
    require_claude()
    case = next(c for c in CASES if c.name == name)
    verdicts = compare(case, observe("fsm", case, tmp_path / "fsm"), claude_side(case))
    parted = [v for v in verdicts if v.aspect in ("output", "tool_text") and not v.agree]
    assert not parted, explain(parted)
