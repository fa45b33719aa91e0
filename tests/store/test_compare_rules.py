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


def test_a_drop_of_the_threshold_or_more_is_regressed_and_a_rise_improved() -> None:
    assert status("ppppp", "ppppf")[0] == "regressed"  # 1.0 → 0.8: exactly the threshold
    assert status("ff", "pp") == ("improved", "pass rate 0% → 100% (base base)")
    assert status("pf", "pf")[0] == "unchanged"
    assert status("ppppppppf", "pppppppff")[0] == "unchanged"  # 0.89 → 0.78, and flaky before too


def test_losing_determinism_without_a_rise_is_regressed() -> None:
    s, why = status("pppppppppp", "pppppppppf")  # a drop of 0.1 only, but now flaky
    assert s == "regressed" and why.startswith("no longer deterministic")
    assert status("ssss", "ssff")[0] == "regressed"  # pass rate 0 → 0, no longer deterministic
    assert status("ffffffffff", "pfffffffff")[0] == "unchanged"  # flaky, but it rose


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
