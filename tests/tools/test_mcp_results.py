"""An MCP tool's result as the model reads it, mapped as Claude Code maps it."""

from __future__ import annotations

from fsm_agent.core.messages import ImageBlock, ImageSource, TextBlock
from fsm_agent.tools.mcp import outcome_of, truncation_note


def test_structured_content_is_its_json_text() -> None:
    result = {"content": [{"type": "text", "text": "pretty"}], "structuredContent": {"a": [1]}}
    outcome = outcome_of("s", result)
    assert (outcome.content, outcome.is_error) == ('{"a":[1]}', False)


def test_each_content_block_is_kept_as_claude_code_keeps_it() -> None:
    result = {"content": [
        {"type": "text", "text": "one"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///x", "text": "body"}},
        {"type": "resource_link", "name": "doc", "uri": "demo://1", "description": "a doc"},
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
    ]}  # fmt: skip
    assert outcome_of("srv", result).content == (
        TextBlock("one"),
        ImageBlock(ImageSource("image/png", "AAAA")),
        TextBlock("[Resource from srv at file:///x] body"),
        TextBlock("[Resource link: doc] demo://1 (a doc)"),
        TextBlock("[Audio from srv: audio/wav]"),
    )


def test_is_error_is_an_error_result_with_the_servers_text() -> None:
    outcome = outcome_of("s", {"content": [{"type": "text", "text": "it broke"}], "isError": True})
    assert (outcome.content, outcome.is_error) == ("it broke", True)
    assert outcome_of("s", {"content": [], "isError": True}).content == (
        "The MCP server s reported an error"
    )


def test_text_past_the_token_limit_is_cut_with_claude_codes_note() -> None:
    cut = outcome_of("s", {"structuredContent": {"t": "x" * 100}}, max_tokens=10)
    assert cut.content == '{"t":"' + "x" * 34 + truncation_note(10)
    blocks = outcome_of("s", {"content": [{"type": "text", "text": "y" * 30}] * 2}, max_tokens=10)
    assert blocks.content == (
        TextBlock("y" * 30), TextBlock("y" * 10), TextBlock(truncation_note(10).lstrip("\n"))
    )  # fmt: skip
    kept = {"content": [{"type": "text", "text": "y" * 40}]}
    assert outcome_of("s", kept, max_tokens=10).content == (TextBlock("y" * 40),)
    assert "[OUTPUT TRUNCATED - exceeded 10 token limit]" in truncation_note(10)
