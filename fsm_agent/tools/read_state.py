"""The read-before-write rule, as Claude Code 2.1.332 has it (measured by the
conformance suite): when Edit and Write may change a file, from what the model read.

A Read of a whole file remembers a digest of its text (`ToolOutcome.seen`), so a file
whose mtime changed but whose text did not (a bare `touch`) counts as unchanged. A
file the model never read may be changed when the model could Read it without being
asked (`ToolEnv.readable`: inside the workspace or an added directory, no Read rule
asking or denying; any path in bypassPermissions) and the run's model is not one
Claude Code makes read first (`READ_FIRST_MODELS`). An Edit of a file changed on
disk since the read still applies when its `old_string` does, with a note saying so;
a Write after such a change is refused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from attrs import frozen

from fsm_agent.core.tool import ToolEnv, ToolInputError
from fsm_agent.tools.files import BOM, mtime, read_text

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)
STALE_NOTE = (
    " (note: the file had been modified on disk since you last read it \u2014 the edit "
    "applied cleanly, but the file contains other changes not in your context. Read it "
    "before edits that depend on surrounding content.)"
)
"""Claude Code's words after an Edit that applied over a change made since the read."""

READ_FIRST_MODELS = frozenset(
    {
        "claude-opus-4-6",
        "claude-haiku-4-5",
        "claude-opus-4-5",
        "claude-opus-4-1",
        "claude-opus-4-0",
        "claude-sonnet-4-5",
        "claude-sonnet-4-0",
        "claude-3-7-sonnet",
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
    }
)
"""The models Claude Code 2.1.332 never lets change a file they have not read, by
canonical name (its read-first set)."""

_FAMILIES = (
    ("claude-fable-5-2", None), ("claude-fable-5-1", None), ("claude-fable-5", None),
    ("claude-mythos-5-2", None), ("claude-mythos-5-1", None), ("claude-mythos-5", None),
    ("claude-opus-5-5", None), ("claude-opus-5", None), ("claude-opus-4-8", None),
    ("claude-opus-4-7", None), ("claude-opus-4-6", None), ("claude-opus-4-5", None),
    ("claude-opus-4-1", None), ("claude-opus-4-0", re.compile(r"claude-opus-4(?!-\d(?!\d))")),
    ("claude-sonnet-5-5", None), ("claude-sonnet-5", None), ("claude-sonnet-4-6", None),
    ("claude-sonnet-4-5", None),
    ("claude-sonnet-4-0", re.compile(r"claude-sonnet-4(?!-\d(?!\d))")),
    ("claude-haiku-5-5", None), ("claude-haiku-4-5", None), ("claude-3-7-sonnet", None),
    ("claude-3-5-sonnet", None), ("claude-3-5-haiku", None), ("claude-3-opus", None),
    ("claude-3-sonnet", None), ("claude-3-haiku", None),
)  # fmt: skip
"""Claude Code's canonical names, in the order it tries them: the first a model id
holds wins (`claude-opus-4-20250514` is `claude-opus-4-0`)."""


def canonical_model(model: str) -> str:
    """A model id as Claude Code names its family (its `getCanonicalName`): a dated id
    (`claude-sonnet-4-5-20250929`), a Bedrock or Vertex one
    (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`) and `[1m]` all reduce to
    `claude-sonnet-4-5`; an id of no known family loses only a date suffix."""
    name = re.sub(r"\[\d+m\]$", "", model.strip().lower())
    for family, pattern in _FAMILIES:
        if (pattern.search(name) is not None) if pattern else family in name:
            return family
    return re.sub(r"-\d{8}$", "", name)


def reads_first(model: str) -> bool:
    """Whether Claude Code makes `model` read a file before it changes it."""
    return canonical_model(model) in READ_FIRST_MODELS


def digest(text: str) -> str:
    """The digest of a file's text as Claude Code compares it: without a byte order
    mark, CRLF read as LF."""
    normal = text.removeprefix(BOM).replace("\r\n", "\n")
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def may_change_unread(path: str, env: ToolEnv, tool: str) -> bool:
    """Whether `tool` may change `path`, which the model has not read: the model could
    Read it unasked, and is not one that must read first (a notebook's Write must)."""
    if tool == "Write" and path.rstrip(". ").lower().endswith(".ipynb"):
        return False
    readable = env.readable
    return readable is not None and not reads_first(env.model) and readable(path)


def unchanged(path: str, env: ToolEnv, text: Callable[[], str]) -> bool:
    """Whether `path` is as the model last saw it: the same mtime, or, after a whole
    read, the same `text` (read only then)."""
    if mtime(path) == env.read_files.get(path):
        return True
    seen = env.seen.get(path)
    return bool(seen) and seen == digest(text())


def check_write(path: str, env: ToolEnv) -> None:
    """Refuse a Write over existing `path` unless the model read it as it is now, or
    may change it unread."""
    if path not in env.read_files:
        if may_change_unread(path, env, "Write"):
            return
        raise ToolInputError(NOT_READ)
    if not unchanged(path, env, lambda: read_text(path)):
        raise ToolInputError(MODIFIED)


@frozen
class EditBasis:
    """What an Edit that may go ahead is made from: a file `stale` since the read (the
    result says so), or one whose whole text is not in the model's context."""

    stale: bool = False
    not_in_context: bool = False


def check_edit(path: str, env: ToolEnv, text: str, applies: bool) -> EditBasis:
    """Refuse an Edit of existing `path` (holding `text`) the model may not make:
    unread and not allowed so, or changed since the read when its `old_string` no
    longer `applies` (found once, or with `replace_all`)."""
    if path not in env.read_files:
        if may_change_unread(path, env, "Edit"):
            return EditBasis(not_in_context=True)
        raise ToolInputError(NOT_READ)
    if unchanged(path, env, lambda: text):
        return EditBasis(not_in_context=env.seen.get(path) != digest(text))
    readable = env.readable
    if applies and readable is not None and readable(path):
        return EditBasis(stale=True, not_in_context=True)
    raise ToolInputError(MODIFIED)
