"""Token and cost limits per trial, watched live.

A ``LimitWatcher`` sees every event as the trial records it and keeps the trial's running totals
by the same one-source rule as the record (``events.usage_events``): the harness's own ``usage``
reports, else the model proxy's ``model.called`` events, else trace spans' — each source summed
apart, the first that has reported anything counted. Cost per call: the cost reported, else its
tokens at the price table's rate (``models._pricing``, with the variant's ``options["pricing"]``).
The moment a total passes its limit the watcher calls ``on_breach`` once, and the trial stops its
agent (the turn is cancelled; a command's process tree is killed with it) and fails naming it.

A call whose cost cannot be known (its model has no price and none was reported) under a
``cost_limit`` makes the limit impossible to hold. That is only settled when the trial ends — a
coding CLI reports its own cost at the end of its turn, after the proxy has seen its calls — so
``final`` then makes a trial that would otherwise pass ``void``, not measured, rather than passing
with a spend nobody checked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..events import MODEL_CALLED, USAGE, Event
from ..results._text import usd
from ..results._usage import valid_number

__all__ = ["Breach", "LimitWatcher", "cost_reason", "token_reason", "unpriced_warnings", "usd"]

_SOURCES = ("harness", "proxy", "trace")


@dataclass(frozen=True)
class Breach:
    """Why the watcher stopped the trial: ``verdict`` is ``failed`` (a limit passed) or ``void``
    (a cost limit that could not be checked)."""

    verdict: str
    reason: str


def token_reason(used: float, limit: int) -> str:
    return f"token limit reached: {used:,.0f} tokens of {limit:,}"


def cost_reason(spent: float, limit: float) -> str:
    return f"cost limit reached: {usd(spent)} of {usd(limit)}"


@functools.lru_cache(maxsize=1)
def _pricing() -> tuple[Any, Any]:
    """``cost_of`` and ``Usage``, imported once, on a trial's first unpriced call (the models
    package is not imported by runs that never need a price)."""
    from ..models._pricing import cost_of
    from ..models._types import Usage

    return cost_of, Usage


def _source(event: Event) -> str | None:
    if event.type == USAGE:
        return "harness"
    if event.type == MODEL_CALLED:
        return "trace" if event.data.get("source") == "trace" else "proxy"
    return None


class _Meter:
    __slots__ = ("tokens", "cost", "unpriced", "seen")

    def __init__(self) -> None:
        self.tokens = 0.0
        self.cost = 0.0
        self.unpriced: str | None = None  # the first model whose call had no known cost
        self.seen = False


class LimitWatcher:
    """One trial's token and cost totals against its limits."""

    def __init__(self, token_limit: int | None, cost_limit: float | None, *, model: str | None,
                 options: Mapping[str, Any] | None = None,
                 on_breach: Callable[[Breach], None] = lambda _b: None,
                 on_spend: Callable[[float], None] | None = None):
        self.token_limit, self.cost_limit = token_limit, cost_limit
        # The run's --max-run-cost: told the trial's known spend so far after each call.
        self.on_spend = on_spend
        self.model = model
        self.on_breach = on_breach
        self.breach: Breach | None = None
        self._meters = {s: _Meter() for s in _SOURCES}
        self._prices: Mapping[str, Any] | None = None
        raw = (options or {}).get("pricing")
        if raw is not None:
            from ..models._pricing import parse_pricing

            try:
                self._prices = parse_pricing(raw, model)
            except ValueError:
                self._prices = None  # the harness reports a bad table itself

    def see(self, event: Event) -> None:
        source = _source(event)
        if source is None or (self.breach is not None and self.on_spend is None):
            return
        data = event.data
        tokens = [data.get(k) for k in ("input_tokens", "output_tokens")]
        counted = [float(v) for k, v in zip(("input_tokens", "output_tokens"), tokens)
                   if v is not None and valid_number(k, v)]
        meter = self._meters[source]
        if not counted and data.get("cost") is None:
            return  # a call with no figures (a failed request) adds nothing
        meter.seen = True
        meter.tokens += sum(counted)
        if self.cost_limit is not None or self.on_spend is not None:
            cost = self._cost(data)
            if cost is None:
                if meter.unpriced is None:
                    meter.unpriced = str(data.get("model") or self.model or "unknown")
            else:
                meter.cost += cost
        if self.on_spend is not None:
            self.on_spend(self._meter().cost)
        if self.breach is None:
            self._check()

    def _cost(self, data: Mapping[str, Any]) -> float | None:
        cost = data.get("cost")
        if cost is not None:
            return float(cost) if valid_number("cost", cost) else None
        cost_of, Usage = _pricing()
        inp, out = data.get("input_tokens"), data.get("output_tokens")
        if not (valid_number("input_tokens", inp) and valid_number("output_tokens", out)):
            return None
        assert inp is not None and out is not None  # valid_number: numbers
        cached = data.get("cached_input_tokens")
        cached_n = int(cached) if cached is not None and valid_number("input_tokens", cached) else None
        usage = Usage(input_tokens=int(inp), output_tokens=int(out), cached_input_tokens=cached_n)
        return cost_of(str(data.get("model") or self.model or ""), usage, self._prices)

    def _meter(self) -> _Meter:
        """The source the trial's totals come from: the first in order that reported anything."""
        return next((m for m in self._meters.values() if m.seen), self._meters["harness"])

    def _check(self) -> None:
        meter = self._meter()
        if self.token_limit is not None and meter.tokens > self.token_limit:
            self._breached(Breach("failed", token_reason(meter.tokens, self.token_limit)))
        elif self.cost_limit is not None and meter.cost > self.cost_limit:
            self._breached(Breach("failed", cost_reason(meter.cost, self.cost_limit)))

    def final(self) -> Breach | None:
        """Once the trial has ended: the breach, or why its cost limit could not be checked (a
        call of the source its totals come from had no known cost)."""
        if self.breach is not None:
            return self.breach
        meter = self._meter()
        if self.cost_limit is not None and meter.unpriced is not None:
            return Breach("void", (
                f"cost limit {usd(self.cost_limit)} cannot be checked: a call to {meter.unpriced} "
                "reported no cost and the model has no price (register_price, or the variant's "
                "options={'pricing': ...})"))
        return None

    def _breached(self, breach: Breach) -> None:
        self.breach = breach
        self.on_breach(breach)

    @property
    def totals(self) -> tuple[float, float]:
        meter = self._meter()
        return meter.tokens, meter.cost


