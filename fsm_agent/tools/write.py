"""Write: create a file, or replace one the model has read in its current state."""

from __future__ import annotations

import os
from typing import Any

from fsm_agent.core.tool import ToolEnv, ToolInputError, ToolOutcome
from fsm_agent.tools.files import (
    BOM,
    file_encoding,
    read_text,
    require_file_path,
    require_text_path,
    write_text,
)
from fsm_agent.tools.patch import structured_patch
from fsm_agent.tools.read_state import check_write, digest
from fsm_agent.tools.workspace import check_path

DESCRIPTION = """\
Write a file in the workspace, replacing it entirely if it exists. \
Parent directories are created as needed.
An existing file must have been read with Read first, and not changed since; \
new files need no read. Prefer Edit for changing part of an existing file."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Absolute path of the file to write"},
        "content": {"type": "string", "description": "The complete new content of the file"},
    },
    "required": ["file_path", "content"],
    "additionalProperties": False,
}


def written(path: str, created: bool, replace_all: bool = False) -> str:
    """What the model reads of a Write or an Edit of `path`: the tools' one text, and a
    PostToolUse hook's replacement's (`fsm_agent.tools.output`)."""
    if created:
        return f"File created successfully at: {path}"
    if replace_all:
        return f"The file {path} has been updated. All occurrences were successfully replaced."
    return f"The file {path} has been updated successfully."


class WriteTool:
    """Whole-file writes, guarded so the model never overwrites what it has not seen."""

    name = "Write"
    description = DESCRIPTION
    input_schema = SCHEMA

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        check = check_path(input["file_path"], env)
        if not check.inside:
            return check.refusal()
        require_file_path(input["file_path"])
        require_text_path(input["file_path"], check.resolved)
        path = check.resolved
        if os.path.isdir(path):
            raise ToolInputError(f"{path} is a directory; give the path of a file.")
        existed = os.path.exists(path)
        encoding = "utf-8"
        if existed:
            check_write(path, env)
            encoding = file_encoding(path)
        original = read_text(path) if existed and env.wants_response else None
        data = input["content"]
        if encoding != "utf-8" and not data.startswith(BOM):
            data = BOM + data
        new_mtime = write_text(path, data, encoding)
        response = None
        if env.wants_response:
            response = {
                "type": "update" if existed else "create",
                "filePath": path,
                "content": input["content"],
                "structuredPatch": (
                    [] if original is None else structured_patch(original, input["content"])
                ),
                "originalFile": original,
            }
        return ToolOutcome(
            written(path, created=not existed),
            read_files={path: new_mtime},
            seen={path: digest(input["content"])},
            response=response,
        )
