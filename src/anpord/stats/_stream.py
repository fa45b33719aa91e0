"""One variant's stream of importance-weighted trials for adaptive trials, and its two
one-sided betting capitals (Waudby-Smith & Ramdas, JRSS-B 2023, predictable plug-in bets).
``_adaptive.py`` draws the cells and says what the observations mean; this keeps the capitals."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable

__all__ = ["Draw", "Stream"]


@dataclass
class Draw:
    cell: Hashable  # the drawn cell's key
    weight: float  # K · π_c
    bets: list[tuple[float, float]]  # per grid point: (bet up, bet down), fixed before the draw
    zlow: float = -math.inf  # the range every cell's observation lay in at the draw
    zhigh: float = math.inf
    z: float | None = None
    skip: bool = False  # measured nothing: left out of the stream


class Stream:
    """One group's stream of weighted observations and its two one-sided betting capitals on a
    grid of candidate means that includes the decision point ``pivot`` exactly (so deciding
    needs no slack for values between grid points)."""

    def __init__(self, low: float, high: float, pivot: float, policy: Any,  # AdaptivePolicy
                 fine: float = 0.005, coarse: float = 0.025, near: float = 0.15):
        # Fine steps near the pivot, coarse ones far from it: any grid through the pivot keeps
        # the decision exact, and the bounds shown are widened by the local step.
        points = {low, high, pivot}
        points.update(pivot + i * fine for i in range(-int(near / fine), int(near / fine) + 1))
        x = pivot - near
        while x > low:
            points.add(x)
            x -= coarse
        x = pivot + near
        while x < high:
            points.add(x)
            x += coarse
        self.grid = sorted(g for g in points if low <= g <= high)
        self.pivot, self.policy = pivot, policy
        self.up = [0.0] * len(self.grid)  # log-capital betting the mean is above m
        self.down = [0.0] * len(self.grid)  # … below m
        self.draws: list[Draw] = []
        self.folded = 0
        self.n = 0
        self.seeded = False
        self._sum, self._sq = 0.0, 0.0

    def bets(self, zlow: float, zhigh: float) -> list[tuple[float, float]]:
        """Predictable plug-in bets for the next observation, which lies in [zlow, zhigh]
        whichever cell is drawn."""
        t = self.n + 1
        var = (0.25 + self._sq) / t
        lam = math.sqrt(2 * math.log(2 / self.policy.alpha) / (max(var, 1e-6) * t * math.log(1 + t)))
        cap = self.policy.bet_cap
        out = []
        for m in self.grid:
            # 1 + λ(z − m) ≥ 1 − cap for every z in range; a candidate outside the range
            # risks nothing, so any bet is safe there.
            up_room, down_room = m - zlow, zhigh - m
            out.append((min(lam, cap / up_room) if up_room > 0 else lam,
                        min(lam, cap / down_room) if down_room > 0 else lam))
        return out

    def _apply(self, up: list[float], down: list[float], d: Draw, z: float) -> None:
        for i, m in enumerate(self.grid):
            lu, ld = d.bets[i]
            if lu:
                up[i] += math.log1p(lu * (z - m))
            if ld:
                down[i] += math.log1p(-ld * (z - m))

    def seed(self, ys: list[float], ylow: float, yhigh: float) -> None:
        """Start the capitals from the first trials every cell got (before any draw): ``ys`` is
        each cell's mean change over them, in [ylow, yhigh]. For a fixed bet ``λ`` the product
        ``Π_c (1 + λ (y_c − m))`` of independent factors has expectation at most 1 whenever
        ``D ≤ m`` (the arithmetic-geometric mean inequality: the factors' expectations average
        ``1 + λ (D − m)``), so it is an e-value the stream's capital may start from — the first
        trials count toward the decision instead of only setting the weights."""
        cap = self.policy.bet_cap
        for i, m in enumerate(self.grid):
            up_room, down_room = m - ylow, yhigh - m
            lu = cap / up_room if up_room > 0 else 1.0
            ld = cap / down_room if down_room > 0 else 1.0
            for y in ys:
                self.up[i] += math.log1p(lu * (y - m))
                self.down[i] += math.log1p(-ld * (y - m))
        self.seeded = True

    def fold(self) -> None:
        """Fold in finished draws, in the order they were drawn."""
        while self.folded < len(self.draws) and (self.draws[self.folded].z is not None
                                                 or self.draws[self.folded].skip):
            d = self.draws[self.folded]
            if d.z is None:
                self.folded += 1
                continue
            self._apply(self.up, self.down, d, d.z)
            mean = self._sum / self.n if self.n else 0.0  # earlier observations: a mean shrunk to 0
            self.n += 1
            self._sum += d.z
            self._sq += (d.z - mean) ** 2
            self.folded += 1

    @property
    def mean(self) -> float:
        return self._sum / self.n if self.n else 0.0

    def rejects(self, bar: float, up: list[float] | None = None,
                down: list[float] | None = None) -> tuple[bool, bool]:
        """Whether every candidate at or below the pivot is rejected by the up capital, and
        whether every one at or above it is by the down capital."""
        up = self.up if up is None else up
        down = self.down if down is None else down
        below = all(u >= bar for m, u in zip(self.grid, up) if m <= self.pivot + 1e-12)
        above = all(d >= bar for m, d in zip(self.grid, down) if m >= self.pivot - 1e-12)
        return below, above

    def projected(self, bar: float) -> tuple[bool, bool]:
        """``rejects`` once the draws still running are folded in, each at the stream's mean
        so far: whether the trials already under way are expected to decide it."""
        pending = [d for d in self.draws[self.folded:]]
        if not pending:
            return False, False
        up, down = list(self.up), list(self.down)
        for d in pending:
            if not d.skip:
                z = d.z if d.z is not None else min(max(self.mean, d.zlow), d.zhigh)
                self._apply(up, down, d, z)
        return self.rejects(bar, up, down)

    def bounds(self, alpha: float) -> tuple[float, float]:
        """The one-sided bounds at ``alpha`` each, widened by a grid step for values between
        grid points."""
        bar = math.log(1 / alpha)
        g = self.grid
        low = [i for i, u in enumerate(self.up) if u < bar]
        high = [i for i, d in enumerate(self.down) if d < bar]
        lo = g[max(low[0] - 1, 0)] if low else self.mean  # the grid point below: the slack
        hi = g[min(high[-1] + 1, len(g) - 1)] if high else self.mean
        return lo, hi
