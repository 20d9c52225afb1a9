"""The built-in tools' output shapes, and what the model reads of an output.

A PostToolUse hook may replace a call's output (`updatedToolOutput`); Claude
Code takes the replacement only if it fits the tool's output schema, then
renders it for the model as the tool renders its own. The shapes are the
`tool_response` objects the tools build (docs/permissions-and-hooks.md); a
tool without one (a tool of the caller's) gives hooks its result's text, so
its output shape is a string, read as it is.

Pure functions of the replacement: a replay renders the recorded one alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fastjsonschema

from fsm_agent.messages import ImageBlock, ImageSource, ToolResultContent
from fsm_agent.validation import validator

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
        {"stdout": _STRING, "stderr": _STRING, "interrupted": _BOOL}, {"isImage": _BOOL}
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


def _bash(out: dict[str, Any]) -> ToolResultContent:
    parts = [out["stdout"].rstrip("\n"), out["stderr"].rstrip("\n")]
    if out["interrupted"]:
        parts.append("<error>Command was aborted before completion</error>")
    return "\n".join(p for p in parts if p) or "(no output)"


def _read(out: dict[str, Any]) -> ToolResultContent:
    from fsm_agent.tools.read import shown_lines

    file = out["file"]
    if out["type"] == "image":
        return (ImageBlock(ImageSource(media_type=file["type"], data=file["base64"])),)
    content, first, total = file["content"], file["startLine"], file["totalLines"]
    lines = [line.removesuffix("\r") for line in content.split("\n")] if content else []
    return shown_lines(lines, first, total, first + len(lines) - 1 < total)


def _write(out: dict[str, Any]) -> ToolResultContent:
    if out["type"] == "create":
        return f"File created successfully at: {out['filePath']}"
    return f"The file {out['filePath']} has been updated successfully."


def _edit(out: dict[str, Any]) -> ToolResultContent:
    return f"The file {out['filePath']} has been updated successfully."


def _glob(out: dict[str, Any]) -> ToolResultContent:
    from fsm_agent.tools.glob import NO_FILES

    lines = list(out["filenames"])
    if not lines:
        return NO_FILES
    if out["truncated"]:
        lines.append("(Results are truncated. Use a more specific path or pattern.)")
    return "\n".join(lines)


def _grep(out: dict[str, Any]) -> ToolResultContent:
    mode = out.get("mode", "files_with_matches")
    if mode == "files_with_matches":
        if not out["filenames"]:
            return "No files found"
        return "\n".join([f"Found {_plural(out['numFiles'], 'file')}", *out["filenames"]])
    content = out.get("content") or ""
    if not content:
        return "No matches found"
    if mode == "count":
        lines = _plural(out.get("numMatches", 0), "matching line")
        return f"{content}\n\nFound {lines} in {_plural(out['numFiles'], 'file')}."
    return content


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


_RENDER: dict[str, Callable[[dict[str, Any]], ToolResultContent]] = {
    "Bash": _bash,
    "Read": _read,
    "Write": _write,
    "Edit": _edit,
    "Glob": _glob,
    "Grep": _grep,
}
