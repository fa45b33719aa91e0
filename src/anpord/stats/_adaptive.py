"""Adaptive trials: when a cell has had enough trials, and which cell gets the next one.

Pure Python over each cell's outcomes (1 passed, 0 failed or timed out; other verdicts are left
out). Every cell first gets ``min_trials``. Then the question is asked of each variant as a whole:

* with a baseline pass rate ``b_c`` for each cell (``compare``'s baseline): the variant's mean
  per-case change ``D = mean_c (p_c - b_c)`` — "decided: unchanged" once the confidence sequence's
  lower end is at least ``-margin``, "decided: regressed" once its upper end is below it;
* without one (``b_c = 0``): the variant's mean pass rate, "precision reached" once the sequence's
  half-width is at most ``precision``.

The sequence is a hedged betting confidence sequence (Waudby-Smith & Ramdas, "Estimating means of
bounded random variables by betting", JRSS-B 2023, §4 with predictable plug-in bets) over a
stream of importance-weighted trials: each extra trial goes to cell ``c`` with probability
``π_c`` (drawn from a seeded generator), weighted toward cells whose outcomes strayed from their
baseline (a flaky cell, one that dropped) and away from cells that matched it every trial; the
observation ``Z = (x - b_c) / (K π_c)`` then has conditional mean exactly ``D`` whatever the
weights, and known bounds before the trial runs, so the capital process is a nonnegative
supermartingale under each candidate value and the sequence may be checked after every trial
(anytime-valid). Trials running at once are folded in in the order they were drawn.

Once the variant is decided, a cell whose own rate dropped below its baseline keeps getting
trials while its own sequence (the same betting CS on its outcomes) could still exclude the
baseline: "decided: regressed" when it does, "max trials" at ``max_trials``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
import random
from dataclasses import dataclass, field
from typing import Hashable

__all__ = ["AUTO", "MAX_TRIALS_CAP", "AdaptivePolicy", "betting_interval",
           "Allocator", "parse_trials"]

AUTO = (2, 20)
MAX_TRIALS_CAP = 1000
_GRID = 200
BASE_WEIGHT = 0.5
WEIGHT = 4.0  # how much more a cell that strays from its baseline is sampled


def parse_trials(value: object) -> int | tuple[int, int]:
    """``N`` (fixed), ``"auto"`` (= 2..20) or ``"MIN..MAX"``; ``ValueError`` with the reason."""
    if isinstance(value, bool):
        raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {value!r}")
        return value
    text = str(value).strip()
    if text == "auto":
        return AUTO
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        try:
            lo, hi = int(lo_text), int(hi_text)
        except ValueError:
            raise ValueError(f"expected MIN..MAX with two integers, got {text!r}") from None
        if lo < 1:
            raise ValueError(f"MIN in {text!r} must be at least 1")
        if hi < lo:
            raise ValueError(f"MAX in {text!r} is below MIN")
        if hi > MAX_TRIALS_CAP:
            raise ValueError(f"MAX in {text!r} is above {MAX_TRIALS_CAP}")
        return lo, hi
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {text!r}") from None
    if n < 1:
        raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {text!r}")
    return n


def _bets(xs: Sequence[float], alpha: float) -> list[float]:
    """Predictable plug-in bet sizes (before clipping), one per observation."""
    out, total, sq = [], 0.0, 0.25
    mean = 0.5
    for i, x in enumerate(xs, start=1):
        var = sq / i  # (1/4 + Σ (x_j - μ̂_j)²) / (t + 1), from the observations before this one
        out.append(math.sqrt(2 * math.log(2 / alpha) / (max(var, 1e-6) * i * math.log(1 + i))))
        total += x
        mean = (0.5 + total) / (i + 1)
        sq += (x - mean) ** 2
    return out


def betting_interval(xs: Sequence[float], alpha: float = 0.05) -> tuple[float, float]:
    """The hedged betting confidence sequence for the mean of ``xs`` (each in [0, 1]) at
    coverage 1 - ``alpha``: the candidate means whose hedged capital stays below 1/alpha."""
    if not xs:
        return 0.0, 1.0
    bets = _bets(xs, alpha)
    kept = []
    for g in range(_GRID + 1):
        m = g / _GRID
        up = down = 0.0  # log-capital of the bets for "mean above m" and "mean below m"
        for x, lam in zip(xs, bets):
            lp = min(lam, 0.5 / m) if m > 0 else lam
            lm = min(lam, 0.5 / (1 - m)) if m < 1 else lam
            up += math.log1p(lp * (x - m)) if m > 0 else (math.inf if x > 0 else 0.0)
            down += math.log1p(-lm * (x - m)) if m < 1 else (math.inf if x < 1 else 0.0)
        capital = 0.5 * math.exp(min(up, 700)) + 0.5 * math.exp(min(down, 700))
        if capital < 1 / alpha:
            kept.append(m)
    if not kept:  # the grid is too coarse to hold the interval: the running mean
        mean = sum(xs) / len(xs)
        return mean, mean
    return kept[0], kept[-1]


@dataclass(frozen=True)
class AdaptivePolicy:
    min_trials: int = AUTO[0]
    max_trials: int = AUTO[1]
    alpha: float = 0.05
    margin: float = 0.05  # a variant's change within this of its baseline is "unchanged"
    precision: float = 0.05  # without a baseline: the half-width to reach
    bet_cap: float = 0.9  # the largest fraction of the capital a bet may stake
    cell_drop: float = 0.2  # a cell this far below its baseline is followed on its own


@dataclass
class _Cell:
    key: Hashable
    group: Hashable
    baseline: float | None
    outcomes: list[float] = field(default_factory=list)
    running: int = 0
    taken: int = 0
    stopped: str | None = None


@dataclass
class _Draw:
    cell: _Cell
    weight: float  # K * π_c
    bets: list[tuple[float, float]]  # per grid point: (bet up, bet down), fixed at draw time
    z: float | None = None


class _Sequence:
    """The hedged betting confidence sequence of one group's stream, on a grid of candidates."""

    def __init__(self, low: float, high: float, policy: AdaptivePolicy, steps: int = 200):
        self.grid = [low + (high - low) * g / steps for g in range(steps + 1)]
        self.policy = policy
        self.up = [0.0] * len(self.grid)  # log-capital betting the mean is above m
        self.down = [0.0] * len(self.grid)
        self.zs: list[float] = []
        self.draws: list[_Draw] = []
        self.folded = 0
        self._sum, self._sq = 0.0, 0.0

    def bets(self, zlow: float, zhigh: float) -> list[tuple[float, float]]:
        """Predictable plug-in bets for the next observation, which lies in [zlow, zhigh]."""
        t = len(self.zs) + 1
        var = (0.25 + self._sq) / t
        lam = math.sqrt(2 * math.log(2 / self.policy.alpha) / (max(var, 1e-6) * t * math.log(1 + t)))
        out = []
        cap = self.policy.bet_cap
        for m in self.grid:
            up_room = m - zlow  # 1 + λ(z - m) >= 0 for z >= zlow
            down_room = zhigh - m
            out.append((min(lam, cap / up_room) if up_room > 0 else 0.0,
                        min(lam, cap / down_room) if down_room > 0 else 0.0))
        return out

    def fold(self) -> None:
        """Fold in finished draws, in the order they were drawn."""
        while self.folded < len(self.draws) and self.draws[self.folded].z is not None:
            d = self.draws[self.folded]
            z = d.z
            assert z is not None
            for i, m in enumerate(self.grid):
                lu, ld = d.bets[i]
                self.up[i] += math.log1p(lu * (z - m)) if lu else 0.0
                self.down[i] += math.log1p(-ld * (z - m)) if ld else 0.0
            self.zs.append(z)
            mean = self._sum / len(self.zs)  # earlier observations over t: a mean shrunk to 0
            self._sum += z
            self._sq += (z - mean) ** 2
            self.folded += 1

    def interval(self) -> tuple[float, float]:
        bar = math.log(1 / self.policy.alpha)
        kept = [m for i, m in enumerate(self.grid)
                if math.log(0.5 * math.exp(min(self.up[i] - bar, 50)) + 0.5 * math.exp(min(self.down[i] - bar, 50))) < 0]
        if not kept:
            mean = self._sum / len(self.zs) if self.zs else 0.0
            return mean, mean
        return kept[0], kept[-1]


