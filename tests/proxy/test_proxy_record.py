"""The record the proxy writes for one call: its usage priced by anpord's table, cached input at
the cached rate, the same way a traced span's call is priced."""

from __future__ import annotations

import json
from typing import Any

import pytest

from anpord.models import token_cost
from anpord.proxy._providers import route_of
from anpord.proxy._record import call_record


def _record(path: str, request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    route = route_of("POST", path, {})
    assert route is not None
    return call_record(route, "POST", path, json.dumps(request).encode(), "k", 200,
                       json.dumps(answer).encode(), "application/json", latency=0.1, first_byte=0.05,
                       error=None, redact=lambda text: text, upstream=None)


def test_a_chat_call_is_priced_with_its_cached_input_at_the_cached_rate() -> None:
    usage = {"prompt_tokens": 10_000, "completion_tokens": 2_000,
             "prompt_tokens_details": {"cached_tokens": 8_000}}
    data = _record("/v1/chat/completions", {"model": "gpt-4.1-mini", "messages": []},
                   {"model": "gpt-4.1-mini", "choices": [], "usage": usage})
    assert data["cached_input_tokens"] == 8_000
    # gpt-4.1-mini: 0.40 in, 0.10 cached in, 1.60 out, per million tokens
    assert data["cost"] == pytest.approx((2_000 * 0.40 + 8_000 * 0.10 + 2_000 * 1.60) / 1e6)
    assert data["cost"] < (10_000 * 0.40 + 2_000 * 1.60) / 1e6  # less than all input at full rate


def test_an_anthropic_call_of_an_unpriced_model_costs_none_not_zero() -> None:
    data = _record("/v1/messages", {"model": "claude-unlisted", "messages": []},
                   {"model": "claude-unlisted", "usage": {"input_tokens": 5, "output_tokens": 7}})
    assert data["input_tokens"] == 5 and data["output_tokens"] == 7
    assert data["cost"] is None


def test_token_cost_takes_counts_as_providers_and_spans_report_them() -> None:
    assert token_cost("gpt-4o", 1_000_000, 0) == pytest.approx(2.50)
    assert token_cost("gpt-4o-2024-08-06", "1000000", "0", "1000000") == pytest.approx(1.25)
    assert token_cost("gpt-4o", None, 10) is None
    assert token_cost("gpt-4o", "many", 10) is None
    assert token_cost("no-such-model", 10, 10) is None
    assert token_cost(None, 10, 10) is None


# Bodies whose reading differs between parsers: each must read as the standard library reads it
# (the replay key is made from the value, and recordings made before must still match).
_TRICKY_BODIES = [
    b'{"model": "m", "seed": 12345678901234567890123}',  # past 64 bits: orjson would give a float
    b'{"n": -9223372036854775809, "m": 18446744073709551615}',
    b'{"t": NaN, "u": Infinity, "v": 1e400}',
    b'{"s": "\\ud800 lone surrogate"}',
    b'\xff\xfe{"not": "utf-8"}',
    b'\xef\xbb\xbf{"bom": 1}',
    b'{"a": 1, "a": 2}',
    b'[1.0, -0.0, 1E2, 0.1, 5e-324, "\\u2028", "caf\xc3\xa9"]',
    b'{"a": 1}{"b": 2}',
    b'plain text',
]


@pytest.mark.parametrize("body", _TRICKY_BODIES)
def test_a_body_reads_as_the_standard_library_reads_it(body: bytes) -> None:
    from anpord.proxy._record import decoded_body, request_key

    text = body.decode("utf-8", "replace")
    try:
        expected: Any = json.loads(text)
    except ValueError:
        expected = text
    got = decoded_body(body)
    assert repr(got) == repr(expected)  # repr: NaN is not equal to itself, and 1 == 1.0
    assert request_key("POST", "/v1/chat/completions", body, {}) == request_key(
        "POST", "/v1/chat/completions", body, {}, decoded=expected)
