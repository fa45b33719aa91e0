"""The guarantees the comparison promises (docs/statistics.md), checked by simulation over seeded
cells: false alarms on an unchanged agent, power on a real drop, and the confidence sequence's
coverage under peeking after every trial. Seeded, so each run is the same; sized so that the
simulation error is small beside the margins asserted."""

from __future__ import annotations

import math
import random

import pytest

from anpord.stats import ConfidenceSequence, Counts, Pair, compare_paired

CELLS = 50
RUNS = 300
ALPHA = 0.05
# Three standard errors of a proportion near ALPHA estimated from RUNS runs.
SIM_ERROR = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)


def _count(rng: random.Random, p: float, trials: int) -> Counts:
    return Counts(sum(rng.random() < p for _ in range(trials)), trials)


def _comparison(rng: random.Random, base: list[float], cand: list[float], trials: int):
    pairs = [
        Pair(f"case/{i:04d}", "v", _count(rng, b, trials), _count(rng, c, trials))
        for i, (b, c) in enumerate(zip(base, cand))
    ]
    return compare_paired(pairs)


@pytest.mark.parametrize("trials", [3, 10])
@pytest.mark.parametrize("rate", [0.9, 0.5])
def test_an_unchanged_agent_rarely_gets_any_false_regression(trials: int, rate: float) -> None:
    rng = random.Random(1000 * trials + int(rate * 100))
    alarms = sum(
        _comparison(rng, [rate] * CELLS, [rate] * CELLS, trials).regressed for _ in range(RUNS)
    )
    assert alarms / RUNS <= ALPHA + SIM_ERROR, f"{alarms} of {RUNS} comparisons cried wolf"


@pytest.mark.parametrize("rate", [0.9, 0.5])
def test_a_few_baseline_trials_against_many_candidate_ones_raise_no_false_alarm(rate: float) -> None:
    """The baseline is an estimate too: a baseline measured on 3 trials a cell against a
    candidate whose cells took 2 to 20 trials (as adaptive trials give them) — the baseline's
    own noise dominates the per-case differences, and the comparison must still cry wolf in
    at most α of comparisons, cell or variant."""
    rng = random.Random(31 + int(rate * 100))
    alarms = 0
    for _ in range(RUNS):
        pairs = [Pair(f"case/{i:04d}", "v", _count(rng, rate, 3), _count(rng, rate, rng.randint(2, 20)))
                 for i in range(CELLS)]
        alarms += compare_paired(pairs).regressed
    assert alarms / RUNS <= ALPHA + SIM_ERROR, f"{alarms} of {RUNS} comparisons cried wolf"


def test_a_drop_to_zero_on_ten_cells_is_named_at_ten_trials() -> None:
    rng = random.Random(7)
    base = [0.95] * CELLS
    cand = [0.0] * 10 + [0.95] * 40
    named = false = 0
    for _ in range(RUNS // 3):
        cmp = _comparison(rng, base, cand, 10)
        named += sum(c.status == "regressed" for c in cmp.cells[:10])
        false += sum(c.status == "regressed" for c in cmp.cells[10:])
    assert named / (10 * (RUNS // 3)) >= 0.9
    assert false == 0


def test_at_three_trials_the_variant_is_called_regressed() -> None:
    rng = random.Random(11)
    base = [0.95] * CELLS
    cand = [0.0] * 10 + [0.95] * 40
    called = 0
    for _ in range(RUNS):
        cmp = _comparison(rng, base, cand, 3)
        assert not any(c.status == "regressed" for c in cmp.cells)  # 3 trials: cells cannot fire
        called += cmp.variants[0].status == "regressed"
    assert called / RUNS >= 0.8


@pytest.mark.parametrize("p", [0.5, 0.9, 0.99])
def test_the_confidence_sequence_covers_when_checked_after_every_trial(p: float) -> None:
    rng = random.Random(int(p * 1000))
    sequences, horizon = 400, 100
    missed = 0
    for _ in range(sequences):
        cs = ConfidenceSequence(alpha=ALPHA, tuned_for=20)
        for _t in range(horizon):
            cs.add(1.0 if rng.random() < p else 0.0)
            low, high = cs.interval()
            if not low <= p <= high:
                missed += 1
                break
    assert missed / sequences <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / sequences)


def test_a_fixed_interval_checked_after_every_trial_would_not_cover() -> None:
    """The reason for the sequence: peeking at a fixed-n 95% interval inflates the error."""
    from anpord.stats import wilson

    rng = random.Random(5)
    missed = 0
    for _ in range(400):
        k = 0
        for t in range(1, 101):
            k += rng.random() < 0.5
            ci = wilson(k, t)
            assert ci is not None
            if not ci.low <= 0.5 <= ci.high:
                missed += 1
                break
    assert missed / 400 > 2 * ALPHA
