"""One model request with some history and two tools, as the adapter tests send it."""

from __future__ import annotations

from fsm_agent.core.limits import CAPPED_DEFAULT_MAX_TOKENS
from fsm_agent.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user
from fsm_agent.core.model import ModelRequest, ToolSpec
from fsm_agent.core.transcript import Transcript

BASH = ToolSpec(
    "Bash",
    "Run a shell command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
READ = ToolSpec(
    "Read",
    "Read a file.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}},
)
HISTORY = (
    user("List the files."),
    Message(
        "assistant",
        (TextBlock("Listing."), ToolUseBlock("toolu_01", "Bash", {"command": "ls"})),
    ),
    Message("user", (ToolResultBlock("toolu_01", "a.py\nb.py"),)),
)
REQUEST = ModelRequest(
    model="claude-test-1",
    system=("You are a coding agent.", "cwd: /work"),
    messages=Transcript.of(HISTORY),
    tools=(BASH, READ),
    max_tokens=CAPPED_DEFAULT_MAX_TOKENS,
)
