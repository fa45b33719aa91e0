"""What a model call cost, from a table of per-million-token prices the user can extend.

An unknown model has no price and its calls cost ``None`` — a local model is not free by
accident, and a missing price never reads as 0 in a report."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._types import Usage

__all__ = [
    "PRICES_CHECKED", "Price", "cost_of", "parse_pricing", "price_for", "register_price", "token_cost",
]

# US dollars per million tokens, as OpenAI lists them for standard (not batch, flex or priority)
# requests with prompts under the long-context threshold.
PRICES_CHECKED = "2026-11-30"


@dataclass(frozen=True)
class Price:
    """Per-million-token prices. ``cached_input`` defaults to the input price."""

    input: float
    output: float
    cached_input: float | None = None

    def __post_init__(self) -> None:
        for key in ("input", "output", "cached_input"):
            value = getattr(self, key)
            if value is None and key == "cached_input":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(
                    f"price {key} must be a number of dollars per million tokens, got {value!r}"
                )

    def cost(self, usage: Usage) -> float | None:
        if usage.input_tokens is None or usage.output_tokens is None:
            return None
        cached = min(usage.cached_input_tokens or 0, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        dollars = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_rate
            + usage.output_tokens * self.output
        )
        return dollars / 1_000_000


_BUILTIN: dict[str, Price] = {
    "gpt-5.5": Price(5.00, 30.00, 0.50),
    "gpt-5.4": Price(2.50, 15.00, 0.25),
    "gpt-5.4-mini": Price(0.75, 4.50, 0.075),
    "gpt-5.4-nano": Price(0.20, 1.25, 0.02),
    "gpt-5.2": Price(1.75, 14.00, 0.175),
    "gpt-5.1": Price(1.25, 10.00, 0.125),
    "gpt-5": Price(1.25, 10.00, 0.125),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "o3": Price(2.00, 8.00, 0.50),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o1": Price(15.00, 60.00, 7.50),
}
_registered: dict[str, Price] = {}

# A dated snapshot ("gpt-4o-2024-08-06") is priced as its model.
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def register_price(
    model: str, *, input: float, output: float, cached_input: float | None = None
) -> Price:
    """Price ``model`` (dollars per million tokens) for every later call in this process."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"register_price needs a model id, got {model!r}")
    price = Price(input, output, cached_input)
    _registered[model] = price
    return price


def registered_prices() -> dict[str, Price]:
    """What ``register_price`` has priced in this process (a copy): a process that prices calls
    for this one (the model proxy's) is sent it."""
    return dict(_registered)


def parse_pricing(raw: Any, model: str | None = None) -> dict[str, Price]:
    """``options={"pricing": ...}`` → prices by model. Either ``{"model-id": {"input": .., "output": ..}}``
    or, for the variant's own model, ``{"input": .., "output": ..}``. Raises ValueError naming the key."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"pricing must be a dict, got {type(raw).__name__}")
    fields = {"input", "output", "cached_input"}
    if raw and set(raw) <= fields:
        if model is None:
            raise ValueError("pricing gives prices but there is no model to apply them to")
        raw = {model: raw}
    out = {}
    for name, entry in raw.items():
        if (
            not isinstance(entry, Mapping)
            or not {"input", "output"} <= set(entry)
            or set(entry) - fields
        ):
            raise ValueError(
                f"pricing[{name!r}] must be {{'input': $, 'output': $[, 'cached_input': $]}}, got {entry!r}"
            )
        try:
            out[str(name)] = Price(entry["input"], entry["output"], entry.get("cached_input"))
        except ValueError as exc:
            raise ValueError(f"pricing[{name!r}]: {exc}") from None
    return out


def price_for(model: str | None, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: the overrides, then registered prices, then the built-in table."""
    if not model:
        return None
    tables = (overrides, _registered, _BUILTIN) if overrides else (_registered, _BUILTIN)
    for table in tables:
        if model in table:
            return table[model]
    bare = _SNAPSHOT.sub("", model)  # only when the name as given has no price: a regex costs
    if bare != model:
        for table in tables:
            if bare in table:
                return table[bare]
    return None


def cost_of(
    model: str | None, usage: Usage, overrides: Mapping[str, Price] | None = None
) -> float | None:
    price = price_for(model, overrides)
    return None if price is None else price.cost(usage)


def token_cost(
    model: Any,
    input_tokens: Any,
    output_tokens: Any,
    cached_input_tokens: Any = None,
    overrides: Mapping[str, Price] | None = None,
) -> float | None:
    """The price of one call from its token counts as a provider or a span reported them (ints,
    or digit strings), rounded to 1e-10 dollars; ``None`` when the model or a count is unknown.
    Shared by the trace mapping and the model proxy so both price a call alike; ``overrides``
    (a variant's ``options["pricing"]``) come first."""
    if not isinstance(model, str):
        return None
    counts = [_count(v) for v in (input_tokens, output_tokens, cached_input_tokens)]
    if counts[0] is None or counts[1] is None:
        return None
    price = price_for(model, overrides)
    if price is None:
        return None
    cost = price.cost(Usage(counts[0], counts[1], counts[2]))
    return None if cost is None else round(cost, 10)


def _count(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None
