"""A tool's input against its JSON Schema, in the model's words.

Validation runs on every tool call, live and on replay, so the schema is
compiled once (fastjsonschema turns it into a Python function: about a
microsecond a call, and a light import for `replay --check`). The first
error is reported the way Claude Code words its own input errors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import fastjsonschema

Validate = Callable[[Any], Any]

_compiled: dict[int, tuple[dict[str, Any], Validate]] = {}


class SchemaError(ValueError):
    """A tool's input_schema that does not compile."""


def validator(schema: dict[str, Any]) -> Validate:
    """Compiled once per schema object (a tool's schema lives as long as the tool)."""
    found = _compiled.get(id(schema))
    if found is None or found[0] is not schema:
        found = _compiled[id(schema)] = (schema, _compile(schema))
    return found[1]


def _compile(schema: dict[str, Any]) -> Validate:
    try:
        return fastjsonschema.compile(schema, use_default=False)
    except fastjsonschema.JsonSchemaDefinitionException as error:
        problem = str(error)
    except (TypeError, AttributeError, KeyError) as error:  # fastjsonschema, on a wrong type
        problem = f"{type(error).__name__}: {error}"
    except (RecursionError, SyntaxError):  # its recursion, or the code it writes, too deep
        problem = "nested too deeply"
    raise SchemaError(f"input_schema is not a valid JSON Schema: {problem}")


def check_schema(name: str, schema: dict[str, Any]) -> Validate:
    """Compile a tool's schema before a run, so that a broken one (a tool of the
    caller's) is refused up front, naming the tool, and not when the model first
    calls it, halfway through a log. Returns the compiled validator."""
    try:
        return validator(schema)
    except SchemaError as error:
        raise SchemaError(f"tool {name!r}: {error}") from None


def input_problem(name: str, schema: dict[str, Any], tool_input: Any) -> str | None:
    """None when `tool_input` fits `schema`, else the `tool_use_error` text for the model.
    A schema that does not compile is a `SchemaError` naming the tool: a replay meets one
    only in a damaged log's header, when the model first calls the tool."""
    validate = check_schema(name, schema)
    try:
        validate(tool_input)
    except fastjsonschema.JsonSchemaValueException as error:
        return (
            f"<tool_use_error>InputValidationError: {name} failed due to the following "
            f"issue:\n{_issue(error)}</tool_use_error>"
        )
    return None


UNPARSABLE_SHOWN = 200
"""How much of an input that is not JSON Claude Code 2.1.x quotes back, in UTF-16 code
units (JavaScript's string length)."""

_UNPARSABLE = re.compile(
    r"\AInputValidationError: \S+ was called with input that could not be parsed as JSON\."
    r"\nYou sent \(first \d+ of (\d+) bytes\): "
)


