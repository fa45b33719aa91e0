"""Adaptive trials: when a cell has had enough trials, and which cell gets the next one.

Pure Python over each cell's outcomes (1 passed, 0 failed or timed out; other verdicts are left
out). Every cell first gets ``min_trials``. Then the question is asked of each variant as a whole:

* with a baseline for each cell (``compare``'s baseline; ``b_c`` its measured pass rate): the
  variant's mean per-case change ``D = mean_c (p_c − b_c)`` — "unchanged" once every value of
  ``D`` at or below ``−margin`` is rejected at ``alpha``, "regressed" once every value at or above
  it is (two one-sided tests: only one of the two answers can be wrong for a given ``D``);
* without one: the variant's mean pass rate, "precision reached" once its interval (``alpha/2``
  a side) has a half-width of at most ``precision``.

The test is a betting confidence sequence (Waudby-Smith & Ramdas, "Estimating means of bounded
random variables by betting", JRSS-B 2023, predictable plug-in bets) over a stream of
importance-weighted trials: each trial after the first ``min_trials`` goes to cell ``c`` with
probability ``π_c`` (a seeded draw), weighted toward cells whose outcomes strayed from their
baseline (a flaky cell, one that dropped) and away from cells that matched it every trial; the
observation ``Z = (x − b_c) / (K π_c)`` then has conditional mean exactly ``D``. The bet is fixed
*before* the cell is drawn, sized for the widest ``Z`` any cell could give, so the capital is a
nonnegative supermartingale at the true ``D`` whichever cell comes up (a bet sized for the drawn
cell would not be: it would stake more on some cells than others). The capital may therefore be
checked after every trial (Ville's inequality) without inflating the error. Trials running at
once are folded in in the order they were drawn; a draw is not issued while the ones running
would decide the variant if they came out as the stream's mean so far.

The verdict a run reports is ``compare``'s paired test on its counts, so a variant is decided
when that test agrees with the sequence, or when more trials could no longer bring it round
(``_compare_agrees``); the sequence's own decision bounds the error either way. The first trials
of every cell open the sequence as an e-value (``Stream.seed``). The capitals live in
``_stream.py``; a cell's own bound in ``_evidence.py``.

When a variant is decided, scheduling for it ends — except for a cell that dropped at least
``cell_drop`` below its baseline, which keeps getting trials while its own drop could still be
shown (``_evidence.py``: its own sequence against the baseline's own interval, both at ``alpha``
over twice the cells compared): a 1 → 0 cell does not stop at 0/2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable, Union

from ._evidence import Bets, CellEvidence
from ._stream import Draw, Stream
from ._trial_count import AUTO, MAX_TRIALS_CAP, parse_trials

__all__ = ["AUTO", "MAX_TRIALS_CAP", "AdaptivePolicy", "Allocator", "parse_trials"]

Baseline = Union[float, tuple[int, int], None]  # a pass rate, or (passed, measured)


@dataclass(frozen=True)
class AdaptivePolicy:
    min_trials: int = AUTO[0]
    max_trials: int = AUTO[1]
    alpha: float = 0.05
    margin: float = 0.05  # a variant's change within this of its baseline is "unchanged"
    precision: float = 0.05  # without a baseline: the half-width to reach
    bet_cap: float = 0.9  # the largest fraction of the capital a bet may stake
    cell_drop: float = 0.2  # a cell this far below its baseline is followed on its own


# A cell's draw weight is 1 + STRAY · (how far its outcomes strayed from its baseline, RMS): a
# coin-flip cell is drawn about twice as often as one that matched every trial. Heavier weights
# shrink the flaky cells' share of the variance but widen the range every bet must allow for.
STRAY = 2.0


@dataclass
class _Cell:
    key: Hashable
    group: Hashable
    rate: float | None  # the baseline's pass rate
    counts: tuple[int, int] | None  # the baseline's (passed, measured), when known
    evidence: CellEvidence
    outcomes: list[float] = field(default_factory=list)
    running: int = 0
    taken: int = 0
    followed: bool = False  # took trials for its own drop after its variant was done
    follow_cache: tuple[tuple[int, int, bool], str | None] | None = None

    @property
    def passed(self) -> int:
        return int(sum(self.outcomes))

    def tally(self) -> str:
        return f"{self.passed}/{len(self.outcomes)}"

    def base_tally(self) -> str:
        assert self.rate is not None
        return f"{self.counts[0]}/{self.counts[1]}" if self.counts else f"{self.rate:.0%}"

    def spread(self) -> float:
        """How far the outcomes strayed from the baseline (from their own rate, without one)."""
        if not self.outcomes:
            return 0.5
        ref = self.rate if self.rate is not None else sum(self.outcomes) / len(self.outcomes)
        return math.sqrt(sum((x - ref) ** 2 for x in self.outcomes) / len(self.outcomes))


def _baseline(value: Baseline) -> tuple[float | None, tuple[int, int] | None]:
    if value is None:
        return None, None
    if isinstance(value, tuple):
        passed, n = int(value[0]), int(value[1])
        return (passed / n, (passed, n)) if n > 0 else (None, None)
    return float(value), None




class Allocator:
    """Which cell gets the next trial, and why each cell stopped.

    ``cells`` maps a cell's key to ``(group, baseline)``, the baseline a pass rate, its
    ``(passed, measured)`` counts, or ``None``; a group (a variant) is decided as a whole.
    ``next()`` returns the key of the cell to run next (its trial number is the count taken
    before), or ``None`` when no cell needs one now (later, once running trials finish, it may
    again); ``finished(key, x, trial)`` records a trial's outcome (1, 0, or ``None`` for a verdict
    that measures nothing)."""

    def __init__(self, cells: dict[Hashable, tuple[Hashable, Baseline]], policy: AdaptivePolicy,
                 seed: int = 0):
        import random

        self.policy = policy
        self.rng = random.Random(seed)
        self.cells: dict[Hashable, _Cell] = {}
        for k, (g, b) in cells.items():
            rate, counts = _baseline(b)
            # The cell's own bets start from its baseline (a coin without one), as one observation.
            prior = 0.5 if rate is None else rate
            self.cells[k] = _Cell(k, g, rate, counts, CellEvidence(prior, policy.bet_cap))
        self.groups: dict[Hashable, list[_Cell]] = {}
        for c in self.cells.values():
            self.groups.setdefault(c.group, []).append(c)
        self.streams: dict[Hashable, Stream] = {}
        self.decided: dict[Hashable, str] = {}  # unchanged, regressed, precision reached, undecided
        self._draws: dict[tuple[Hashable, int], Draw] = {}
        self._bets: dict[tuple[Hashable, int], Bets] = {}
        self._compared = max(1, sum(c.rate is not None for c in self.cells.values()))

    # -- the group's question ------------------------------------------------------------------

    def _baselined(self, group: Hashable) -> bool:
        """Whether the group's question is its change from a baseline: when any of its cells
        has one. Its cells without one (a case new since the baseline) are then left out of the
        question, as ``compare`` leaves them out of the pairing, and take MIN trials."""
        return any(c.rate is not None for c in self.groups[group])

    def _stream(self, group: Hashable) -> Stream:
        s = self.streams.get(group)
        if s is None:
            p = self.policy
            if self._baselined(group):
                s = Stream(-1.0, 1.0, -p.margin, p)
            else:
                s = Stream(0.0, 1.0, 0.5, p, near=0.5)  # fine everywhere: both ends are shown
            self.streams[group] = s
        return s

    def _bar(self, group: Hashable) -> float:
        a = self.policy.alpha
        return math.log(1 / a if self._baselined(group) else 2 / a)

    def interval(self, group: Hashable) -> tuple[float, float] | None:
        """With baselines: bounds on the mean change ``D`` (``alpha`` a side); without: on the
        mean pass rate (``alpha/2`` a side). ``None`` before the stream's first trial."""
        s = self.streams.get(group)
        if s is None or not s.n:
            return None
        a = self.policy.alpha
        return s.bounds(a if self._baselined(group) else a / 2)

    def _decide(self, group: Hashable) -> str | None:
        if group in self.decided:
            return self.decided[group]
        s = self.streams.get(group)
        if s is None or not (s.n or s.seeded):
            return None
        verdict = None
        if self._baselined(group):
            below, above = s.rejects(self._bar(group))
            if below:
                verdict = "unchanged"
            elif above:
                verdict = "regressed"
            if verdict is not None and not self._compare_agrees(group, verdict):
                verdict = None
        else:
            ci = self.interval(group)
            assert ci is not None
            if (ci[1] - ci[0]) / 2 <= self.policy.precision:
                verdict = "precision reached"
        if verdict is not None:
            self.decided[group] = verdict
        return verdict

    def _compare_agrees(self, group: Hashable, verdict: str) -> bool:
        """Whether ``compare``'s paired test on the counts so far says the same: the verdict a
        run reports is that one, so a variant is decided when both agree ("unchanged" here means
        "not regressed": compare's unchanged or improved). Requiring both can only make a wrong
        decision rarer than the sequence's own alpha; it needs the baselines' counts."""
        from ._dist import t_quantile
        from ._estimate import CONFIDENCE
        from ._paired import Counts, Pair, _variant_change

        def agrees(status: str) -> bool:
            return status == "regressed" if verdict == "regressed" else status in ("unchanged", "improved")

        cells = [c for c in self.groups[group] if c.rate is not None and c.outcomes]
        if any(c.counts is None for c in cells):
            return True  # only rates known: the sequence's answer alone
        margin, most = self.policy.margin, self.policy.max_trials
        now = [Pair(str(c.key), "", Counts(*counts), Counts(c.passed, len(c.outcomes)))
               for c in cells if (counts := c.counts) is not None]
        if agrees(_variant_change("", now, 0, margin).status):
            return True
        # Would more trials bring it round? At every cell's maximum the candidate's own binomial
        # noise in the per-case differences shrinks to p(1 − p)/MAX; the baseline's and the
        # cases' own spread stay. If even that would not agree, more trials cannot, and the
        # sequence's answer stands.
        k = len(now)
        if k < 2:
            return True
        diffs = [p.candidate.rate - p.base.rate for p in now]
        mean = sum(diffs) / k
        spread = sum((d - mean) ** 2 for d in diffs) / (k - 1)
        # Each cell's p(1 − p) from its trials pooled with its baseline's (a 2/2 cell is not
        # noiseless because both trials passed).
        pooled = [(p.base.passed + p.candidate.passed) / (p.base.n + p.candidate.n) for p in now]
        noise = sum(r * (1 - r) for r in pooled) / k
        own = sum(r * (1 - r) / p.candidate.n for r, p in zip(pooled, now)) / k
        q = t_quantile(0.5 + CONFIDENCE / 2, k - 1)
        half = q * math.sqrt(max(spread - own, 0.0) / k + noise / most / k)
        # The mean itself will move by about the candidate noise that more trials remove.
        moves = q * math.sqrt(max(own - noise / most, 0.0) / k)
        if verdict == "regressed":
            could = mean - moves + half < 0
        else:  # unchanged (or improved): the interval inside ±margin, or above 0
            could = half <= margin and abs(mean) - moves <= margin - half or mean + moves - half > 0
        return not could

    def _under_way(self, group: Hashable) -> bool:
        """Whether the trials already running are expected to decide the group."""
        s = self._stream(group)
        if not self._baselined(group):
            return False
        below, above = s.projected(self._bar(group))
        return below or above

    def _seed(self, group: Hashable, members: list[_Cell]) -> None:
        """Open the group's stream with what every cell's first trials say: each cell's mean
        change over its first ``min_trials`` outcomes (later ones are the stream's, or a
        dropped cell's own)."""
        first = self.policy.min_trials
        ys = [sum(c.outcomes[:first]) / len(c.outcomes[:first]) - (c.rate or 0.0) for c in members]
        self._stream(group).seed(ys, min(-(c.rate or 0.0) for c in members),
                                 max(1 - (c.rate or 0.0) for c in members))

    def _draw(self, group: Hashable, members: list[_Cell]) -> _Cell | None:
        """A cell drawn for the group's stream, with the bet fixed before the draw; ``None``
        when the draw hit a cell at its maximum (the group is then undecided)."""
        p = self.policy
        weights = [1.0 + STRAY * c.spread() for c in members]
        total = sum(weights)
        k = len(members)
        scaled = [w / total * k for w in weights]  # K · π_c
        zlow = min((0.0 - (c.rate or 0.0)) / w for c, w in zip(members, scaled))
        zhigh = max((1.0 - (c.rate or 0.0)) / w for c, w in zip(members, scaled))
        s = self._stream(group)
        bets = s.bets(zlow, zhigh)
        i = self.rng.choices(range(k), weights)[0]
        c = members[i]
        if c.taken >= p.max_trials:  # the stream can go no further without this cell
            return None
        draw = Draw(c.key, scaled[i], bets, zlow, zhigh)
        s.draws.append(draw)
        self._draws[(c.key, c.taken)] = draw
        return c

    # -- cells -----------------------------------------------------------------------------------

    def _follow(self, c: _Cell) -> str | None:
        """For a cell at least ``cell_drop`` below its baseline: ``None`` while it should keep
        getting trials, else why not — ``significant`` (its own upper bound is below the
        baseline's lower bound, both at alpha over twice the cells compared: anytime-valid, and
        the baseline's own trials are counted), ``hopeless`` (even failing every trial left
        would show it neither to its own sequence nor to compare's Fisher test), ``max``,
        ``recovered``. ``""``: not a dropped cell."""
        state = (len(c.outcomes), c.taken, c.followed)
        if c.follow_cache is not None and c.follow_cache[0] == state:
            return c.follow_cache[1]
        answer = self._follow_now(c)
        c.follow_cache = (state, answer)
        return answer

    def _follow_now(self, c: _Cell) -> str | None:
        p = self.policy
        if c.rate is None or len(c.outcomes) < p.min_trials:
            return ""
        if c.passed / len(c.outcomes) > c.rate - p.cell_drop:
            return "recovered" if c.followed else ""
        level = p.alpha / (2 * self._compared)
        floor = self._base_low(c, level)
        if c.evidence.upper(level) < floor:
            return "significant"
        if c.taken >= p.max_trials:
            return "max"
        if c.evidence.upper_after_failures(p.max_trials - c.taken, level) >= floor \
                and not self._compare_could_name(c):
            return "hopeless"
        return None

    def _compare_could_name(self, c: _Cell) -> bool:
        """Whether ``compare``'s cell test (Fisher's, at Holm's strictest step) would call the
        cell regressed if every trial left up to MAX failed: then it keeps getting trials even
        when its own sequence could not show the drop (a 3/3 → 0/20 cell is named by compare)."""
        if c.counts is None:
            return False
        from ._dist import fisher_exact

        k, n = c.counts
        more = self.policy.max_trials - len(c.outcomes)
        if more <= 0:
            return False
        return fisher_exact(k, n, c.passed, len(c.outcomes) + more) <= self.policy.alpha / self._compared

    @staticmethod
    def _base_low(c: _Cell, level: float) -> float:
        """The baseline's one-sided lower bound at ``level`` (its own rate when only the rate
        is known)."""
        assert c.rate is not None
        if c.counts is None:
            return c.rate
        from ._estimate import wilson

        ci = wilson(c.counts[0], c.counts[1], 1 - 2 * level)
        return ci.low if ci is not None else c.rate

    def _pick(self, take: bool) -> _Cell | None:
        p = self.policy
        for c in self.cells.values():  # every cell's first trials
            if c.taken < p.min_trials:
                return c
        for group, members in self.groups.items():
            if self._decide(group) is not None:
                continue
            # A cell a void trial left short gets another, up to twice the first ones: a cell
            # that never measures anything (a harness that cannot start) is then left out.
            again = min(2 * p.min_trials, p.max_trials)
            short = [c for c in members if len(c.outcomes) < p.min_trials and c.taken < again]
            if short:
                if any(c.running for c in members):
                    continue  # first trials are still running: the weights wait for them
                return short[0]
            members = [c for c in members if c.outcomes]
            if self._baselined(group):
                members = [c for c in members if c.rate is not None]
            if not members:
                self.decided[group] = "undecided"
                continue
            if any(c.running for c in members) and self._under_way(group):
                continue  # the trials running should decide it: wait for them
            if self._baselined(group) and group not in self.streams:
                self._seed(group, members)
                if self._decide(group) is not None:
                    continue
            if not take:
                return members[0]
            drawn = self._draw(group, members)
            if drawn is None:
                self.decided[group] = "undecided"
                continue
            return drawn
        # Cells that dropped keep going while their own drop could still be shown; one trial at
        # a time each, since each result decides whether it needs the next.
        for c in self.cells.values():
            if not c.running and c.taken < p.max_trials and self._follow(c) is None:
                if take and self._decide(c.group) is not None:
                    c.followed = True
                return c
        return None

    def next(self) -> Hashable | None:
        c = self._pick(take=True)
        if c is None:
            return None
        self._bets[(c.key, c.taken)] = c.evidence.bets()
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
        bets = self._bets.pop((key, trial), None)
        if x is not None:
            c.outcomes.append(x)
            c.evidence.fold(x, bets if bets is not None else c.evidence.bets())
        draw = self._draws.pop((key, trial), None)
        if draw is not None:
            # A trial that measured nothing is left out of the stream, as out of the cell's
            # rate: its factor in the capital is 1.
            if x is None:
                draw.skip = True
            else:
                draw.z = (x - (c.rate or 0.0)) / draw.weight
            self._stream(c.group).fold()

    def complete(self) -> bool:
        return all(c.running == 0 for c in self.cells.values()) and not self.next_needed()

    def next_needed(self) -> bool:
        """Whether any cell could still want a trial (without taking one)."""
        return self._pick(take=False) is not None
    # -- why a cell stopped ----------------------------------------------------------------------

    def stop_reason(self, key: Hashable) -> str | None:
        """Why the cell took no more trials, in words about this cell; ``None`` while it may
        still take one (or the run stopped first)."""
        c = self.cells[key]
        p = self.policy
        if c.running:
            return None
        if not c.outcomes:
            if c.taken >= p.max_trials or self._pick(take=False) is None:
                return f"nothing measured in {c.taken} trial{'s' if c.taken != 1 else ''}: every one void or skipped"
            return None
        follow = self._follow(c) if c.rate is not None else ""
        if follow is None:
            return None  # still dropping, and its drop could still be shown
        if follow == "significant":
            return f"its own drop is significant: {c.tally()} vs {c.base_tally()}"
        if follow == "hopeless":
            return (f"dropped to {c.tally()} from {c.base_tally()}, but even failing every trial "
                    f"up to the maximum of {p.max_trials} would not show it")
        if follow == "max":
            return f"reached the maximum of {p.max_trials}: {c.tally()} vs {c.base_tally()}"
        verdict = self.decided.get(c.group)
        if verdict is None:
            if self._pick(take=False) is not None:
                return None
            verdict = self.decided.get(c.group, "undecided")
        if c.rate is None and self._baselined(c.group):
            return (f"{c.tally()} passed; new since the baseline, so not part of the variant's "
                    f"comparison: its first {p.min_trials} trials only")
        if follow == "recovered":
            lead = f"recovered to {c.tally()} after a drop, against its baseline's {c.base_tally()}"
        elif c.rate is not None and all(x == c.rate for x in c.outcomes):
            lead = f"matched its baseline ({c.base_tally()}) on all {len(c.outcomes)} trials"
        elif c.rate is not None:
            lead = f"{c.tally()} against its baseline's {c.base_tally()}"
        else:
            lead = f"{c.tally()} passed"
        if c.taken >= p.max_trials:
            return f"reached the maximum of {p.max_trials} ({lead})"
        if verdict == "unchanged":
            tail = f"the variant was decided unchanged (within −{p.margin:g} of its baseline)"
        elif verdict == "regressed":
            tail = f"the variant was decided regressed (more than {p.margin:g} below its baseline)"
        elif verdict == "precision reached":
            tail = f"the variant's pass rate was pinned down to ±{p.precision:g}"
        else:
            tail = ("the variant stayed undecided: the cells that could still decide it reached "
                    f"the maximum of {p.max_trials}")
        return f"{lead}; {tail}"
