"""What the loop asks a model, and what a model must offer."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from attrs import field, frozen

from fsm_agent.core.events import StreamEvent
from fsm_agent.core.jsontext import canonical
from fsm_agent.core.transcript import Transcript


@frozen
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any] = field(hash=False)


@frozen
class ModelRequest:
    """One Messages API request, before it is turned into JSON.

    `messages` already has the user context prepended; `system` already has
    the system context appended. `fallback_model` is the model the loop switches to
    if this one is overloaded (None: no switch), which ends a model's retries sooner;
    it is not part of what is sent, nor of the digest.
    """

    model: str
    system: tuple[str, ...]
    messages: Transcript
    tools: tuple[ToolSpec, ...]
    max_tokens: int
    purpose: str = "query"
    fallback_model: str | None = None

    def digest(self) -> str:
        head = _head(self.model, self.system, tuple(t.name for t in self.tools),
                     self.max_tokens, self.purpose)  # fmt: skip
        return hashlib.sha256(head + self.messages.digest.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=64)
def _head(model: str, system: tuple[str, ...], tools: tuple[str, ...], max_tokens: int,
          purpose: str) -> bytes:  # fmt: skip
    """Everything in a request but its messages: the same for most requests of a run."""
    return canonical(
        {
            "model": model,
            "system": list(system),
            "tools": list(tools),
            "max_tokens": max_tokens,
            "purpose": purpose,
        }
    )


class Model(Protocol):
    """A streaming model. Errors are raised as `fsm_agent.core.events.ModelCallError`."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def count_tokens(self, request: ModelRequest) -> int | None: ...