class Allocator:
    """Which cell gets the next trial, and why each cell stopped.

    ``cells`` maps a cell's key to ``(group, baseline pass rate or None)``; a group (a variant)
    is decided as a whole. ``next()`` returns the key of the cell to run next (its trial number is
    the count taken before), or ``None`` when no cell needs one now (later, once running trials
    finish, it may again); ``finished(key, x, trial)`` records a trial's outcome (1, 0, or ``None`` for a verdict that measures nothing)."""

    def __init__(self, cells: dict[Hashable, tuple[Hashable, float | None]], policy: AdaptivePolicy,
                 seed: int = 0):
        self.policy = policy
        self.rng = random.Random(seed)
        self.cells = {k: _Cell(k, g, b) for k, (g, b) in cells.items()}
        self.groups: dict[Hashable, list[_Cell]] = {}
        for c in self.cells.values():
            self.groups.setdefault(c.group, []).append(c)
        self.sequences: dict[Hashable, _Sequence] = {}
        self.decided: dict[Hashable, str] = {}
        self._draws: dict[tuple[Hashable, int], _Draw] = {}

    # -- the group's question ------------------------------------------------------------------

    def _baselined(self, group: Hashable) -> bool:
        return all(c.baseline is not None for c in self.groups[group])

    def _sequence(self, group: Hashable) -> _Sequence:
        seq = self.sequences.get(group)
        if seq is None:
            if self._baselined(group):
                seq = _Sequence(-1.0, 1.0, self.policy)
            else:
                seq = _Sequence(0.0, 1.0, self.policy)
            self.sequences[group] = seq
        return seq

    def _decide(self, group: Hashable) -> str | None:
        if group in self.decided:
            return self.decided[group]
        seq = self.sequences.get(group)
        if seq is None or not seq.zs:
            return None
        low, high = seq.interval()
        p = self.policy
        verdict = None
        if self._baselined(group):
            if low >= -p.margin:
                verdict = "decided: unchanged"
            elif high < -p.margin:
                verdict = "decided: regressed"
        elif (high - low) / 2 <= p.precision:
            verdict = "precision reached"
        if verdict is not None:
            self.decided[group] = verdict
        return verdict

    def interval(self, group: Hashable) -> tuple[float, float] | None:
        seq = self.sequences.get(group)
        return seq.interval() if seq is not None and seq.zs else None

    # -- cells -----------------------------------------------------------------------------------

    @staticmethod
    def _spread(c: _Cell) -> float:
        """How far the cell's outcomes stray from its baseline (its rate, without one)."""
        if not c.outcomes:
            return 0.5
        ref = c.baseline if c.baseline is not None else sum(c.outcomes) / len(c.outcomes)
        return math.sqrt(sum((x - ref) ** 2 for x in c.outcomes) / len(c.outcomes))

    def _still_dropping(self, c: _Cell) -> bool:
        """A cell below its baseline whose own sequence does not yet exclude the baseline."""
        if c.baseline is None or not c.outcomes or c.taken >= self.policy.max_trials:
            return False
        if sum(c.outcomes) / len(c.outcomes) > c.baseline - self.policy.cell_drop:
            return False
        return betting_interval(c.outcomes, self.policy.alpha)[1] >= c.baseline

    def next(self) -> Hashable | None:
        p = self.policy
        for c in self.cells.values():  # every cell's first trials
            if c.taken < p.min_trials:
                return self._take(c, None)
        for group, members in self.groups.items():
            if self._decide(group) is not None:
                continue
            if any(len(c.outcomes) < p.min_trials for c in members):
                if any(c.running for c in members):
                    continue  # a first trial is still running: the weights wait for it
                short = [c for c in members if len(c.outcomes) < p.min_trials and c.taken < p.max_trials]
                if short:  # a void trial left it short
                    return self._take(short[0], None)
            weights = [BASE_WEIGHT + WEIGHT * self._spread(c) for c in members]
            total = sum(weights)
            c = self.rng.choices(members, weights)[0]
            if c.taken >= p.max_trials:  # the stream can go no further without this cell
                self.decided[group] = "undecided (max trials)"
                continue
            w = weights[members.index(c)] / total * len(members)
            base = c.baseline or 0.0
            seq = self._sequence(group)
            bets = seq.bets((0 - base) / w, (1 - base) / w)
            draw = _Draw(c, w, bets)
            seq.draws.append(draw)
            return self._take(c, draw)
        # Every group decided: cells that dropped keep going while their own change could
        # still reach significance.
        dropping = [c for c in self.cells.values() if c.stopped is None and self._still_dropping(c)]
        idle = [c for c in dropping if not c.running]  # one trial at a time each: its own decision
        if idle:
            return self._take(min(idle, key=lambda c: c.taken), None)
        return None

    def _take(self, c: _Cell, draw: _Draw | None) -> Hashable:
        if draw is not None:
            self._draws[(c.key, c.taken)] = draw
        c.taken += 1
        c.running += 1
        return c.key

    def finished(self, key: Hashable, x: float | None, trial: int | None = None) -> None:
        """Record the outcome of trial number ``trial`` of the cell (by default its oldest
        still-running one)."""
        c = self.cells[key]
        if trial is None:
            trial = c.taken - c.running
        c.running = max(0, c.running - 1)
        draw = self._draws.pop((key, trial), None)
        if x is not None:
            c.outcomes.append(x)
        if draw is not None:
            base = c.baseline or 0.0
            # A trial that measured nothing counts as matching its baseline's rate: the draw
            # must be folded in to keep the stream's order (documented).
            draw.z = ((x if x is not None else base) - base) / draw.weight
            self._sequence(c.group).fold()

    def complete(self) -> bool:
        return all(c.running == 0 for c in self.cells.values()) and self.next_needed() is False

    def next_needed(self) -> bool:
        """Whether any cell could still want a trial (without taking one)."""
        p = self.policy
        for group, members in self.groups.items():
            if any(c.taken < p.min_trials for c in members):
                return True
            if self._decide(group) is None:
                return True
        return any(self._still_dropping(c) for c in self.cells.values())

    def stop_reason(self, key: Hashable) -> str | None:
        """Why the cell took no more trials; ``None`` while it may still."""
        c = self.cells[key]
        p = self.policy
        if c.baseline is not None and c.outcomes and not self._still_dropping(c) \
                and sum(c.outcomes) / len(c.outcomes) < c.baseline \
                and betting_interval(c.outcomes, p.alpha)[1] < c.baseline:
            return "decided: regressed"
        if c.taken >= p.max_trials:
            return "max trials"
        verdict = self.decided.get(c.group)
        if verdict is None or self._still_dropping(c):
            return None
        return verdict
