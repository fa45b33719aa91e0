"""``LimitWatcher`` on its own: the running total by the record's one-source rule, cost from the
report or the price table (the variant's own prices first), implausible figures left out, and one
breach."""

from __future__ import annotations

from anpord.events import Event
from anpord.runner._limits import Breach, LimitWatcher, usd


def _watch(tokens: int | None = None, cost: float | None = None, **kw) -> tuple[LimitWatcher, list[Breach]]:  # type: ignore[no-untyped-def]
    seen: list[Breach] = []
    return LimitWatcher(tokens, cost, on_breach=seen.append, **kw), seen


def test_the_harness_report_replaces_the_proxys_once_it_arrives() -> None:
    w, seen = _watch(1000, model="gpt-4o")
    w.see(Event("model.called", {"source": "proxy", "input_tokens": 600, "output_tokens": 0}))
    assert w.totals[0] == 600
    w.see(Event("usage", {"input_tokens": 300, "output_tokens": 0}))  # the same call, as the CLI says
    assert w.totals[0] == 300
    w.see(Event("model.called", {"source": "proxy", "input_tokens": 600, "output_tokens": 0}))
    assert seen == [] and w.totals[0] == 300  # the proxy's 1,200 are not the trial's count
    w.see(Event("usage", {"input_tokens": 701, "output_tokens": 0}))
    assert [b.reason for b in seen] == ["token limit reached: 1,001 tokens of 1,000"]
    w.see(Event("usage", {"input_tokens": 5000, "output_tokens": 0}))
    assert len(seen) == 1  # one breach: the agent is stopped once


def test_cost_from_the_variants_prices_before_the_table() -> None:
    w, seen = _watch(cost=1.0, model="gpt-4o", options={"pricing": {"input": 10.0, "output": 0.0}})
    w.see(Event("usage", {"input_tokens": 50_000, "output_tokens": 0}))  # $0.50 at $10 per million
    assert seen == [] and abs(w.totals[1] - 0.5) < 1e-9
    w.see(Event("usage", {"input_tokens": 60_000, "output_tokens": 0, "model": "gpt-4o"}))
    assert [b.reason for b in seen] == ["cost limit reached: $1.10 of $1.00"]


def test_implausible_figures_count_nothing_and_an_unknown_cost_is_settled_at_the_end() -> None:
    w, seen = _watch(100, 1.0, model="house-7")
    w.see(Event("usage", {"input_tokens": float("inf"), "output_tokens": -5, "cost": float("nan")}))
    w.see(Event("usage", {"input_tokens": 10, "output_tokens": 10}))
    assert seen == [] and w.totals[0] == 20
    final = w.final()
    assert final is not None and final.verdict == "void" and "house-7" in final.reason


def test_dollars_read_as_people_write_them() -> None:
    assert [usd(x) for x in (2.5, 0.5, 0.0123, 0.00001, 1234.5)] == [
        "$2.50", "$0.50", "$0.0123", "$0.00001", "$1,234.50"]
