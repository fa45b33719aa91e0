"""Intervals at the edges: n = 1, 0%, 100%, nothing measured; the variant's cluster-robust SE."""

from __future__ import annotations

import pytest

from anpord.stats import Counts, Pair, compare_paired, estimate_cell, estimate_variant, wilson


def test_wilson_is_sensible_at_the_edges() -> None:
    assert wilson(0, 0) is None
    one = wilson(1, 1)
    assert one is not None and one.high == 1.0 and 0.0 < one.low < 0.25
    zero = wilson(0, 3)
    assert zero is not None and zero.low == 0.0 and 0.4 < zero.high < 0.6
    full = wilson(3, 3)
    assert full is not None and full.high == 1.0 and 0.4 < full.low < 0.6
    mid = wilson(50, 100)
    assert mid is not None and mid.low == pytest.approx(0.4038, abs=1e-4)
    assert mid.high == pytest.approx(0.5962, abs=1e-4)


def test_a_cell_estimate_carries_rate_interval_and_n() -> None:
    e = estimate_cell(2, 3).to_dict()
    assert e["pass_rate"] == pytest.approx(2 / 3) and e["n"] == 3
    assert e["ci_low"] < 2 / 3 < e["ci_high"]
    assert estimate_cell(0, 0, trials=0).why == "no trial ran"


def test_the_variant_standard_error_is_over_cases_not_trials() -> None:
    # Half the cases always pass, half never: 100 trials each do not make the mean any surer.
    many = estimate_variant([(100, 100)] * 5 + [(0, 100)] * 5, trials=1000)
    few = estimate_variant([(1, 1)] * 5 + [(0, 1)] * 5, trials=10)
    assert many.mean == few.mean == 0.5
    assert many.se == pytest.approx(few.se) and many.se == pytest.approx(0.1667, abs=1e-3)
    assert many.ci_low is not None and many.ci_low < 0.2


def test_a_variant_where_every_case_agrees_still_has_a_width() -> None:
    e = estimate_variant([(3, 3)] * 10, trials=12, void=2)
    assert e.mean == 1.0 and e.ci_high == 1.0 and e.ci_low is not None and e.ci_low < 0.95
    assert e.void_rate == pytest.approx(2 / 12)
    assert estimate_variant([(0, 0)], trials=3, void=3).why is not None


def test_pairing_reports_cases_left_out_and_the_correlation() -> None:
    pairs = [Pair(f"c{i}", "v", Counts(i % 4, 3), Counts(i % 4, 3)) for i in range(20)]
    cmp = compare_paired(pairs, dropped={"v": 3})
    v = cmp.variants[0]
    assert v.cases == 20 and v.dropped == 3 and v.correlation == pytest.approx(1.0)
    assert v.delta == 0 and v.status in ("unchanged", "inconclusive")


def test_the_store_judges_with_the_same_defaults_without_importing_the_statistics() -> None:
    import anpord.stats as stats
    from anpord.store import _compare

    assert (_compare.ALPHA, _compare.VARIANT_MARGIN, _compare.DEFAULT_THRESHOLD) == (
        stats.ALPHA,
        stats.VARIANT_MARGIN,
        stats.CELL_MARGIN,
    )
