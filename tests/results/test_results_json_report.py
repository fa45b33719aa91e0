"""The ``--json`` machine summary, parsed back."""

from __future__ import annotations

import json

from results_factories import summary_for, trial

from anpord.results import summary_json
from anpord.results.json_report import SCHEMA_VERSION


def results() -> list:
    return [
        trial("weather/rain", "passed", "small", 1, duration=0.5),
        trial(
            "weather/rain",
            "failed",
            "small",
            0,
            reason="no 'Sunny'",
            error="AssertionError: no 'Sunny'",
            artifact="trials/weather_rain_small_0.traceback.txt",
        ),
        trial("weather/rain", "void", "large", 0, reason="judge could not answer"),
        trial("weather/tone", "scored", "large", 0, score=0.62),
    ]


def test_top_level_keys_and_totals() -> None:
    rs = results()
    summary = summary_for(rs, exit_code=1)
    doc = json.loads(summary_json(summary, rs))
    assert list(doc) == [
        "schema", "run_id", "run_dir", "exit_code", "fail_on", "interrupted", "duration",
        "totals", "usage", "run_cost", "closing_line", "variants", "cells", "comparison",
    ]  # fmt: skip
    assert doc["comparison"] is None  # no comparison with baselines was made
    assert doc["schema"] == SCHEMA_VERSION == 2
    assert doc["run_id"] == summary.run_id and doc["run_dir"] == summary.run_dir
    assert doc["exit_code"] == 1 and doc["interrupted"] is False
    assert doc["totals"] == {
        "trials": 4, "passed": 1, "scored": 1, "failed": 1, "timed_out": 0, "void": 1, "skipped": 0,
    }  # fmt: skip
    assert doc["closing_line"] == summary.closing_line() == "1 passed, 1 failed, 1 scored, 1 void"


def test_cells_carry_distributions_and_each_trial_in_order() -> None:
    rs = results()
    doc = json.loads(summary_json(summary_for(rs), rs))
    rain = next(
        c for c in doc["cells"] if c["case_id"] == "weather/rain" and c["variant"] == "small"
    )
    assert rain["trials"] == 2 and rain["passed"] == 1 and rain["failed"] == 1
    assert rain["pass_rate"] == 0.5 and rain["deterministic"] is False
    assert [t["trial"] for t in rain["results"]] == [0, 1]
    assert rain["results"][0] == {
        "trial": 0, "verdict": "failed", "reason": "no 'Sunny'", "score": None, "duration": 0.0,
        "error": "AssertionError: no 'Sunny'", "error_kind": "test", "usage": {},
        "files": {"traceback": "trials/weather_rain_small_0.traceback.txt"},
    }  # fmt: skip


def test_unmeasured_figures_are_null_not_nan() -> None:
    rs = [trial("a", "void", reason="x")]
    text = summary_json(summary_for(rs), rs)
    assert "NaN" not in text
    cell = json.loads(text)["cells"][0]
    assert cell["pass_rate"] is None and cell["pass_at_k"] is None and cell["void"] == 1


def test_variants_pass_rates_exclude_void() -> None:
    rs = results()
    variants = {v["variant"]: v for v in json.loads(summary_json(summary_for(rs), rs))["variants"]}
    assert variants["small"] == {
        "variant": "small",
        "trials": 2,
        "passed": 1,
        "measured": 2,
        "void": 0,
        # The mean of per-case pass rates (one case here), its 95% interval, the void share.
        "pass_rate": 0.5,
        "pooled_pass_rate": 0.5,
        "ci_low": 0.094531,
        "ci_high": 0.905469,
        "cases": 1,
        "se": None,  # one case: no spread to estimate it from
        "void_rate": 0.0,
    }
    assert variants["large"]["measured"] == 1 and variants["large"]["pass_rate"] == 0.0
    assert variants["large"]["void_rate"] == 0.5


def test_cells_carry_their_interval_and_n() -> None:
    rs = results()
    cells = json.loads(summary_json(summary_for(rs), rs))["cells"]
    rain = next(c for c in cells if c["case_id"] == "weather/rain" and c["variant"] == "small")
    assert (rain["pass_rate"], rain["ci_low"], rain["ci_high"], rain["n"]) == (
        0.5, 0.094531, 0.905469, 2
    )
    void = [trial("a", "void", reason="x")]
    cell = json.loads(summary_json(summary_for(void), void))["cells"][0]
    assert (cell["ci_low"], cell["ci_high"], cell["n"]) == (None, None, 0)
    assert cell["no_interval"] == "nothing measured: every trial void or skipped"


def test_output_is_ascii_and_one_document() -> None:
    rs = [trial("météo/pluie", "passed")]
    text = summary_json(summary_for(rs), rs)
    assert text.isascii()
    assert json.loads(text)["cells"][0]["case_id"] == "météo/pluie"
