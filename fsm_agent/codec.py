"""The one cattrs converter: every attrs class in the package to and from JSON.

Content blocks are a tagged union on the API's own `type` field, so a block
unstructures to exactly what the Messages API sends and accepts.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn
from cattrs.strategies import configure_tagged_union

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

for _always_whole in (ToolUseBlock, ThinkingBlock, ImageSource):
    converter.register_unstructure_hook(
        _always_whole,
        make_dict_unstructure_fn(_always_whole, converter, _cattrs_omit_if_default=False),
    )

configure_tagged_union(
    TextBlock | ImageBlock,
    converter,
    tag_generator=lambda cls: cls.type,
    tag_name="type",
)


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
configure_tagged_union(
    ContentBlock,
    converter,
    tag_generator=lambda cls: cls.type,
    tag_name="type",
)


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
unstructure the same few classes on every step (every hook is registered at import)."""


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

    configure_tagged_union(
        StreamEvent,
        converter,
        tag_generator=lambda cls: cls.__name__,
        tag_name="event",
    )


_register_stream_events()
