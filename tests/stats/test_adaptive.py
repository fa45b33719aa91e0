"""Adaptive trials' allocator: seeded simulations over counts, no agent, no clock."""

from __future__ import annotations

import random

import pytest

from anpord.stats._adaptive import AUTO, MAX_TRIALS_CAP, AdaptivePolicy, Allocator, parse_trials
from anpord.stats import Counts, Pair, compare_paired
from anpord.stats._evidence import CellEvidence


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


def _measured(rng: random.Random, p: float, n: int = 10) -> tuple[int, int]:
    return sum(rng.random() < p for _ in range(n)), n


@pytest.mark.parametrize("concurrency", [1, 8])
def test_an_unchanged_suite_spends_at_most_half_of_ten_trials_and_decides_the_same(concurrency: int) -> None:
    """40 always-passing and 10 coin-flip cells against a baseline measured on 10 trials of the
    same agent (so its coin-flip cells read anywhere from 2/10 to 8/10): over seeds, ``auto``
    spends at most half of ``--trials 10``'s 500 trials on average, whether one trial runs at
    a time or eight, and decides "unchanged" as fixed trials would; no cell of the unchanged
    agent is ever found to have dropped on its own."""
    policy = AdaptivePolicy(*AUTO)
    runs = []
    for seed in range(12):
        rng = random.Random(100 + seed)
        baselines = {k: _measured(rng, p) for k, p in SUITE.items()}
        runs.append(simulate(SUITE, baselines, policy, seed, concurrency))
    mean_spent = sum(spent(a) for a in runs) / len(runs)
    decided = [a.decided["v"] for a in runs]
    assert mean_spent <= 0.45 * 10 * len(SUITE), [spent(a) for a in runs]
    assert decided.count("unchanged") >= 11, decided
    # The verdict a run reports is compare's paired test on its counts: it agrees.
    verdicts = []
    for seed, a in enumerate(runs):
        rng = random.Random(100 + seed)
        baselines = {k: _measured(rng, p) for k, p in SUITE.items()}
        pairs = [Pair(k, "v", Counts(*baselines[k]), Counts(a.cells[k].passed, len(a.cells[k].outcomes)))
                 for k in SUITE]
        verdicts.append(compare_paired(pairs).variants[0].status)
    assert sum(v in ("unchanged", "improved") for v in verdicts) >= 10, verdicts
    reasons = [a.stop_reason(k) or "" for a in runs for k in SUITE]
    assert not any(r.startswith("its own drop is significant") for r in reasons)
    # Cells that matched their baseline every trial are drawn half as often as coin-flip ones.
    steady = [a.cells[k] for a in runs for k in SUITE if k.startswith("steady")]
    flaky = [a.cells[k] for a in runs for k in SUITE if k.startswith("flaky")]
    assert sum(c.taken for c in steady) / len(steady) < 4
    assert sum(c.taken for c in flaky) / len(flaky) > sum(c.taken for c in steady) / len(steady)


def test_a_change_exactly_at_the_margin_is_rarely_called_unchanged() -> None:
    """Checked after every trial, the variant's test holds its level whatever cells the change
    is in: always-passing cells dropping to 0.6 while coin-flip cells rise to 0.8, a mean change
    of exactly −0.05, is called "unchanged" in at most about alpha of seeded runs."""
    rates = {**{f"hi{i}": 0.6 for i in range(8)}, **{f"mid{i}": 0.8 for i in range(8)}}
    baselines = {**{f"hi{i}": 1.0 for i in range(8)}, **{f"mid{i}": 0.5 for i in range(8)}}
    runs = 30
    wrong = sum(simulate(rates, baselines, AdaptivePolicy(2, 30), seed).decided.get("v") == "unchanged"
                for seed in range(runs))
    assert wrong <= 0.05 * runs + 3 * (runs * 0.05 * 0.95) ** 0.5, wrong


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
def test_a_cells_own_bound_covers_when_checked_after_every_trial(p: float) -> None:
    """Checked after every one of 20 trials, a cell's own upper bound at 0.05 falls below its
    true rate in at most about 5 of 100 seeded runs — even when its bets start from a baseline
    that is wrong (a cell that always passed before)."""
    misses = 0
    for seed in range(100):
        rng = random.Random(seed)
        cell = CellEvidence(1.0)
        for _ in range(20):
            cell.fold(1.0 if rng.random() < p else 0.0, cell.bets())
            if cell.upper(0.05) < p - 1e-9:
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


