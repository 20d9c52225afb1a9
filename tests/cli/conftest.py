"""Fixtures of the CLI's tests."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt for the test, as in a fresh interpreter: a CLI
    command run in-process earlier in the same worker leaves it caught and dropped
    (`usage.ignore_signal`, set as the command ends)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
