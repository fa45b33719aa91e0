"""Comparing cells with their baselines: ``regressed``, ``improved``, ``unchanged`` or
``incomparable``, with the reason in words.

A cell is a case on a variant label. Two readings of it compare when both measured something
(void and skipped trials measure nothing) and they measured the same thing: the same case content
(its hash), harness and model. Then the pass rate decides: a drop of at least the threshold
(0.2 by default) is a regression, a rise of at least it an improvement. A cell that was
deterministic and no longer is, without its pass rate going up, regressed too (it became flaky).
Nothing here touches a database: the store hands cell rows in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._rows import CellRow

__all__ = ["DEFAULT_THRESHOLD", "STATUSES", "CellComparison", "Comparison", "compare_cell"]

DEFAULT_THRESHOLD = 0.2
Status = Literal["regressed", "improved", "unchanged", "incomparable"]
STATUSES: tuple[Status, ...] = ("regressed", "improved", "unchanged", "incomparable")
_EPSILON = 1e-9  # 1.0 - 0.8 is 0.19999999999999996: still a drop of 0.2


@dataclass(frozen=True)
class CellComparison:
    case_id: str
    variant: str
    status: Status
    reason: str
    base: CellRow | None
    candidate: CellRow

    @property
    def delta(self) -> float | None:
        b, c = _rate(self.base), _rate(self.candidate)
        return None if b is None or c is None else c - b

    def line(self) -> str:
        """``weather/rain  python/small  regressed: pass rate 100% → 33% (baseline …)``"""
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
                "pass_rate": s.pass_rate if s else None,
                "deterministic": s.deterministic if s else None,
            }

        return {
            "case_id": self.case_id,
            "variant": self.variant,
            "status": self.status,
            "reason": self.reason,
            "delta": self.delta,
            "base": side(self.base),
            "candidate": side(self.candidate),
        }


@dataclass
class Comparison:
    """A candidate run's cells against a base: a run, or each cell's baseline (``base_run`` None)."""

    candidate_run: str
    base_run: str | None
    threshold: float
    cells: list[CellComparison] = field(default_factory=list)
    only_in_base: int = 0  # cells the base run has and the candidate does not

    def of(self, status: str) -> list[CellComparison]:
        return [c for c in self.cells if c.status == status]

    @property
    def regressed(self) -> list[CellComparison]:
        return self.of("regressed")

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
            "counts": self.counts(),
            "only_in_base": self.only_in_base,
            "cells": [c.to_dict() for c in self.cells],
        }


def _rate(row: CellRow | None) -> float | None:
    return row.summary.pass_rate if row is not None and row.summary is not None else None


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _changes(base: CellRow, cand: CellRow) -> list[str]:
    out = []
    if base.case_hash and cand.case_hash and base.case_hash != cand.case_hash:
        out.append(f"the case changed (content {base.case_hash[:8]} → {cand.case_hash[:8]})")
    for what in ("harness", "model"):
        b, c = getattr(base, what), getattr(cand, what)
        if b != c:
            out.append(f"{what} {b or 'none'} → {c or 'none'}")
    return out


def compare_cell(
    base: CellRow | None,
    cand: CellRow,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    missing: str = "no earlier reading",
) -> CellComparison:
    """One cell against its base reading (``None``: there is none; ``missing`` says why)."""

    def result(status: Status, reason: str) -> CellComparison:
        return CellComparison(cand.case_id, cand.variant, status, reason, base, cand)

    if cand.measured == 0:
        return result("incomparable", "nothing measured (every trial void or skipped)")
    if base is None:
        return result("incomparable", missing)
    where = f"base {base.run_id}"
    if base.run_id == cand.run_id:
        return result("incomparable", "this reading is the baseline")
    if base.measured == 0:
        return result("incomparable", f"nothing measured in the {where}")
    changes = _changes(base, cand)
    if changes:
        return result("incomparable", "; ".join(changes) + f" since the {where}")
    b, c = base.summary, cand.summary
    assert b is not None and c is not None and b.pass_rate is not None and c.pass_rate is not None
    delta = c.pass_rate - b.pass_rate
    move = f"pass rate {_pct(b.pass_rate)} → {_pct(c.pass_rate)} ({where})"
    if delta <= -threshold + _EPSILON:
        return result("regressed", move)
    if b.deterministic and not c.deterministic and delta <= _EPSILON:
        return result("regressed", f"no longer deterministic, {move}")
    if delta >= threshold - _EPSILON:
        return result("improved", move)
    return result("unchanged", move)


def compare_cells(
    candidate_run: str,
    cands: Sequence[CellRow],
    bases: dict[tuple[str, str], CellRow],
    threshold: float,
    *,
    base_run: str | None = None,
    only_in_base: int = 0,
) -> Comparison:
    missing = (
        f"not in base run {base_run}"
        if base_run
        else "no other reading to compare with: this is its baseline"
    )
    cmp = Comparison(candidate_run, base_run, threshold, only_in_base=only_in_base)
    cmp.cells = [
        compare_cell(bases.get((c.case_id, c.variant)), c, threshold, missing=missing)
        for c in cands
        if c.summary is not None
    ]
    return cmp
