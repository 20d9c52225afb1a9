"""The one cattrs converter: every attrs class in the package to and from JSON.

Content blocks are a tagged union on the API's own `type` field, so a block
unstructures to exactly what the Messages API sends and accepts.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    is_mapping,
    is_mutable_sequence,
    is_sequence,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from cattrs.strategies import configure_tagged_union
from cattrs.v import format_exception

from fsm_agent.core.events import StreamEvent
from fsm_agent.core.jsontext import canonical
from fsm_agent.core.messages import (
    ContentBlock,
    ImageBlock,
    ImageSource,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
    Usage,
    check_counts,
)
from fsm_agent.core.permission_types import PermissionUpdate, read_update, update_json

# Structuring takes JSON as it is, never coerced: cattrs would make "false" True,
# a string a list of its characters, ["a"] the text "['a']", and a string or a list
# an object of defaults, so a mistake in a scenario or a damaged log would pass.
# cattrs clears its hook cache whenever it registers a hook, its own collection
# hooks included, and would then generate a type's hooks again: the factories
# registered here make each type's hook once.


def json_name(value: Any) -> str:
    """What a JSON value is, as a reader of the file would say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _structure_str(value: Any, _: type) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string, got {json_name(value)}")


def _structure_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError(f"expected true or false, got {json_name(value)}")


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected an integer, got {json_name(value)}")


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"expected a number, got {json_name(value)}")


def _only(kinds: type | tuple[type, ...], hook: Callable[[Any, Any], Any]) -> Any:
    """`hook`, for a value of one of `kinds` only: a list is a list, an object an object."""

    def structure_only(value: Any, cls: Any) -> Any:
        if isinstance(value, kinds):
            return hook(value, cls)
        raise TypeError(f"got {json_name(value)}")

    return structure_only


def _lists_only(factory: Callable[[Any, cattrs.Converter], Any]) -> Any:
    return functools.cache(lambda cls, conv: _only((list, tuple), factory(cls, conv)))


@functools.cache
def _mappings_only(cls: Any, conv: cattrs.Converter) -> Any:
    """cattrs' own mapping hook (not `gen_structure_mapping`, which would also register
    it, unchecked, as the type's hook), for an object only."""
    origin = typing.get_origin(cls) or cls
    to = origin if isinstance(origin, type) and issubclass(origin, dict) else dict
    hook = mapping_structure_factory(cls, conv, to, detailed_validation=conv.detailed_validation)
    return _only((dict, Mapping), hook)


class CheckFailed(ValueError):
    """A value of the right shape that a class's check refused; its words are the check's."""


def _then(check: Callable[[Any], Any], hook: Callable[[Any, Any], Any]) -> Any:
    """`hook`, and `check` on what it made."""

    def structure_checked(value: Any, cls: Any) -> Any:
        made = hook(value, cls)
        try:
            return check(made)
        except ValueError as exc:
            raise CheckFailed(*exc.args) from None

    return structure_checked


CHECKS: dict[type, Callable[[Any], Any]] = {Usage: check_counts}
"""Checks a class's value gets when read, beyond its fields' types."""

ALWAYS_WHOLE = (ToolUseBlock, ThinkingBlock, ImageSource)
"""Classes written with every field, defaults too: the API requires each of them."""


def _tag_of(cls: Any) -> str:
    return cls.type


def _event_tag(cls: Any) -> str:
    return cls.__name__


TAGGED: dict[Any, tuple[str, str, Callable[[Any], str]]] = {
    TextBlock | ImageBlock: ("a text or image block", "type", _tag_of),
    ContentBlock: ("a content block", "type", _tag_of),
    StreamEvent: ("a stream event", "event", _event_tag),
}
"""Each tagged union: what it is called, its tag's key, and how a class names its tag."""


def _is_item_list(cls: Any) -> bool:
    """A frozen list class (`Transcript`): a Sequence with an `of` to build one from items."""
    return isinstance(cls, type) and issubclass(cls, Sequence) and hasattr(cls, "of")


def _item_type(cls: type) -> Any:
    """The item type a list class declares in its base (`Sequence[Message]`)."""
    for base in getattr(cls, "__orig_bases__", ()):
        if typing.get_origin(base) is not None and issubclass(typing.get_origin(base), Sequence):
            return typing.get_args(base)[0]
    raise TypeError(f"{cls.__name__} names no item type")


