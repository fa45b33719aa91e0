"""How a cell compares with its base reading (``anpord.store.compare_cell``)."""

from __future__ import annotations

from anpord.results import TrialResult, summarize_cell
from anpord.store import CellRow, compare_cell


def reading(
    verdicts: str,
    *,
    run: str = "cand",
    case_hash: str = "h1",
    harness: str = "python:a",
    model: str | None = "m1",
) -> CellRow:
    """A cell from verdict letters: p passed, f failed, t timed out, s scored, v void, k skipped."""
    names = {
        "p": "passed",
        "f": "failed",
        "t": "timed_out",
        "s": "scored",
        "v": "void",
        "k": "skipped",
    }
    trials = [TrialResult("c", "v", i, names[x]) for i, x in enumerate(verdicts)]  # type: ignore[arg-type]
    return CellRow(
        run, "c", "v", case_hash, harness, model, None, len(verdicts), summarize_cell(trials)
    )


def status(base: str, cand: str, **kw: object) -> tuple[str, str]:
    c = compare_cell(reading(base, run="base"), reading(cand, **kw), 0.2)  # type: ignore[arg-type]
    return c.status, c.reason


def test_a_cell_is_regressed_or_improved_only_when_its_counts_say_so() -> None:
    assert status("p" * 10, "f" * 10)[0] == "regressed"  # 10/10 → 0/10: p ≈ 1e-5
    s, why = status("f" * 10, "p" * 10)
    assert s == "improved" and why.startswith("pass rate 0% → 100% (base base), Δ +1.00 [")
    assert "p = 1.1e-05 (Holm)" in why
    # 3/3 → 0/3 is the strongest a 3-trial cell can move, and Fisher's p is 0.1: not enough.
    s, why = status("ppp", "fff")
    assert s == "inconclusive" and "trials a side would decide it" in why
    assert status("ppppp", "ppppf")[0] == "inconclusive"  # 1.0 → 0.8 was a "regression" once


def test_unchanged_needs_the_interval_within_the_margin() -> None:
    s, why = status("p" * 20, "p" * 20)
    assert s == "unchanged" and why.endswith("within ±0.2")
    assert status("pf", "pf")[0] == "inconclusive"  # equal rates, but 2 trials say little
    assert status("p" * 50 + "f" * 10, "p" * 51 + "f" * 9)[0] == "unchanged"


def test_losing_determinism_is_not_a_regression_by_itself() -> None:
    assert status("p" * 10, "p" * 9 + "f")[0] != "regressed"
    assert status("ssss", "ssff")[0] != "regressed"


def test_a_cell_with_no_measured_trial_has_no_interval_and_says_why() -> None:
    from anpord.stats import estimate_cell

    assert estimate_cell(0, 0, trials=3).to_dict() == {
        "pass_rate": None, "ci_low": None, "ci_high": None, "n": 0,
        "no_interval": "nothing measured: every trial void or skipped",
    }
    row = reading("vvk")
    assert row.to_dict()["ci_low"] is None and row.to_dict()["n"] == 0
    assert "void or skipped" in row.to_dict()["no_interval"]
    assert reading("ppf").to_dict()["ci_high"] > 2 / 3


def test_what_measured_nothing_or_changed_is_incomparable_and_says_why() -> None:
    assert status("pp", "vv") == ("incomparable", "nothing measured (every trial void or skipped)")
    assert status("vk", "pp")[1] == "nothing measured in the base base"
    assert "the case changed" in status("pp", "ff", case_hash="h2")[1]
    assert status("pp", "ff", model="m2")[1] == "model m1 → m2 since the base base"
    assert "harness python:a → python:b" in status("pp", "pp", harness="python:b")[1]
    none = compare_cell(None, reading("pf"), 0.2, missing="no baseline yet")
    assert (none.status, none.reason) == ("incomparable", "no baseline yet")


def test_the_store_columns_match_the_schema() -> None:
    from anpord.store._columns import CELL_COLUMNS, RUN_COLUMNS, TRIAL_COLUMNS
    from anpord.store._schema import cells, runs, trials

    assert set(RUN_COLUMNS) == {c.name for c in runs.c} - {"id", "project", "run_id"}
    assert set(CELL_COLUMNS) == {c.name for c in cells.c} - {"run_pk"}
    assert set(TRIAL_COLUMNS) == {c.name for c in trials.c} - {"run_pk"}


def test_runs_with_different_case_sets_pair_only_the_shared_cases_and_say_so() -> None:
    from anpord.store._compare import compare_cells, variant_line

    def cell(case: str, verdicts: str, run: str) -> CellRow:
        trials = [TrialResult(case, "v", i, "passed" if x == "p" else "failed") for i, x in enumerate(verdicts)]
        return CellRow(run, case, "v", "h", "python:a", None, None, len(verdicts), summarize_cell(trials))

    base = {(f"c{i}", "v"): cell(f"c{i}", "p" * 5, "base") for i in range(4)}
    cands = [cell(f"c{i}", "p" * 5, "cand") for i in (1, 2, 3, 7)]  # c0 dropped, c7 new
    cmp = compare_cells("cand", cands, base, 0.2, base_run="base", only_in_base=1,
                        base_only={"v": 1})
    (v,) = cmp.variants
    assert v.cases == 3 and v.dropped == 2  # c0 only in the base, c7 only in the candidate
    assert variant_line(v).endswith("; 2 cases not on both sides left out")
    assert [c.status for c in cmp.cells if c.case_id == "c7"] == ["incomparable"]
