"""The built-in tools' output shapes, and what the model reads of an output.

A PostToolUse hook may replace a call's output (`updatedToolOutput`); Claude
Code takes the replacement only if it fits the tool's output schema, then
renders it for the model as the tool renders its own. The shapes are the
`tool_response` objects the tools build (docs/permissions-and-hooks.md); a
tool without one (a tool of the caller's) gives hooks its result's text, so
its output shape is a string, read as it is.

A replacement is rendered by the tool's own function for its text (`bash.shown`,
`read.shown_lines`, `write.written`, `glob.listing`, `grep.found`), fed from the
shape. What the shape does not hold, a replacement cannot carry: the paging notes
(Grep's "Showing entries", Read's "the file continues", judged here from
`totalLines`, so a read that filled its limit at the file's end reads as if it
continued), a truncated Glob's total, how many files a paged Grep found (its
"Found N files" counts the paths shown), the notes Grep adds past its
30,000-character cap or for files too big to search, and whether an Edit created
its file (taken to be so when `oldString` and `originalFile` are both empty, as
they are for an Edit of an empty file too).

Pure functions of the replacement: a replay renders the recorded one alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fastjsonschema

from fsm_agent.core.messages import ToolResultContent
from fsm_agent.core.validation import validator
from fsm_agent.tools import bash, glob, grep, read, write

_STRING = {"type": "string"}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}
_STRINGS = {"type": "array", "items": _STRING}
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""The images the Messages API takes: a replacement's image is sent to it as it is."""


def _shape(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object with `required` properties; others may come along (Claude Code's schemas
    drop unknown keys rather than refuse them)."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "Bash": _shape(
        {"stdout": _STRING, "stderr": _STRING, "interrupted": _BOOL},
        {"isImage": _BOOL, "noOutputExpected": _BOOL},
    ),
    "Read": {
        "oneOf": [
            _shape(
                {
                    "type": {"const": "text"},
                    "file": _shape(
                        {
                            "filePath": _STRING,
                            "content": _STRING,
                            "numLines": _INT,
                            "startLine": _INT,
                            "totalLines": _INT,
                        }
                    ),
                }
            ),
            _shape(
                {
                    "type": {"const": "image"},
                    "file": _shape(
                        {
                            "base64": _STRING,
                            "type": {"enum": list(IMAGE_MEDIA_TYPES)},
                            "originalSize": {"type": "number"},
                        }
                    ),
                }
            ),
        ]
    },
    "Write": _shape(
        {
            "type": {"enum": ["create", "update"]},
            "filePath": _STRING,
            "content": _STRING,
            "structuredPatch": {"type": "array"},
            "originalFile": {"type": ["string", "null"]},
        }
    ),
    "Edit": _shape(
        {
            "filePath": _STRING,
            "oldString": _STRING,
            "newString": _STRING,
            "originalFile": _STRING,
            "structuredPatch": {"type": "array"},
            "userModified": _BOOL,
            "replaceAll": _BOOL,
        }
    ),
    "Glob": _shape(
        {
            "filenames": _STRINGS,
            "durationMs": {"type": "number"},
            "numFiles": _INT,
            "truncated": _BOOL,
        }
    ),
    "Grep": _shape(
        {"numFiles": _INT, "filenames": _STRINGS},
        {
            "mode": {"enum": ["content", "files_with_matches", "count"]},
            "content": _STRING,
            "numLines": _INT,
            "numMatches": _INT,
            "appliedLimit": _INT,
            "appliedOffset": _INT,
        },
    ),
}
"""Each built-in tool's `tool_response`, as Claude Code's output schema checks it."""


def replacement_problem(name: str, structured: bool, value: Any) -> str | None:
    """None when `value` may replace the output of a call of `name`, else why not, in
    Claude Code's words (after "updatedToolOutput that"). `structured`: the call's
    output was an object (a built-in tool's `tool_response`), not its text."""
    if structured and name not in SCHEMAS:
        return f"cannot replace {name}'s output (it has no known shape)"
    try:
        validator(SCHEMAS[name] if structured else _STRING)(value)
    except fastjsonschema.JsonSchemaValueException as error:
        return f"does not match {name}'s output shape ({error.message})"
    return None


def rendered(name: str, structured: bool, value: Any) -> ToolResultContent:
    """What the model reads of a replacement that `replacement_problem` accepted."""
    if not structured:
        return str(value)
    return _RENDER[name](value)


def marked_error(name: str, structured: bool, value: Any) -> bool:
    """Whether the model reads an accepted replacement as an error: Claude Code marks
    Bash's result one when it says `interrupted` (its `is_error: interrupted`), unless it
    is sent as an image; no other tool's output is one."""
    return (
        structured
        and name == "Bash"
        and value["interrupted"] is True
        and isinstance(rendered(name, structured, value), str)
    )


def _bash(out: dict[str, Any]) -> ToolResultContent:
    return bash.shown(out["stdout"], out["stderr"], out["interrupted"], bool(out.get("isImage")))


def _read(out: dict[str, Any]) -> ToolResultContent:
    file = out["file"]
    if out["type"] == "image":
        return read.shown_image(file["type"], file["base64"])
    first, total = file["startLine"], file["totalLines"]
    lines = read.content_lines(file["content"], file["numLines"])
    return read.shown_lines(lines, first, total, first + len(lines) - 1 < total)


def _write(out: dict[str, Any]) -> ToolResultContent:
    return write.written(out["filePath"], out["type"] == "create")


def _edit(out: dict[str, Any]) -> ToolResultContent:
    created = not out["oldString"] and not out["originalFile"]
    return write.written(out["filePath"], created, bool(out["replaceAll"]))


def _glob(out: dict[str, Any]) -> ToolResultContent:
    return glob.listing(out["filenames"], out["truncated"])


def _grep(out: dict[str, Any]) -> ToolResultContent:
    mode = out.get("mode", "files_with_matches")
    if mode == "files_with_matches":
        shown = "\n".join(out["filenames"]) if out["filenames"] else None
    else:
        shown = out.get("content") or None
    return grep.found(mode, shown, out["numFiles"], out.get("numMatches", 0))


_RENDER: dict[str, Callable[[dict[str, Any]], ToolResultContent]] = {
    "Bash": _bash,
    "Read": _read,
    "Write": _write,
    "Edit": _edit,
    "Glob": _glob,
    "Grep": _grep,
}