def _structure_update(value: Any, _: Any) -> PermissionUpdate:
    """A hook's permission updates are kept in Claude Code's own JSON shape, checked as
    its schema checks them, in a log as in a scenario."""
    try:
        return read_update(value)
    except ValueError as exc:
        raise CheckFailed(*exc.args) from None


def make_converter(strict: Iterable[tuple[type, Any]] = ()) -> cattrs.Converter:
    """The package's converter, with every hook it needs, registered in the order their
    factories need.

    `strict` adds, for files people write, classes structured refusing keys they
    do not have, so a misspelt key is not quietly ignored: each pair is a class and
    the name it is read as (itself, or a NewType of it). Session logs keep ignoring
    unknown fields (docs/log-format.md), so a class they also hold is made strict
    under a NewType only where a person writes it. List inner classes first: a
    class's hook takes its fields' hooks as they are then.
    """
    conv = cattrs.Converter(omit_if_default=True)
    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(bool, _structure_bool)
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook_factory(
        is_sequence, _lists_only(homogenous_tuple_structure_factory)
    )
    conv.register_structure_hook_factory(is_mutable_sequence, _lists_only(list_structure_factory))
    conv.register_structure_hook_factory(is_mapping, _mappings_only)
    conv.register_structure_hook_factory(
        attrs.has,
        functools.cache(lambda cls: _only((dict, Mapping), conv.gen_structure_attrs_fromdict(cls))),
    )
    conv.register_unstructure_hook_factory(
        attrs.has, functools.cache(conv.gen_unstructure_attrs_fromdict)
    )
    conv.register_structure_hook(
        Usage, _only((dict, Mapping), _then(check_counts, make_dict_structure_fn(Usage, conv)))
    )
    for whole in ALWAYS_WHOLE:
        conv.register_unstructure_hook(
            whole, make_dict_unstructure_fn(whole, conv, _cattrs_omit_if_default=False)
        )

    def structure_result_content(value: Any, _: type) -> ToolResultContent:
        if isinstance(value, str):
            return value
        return conv.structure(value, tuple[TextBlock | ImageBlock, ...])

    def unstructure_result_content(value: ToolResultContent) -> Any:
        if isinstance(value, str):
            return value
        return [conv.unstructure(b, TextBlock | ImageBlock) for b in value]

    def unstructure_tool_result(block: ToolResultBlock) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool_use_id": block.tool_use_id,
            "content": unstructure_result_content(block.content),
        }
        if block.is_error:
            out["is_error"] = True
        return out

    _configure_tagged(conv, TextBlock | ImageBlock)
    conv.register_structure_hook(ToolResultContent, structure_result_content)
    conv.register_unstructure_hook(ToolResultContent, unstructure_result_content)
    conv.register_unstructure_hook(ToolResultBlock, unstructure_tool_result)
    _configure_tagged(conv, ContentBlock)
    _configure_tagged(conv, StreamEvent)
    conv.register_structure_hook(PermissionUpdate, _structure_update)
    conv.register_unstructure_hook(PermissionUpdate, update_json)

    def unstructure_items(cls: Any) -> Callable[[Any], list[Any]]:
        item = _item_type(cls)
        return lambda value: [conv.unstructure(i, item) for i in value]

    def structure_items(cls: Any) -> Callable[[Any, Any], Any]:
        item = _item_type(cls)
        items = conv.get_structure_hook(tuple[item, ...])  # type: ignore[valid-type]
        return lambda value, _: cls.of(items(value, tuple))

    conv.register_unstructure_hook_factory(_is_item_list, unstructure_items)
    conv.register_structure_hook_factory(_is_item_list, structure_items)
    for cls, name in strict:
        hook: Callable[[Any, Any], Any] = make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=True
        )
        if cls in CHECKS:
            hook = _then(CHECKS[cls], hook)
        conv.register_structure_hook(name or cls, _only((dict, Mapping), hook))
    return conv


def _configure_tagged(conv: cattrs.Converter, union: Any) -> None:
    _, tag_name, tag_of = TAGGED[union]
    configure_tagged_union(union, conv, tag_generator=tag_of, tag_name=tag_name)


converter = make_converter()
"""The one converter of session logs, requests and state: built here, changed nowhere."""


