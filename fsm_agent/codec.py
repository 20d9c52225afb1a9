"""The one cattrs converter: every attrs class in the package to and from JSON.

Content blocks are a tagged union on the API's own `type` field, so a block
unstructures to exactly what the Messages API sends and accepts.

Nothing here generates a hook at import: cattrs makes a class's hooks the
first time they are asked for, and `replay` asks for a fraction of them, so
importing this module stays cheap for the commands that start the engine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn

from fsm_agent.jsontext import canonical
from fsm_agent.messages import (
    ContentBlock,
    ImageBlock,
    ImageSource,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
)

converter = cattrs.Converter(omit_if_default=True)

# cattrs clears its hook cache whenever it registers a hook, its own collection
# hooks included, and would then generate a class's hooks again; made once per class.
converter.register_structure_hook_factory(
    attrs.has, functools.cache(converter.gen_structure_attrs_fromdict)
)
converter.register_unstructure_hook_factory(
    attrs.has, functools.cache(converter.gen_unstructure_attrs_fromdict)
)

_ALWAYS_WHOLE = frozenset({ToolUseBlock, ThinkingBlock, ImageSource})
"""Classes unstructured with every field, defaults too: the API wants them whole."""

converter.register_unstructure_hook_factory(
    lambda cls: cls in _ALWAYS_WHOLE,
    lambda cls: make_dict_unstructure_fn(cls, converter, _cattrs_omit_if_default=False),
)


def _tagged_union(union: Any, tag_of: Callable[[type], str], tag_name: str) -> None:
    """`cattrs.strategies.configure_tagged_union`'s format, each member's hooks made lazily.

    The strategy builds the hooks of every member at once; here a member's
    hooks are looked up on the first value of it, so a replay that never
    meets an image block never generates the image block's hooks. The
    output is the same: the member's dict with the tag added last.
    """
    classes = {tag_of(cls): cls for cls in union.__args__}
    tags = {cls: tag for tag, cls in classes.items()}
    structure_hooks: dict[type, Callable[[Any, Any], Any]] = {}
    unstructure_hooks: dict[type, Callable[[Any], dict[str, Any]]] = {}

    def structure_member(value: Any, _: Any) -> Any:
        cls = classes[value[tag_name]]
        hook = structure_hooks.get(cls)
        if hook is None:
            hook = structure_hooks[cls] = converter.get_structure_hook(cls)
        return hook(value, cls)

    def unstructure_member(value: Any) -> dict[str, Any]:
        cls = value.__class__
        tag = tags[cls]
        hook = unstructure_hooks.get(cls)
        if hook is None:
            hook = unstructure_hooks[cls] = converter.get_unstructure_hook(cls)
        out = hook(value)
        out[tag_name] = tag
        return out

    converter.register_unstructure_hook(union, unstructure_member)
    converter.register_structure_hook(union, structure_member)


def _type_tag(cls: type) -> str:
    return cls.type  # type: ignore[attr-defined]


_tagged_union(TextBlock | ImageBlock, _type_tag, "type")


def _structure_result_content(value: Any, _: type) -> ToolResultContent:
    if isinstance(value, str):
        return value
    return tuple(converter.structure(v, TextBlock | ImageBlock) for v in value)


converter.register_structure_hook(ToolResultContent, _structure_result_content)


def _unstructure_result_content(value: ToolResultContent) -> Any:
    if isinstance(value, str):
        return value
    return [converter.unstructure(b, TextBlock | ImageBlock) for b in value]


converter.register_unstructure_hook(ToolResultContent, _unstructure_result_content)


def _unstructure_tool_result(block: ToolResultBlock) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tool_use_id": block.tool_use_id,
        "content": _unstructure_result_content(block.content),
    }
    if block.is_error:
        out["is_error"] = True
    return out


converter.register_unstructure_hook(ToolResultBlock, _unstructure_tool_result)
_tagged_union(ContentBlock, _type_tag, "type")


class CodecError(ValueError):
    """Raised when JSON does not have the shape of the class asked for."""


def structure(value: Any, cls: Any) -> Any:
    try:
        return converter.structure(value, cls)
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
        detail = (
            "; ".join(cattrs.transform_error(exc))
            if isinstance(exc, cattrs.BaseValidationError)
            else str(exc)
        )
        raise CodecError(f"not a valid {getattr(cls, '__name__', cls)}: {detail}") from None


unstructure_hook = functools.cache(converter.get_unstructure_hook)
"""The converter's unstructure hook for a class, looked up once: for hot paths that
unstructure the same few classes on every step. cattrs makes the hook on the first
lookup, and may forget it when it makes another (a new collection hook clears its
cache), so the hot paths keep their own."""


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


def _register_stream_events() -> None:
    from fsm_agent.events import StreamEvent

    _tagged_union(StreamEvent, lambda cls: cls.__name__, "event")


_register_stream_events()
