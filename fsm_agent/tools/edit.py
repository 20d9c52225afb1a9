"""Edit: exact string replacement in a file the model has read."""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from typing import Any

from fsm_agent.core.tool import ToolEnv, ToolInputError, ToolOutcome
from fsm_agent.tools.files import (
    BOM,
    encoding_name,
    encoding_of,
    missing_file,
    open_verified,
    require_file_path,
    require_text_path,
    write_text,
)
from fsm_agent.tools.patch import structured_patch
from fsm_agent.tools.read_state import STALE_NOTE, EditBasis, check_edit, digest
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


CURLY_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
_STRAIGHTEN = str.maketrans(CURLY_QUOTES)
_OPENING_AFTER = frozenset(" \t\n\r([{\u2014\u2013")


def line_ending(content: str) -> str:
    """Claude Code's `detectLineEndings`: the commoner ending in the first 4,096 characters."""
    head = content[:4096]
    crlf = head.count("\r\n")
    return "\r\n" if crlf > head.count("\n") - crlf else "\n"


def find_actual(content: str, old: str) -> str | None:
    """Claude Code's `findActualString`: `old` as the file has it, matched with curly
    quotes read as straight ones (a model writes straight quotes for curly)."""
    if old in content:
        return old
    at = content.translate(_STRAIGHTEN).find(old.translate(_STRAIGHTEN))
    return None if at < 0 else content[at : at + len(old)]


def _curl(text: str, straight: str, left: str, right: str) -> str:
    out: list[str] = []
    for i, c in enumerate(text):
        if c != straight:
            out.append(c)
        elif (
            straight == "'"
            and 0 < i < len(text) - 1
            and text[i - 1].isalpha()
            and text[i + 1].isalpha()
        ):
            out.append(right)
        else:
            out.append(left if i == 0 or text[i - 1] in _OPENING_AFTER else right)
    return "".join(out)


def preserve_quote_style(old: str, actual: str, new: str) -> str:
    """Claude Code's `preserveQuoteStyle`: when `old` matched only with quotes
    normalised, `new`'s straight quotes take the file's curly style (an opening quote
    after a space or a bracket, an apostrophe between letters a closing one)."""
    if old == actual:
        return new
    if "\u201c" in actual or "\u201d" in actual:
        new = _curl(new, '"', "\u201c", "\u201d")
    if "\u2018" in actual or "\u2019" in actual:
        new = _curl(new, "'", "\u2018", "\u2019")
    return new


def replace(content: str, old: str, new: str, replace_all: bool) -> tuple[str, str]:
    """Apply one edit to `content`, or raise the error the model should see; returns
    the edited text and `old` as the file had it.

    As in Claude Code, `old` is looked for in the file with its CRLFs read as LF
    (Read shows lines without their CR), and with curly quotes matched by straight
    ones. Unlike Claude Code, which writes the whole file back with one ending (the
    commoner), only the matched text is replaced: the lines the edit does not touch
    keep their bytes. The new text takes the ending of the text it replaces, or,
    when that has none or both, the file's commoner ending, as in Claude Code.
    """
    lf = content.replace("\r\n", "\n")
    old_lf = old.replace("\r\n", "\n")
    actual = find_actual(lf, old_lf)
    if actual is None:
        raise ToolInputError(not_found(old))
    count = lf.count(actual)
    if count > 1 and not replace_all:
        raise ToolInputError(too_many(count, old))
    replacement = preserve_quote_style(old_lf, actual, new)
    whole_lines = not new and not actual.endswith("\n")
    crlfs = [m.start() - k for k, m in enumerate(re.finditer("\r\n", content))]
    out: list[str] = []
    done = 0
    at = lf.find(actual)
    while at >= 0:
        end = at + len(actual)
        if whole_lines and lf.startswith("\n", end) and (at == 0 or lf[at - 1] == "\n"):
            end += 1
        start_raw, end_raw = at + bisect_left(crlfs, at), end + bisect_left(crlfs, end)
        replaced = content[start_raw:end_raw]
        out += [content[done:start_raw], _with_ending(replacement, replaced, content)]
        done = end_raw
        at = lf.find(actual, end) if replace_all else -1
    out.append(content[done:])
    return "".join(out), actual


def _with_ending(new: str, replaced: str, content: str) -> str:
    """`new` with the line ending of the text it replaces, if that has one kind only,
    else the file's (Claude Code's `writeTextContent`: CRLF makes every newline CRLF)."""
    crlf = replaced.count("\r\n")
    lf = replaced.count("\n") - crlf
    ending = "\r\n" if crlf and not lf else "\n" if lf and not crlf else line_ending(content)
    if ending == "\n":
        return new
    return new.replace("\r\n", "\n").replace("\n", "\r\n")


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
                raise missing_file(path, env.cwd)
            return ToolOutcome(
                written(path, created=True),
                read_files={path: write_text(path, new)},
                seen={path: digest(new)},
                response=_response(path, old, new, "", new, replace_all, env),
            )
        if os.path.isdir(path):
            raise ToolInputError(f"{path} is a directory; give the path of a file.")
        try:
            content, encoding = _read_text(path)
        except ToolInputError:
            check_edit(path, env, "", applies=False)  # an unread or changed file says so first
            raise
        basis = check_edit(path, env, content, applies(content, old, replace_all))
        mark = BOM if content.startswith(BOM) else ""
        content = content.removeprefix(mark)
        if not old:
            if content.strip():
                raise ToolInputError("Cannot create new file - file already exists.")
            updated, matched = new, old
        else:
            updated, matched = replace(content, old, new, replace_all)
        new_mtime = write_text(path, mark + updated, encoding)
        text = written(path, created=False, replace_all=replace_all)
        response = _response(path, matched, new, content, updated, replace_all, env)
        if response is not None:
            response.update(_basis_keys(basis))
        return ToolOutcome(
            text + STALE_NOTE if basis.stale else text,
            read_files={path: new_mtime},
            seen={path: "" if basis.not_in_context else digest(updated)},
            response=response,
        )


def applies(content: str, old: str, replace_all: bool) -> bool:
    """Whether the edit would apply to `content` (Claude Code's `applies` verdict): a
    non-empty `old` found once, or found at all with `replace_all`."""
    if not old:
        return False
    lf = content.replace("\r\n", "\n")
    actual = find_actual(lf, old.replace("\r\n", "\n"))
    return actual is not None and (replace_all or lf.count(actual) == 1)


def _basis_keys(basis: EditBasis) -> dict[str, bool]:
    """Claude Code's flags in a PostToolUse hook's `tool_response`: the file had changed
    since the read (`staleRecovered`), the model does not hold its whole text."""
    keys = {"staleRecovered": True} if basis.stale else {}
    if basis.not_in_context:
        keys["contentNotInModelContext"] = True
    return keys


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


def _read_text(path: str) -> tuple[str, str]:
    """The file's text and its encoding: UTF-16LE after that byte order mark, else
    UTF-8, as Claude Code reads a file to edit it; its byte order mark included."""
    with open_verified(path) as f:
        raw = f.read()
    encoding = encoding_of(raw)
    try:
        return raw.decode(encoding), encoding
    except UnicodeDecodeError:
        raise ToolInputError(
            f"{path} is not valid {encoding_name(encoding)} text, so it cannot be edited "
            "as a string."
        ) from None
