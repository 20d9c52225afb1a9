"""`Transcript`: an immutable message list that grows and hashes without re-walking."""

from __future__ import annotations

import pytest

from fsm_agent.core.messages import user
from fsm_agent.core.transcript import Transcript


def test_versions_share_one_store_and_never_see_each_others_changes() -> None:
    base = Transcript.of([user("a")])
    longer = base.extend([user("b")])
    other = base.extend([user("c")])
    assert [m.text for m in base] == ["a"]
    assert [m.text for m in longer] == ["a", "b"]
    assert [m.text for m in other] == ["a", "c"]
    assert longer.digest == Transcript.of([user("a"), user("b")]).digest
    assert longer.store is base.store


def test_a_prefixed_view_reads_as_the_prefix_then_the_messages() -> None:
    history = Transcript.of([user("a"), user("b")])
    view = history.with_prefix([user("context")])
    assert len(view) == 3
    assert [m.text for m in view] == ["context", "a", "b"]
    assert [m.text for m in reversed(view)] == ["b", "a", "context"]
    assert view[0].text == "context"
    assert view[-1].text == "b"
    assert view[1:].__class__ is tuple and [m.text for m in view[1:]] == ["a", "b"]
    with pytest.raises(IndexError):
        view[3]
    assert view.digest != history.digest
    assert (
        view.digest == Transcript.of([user("a"), user("b")]).with_prefix([user("context")]).digest
    )


def test_a_prefixed_view_does_not_copy_the_history() -> None:
    history = Transcript.of([user(str(i)) for i in range(1000)])
    view = history.with_prefix([user("context")])
    assert view.store is history.store


def test_a_prefixed_view_is_not_extended() -> None:
    view = Transcript.of([user("a")]).with_prefix([user("context")])
    with pytest.raises(TypeError, match="request's view"):
        view.extend([user("b")])
    assert [m.text for m in view.replace_from(1, [user("z")])] == ["context", "z"]


def test_since_and_slices_read_only_this_version_and_copy_only_the_slice() -> None:
    base = Transcript.of([user(str(i)) for i in range(5)])
    longer = base.extend([user("5"), user("6")])
    assert longer.store is base.store  # the store holds 7; `base` reads 5 of them
    assert [m.text for m in base.since(3)] == ["3", "4"]
    assert [m.text for m in longer.since(5)] == ["5", "6"]
    assert base.since(5) == () and base.since(9) == ()
    assert [m.text for m in base[1:3]] == ["1", "2"]
    assert [m.text for m in base[-2:]] == ["3", "4"]
    assert [m.text for m in base[::-2]] == ["4", "2", "0"]
    assert base[3:1] == ()
    fresh = base.extend([user("x")])
    fresh.since(4)
    assert fresh._items is None  # the whole list was not made for a step's new messages
    assert base[2:] == base.items[2:] and fresh[-3:] == fresh.items[-3:]
