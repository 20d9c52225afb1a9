"""What the loop asks a model, and what a model must offer."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from attrs import field, frozen

from fsm_agent.events import StreamEvent
from fsm_agent.jsontext import canonical
from fsm_agent.state import Transcript

CAPPED_DEFAULT_MAX_TOKENS = 8_000
ESCALATED_MAX_TOKENS = 64_000


@frozen
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any] = field(hash=False)


@frozen
class ModelRequest:
    """One Messages API request, before it is turned into JSON.

    `messages` already has the user context prepended; `system` already has
    the system context appended.
    """

    model: str
    system: tuple[str, ...]
    messages: Transcript
    tools: tuple[ToolSpec, ...]
    max_tokens: int
    purpose: str = "query"

    def digest(self) -> str:
        head = canonical(
            {
                "model": self.model,
                "system": list(self.system),
                "tools": [t.name for t in self.tools],
                "max_tokens": self.max_tokens,
                "purpose": self.purpose,
            }
        )
        return hashlib.sha256(head + self.messages.digest.encode()).hexdigest()[:16]


class Model(Protocol):
    """A streaming model. Errors are raised as `fsm_agent.events.ModelCallError`."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def count_tokens(self, request: ModelRequest) -> int | None: ...