def test_a_cell_that_never_measures_anything_is_left_out_and_says_why() -> None:
    """A cell whose every trial is void (a harness that cannot start) gets its first trials and
    as many again, then no more; the variant is decided on the cells that measured something."""
    rates = {**{f"s{i}": 1.0 for i in range(10)}, "broken": 1.0}
    a = Allocator({k: ("v", (10, 10)) for k in rates}, AdaptivePolicy(2, 20), seed=0)
    rng = random.Random(0)
    while (key := a.next()) is not None:
        a.finished(key, None if key == "broken" else 1.0 if rng.random() < rates[key] else 0.0)
    assert a.cells["broken"].taken == 4
    assert a.stop_reason("broken") == "nothing measured in 4 trials: every one void or skipped"
    assert a.decided["v"] == "unchanged"
    assert a.stop_reason("s0").startswith("matched its baseline (10/10) on all ")


def _run(rates: dict[str, float], baselines: dict[str, object], policy: AdaptivePolicy) -> Allocator:
    a = Allocator({k: ("v", baselines[k]) for k in rates}, policy, seed=1)  # type: ignore[misc]
    rng = random.Random(1)
    while (key := a.next()) is not None:
        a.finished(key, 1.0 if rng.random() < rates[key] else 0.0)
    return a


def test_each_cell_says_why_it_stopped_in_its_own_words() -> None:
    rates = {**{f"s{i}": 1.0 for i in range(40)}, "gone": 0.0}
    a = _run(rates, {**{f"s{i}": (10, 10) for i in range(40)}, "gone": (10, 10)}, AdaptivePolicy(2, 20))
    gone = a.cells["gone"]
    assert a.stop_reason("gone") == f"its own drop is significant: 0/{gone.taken} vs 10/10"
    steady = a.stop_reason("s0")
    assert steady is not None and steady.startswith("matched its baseline (10/10) on all ")
    assert a.decided["v"] == "unchanged"  # one case of 41 lost: within the margin
    assert steady.endswith("; the variant was decided unchanged (within −0.05 of its baseline)")
    # Without a baseline, 6 trials cannot pin four coin flips' mean down to ±0.05: each cell
    # says its own count and that the variant stayed undecided, or that it took the maximum.
    b = _run({f"c{i}": 0.5 for i in range(4)}, {f"c{i}": None for i in range(4)}, AdaptivePolicy(2, 6))
    assert b.decided["v"] == "undecided"
    for k, c in b.cells.items():
        reason = b.stop_reason(k)
        assert reason in (f"reached the maximum of 6 ({c.tally()} passed)",
                          f"{c.tally()} passed; the variant stayed undecided: the cells that could "
                          "still decide it reached the maximum of 6"), reason


def test_a_case_new_since_the_baseline_takes_its_first_trials_and_is_left_out() -> None:
    """Runs with different case sets: the variant's question is over the cases the baseline
    has (as ``compare`` pairs only those); a new case takes MIN trials and says why."""
    rates = {**{f"s{i}": 1.0 for i in range(40)}, "new": 0.5}
    a = _run(rates, {**{f"s{i}": (10, 10) for i in range(40)}, "new": None}, AdaptivePolicy(2, 20))
    assert a.decided["v"] == "unchanged"
    assert a.cells["new"].taken == 2
    assert a.stop_reason("new") == (f"{a.cells['new'].tally()} passed; new since the baseline, so not "
                                    "part of the variant's comparison: its first 2 trials only")


def test_a_cell_compare_could_still_name_is_not_given_up() -> None:
    """A 1 → 0 cell against a baseline of only 3 trials: its own sequence could never show the
    drop within 20 trials (3 trials leave the baseline anywhere above 8%), but compare's Fisher
    test would name 0/20 against 3/3 even after Holm's correction, so it keeps getting trials."""
    rates = {**{f"s{i}": 1.0 for i in range(40)}, "gone": 0.0}
    a = _run(rates, {k: (3, 3) for k in rates}, AdaptivePolicy(2, 20))
    assert a.cells["gone"].taken == 20
    assert a.stop_reason("gone") == "reached the maximum of 20: 0/20 vs 3/3"
    pairs = [Pair(k, "v", Counts(3, 3), Counts(c.passed, len(c.outcomes))) for k, c in a.cells.items()]
    named = {x.case_id for x in compare_paired(pairs).cells if x.status == "regressed"}
    assert named == {"gone"}
