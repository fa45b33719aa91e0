"""Comparing cells with their baselines: ``regressed``, ``improved``, ``unchanged``,
``inconclusive`` or ``incomparable``, with the reason in words; and each variant's paired change.

A cell is a case on a variant label. Two readings of it compare when both measured something
(void and skipped trials measure nothing) and they measured the same thing: the same case content
(its hash), harness and model. Comparable cells are judged by ``anpord.stats.compare_paired``:
Fisher's exact test, Holm-corrected over every cell compared, at ``alpha``; ``unchanged`` when
the difference's interval lies within ±threshold; ``inconclusive`` (with the trials that would
decide it) otherwise. Each variant's change is the paired mean difference over its shared cases,
judged against ``variant_margin``. A cell no longer deterministic is not a regression by itself.
Nothing here touches a database: the store hands cell rows in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..results._compare_text import pct as _pct
from ..results._compare_text import signed as _signed
from ..results._compare_text import variant_detail
from ._rows import CellRow

if TYPE_CHECKING:  # pragma: no cover - the statistics load when a comparison is made
    from ..stats import CellChange, VariantChange

__all__ = [
    "DEFAULT_THRESHOLD",
    "STATUSES",
    "CellComparison",
    "Comparison",
    "compare_cell",
    "compare_cells",
]

DEFAULT_THRESHOLD = 0.2
# anpord.stats.ALPHA and VARIANT_MARGIN, without importing the statistics when the store is
# opened at a run's start (a test holds them equal).
ALPHA = 0.05
VARIANT_MARGIN = 0.05
Status = Literal["regressed", "improved", "unchanged", "inconclusive", "incomparable"]
STATUSES: tuple[Status, ...] = ("regressed", "improved", "unchanged", "inconclusive", "incomparable")


@dataclass(frozen=True)
class CellComparison:
    case_id: str
    variant: str
    status: Status
    reason: str
    base: CellRow | None
    candidate: CellRow
    change: CellChange | None = None  # the statistics, for comparable cells

    @property
    def delta(self) -> float | None:
        b, c = _rate(self.base), _rate(self.candidate)
        return None if b is None or c is None else c - b

    def line(self) -> str:
        """``weather/rain  python/small  inconclusive: pass rate 100% → 67% …``"""
        return f"{self.case_id}  {self.variant}  {self.status}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        def side(row: CellRow | None) -> dict[str, Any] | None:
            if row is None:
                return None
            s = row.summary
            return {
                "run_id": row.run_id,
                "case_hash": row.case_hash,
                "harness": row.harness,
                "model": row.model,
                "trials": s.trials if s else 0,
                "passed": s.passed if s else 0,
                "measured": row.measured,
                **_estimate_cell(s.passed if s else 0, row.measured).to_dict(),
                "deterministic": s.deterministic if s else None,
            }

        out = {
            "case_id": self.case_id,
            "variant": self.variant,
            "status": self.status,
            "reason": self.reason,
            "delta": self.delta,
            "base": side(self.base),
            "candidate": side(self.candidate),
        }
        if self.change is not None:
            out.update({k: v for k, v in self.change.to_dict().items() if k not in out})
        return out


@dataclass
class Comparison:
    """A candidate run's cells against a base: a run, or each cell's baseline (``base_run`` None)."""

    candidate_run: str
    base_run: str | None
    threshold: float
    cells: list[CellComparison] = field(default_factory=list)
    only_in_base: int = 0  # cells the base run has and the candidate does not
    alpha: float = ALPHA
    variant_margin: float = VARIANT_MARGIN
    variants: list[VariantChange] = field(default_factory=list)

    def of(self, status: str) -> list[CellComparison]:
        return [c for c in self.cells if c.status == status]

    @property
    def regressed(self) -> list[CellComparison]:
        return self.of("regressed")

    @property
    def regressed_variants(self) -> list[VariantChange]:
        return [v for v in self.variants if v.status == "regressed"]

    @property
    def fails(self) -> bool:
        """What ``--fail-on regressed`` and ``anpord compare``'s exit code go by: a regressed
        cell or a regressed variant."""
        return bool(self.regressed or self.regressed_variants)

    def counts(self) -> dict[str, int]:
        return {s: len(self.of(s)) for s in STATUSES}

    def summary_line(self) -> str:
        n = self.counts()
        return ", ".join(f"{n[s]} {s}" for s in STATUSES)

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate_run,
            "base": self.base_run,
            "threshold": self.threshold,
            "alpha": self.alpha,
            "variant_margin": self.variant_margin,
            "counts": self.counts(),
            "only_in_base": self.only_in_base,
            "variants": [v.to_dict() for v in self.variants],
            "cells": [c.to_dict() for c in self.cells],
        }


def _estimate_cell(passed: int, n: int) -> Any:
    from ..stats import estimate_cell

    return estimate_cell(passed, n)


def _rate(row: CellRow | None) -> float | None:
    return row.summary.pass_rate if row is not None and row.summary is not None else None


def _changes(base: CellRow, cand: CellRow) -> list[str]:
    out = []
    if base.case_hash and cand.case_hash and base.case_hash != cand.case_hash:
        out.append(f"the case changed (content {base.case_hash[:8]} → {cand.case_hash[:8]})")
    for what in ("harness", "model"):
        b, c = getattr(base, what), getattr(cand, what)
        if b != c:
            out.append(f"{what} {b or 'none'} → {c or 'none'}")
    return out


def _incomparable(base: CellRow | None, cand: CellRow, missing: str) -> str | None:
    """Why the two readings cannot be compared, or None when they can."""
    if cand.measured == 0:
        return "nothing measured (every trial void or skipped)"
    if base is None:
        return missing
    if base.run_id == cand.run_id:
        return "this reading is the baseline"
    where = f"base {base.run_id}"
    if base.measured == 0:
        return f"nothing measured in the {where}"
    changes = _changes(base, cand)
    if changes:
        return "; ".join(changes) + f" since the {where}"
    return None


def _reason(change: CellChange, base: CellRow, threshold: float) -> str:
    move = (
        f"pass rate {_pct(change.base.rate)} → {_pct(change.candidate.rate)} (base {base.run_id}), "
        f"Δ {_signed(change.delta)} [{_signed(change.ci_low)}, {_signed(change.ci_high)}]"
    )
    if change.status == "unchanged":
        return f"{move} within ±{threshold:g}"
    if change.status in ("regressed", "improved"):
        return f"{move}, p = {change.p_adjusted:.2g} (Holm)"
    n = change.trials_to_decide
    more = f"about {n} trials a side would decide it" if n else "more than 1000 trials a side"
    return f"{move}: {more}"


def variant_line(v: VariantChange) -> str:
    """``python/small  regressed: mean pass rate …``"""
    return f"{v.variant}  {v.status}: {variant_detail(v)}"


def flaky_bases(
    cands: Sequence[CellRow],
    bases: dict[tuple[str, str], CellRow],
    implicit: set[tuple[str, str]],
    history: Sequence[CellRow],
) -> dict[tuple[str, str], CellRow]:
    """A flaky cell — one whose trials disagreed within a run of its history (earlier readings
    of the same case content, harness and model) — is judged against that whole history, its own
    variation, rather than the one reading that happens to be its first. A baseline a team set
    with ``anpord baseline set`` (not in ``implicit``) is always kept."""
    from ..results._model import summarize_counts

    by_cell: dict[tuple[str, str], list[CellRow]] = {}
    for r in history:
        if r.summary is not None:
            by_cell.setdefault((r.case_id, r.variant), []).append(r)
    out = {}
    for c in cands:
        key = (c.case_id, c.variant)
        base, same = bases.get(key), by_cell.get(key, [])
        if base is None or key not in implicit or len(same) < 2:
            continue
        if not any(r.summary is not None and not r.summary.deterministic for r in same):
            continue
        passed = sum(r.summary.passed for r in same if r.summary is not None)
        n = sum(r.measured for r in same)
        if not 0 < passed < n or n <= base.measured:
            continue
        summary = summarize_counts(c.case_id, c.variant, passed, n - passed)
        out[key] = CellRow(f"history of {len(same)} runs", c.case_id, c.variant, c.case_hash,
                           c.harness, c.model, c.profile, n, summary)
    return out


def compare_cell(
    base: CellRow | None,
    cand: CellRow,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    missing: str = "no earlier reading",
    alpha: float = ALPHA,
) -> CellComparison:
    """One cell against its base reading (``None``: there is none; ``missing`` says why),
    as the only cell compared (no correction for others)."""
    cmp = compare_cells(cand.run_id, [cand], {(cand.case_id, cand.variant): base} if base else {},
                        threshold, alpha=alpha, missing=missing)
    return cmp.cells[0]


def compare_cells(
    candidate_run: str,
    cands: Sequence[CellRow],
    bases: dict[tuple[str, str], CellRow],
    threshold: float,
    *,
    base_run: str | None = None,
    only_in_base: int = 0,
    alpha: float = ALPHA,
    variant_margin: float = VARIANT_MARGIN,
    missing: str | None = None,
    base_only: dict[str, int] | None = None,
) -> Comparison:
    """``base_only``: per variant, cells the base has and the candidate does not (dropped from
    the variant's pairing, and said so)."""
    from ..stats import Counts, Pair, compare_paired

    if missing is None:
        missing = (
            f"not in base run {base_run}"
            if base_run
            else "no other reading to compare with: this is its baseline"
        )
    cmp = Comparison(candidate_run, base_run, threshold, only_in_base=only_in_base, alpha=alpha,
                     variant_margin=variant_margin)
    pairs: list[Pair] = []
    slots: list[tuple[CellRow | None, CellRow, str | None]] = []
    dropped: dict[str, int] = dict(base_only or {})
    variants: list[str] = []
    for c in cands:
        if c.summary is None:
            continue
        if c.variant not in variants:
            variants.append(c.variant)
        base = bases.get((c.case_id, c.variant))
        why = _incomparable(base, c, missing)
        slots.append((base, c, why))
        if why is None:
            assert base is not None and base.summary is not None
            pairs.append(Pair(c.case_id, c.variant, Counts(base.summary.passed, base.measured),
                              Counts(c.summary.passed, c.measured)))
        elif not (base is not None and base.run_id == c.run_id):
            dropped[c.variant] = dropped.get(c.variant, 0) + 1
    paired = compare_paired(pairs, alpha=alpha, margin=threshold, variant_margin=variant_margin,
                            dropped=dropped, variants=variants)
    changes = iter(paired.cells)
    for base, c, why in slots:
        if why is not None:
            cmp.cells.append(CellComparison(c.case_id, c.variant, "incomparable", why, base, c))
            continue
        assert base is not None
        change = next(changes)
        cmp.cells.append(CellComparison(c.case_id, c.variant, change.status,
                                        _reason(change, base, threshold), base, c, change))
    # A variant with no pair at all (a first run: every cell is its own baseline) has nothing
    # to report; one with pairs, or with cells that could not be paired, does.
    cmp.variants = [v for v in paired.variants if v.cases or v.dropped]
    return cmp
