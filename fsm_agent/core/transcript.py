"""The conversation as an immutable message list whose digest is chained as it grows.

A core shape: the model request, the context levels and the loop's state all carry one,
and a replay compares requests and states by its digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from attrs import field, frozen

from fsm_agent.core.codec import unstructure_hook
from fsm_agent.core.jsontext import canonical
from fsm_agent.core.messages import Message

_EMPTY_DIGEST = hashlib.sha256(b"transcript").hexdigest()
_unstructure_message = unstructure_hook(Message)


_RECENT = 64
"""How many messages `message_data` keeps: those of the last step or two."""
_recent: dict[int, tuple[Message, bytes, Any]] = {}


def message_data(message: Message) -> tuple[bytes, Any]:
    """The message's canonical JSON, which its digest hashes, and the plain data it was
    made from (not to be changed). The last few are kept (with the message, so its id
    stays its own): the recorder writes a new message in its transition's state delta
    just after the transcript hashed it, and need not make it again."""
    kept = _recent.get(id(message))
    if kept is not None and kept[0] is message:
        return kept[1], kept[2]
    plain = _unstructure_message(message)
    data = canonical(plain)
    if len(_recent) >= _RECENT:
        del _recent[next(iter(_recent))]
    _recent[id(message)] = (message, data, plain)
    return data, plain


def message_digest(message: Message) -> str:
    return hashlib.sha256(message_data(message)[0]).hexdigest()


@frozen(eq=False, repr=False)
class Transcript(Sequence[Message]):
    """An immutable message list whose digest is chained as it grows; in JSON, the list
    of its messages (the codec's hooks for a frozen list class).

    Appending costs only the new messages, so hashing the state at every
    step does not walk the history. Nor does appending copy it: versions
    share one append-only list (and the list of chained digests) and each
    reads only its first `length` entries; extending a version that is not
    the newest copies its prefix first, so no version ever sees a change.
    """

    store: list[Message] = field(factory=list)
    length: int = 0
    digest: str = _EMPTY_DIGEST
    chain: list[str] | None = field(factory=list)
    """The digest after each message, shared like `store`; None once a prefix broke the chain."""
    prefix: tuple[Message, ...] = ()
    """Messages before the stored ones: a request's view (`with_prefix`), never extended."""
    _items: tuple[Message, ...] | None = field(default=None, init=False)

    @classmethod
    def of(cls, messages: Iterable[Message]) -> Transcript:
        return cls().extend(messages)

    @property
    def items(self) -> tuple[Message, ...]:
        items = self._items
        if items is None:
            items = self.prefix + tuple(self.store[: self.length])
            object.__setattr__(self, "_items", items)
        return items

    def since(self, index: int) -> tuple[Message, ...]:
        """The messages from `index` on (`self[index:]`), made of those alone: a step's
        new messages are taken without copying the history before them."""
        if self.prefix or index < 0:
            return self[index:]
        return tuple(self.store[index : self.length])

    def extend(self, messages: Iterable[Message]) -> Transcript:
        new = tuple(messages)
        if not new:
            return self
        if self.prefix:
            raise TypeError("a transcript with a prefix is a request's view; extend the original")
        digest = self.digest
        links: list[str] = []
        for message in new:
            digest = hashlib.sha256((digest + message_digest(message)).encode()).hexdigest()
            links.append(digest)
        store, chain, n = self.store, self.chain, self.length
        if len(store) == n and (chain is None or len(chain) == n):
            store.extend(new)
            if chain is not None:
                chain.extend(links)
        else:
            store = [*store[:n], *new]
            chain = None if chain is None else [*chain[:n], *links]
        return Transcript(store, n + len(new), digest, chain)

    def replace_from(self, index: int, messages: Iterable[Message]) -> Transcript:
        """The first `index` messages, then `messages`: rehashes only what changed.

        The digest equals that of building the whole list with `of`, so a
        level that rewrites the tail of a long history stays cheap.
        """
        if index == 0:
            return Transcript.of(messages)
        if self.chain is None or self.prefix:
            return Transcript.of((*self.items[:index], *messages))
        head = Transcript(self.store, index, self.chain[index - 1], self.chain)
        return head.extend(messages)

    def with_prefix(self, messages: Iterable[Message]) -> Transcript:
        """Messages put before this transcript, hashed without re-walking it.

        The digest records how the list was built (prefix, then this
        transcript), which is all a replay needs to compare requests. The
        view shares this transcript's store, so building it costs only the prefix.
        """
        prefix = messages if isinstance(messages, Transcript) else Transcript.of(messages)
        if not prefix.length:
            return self
        digest = hashlib.sha256(f"{prefix.digest}+{self.digest}".encode()).hexdigest()
        return Transcript(self.store, self.length, digest, None, (*prefix.items, *self.prefix))

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, int):
            size = len(self.prefix) + self.length
            if index < 0:
                index += size
            if not 0 <= index < size:
                raise IndexError("Transcript index out of range")
            if index < len(self.prefix):
                return self.prefix[index]
            return self.store[index - len(self.prefix)]
        if self._items is None and not self.prefix:
            start, stop, step = index.indices(self.length)
            if step == 1:  # only the slice is copied, not the history before it
                return tuple(self.store[start:stop]) if start < stop else ()
        return self.items[index]

    def __len__(self) -> int:
        return len(self.prefix) + self.length

    def __iter__(self) -> Iterator[Message]:
        return iter(self.items)

    def __reversed__(self) -> Iterator[Message]:
        store = self.store
        yield from (store[i] for i in range(self.length - 1, -1, -1))
        yield from reversed(self.prefix)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Transcript:
            return NotImplemented
        assert isinstance(other, Transcript)
        return self is other or (self.digest == other.digest and self.items == other.items)

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"Transcript(items={self.items!r}, digest={self.digest!r})"
