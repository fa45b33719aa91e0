"""Adaptive trials' allocator: seeded simulations over counts, no agent, no clock."""

from __future__ import annotations

import random

import pytest

from anpord.stats._adaptive import AUTO, MAX_TRIALS_CAP, AdaptivePolicy, Allocator, betting_interval, parse_trials


def simulate(rates: dict[str, float], baselines: dict[str, float | None], policy: AdaptivePolicy,
             seed: int, concurrency: int = 1) -> Allocator:
    rng = random.Random(seed)
    allocator = Allocator({k: ("v", baselines[k]) for k in rates}, policy, seed=seed)
    running: list[tuple[str, int]] = []
    while True:
        while len(running) < concurrency:
            key = allocator.next()
            if key is None:
                break
            running.append((key, allocator.cells[key].taken - 1))
        if not running:
            return allocator
        key, trial = running.pop(rng.randrange(len(running)))  # trials finish in any order
        allocator.finished(key, 1.0 if rng.random() < rates[key] else 0.0, trial)


SUITE = {**{f"steady{i}": 1.0 for i in range(40)}, **{f"flaky{i}": 0.5 for i in range(10)}}


def spent(a: Allocator) -> int:
    return sum(c.taken for c in a.cells.values())


def test_parse_trials() -> None:
    assert parse_trials(3) == 3 and parse_trials("3") == 3
    assert parse_trials("auto") == AUTO == (2, 20)
    assert parse_trials("2..10") == (2, 10)
    for bad in ("0..5", "5..2", "1..x", "0", "-1", "x", f"2..{MAX_TRIALS_CAP + 1}", True):
        with pytest.raises(ValueError):
            parse_trials(bad)


def test_an_unchanged_suite_spends_at_most_half_of_ten_trials_and_decides_the_same() -> None:
    """40 always-passing and 10 coin-flip cells against a baseline that matches them: over
    seeds, ``auto`` spends at most half of ``--trials 10``'s 500 trials on average and most
    often reaches "unchanged", as fixed trials would (docs/statistics.md gives the figures)."""
    policy = AdaptivePolicy(*AUTO)
    runs = [simulate(SUITE, dict(SUITE), policy, seed) for seed in range(12)]
    mean_spent = sum(spent(a) for a in runs) / len(runs)
    decided = [a.decided["v"] for a in runs]
    assert mean_spent <= 0.5 * 10 * len(SUITE), [spent(a) for a in runs]
    assert decided.count("unchanged") >= 10, decided
    assert "regressed" not in decided


def test_a_cell_that_dropped_keeps_getting_trials() -> None:
    rates = dict(SUITE, steady0=0.0)  # 1 → 0
    for seed in range(4):
        a = simulate(rates, dict(SUITE), AdaptivePolicy(*AUTO), seed)
        dropped = a.cells["steady0"]
        assert dropped.taken > 2, dropped
        reason = a.stop_reason("steady0")
        assert reason is not None and reason.startswith(("its own drop is significant: 0/",
                                                          "reached the maximum of 20")), reason


def test_without_a_baseline_every_cell_stops_with_a_reason() -> None:
    a = simulate(SUITE, {k: None for k in SUITE}, AdaptivePolicy(2, 6), 0, concurrency=4)
    reasons = {a.stop_reason(k) for k in SUITE}
    assert None not in reasons
    assert all(2 <= c.taken <= 6 for c in a.cells.values())


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 1.0])
def test_the_cell_sequence_covers_when_checked_after_every_trial(p: float) -> None:
    """Checked after every one of 20 trials, the betting sequence misses the true rate in at
    most about alpha of 100 seeded runs."""
    misses = 0
    for seed in range(100):
        rng = random.Random(seed)
        xs: list[float] = []
        for _ in range(20):
            xs.append(1.0 if rng.random() < p else 0.0)
            low, high = betting_interval(xs, 0.05)
            if not low - 1e-9 <= p <= high + 1e-9:
                misses += 1
                break
    assert misses <= 0.05 * 100 + 4, misses


def test_the_run_decision_is_right_when_checked_after_every_trial() -> None:
    """The variant's sequence, checked after every trial of adaptive runs: a suite whose change
    is exactly the margin's edge is called "unchanged" in at most about alpha of seeded runs."""
    rates = {**{f"s{i}": 1.0 for i in range(8)}, "a": 0.6, "b": 0.5}  # D = -0.09 < -margin
    baselines = {**{f"s{i}": 1.0 for i in range(8)}, "a": 1.0, "b": 1.0}
    wrong = sum(simulate(rates, baselines, AdaptivePolicy(2, 20, margin=0.05), seed).decided.get("v")
                == "unchanged" for seed in range(20))
    assert wrong <= 0.05 * 20 + 2, wrong
