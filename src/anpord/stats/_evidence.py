"""A cell's own anytime-valid evidence about its pass rate: two betting capitals on a grid.

``up[q]`` bets that the cell's rate is above ``q``, ``down[q]`` that it is below (Waudby-Smith &
Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 2023, with plug-in
Kelly bets for a pass/fail outcome and the cell's baseline as a first pseudo-observation). A trial's bets are fixed
when the trial is issued, from the outcomes folded in by then, so trials running at once may
finish in any order. Under the cell's true rate ``p``, ``down[q]`` for every grid point ``q ≤ p``
is a nonnegative supermartingale: by Ville's inequality it reaches ``1/level`` at any trial with
probability at most ``level``, so the bound may be checked after every trial.
"""

from __future__ import annotations

import math

__all__ = ["GRID", "Bets", "CellEvidence"]

GRID = 200
_QS = tuple(g / GRID for g in range(GRID + 1))

Bets = tuple[tuple[float, ...], tuple[float, ...]]  # per grid point: (bets up, bets down)


class CellEvidence:
    """One cell's two capitals on the grid."""

    def __init__(self, prior_mean: float, cap: float = 0.9):
        self.prior_mean, self.cap = prior_mean, cap
        self.up = [0.0] * len(_QS)
        self.down = [0.0] * len(_QS)
        self.n = 0
        self._total = 0.0

    @property
    def mean(self) -> float:
        """The running mean the bets lean on (the baseline counts as one observation)."""
        return (self.prior_mean + self._total) / (1 + self.n)

    def bets(self) -> Bets:
        """The bets for the next trial of this cell, from what has been folded in so far: the
        Kelly bet for a pass/fail outcome at the running mean, ``(p̂ − q) / (q (1 − q))``,
        clipped to stake at most ``cap`` of the capital."""
        m = self.mean
        ups, downs = [], []
        for q in _QS:
            ups.append(_kelly(m - q, q, self.cap / q if q > 0 else 1e3))
            downs.append(_kelly(q - m, q, self.cap / (1 - q) if q < 1 else 1e3))
        return tuple(ups), tuple(downs)

    def fold(self, x: float, bets: Bets) -> None:
        """Fold in one outcome in [0, 1] with the bets it was issued with."""
        ups, downs = bets
        for g, q in enumerate(_QS):
            if ups[g]:
                self.up[g] += math.log1p(ups[g] * (x - q))
            if downs[g]:
                self.down[g] += math.log1p(downs[g] * (q - x))
        self.n += 1
        self._total += x

    def upper(self, level: float) -> float:
        """This cell's one-sided upper bound at ``level``, widened by a grid step."""
        bar = math.log(1 / level)
        kept = [q for g, q in enumerate(_QS) if self.down[g] < bar]
        return min(1.0, kept[-1] + 1 / GRID) if kept else 0.0

    def upper_after_failures(self, extra: int, level: float) -> float:
        """What ``upper(level)`` would be after ``extra`` more trials that all fail: whether a
        drop can still be shown within the trials left."""
        down, n, total = list(self.down), self.n, self._total
        for _ in range(extra):
            m = (self.prior_mean + total) / (1 + n)
            for g, q in enumerate(_QS):
                lam = _kelly(q - m, q, self.cap / (1 - q) if q < 1 else 1e3)
                if lam:
                    down[g] += math.log1p(lam * q)
            n += 1
        bar = math.log(1 / level)
        kept = [q for g, q in enumerate(_QS) if down[g] < bar]
        return min(1.0, kept[-1] + 1 / GRID) if kept else 0.0


def _kelly(edge: float, q: float, limit: float) -> float:
    """The growth-optimal stake on a pass/fail outcome with the given edge over ``q``."""
    if edge <= 0:
        return 0.0
    return min(edge / (q * (1 - q)), limit) if 0 < q < 1 else limit