def unpriced_warnings(cells: Iterable[Any], run_limit: bool = False) -> list[str]:
    """One line per variant run under a cost limit (its own, or the run's ``--max-run-cost``)
    whose model the price table does not know: its trials' cost is known only when the agent
    reports it; a call that reports none makes a trial with a cost limit void, and adds nothing
    to the run's spend."""
    cells = [c for c in cells if (c.cost_limit is not None or run_limit) and c.variant.model]
    if not cells:
        return []  # the price table is not even loaded
    from ..models._pricing import parse_pricing, price_for

    out: dict[str, str] = {}
    for cell in cells:
        v = cell.variant
        if (cell.cost_limit is None and not run_limit) or not v.model or v.label in out:
            continue
        try:
            prices = parse_pricing(v.options["pricing"], v.model) if "pricing" in v.options else None
        except ValueError:
            prices = None
        if price_for(v.model, prices) is None:
            what = ("a call that reports no cost of its own makes its trial void" if cell.cost_limit is not None
                    else "a call that reports no cost of its own adds nothing to --max-run-cost's count")
            out[v.label] = (
                f"anpord eval: warning: variant {v.label} runs under a cost limit but model {v.model} has "
                f"no price: {what} (price it with register_price or options={{'pricing': ...}})")
    return list(out.values())