def _utf16(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


def unparsable_input(name: str, raw: str) -> str:
    """The model's error for a call of `name` whose input `raw` is not JSON, in Claude
    Code 2.1.x's words (measured): the first `UNPARSABLE_SHOWN` UTF-16 code units of
    what it sent, never half a surrogate pair, then the usual causes. The model reads
    what went wrong in the same words it would from Claude Code."""
    shown, units = [], 0
    for char in raw:
        if units + _utf16(char) > UNPARSABLE_SHOWN:
            break
        shown.append(char)
        units += _utf16(char)
    total = sum(_utf16(c) for c in raw)
    return (
        f"InputValidationError: {name} was called with input that could not be parsed as "
        f"JSON.\nYou sent (first {units} of {total} bytes): {''.join(shown)}\nCommon causes: "
        "unescaped backslashes in file paths (use / or \\\\), unescaped control characters, "
        "or truncated output. Retry with valid JSON."
    )


def unparsable_summary(text: str) -> str | None:
    """Claude Code's `toolUseResult` for an `unparsable_input` error (`text`, unwrapped):
    the length alone, as it writes it; None for any other error."""
    found = _UNPARSABLE.match(text)
    return f"InputValidationError: JSON parse failed ({found.group(1)} bytes)" if found else None


OS_STRINGS: dict[str, tuple[str, str]] = {
    "Read": ("file_path", "file path"),
    "Write": ("file_path", "file path"),
    "Edit": ("file_path", "file path"),
    "Glob": ("path", "path"),
    "Grep": ("path", "path"),
    "Bash": ("command", "command"),
}
"""The parameter of each built-in tool that reaches the OS as a path (or a command line),
and what to call it in the model's words."""


_HIDDEN_IN_A_COMMAND = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
r"""What Claude Code 2.1.x refuses in a Bash command as an input error, in every mode:
the C0 controls but tab and newline, DEL and the C1 controls (measured: `\r`, `\x0b`,
`\x1b`, `\x85` are refused; a zero-width space or a bidi override is not)."""

_HIDDEN_ISSUE = json.dumps(
    [
        {
            "code": "custom",
            "path": ["command"],
            "message": "command contains control characters that would be hidden in the "
            "approval dialog",
        }
    ],
    indent=2,
)


def os_string_problem(name: str, tool_input: dict[str, Any], *, hidden: bool = True) -> str | None:
    """A control character in a Bash command (Claude Code's own check, in its words: the
    user approving the command would not see it), or a null byte in a path, as the
    model's input error; None without one.

    No OS call takes a string with a null byte (Python raises `ValueError`
    before asking), and the permission check resolves paths before any tool
    runs. Said here, in the pure validation step, the model reads why, the
    run goes on, and a replay refuses the call the same way. `hidden`: False for a log
    recorded before control characters were refused here.
    """
    command = tool_input.get("command") if name == "Bash" and hidden else None
    if isinstance(command, str) and _HIDDEN_IN_A_COMMAND.search(command):
        return f"<tool_use_error>InputValidationError: {_HIDDEN_ISSUE}</tool_use_error>"
    found = OS_STRINGS.get(name)
    if found is None:
        return None
    key, what = found
    value = tool_input.get(key)
    if not (isinstance(value, str) and "\0" in value):
        return None
    return (
        f"<tool_use_error>InputValidationError: {name} failed due to the following issue:\n"
        f"The parameter `{key}` contains a null byte (\\0), which no {what} can contain"
        "</tool_use_error>"
    )


_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def semantic_input(
    name: str, schema: dict[str, Any], tool_input: Any, *, defaults: bool = True
) -> Any:
    """A built-in tool's input as Claude Code parses it: a quoted number or boolean taken
    for what its schema asks (`semanticNumber`: a decimal literal, `"30"`;
    `semanticBoolean`: `"true"`, `"false"`), since models sometimes quote them, and a
    parameter left out given its schema's default (Edit's `replace_all: false`), which
    hooks and `permission_denials` then see. Other strings are left for the schema to
    refuse; a tool of the caller's gets its input as given, as Claude Code's MCP tools
    do. `defaults`: False for a log recorded before they were filled in."""
    if name not in OS_STRINGS or not isinstance(tool_input, dict):
        return tool_input
    properties = schema.get("properties") or {}
    taken: dict[str, Any] = {
        key: spec["default"]
        for key, spec in properties.items()
        if defaults and key not in tool_input and isinstance(spec, dict) and "default" in spec
    }
    for key, value in tool_input.items():
        kind = (properties.get(key) or {}).get("type") if isinstance(value, str) else None
        if kind in ("integer", "number") and _DECIMAL.fullmatch(value):
            number = _number(value)
            if number is not None:
                taken[key] = number
        elif kind == "boolean" and value in ("true", "false"):
            taken[key] = value == "true"
    return {**tool_input, **taken} if taken else tool_input


def _number(literal: str) -> int | float | None:
    """A decimal literal as JSON holds it; None for one it cannot (past Python's digit
    limit for `int`, or past a double), which the schema then refuses as a string."""
    if "." not in literal:
        try:
            return int(literal)
        except ValueError:
            return None
    number = float(literal)
    return number if math.isfinite(number) else None


_JSON_TYPES = {
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _issue(error: fastjsonschema.JsonSchemaValueException) -> str:
    """The first error in Claude Code's words; a value received is named by its JSON
    type as Claude Code names it (any number is `number`: its checker has one number
    type, so `7` where a string belongs is "provided as `number`")."""
    where = ".".join(str(p) for p in (error.path or [])[1:])
    definition = error.definition if isinstance(error.definition, dict) else {}
    value = error.value
    if error.rule == "required" and isinstance(value, dict):
        missing = [k for k in definition.get("required", ()) if k not in value]
        name = f"{where}.{missing[0]}" if where and missing else (missing or ["?"])[0]
        return f"The required parameter `{name}` is missing"
    if error.rule == "additionalProperties" and isinstance(value, dict):
        known = definition.get("properties", {})
        extra = sorted(k for k in value if k not in known) or ["?"]
        return f"An unexpected parameter `{extra[0]}` was provided"
    if error.rule == "type":
        expected = definition.get("type")
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        received = _JSON_TYPES.get(type(value), type(value).__name__)
        subject = f"The parameter `{where}`" if where else "The input"
        return f"{subject} type is expected as `{expected}` but provided as `{received}`"
    detail = error.message.removeprefix(f"{error.name} ")
    return f"The parameter `{where}` {detail}" if where else f"The input {detail}"