class CodecError(ValueError):
    """Raised when JSON does not have the shape of the class asked for."""


def grouped(errors: list[str]) -> str:
    """cattrs' `PROBLEM @ WHERE` lines as one line, each problem said once with every
    place it is found: one typo repeated over a file read as the same sentence four times."""
    places: dict[str, list[str]] = {}
    for error in errors:
        problem, at, where = error.rpartition(" @ ")
        if not at:
            problem, where = error, ""
        places.setdefault(problem, []).append(where)
    return "; ".join(
        f"{problem} @ {', '.join(w for w in wheres if w)}" if any(wheres) else problem
        for problem, wheres in places.items()
    )


def structure(value: Any, cls: Any, conv: cattrs.Converter = converter) -> Any:
    """`value` as a `cls`, through `conv` (a strict one for a file a person wrote), or
    a `CodecError` in words for whoever wrote it."""
    try:
        return conv.structure(value, cls)
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
        detail = (
            grouped(cattrs.transform_error(exc, format_exception=_explain))
            if isinstance(exc, cattrs.BaseValidationError)
            else str(exc)
        )
        raise CodecError(f"not a valid {type_name(cls)}: {detail}") from None
    except cattrs.errors.CattrsError:  # a Literal, not in a class, that the value is not one of
        raise CodecError(f"not {type_name(cls)}: got {dumps(value)}") from None


def type_name(cls: Any) -> str:
    """A type as a reader of a JSON file would name it: `TextBlock`, `one of 'a', 'b'`."""
    if cls in TAGGED:
        return TAGGED[cls][0]
    args = typing.get_args(cls)
    if typing.get_origin(cls) is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if isinstance(cls, types.UnionType) or typing.get_origin(cls) is typing.Union:
        return " or ".join("null" if a is type(None) else type_name(a) for a in args)
    origin = typing.get_origin(cls) or cls
    if origin in (tuple, list):
        return "list"
    if origin is dict:
        return "object"
    return getattr(cls, "__name__", repr(cls))


class _Named:
    """All cattrs' formatter reads of a type: its `__name__`."""

    def __init__(self, name: str) -> None:
        self.__name__ = name


def _explain(exc: BaseException, cls: Any) -> str:
    """cattrs' wording for one error, with types named by `type_name`, a tagged
    union's tag told apart from a missing field, a misspelt key shown next to the
    keys there are, and a validator's own reason."""
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        extra = ", ".join(repr(k) for k in sorted(exc.extra_fields))
        keys = "keys" if len(exc.extra_fields) > 1 else "key"
        return f"unknown {keys} {extra} (known: {', '.join(a.name for a in attrs.fields(exc.cl))})"
    if cls in TAGGED and isinstance(exc, KeyError):
        noun, tag, tag_of = TAGGED[cls]
        known = tuple(tag_of(c) for c in typing.get_args(cls))
        key = exc.args[0] if exc.args else None
        if key == tag:
            return f"{noun} needs a '{tag}' ({', '.join(known)})"
        return f"unknown {tag} {key!r} for {noun} (known: {', '.join(known)})"
    if cls is not None and type(exc) in (Exception, cattrs.errors.CattrsError):
        return f"invalid value, expected {type_name(cls)}"
    if isinstance(exc, CheckFailed) or (cls is None and type(exc) is ValueError and exc.args):
        return f"invalid value ({exc})"
    return format_exception(exc, None if cls is None else _Named(type_name(cls)))  # type: ignore[arg-type]


unstructure_hook = functools.cache(converter.get_unstructure_hook)
"""The converter's unstructure hook for a class, looked up once: for hot paths that
unstructure the same few classes on every step (`make_converter` registered every hook)."""


def unstructure(value: Any, cls: Any = None) -> Any:
    return converter.unstructure(value, cls) if cls is not None else converter.unstructure(value)


def block_to_api(block: ContentBlock) -> dict[str, Any]:
    return converter.unstructure(block, ContentBlock)


def message_to_api(message: Message) -> dict[str, Any]:
    """Only `role` and `content`: the fields the Messages API accepts on a request."""
    return {"role": message.role, "content": [block_to_api(b) for b in message.content]}


def dumps(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces) as text; digests hash `canonical`'s bytes."""
    return canonical(value).decode()
