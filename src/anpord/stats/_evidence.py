"""A cell's own anytime-valid upper bound on its pass rate: a betting capital on a grid.

``down[q]`` bets that the cell's rate is below ``q`` (Waudby-Smith & Ramdas, "Estimating means
of bounded random variables by betting", JRSS-B 2023, with plug-in Kelly bets for a pass/fail
outcome and the cell's baseline as a first pseudo-observation). A trial's bets are fixed when the
trial is issued, from the outcomes folded in by then, so trials running at once may finish in
any order. Under the cell's true rate ``p``, ``down[q]`` for every grid point ``q ≤ p``
is a nonnegative supermartingale: by Ville's inequality it reaches ``1/level`` at any trial with
probability at most ``level``, so the bound may be checked after every trial.
"""

from __future__ import annotations

import math

__all__ = ["GRID", "Bets", "CellEvidence"]

GRID = 200
_QS = tuple(g / GRID for g in range(GRID + 1))

Bets = tuple[float, ...]  # per grid point: the stake on the rate being below it


class CellEvidence:
    """One cell's capital on the grid, betting its rate is below each candidate."""

    def __init__(self, prior_mean: float, cap: float = 0.9):
        self.prior_mean, self.cap = prior_mean, cap
        self.down = [0.0] * len(_QS)  # log-capital betting the rate is below q
        self.n = 0
        self._total = 0.0

    @property
    def mean(self) -> float:
        """The running mean the bets lean on (the baseline counts as one observation)."""
        return (self.prior_mean + self._total) / (1 + self.n)

    def bets(self) -> Bets:
        """The bets for the next trial of this cell, from what has been folded in so far: the
        Kelly bet for a pass/fail outcome at the running mean, ``(q − p̂) / (q (1 − q))``, on
        the rate being below ``q``, clipped to stake at most ``cap`` of the capital."""
        m, cap = self.mean, self.cap
        return tuple(_kelly(q - m, q, cap / (1 - q) if q < 1 else 1e3) for q in _QS)

    def fold(self, x: float, bets: Bets) -> None:
        """Fold in one outcome in [0, 1] with the bets it was issued with."""
        for g, q in enumerate(_QS):
            if bets[g]:
                self.down[g] += math.log1p(bets[g] * (q - x))
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
