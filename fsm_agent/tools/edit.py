"""Edit: exact string replacement in a file the model has read."""

from __future__ import annotations

import os
from typing import Any

from fsm_agent.tools.base import ToolEnv, ToolInputError, ToolOutcome
from fsm_agent.tools.files import (
    require_file_path,
    require_fresh_read,
    require_text_path,
    write_text,
)
from fsm_agent.tools.patch import structured_patch
from fsm_agent.tools.workspace import check_path
from fsm_agent.tools.write import written

DESCRIPTION = """\
Replace an exact string in a file. `old_string` must match the file \
character for character (indentation included, without the line-number \
prefix Read shows) and occur exactly once, unless `replace_all` is true, \
which replaces every occurrence. Include surrounding lines to make a match unique.
The file must have been read with Read first and not changed since.
An empty `old_string` on a path that does not exist creates the file with `new_string`."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Absolute path of the file to edit"},
        "old_string": {"type": "string", "description": "The exact text to replace"},
        "new_string": {"type": "string", "description": "The text to put in its place"},
        "replace_all": {
            "type": "boolean",
            "default": False,
            "description": "Replace every occurrence instead of exactly one",
        },
    },
    "required": ["file_path", "old_string", "new_string"],
    "additionalProperties": False,
}

NO_CHANGE = "No changes to make: old_string and new_string are exactly the same."


def not_found(old: str) -> str:
    return f"String to replace not found in file.\nString: {old}"


def too_many(count: int, old: str) -> str:
    return (
        f"Found {count} matches of the string to replace, but replace_all is false. "
        "To replace all occurrences, set replace_all to true. To replace only one "
        "occurrence, please provide more context to uniquely identify the instance.\n"
        f"String: {old}"
    )


def replace(content: str, old: str, new: str, replace_all: bool) -> str:
    """Apply one edit to `content`, or raise the error the model should see.

    Read shows CRLF lines without the CR. A file whose every line ends in CRLF
    is edited as LF text and written back all CRLF, so the lines an edit adds
    end like the others. In a file of mixed endings, when the LF form of `old`
    is not found its CRLF form is tried, with `new` written back as CRLF too.
    """
    if "\r\n" in content and content.count("\n") == content.count("\r\n"):
        lf = content.replace("\r\n", "\n")
        edited = replace(lf, old.replace("\r\n", "\n"), new.replace("\r\n", "\n"), replace_all)
        return edited.replace("\n", "\r\n")
    target, replacement = old, new
    count = content.count(target)
    if count == 0 and "\r\n" in content and "\n" in old and "\r\n" not in old:
        target, replacement = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = content.count(target)
    if count == 0:
        raise ToolInputError(not_found(old))
    if count > 1 and not replace_all:
        raise ToolInputError(too_many(count, old))
    return content.replace(target, replacement, -1 if replace_all else 1)


class EditTool:
    """Targeted edits: cheaper and safer for the model than rewriting whole files."""

    name = "Edit"
    description = DESCRIPTION
    input_schema = SCHEMA

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        check = check_path(input["file_path"], env)
        if not check.inside:
            return check.refusal()
        require_file_path(input["file_path"])
        require_text_path(input["file_path"], check.resolved)
        path = check.resolved
        old, new = input["old_string"], input["new_string"]
        if old == new:
            raise ToolInputError(NO_CHANGE)
        replace_all = bool(input.get("replace_all", False))
        if not os.path.exists(path):
            if old:
                raise ToolInputError("File does not exist.")
            return ToolOutcome(
                written(path, created=True),
                read_files={path: write_text(path, new)},
                response=_response(path, old, new, "", new, replace_all, env),
            )
        if os.path.isdir(path):
            raise ToolInputError(f"{path} is a directory; give the path of a file.")
        require_fresh_read(path, env)
        content = _read_text(path)
        if not old:
            if content.strip():
                raise ToolInputError("Cannot create new file - file already exists.")
            updated = new
        else:
            updated = replace(content, old, new, replace_all)
        new_mtime = write_text(path, updated)
        return ToolOutcome(
            written(path, created=False),
            read_files={path: new_mtime},
            response=_response(path, old, new, content, updated, replace_all, env),
        )


def _response(
    path: str, old: str, new: str, original: str, updated: str, replace_all: bool, env: ToolEnv
) -> dict[str, Any] | None:
    """Claude Code's Edit result, for PostToolUse hooks (a new file's `originalFile` is "")."""
    if not env.wants_response:
        return None
    return {
        "filePath": path,
        "oldString": old,
        "newString": new,
        "originalFile": original,
        "structuredPatch": structured_patch(original, updated),
        "userModified": False,
        "replaceAll": replace_all,
    }


def _read_text(path: str) -> str:
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(
            f"{path} is not valid UTF-8 text, so it cannot be edited as a string."
        ) from None
