"""Estimates with their uncertainty: a cell's pass rate (Wilson score interval) and a variant's
mean of per-case pass rates (cluster-robust standard error, the case as the cluster).

A cell is a binomial count — ``passed`` of ``n`` measured trials — so its interval is Wilson's,
which stays inside [0, 1] and is sensible at n = 1, at 0% and at 100% where the normal
approximation collapses to a point. A variant averages its cases' pass rates: trials of one case
are not independent (the same case is easy or hard every time), so the standard error comes from
the spread of the per-case rates, not from the trial count (Miller, "Adding Error Bars to
Evals", 2024, §2.2).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._dist import normal_quantile, t_quantile

__all__ = [
    "CONFIDENCE",
    "CellEstimate",
    "Interval",
    "VariantEstimate",
    "estimate_cell",
    "estimate_variant",
    "wilson",
]

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def within(self, margin: float) -> bool:
        """Whether the whole interval lies in [-margin, margin] (rounding forgiven)."""
        return self.low >= -margin - 1e-9 and self.high <= margin + 1e-9


@functools.lru_cache(maxsize=8)
def _z(confidence: float) -> float:
    return normal_quantile(0.5 + confidence / 2)


@functools.lru_cache(maxsize=8192)  # a suite's cells repeat a few counts: 3/3, 2/3, …
def wilson(passed: int, n: int, confidence: float = CONFIDENCE) -> Interval | None:
    """Wilson's score interval for ``passed`` of ``n``; ``None`` when nothing was measured."""
    if n <= 0:
        return None
    passed = min(max(passed, 0), n)
    z = _z(confidence)
    p = passed / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    # At 0 and at n one end is exact; say so rather than print 1e-17.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return Interval(low, high)


@dataclass(frozen=True)
class CellEstimate:
    """A cell's pass rate over its ``n`` measured trials, with a 95% interval; when nothing was
    measured, no rate and no interval and ``why`` says so."""

    passed: int
    n: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pass_rate": self.pass_rate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n": self.n,
        }
        if self.why:
            out["no_interval"] = self.why
        return out


def estimate_cell(passed: int, n: int, *, trials: int | None = None) -> CellEstimate:
    if n <= 0:
        why = (
            "no trial ran" if not trials else "nothing measured: every trial void or skipped"
        )
        return CellEstimate(passed, 0, None, None, None, why)
    ci = wilson(passed, n)
    assert ci is not None
    return CellEstimate(passed, n, passed / n, ci.low, ci.high)


@dataclass(frozen=True)
class VariantEstimate:
    """A variant's (or a run's) mean of per-case pass rates over the ``cases`` that measured
    something, its cluster-robust standard error and 95% interval, and the share of its trials
    that were void."""

    cases: int
    trials: int
    mean: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    void_rate: float | None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pass_rate": self.mean,
            "se": self.se,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "cases": self.cases,
            "trials": self.trials,
            "void_rate": self.void_rate,
        }
        if self.why:
            out["no_interval"] = self.why
        return out


def estimate_variant(
    cells: Sequence[tuple[int, int]], *, trials: int = 0, void: int = 0
) -> VariantEstimate:
    """``cells``: (passed, measured) of each case. Cases that measured nothing are left out of
    the mean (their trials count toward ``void_rate``).

    With one case the interval is that case's Wilson interval; when every case has the same rate
    the spread says nothing, so the interval falls back to Wilson's over the pooled trials rather
    than claim a width of zero."""
    void_rate = void / trials if trials else None
    measured = [(k, n) for k, n in cells if n > 0]
    if not measured:
        return VariantEstimate(0, trials, None, None, None, None, void_rate,
                               "nothing measured: every trial void or skipped")
    rates = [k / n for k, n in measured]
    c = len(rates)
    mean = sum(rates) / c
    spread = sum((r - mean) ** 2 for r in rates) / (c - 1) if c > 1 else 0.0
    se = math.sqrt(spread / c)
    if c == 1 or spread <= 1e-15:
        pooled = wilson(sum(k for k, _ in measured), sum(n for _, n in measured))
        assert pooled is not None
        low, high = min(pooled.low, mean), max(pooled.high, mean)
    else:
        half = t_quantile(0.5 + CONFIDENCE / 2, c - 1) * se
        low, high = max(0.0, mean - half), min(1.0, mean + half)
    # One case has no spread to estimate a standard error from: say so rather than print 0.
    return VariantEstimate(c, trials, mean, se if c > 1 else None, low, high, void_rate)
