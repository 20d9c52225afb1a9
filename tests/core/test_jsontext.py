"""JSON text: orjson's speed, the standard library's exactness where they differ."""

from __future__ import annotations

import json

import pytest

from fsm_agent.core.jsontext import canonical, dumps, line, loads


def test_compact_utf8_like_json_stringify() -> None:
    assert (
        dumps({"b": "é ✓", "a": [1, 2.5, None, True]})
        == '{"b":"é ✓","a":[1,2.5,null,true]}'.encode()
    )


def test_canonical_sorts_keys_at_every_depth() -> None:
    assert canonical({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"c":3,"d":2},"b":1}'


def test_integers_beyond_64_bits_are_kept_exactly() -> None:
    big = {"n": 2**70, "m": -(2**65)}
    text = dumps(big)
    assert text == b'{"n":1180591620717411303424,"m":-36893488147419103232}'
    assert loads(text) == big
    assert type(loads(text)["n"]) is int


@pytest.mark.parametrize("bad", [b'{"a":', b"NaN", b'{"a": 1} x', b"\xff\xfe", b""])
def test_anything_but_one_json_value_is_a_decode_error(bad: bytes) -> None:
    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)):
        loads(bad)


def test_text_and_bytes_read_alike() -> None:
    assert loads('{"a":"é"}') == loads('{"a":"é"}'.encode()) == {"a": "é"}


def test_a_log_line_is_the_compact_json_and_a_newline() -> None:
    for value in ({"t": "effect", "text": "é ✓", "n": 3}, {"n": 2**70}, [1.5, None, True]):
        assert line(value) == dumps(value) + b"\n"
    assert line({"n": 2**70}) == b'{"n":1180591620717411303424}\n'


def test_a_lone_surrogate_is_written_as_its_escape_and_read_back() -> None:
    """JSON's `"\\ud800"` (a model's answer may hold one) is a str UTF-8 cannot hold."""
    value = {"text": "x\ud800y", "ok": "é"}
    assert dumps(value) == b'{"text":"x\\ud800y","ok":"\\u00e9"}'
    assert line(value) == dumps(value) + b"\n"
    assert loads(dumps(value)) == value
    assert loads(canonical(value)) == value
