"""Token usage and cost per call: the built-in prices, registered and per-call prices, and an
unknown price that stays unknown (None, never 0)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from anpord.models import (
    ChatClient,
    Price,
    Usage,
    cost_of,
    parse_pricing,
    price_for,
    register_price,
)
from anpord.testing.model_server import rule, text

USAGE = {"prompt_tokens": 2_000, "completion_tokens": 1_000}


def call(url: str, model: str, **kwargs: Any) -> Any:
    async def go() -> Any:
        async with ChatClient(url) as client:
            return await client.chat([{"role": "user", "content": "count"}], model=model, **kwargs)

    return asyncio.run(go())


def test_usage_is_parsed_and_a_known_model_is_priced(model_server: Any) -> None:
    server = model_server([rule("count", text("ok", usage=USAGE))])
    response = call(server.url, "gpt-4o-mini")
    assert response.usage == Usage(input_tokens=2_000, output_tokens=1_000)
    assert response.usage.total_tokens == 3_000
    assert response.cost == pytest.approx(2_000 * 0.15 / 1e6 + 1_000 * 0.60 / 1e6)
    assert response.finish_reason == "stop" and response.model == "gpt-4o-mini"


def test_an_unknown_model_costs_none_until_it_is_priced(model_server: Any) -> None:
    server = model_server([rule("count", text("ok", usage=USAGE))])
    assert call(server.url, "llama3.2:3b").cost is None
    assert call(server.url, "llama3.2:3b", prices={"llama3.2:3b": Price(0.0, 0.0)}).cost == 0.0
    register_price("house-model-v1", input=1.0, output=4.0)
    assert call(server.url, "house-model-v1").cost == pytest.approx(0.002 + 0.004)


def test_missing_token_counts_give_no_cost() -> None:
    assert cost_of("gpt-4o", Usage(input_tokens=None, output_tokens=10)) is None


def test_dated_snapshots_take_their_models_price_and_cached_input_is_cheaper() -> None:
    assert price_for("gpt-4.1-mini-2025-04-14") == price_for("gpt-4.1-mini")
    price = Price(input=2.0, output=8.0, cached_input=0.5)
    # 1M input of which 400k cached, 100k output.
    assert price.cost(Usage(1_000_000, 100_000, 400_000)) == pytest.approx(
        0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 8.0
    )
    assert Price(1.0, 1.0).cost(Usage(1_000_000, 0, 500_000)) == pytest.approx(1.0)


def test_pricing_options_name_a_model_or_apply_to_the_variants_own() -> None:
    assert parse_pricing({"input": 1, "output": 2}, "mine") == {"mine": Price(1, 2)}
    assert parse_pricing({"a": {"input": 1, "output": 2, "cached_input": 0.1}}) == {
        "a": Price(1, 2, 0.1)
    }
    with pytest.raises(ValueError, match=r"pricing\['a'\] must be \{'input': \$, 'output': \$"):
        parse_pricing({"a": {"input": 1}})
    with pytest.raises(
        ValueError, match="price output must be a number of dollars per million tokens"
    ):
        parse_pricing({"input": 1, "output": "free"}, "m")
