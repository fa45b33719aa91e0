"""Paired comparison of a candidate with a base, cell by cell and variant by variant.

Cells. A cell is ``passed`` of ``n`` measured trials on each side — two small binomial counts —
so the test is Fisher's exact test (two-sided), and its p-values are corrected with Holm's
step-down method over every cell compared, which holds the chance of *any* false regression in
the comparison to ``alpha``. The difference's interval is Newcombe's hybrid score interval (built
from the two Wilson intervals, sensible at 0%, 100% and n = 1). A cell is

- ``unchanged`` when that interval lies within ±``margin``;
- ``regressed`` / ``improved`` when the corrected test rejects at ``alpha`` (and it is not
  unchanged);
- ``inconclusive`` otherwise, with the trials a side that would decide it at the rates seen.

Variants. The change is the paired mean difference of per-case pass rates over the cases both
sides measured, its standard error from the spread of the per-case differences (the case is the
cluster), a Student-t interval and the correlation of the two sides' per-case rates (Miller,
"Adding Error Bars to Evals", 2024, §4: pairing removes the case-difficulty variance the two runs
share). A variant is ``unchanged`` when the interval lies within ±``variant_margin``,
``regressed``/``improved`` when it excludes zero, else ``inconclusive``.

Plain data in, typed records out; nothing here reads a run or a database.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._dist import fisher_exact, normal_cdf, t_quantile
from ._estimate import CONFIDENCE, Interval, wilson

__all__ = [
    "ALPHA",
    "CELL_MARGIN",
    "VARIANT_MARGIN",
    "CellChange",
    "Counts",
    "Pair",
    "PairedComparison",
    "VariantChange",
    "compare_paired",
    "difference_interval",
    "holm",
]

ALPHA = 0.05
CELL_MARGIN = 0.2
VARIANT_MARGIN = 0.05
MAX_TRIALS = 1000  # beyond this "trials that would decide it" is reported as "more than"
Change = Literal["regressed", "improved", "unchanged", "inconclusive"]


@dataclass(frozen=True)
class Counts:
    """``passed`` of ``n`` measured trials (void and skipped excluded)."""

    passed: int
    n: int

    @property
    def rate(self) -> float:
        return self.passed / self.n


@dataclass(frozen=True)
class Pair:
    """One cell measured on both sides, on the same case content, harness and model."""

    case_id: str
    variant: str
    base: Counts
    candidate: Counts


@dataclass(frozen=True)
class CellChange:
    case_id: str
    variant: str
    status: Change
    base: Counts
    candidate: Counts
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    trials_to_decide: int | None = None  # inconclusive only: trials a side (None: > MAX_TRIALS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "delta": self.delta,
            "delta_ci_low": self.ci_low,
            "delta_ci_high": self.ci_high,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "trials_to_decide": self.trials_to_decide,
        }


@dataclass(frozen=True)
class VariantChange:
    variant: str
    status: Change
    cases: int  # shared cases the difference is over
    dropped: int  # cases only one side measured (or measured differently), left out
    base_mean: float | None
    candidate_mean: float | None
    delta: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    correlation: float | None  # of the per-case pass rates; None when a side does not vary
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "variant": self.variant,
            "status": self.status,
            "cases": self.cases,
            "dropped": self.dropped,
            "base_mean": self.base_mean,
            "candidate_mean": self.candidate_mean,
            "delta": self.delta,
            "se": self.se,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "correlation": self.correlation,
        }
        if self.why:
            out["why"] = self.why
        return out


@dataclass(frozen=True)
class PairedComparison:
    alpha: float
    margin: float
    variant_margin: float
    cells: list[CellChange] = field(default_factory=list)
    variants: list[VariantChange] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return any(c.status == "regressed" for c in self.cells) or any(
            v.status == "regressed" for v in self.variants
        )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error held at the level compared with)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


@functools.lru_cache(maxsize=8192)
def difference_interval(base: Counts, cand: Counts, confidence: float = CONFIDENCE) -> Interval:
    """Newcombe's hybrid score interval for ``cand.rate - base.rate``."""
    b, c = wilson(base.passed, base.n, confidence), wilson(cand.passed, cand.n, confidence)
    assert b is not None and c is not None
    p1, p2 = base.rate, cand.rate
    d = p2 - p1
    low = d - math.sqrt((p2 - c.low) ** 2 + (b.high - p1) ** 2)
    high = d + math.sqrt((c.high - p2) ** 2 + (p1 - b.low) ** 2)
    return Interval(max(-1.0, low), min(1.0, high))


def _decided(base: Counts, cand: Counts, level: float, margin: float) -> bool:
    if difference_interval(base, cand).within(margin):
        return True
    if base.n + cand.n <= 60:
        return fisher_exact(base.passed, base.n, cand.passed, cand.n) <= level
    # A projection, not a verdict: past small counts the pooled z-test tells the same at a
    # fraction of Fisher's cost (it is asked at a dozen sizes for every undecided cell).
    pooled = (base.passed + cand.passed) / (base.n + cand.n)
    spread = pooled * (1 - pooled) * (1 / base.n + 1 / cand.n)
    if spread <= 0:
        return False
    z = abs(cand.rate - base.rate) / math.sqrt(spread)
    return 2 * (1 - normal_cdf(z)) <= level


