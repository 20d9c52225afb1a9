"""The real CLI's run of each case, made once per test session and shared by its tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.conformance import Case, Observed, shared_observe


@pytest.fixture(scope="session")
def claude_side(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Callable[[Case], Observed]:
    """`claude_side(case)`: what the real CLI did on `case`, run by whichever test of the
    session asks first (the differential test, or the import of its transcript) and read
    by the other. The cache sits where every xdist worker of this session sees it, and
    only this session: the workers' shared parent, or the base itself without xdist."""
    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if worker_id != "master" else base) / "claude-runs"

    def side(case: Case) -> Observed:
        return shared_observe("claude", case, cache)

    return side