def trials_to_decide(base: Counts, cand: Counts, level: float, margin: float) -> int | None:
    """The fewest trials a side that, at the pass rates seen, would make the cell unchanged or
    significant at ``level``; ``None`` when not even ``MAX_TRIALS`` would."""
    return _trials_to_decide(base, cand, level, margin)


@functools.lru_cache(maxsize=4096)  # a suite's cells repeat a few counts over and over
def _trials_to_decide(base: Counts, cand: Counts, level: float, margin: float) -> int | None:
    """The fewest trials a side that, at the pass rates seen, would make the cell unchanged or
    significant at ``level``; ``None`` when not even ``MAX_TRIALS`` would."""

    def at(n: int) -> bool:
        return _decided(Counts(round(base.rate * n), n), Counts(round(cand.rate * n), n), level, margin)

    lo = max(base.n, cand.n)
    hi = max(lo + 1, 2)
    while not at(hi):
        if hi >= MAX_TRIALS:
            return None
        lo, hi = hi, min(hi * 2, MAX_TRIALS)
    while hi - lo > 1:  # at(hi) holds, at(lo) does not (or lo is what was run)
        mid = (lo + hi) // 2
        if at(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _cell_changes(pairs: Sequence[Pair], alpha: float, margin: float) -> list[CellChange]:
    p = [fisher_exact(x.base.passed, x.base.n, x.candidate.passed, x.candidate.n) for x in pairs]
    adjusted = holm(p)
    level = alpha / max(len(pairs), 1)  # the strictest Holm step: what deciding one cell needs
    out = []
    for pair, raw, adj in zip(pairs, p, adjusted):
        b, c = pair.base, pair.candidate
        ci = difference_interval(b, c)
        delta = c.rate - b.rate
        status: Change
        if ci.within(margin):
            status = "unchanged"
        elif adj <= alpha:
            status = "regressed" if delta < 0 else "improved"
        else:
            status = "inconclusive"
        more = trials_to_decide(b, c, level, margin) if status == "inconclusive" else None
        out.append(CellChange(pair.case_id, pair.variant, status, b, c, delta, ci.low,
                              ci.high, raw, adj, more))
    return out


def _correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-15 or syy <= 1e-15:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def _variant_change(variant: str, pairs: Sequence[Pair], dropped: int, margin: float) -> VariantChange:
    n = len(pairs)
    if n == 0:
        return VariantChange(variant, "inconclusive", 0, dropped, None, None, None, None, None,
                             None, None, "no case measured on both sides")
    base = [x.base.rate for x in pairs]
    cand = [x.candidate.rate for x in pairs]
    diffs = [c - b for b, c in zip(base, cand)]
    mean = sum(diffs) / n
    spread = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(spread / n)
    if n == 1 or spread <= 1e-15:
        # Every case moved alike (often: none moved): the spread says nothing about the noise,
        # so the interval is the pooled trials' difference interval instead of a point.
        pooled = difference_interval(
            Counts(sum(x.base.passed for x in pairs), sum(x.base.n for x in pairs)),
            Counts(sum(x.candidate.passed for x in pairs), sum(x.candidate.n for x in pairs)),
        )
        ci = Interval(min(pooled.low, mean), max(pooled.high, mean))
    else:
        half = t_quantile(0.5 + CONFIDENCE / 2, n - 1) * se
        ci = Interval(max(-1.0, mean - half), min(1.0, mean + half))
    status: Change
    if ci.within(margin):
        status = "unchanged"
    elif ci.high < 0:
        status = "regressed"
    elif ci.low > 0:
        status = "improved"
    else:
        status = "inconclusive"
    return VariantChange(variant, status, n, dropped, sum(base) / n, sum(cand) / n, mean, se,
                         ci.low, ci.high, _correlation(base, cand))


def compare_paired(
    pairs: Sequence[Pair],
    *,
    alpha: float = ALPHA,
    margin: float = CELL_MARGIN,
    variant_margin: float = VARIANT_MARGIN,
    dropped: Mapping[str, int] | None = None,
    variants: Sequence[str] = (),
) -> PairedComparison:
    """Every pair's cell change (Holm-corrected over all of them) and each variant's paired
    mean difference. ``dropped``: per variant, the cases left out because only one side measured
    them (reported, not compared); ``variants``: labels to report even with no pair."""
    dropped = dict(dropped or {})
    by_variant: dict[str, list[Pair]] = {v: [] for v in variants}
    for x in pairs:
        by_variant.setdefault(x.variant, []).append(x)
    for v in dropped:
        by_variant.setdefault(v, [])
    return PairedComparison(
        alpha,
        margin,
        variant_margin,
        _cell_changes(pairs, alpha, margin),
        [_variant_change(v, ps, dropped.get(v, 0), variant_margin) for v, ps in by_variant.items()],
    )
