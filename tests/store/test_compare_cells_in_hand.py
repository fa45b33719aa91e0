"""The run's end compares its cells as it has just filed them, without reading them back
(``_rows.cell_row_of``): for every kind of cell — passed, failed, flaky, all skipped, partly
skipped — what it makes is what the store gives back for the same run, on SQLite and PostgreSQL,
whether a thread or the filer process filed it; and the run's comparison is the one the store's
own reading gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from project_support import build_project

AGENT = '''
import itertools

_calls = itertools.count()  # one trial at a time: the calls come in a fixed order


async def agent(turn):
    n = next(_calls)
    if turn.input == "flaky":
        return "yes" if n % 2 else "no"
    return "yes" if turn.input == "pass" else "no"
'''

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.mixed:agent", max_concurrency=1, timeout=30)
"""

EVAL = """
from anpord import define_eval
from anpord.expect import equals

_seen = {}


@define_eval(each=["pass", "fail", "flaky", "skip", "half"])
async def cell(t, row):
    if row == "skip":
        t.skip("never measured")
    if row == "half":
        _seen[row] = _seen.get(row, 0) + 1
        if _seen[row] % 2:
            t.skip("every other trial")
        row = "pass"
    await t.send(row)
    t.check(t.reply, equals("yes"))
"""


@pytest.mark.parametrize("filer", ["thread", "process"])
def test_the_cells_the_run_compares_are_the_ones_the_store_gives_back(
    tmp_path: Path, backend_env: dict[str, str], filer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anpord.results._reader import read_record
    from anpord.store._location import store_location
    from anpord.store._rows import cell_row, cell_row_of, variants_by_label
    from anpord.store._writes import compare_with_baselines, open_db, run_cells

    project = build_project(tmp_path / "p", {"agents/mixed.py": AGENT, "evals/mixed.eval.py": EVAL}, config=CONFIG)
    env = {**backend_env, "ANPORD_STORE_FILER": filer}
    for _ in range(2):  # the second run has baselines to be compared with
        run = project.run("--trials", "3", "--json", env=env)
        assert run.code in (0, 1), run.output
    for key, value in backend_env.items():
        monkeypatch.setenv(key, value)
    assert run.run_dir is not None
    record = read_record(run.run_dir)
    variants = variants_by_label(record)
    made = [cell_row_of(record.run_id, c, variants.get(c.variant, {})) for c in record.cells]

    location = store_location(project.folder)
    assert location is not None
    db = open_db(location, busy_timeout=5)
    try:
        pk = db.scalar("SELECT id FROM runs WHERE run_id = ?", (record.run_id,))
        read_back = [cell_row(m, record.run_id) for m in run_cells(db, pk)]
        assert made == read_back
        assert [c.summary is None or c.summary.measured for c in made] == [3, 3, 3, 0, 1]
        ours = compare_with_baselines(db, location.project, record.run_id, pk, 0.2, made,
                                      alpha=0.05, variant_margin=0.05)
        theirs = compare_with_baselines(db, location.project, record.run_id, pk, 0.2,
                                        alpha=0.05, variant_margin=0.05)
    finally:
        db.close()
    assert ours.to_dict() == theirs.to_dict()
    assert ours.counts() == theirs.counts() and sum(ours.counts().values()) == 5
    # And it is the comparison the run itself reported.
    from anpord.results.json_report import _comparison

    printed: dict[str, Any] = run.json()["comparison"]
    assert printed == json.loads(json.dumps(_comparison(theirs)))


def _summary(**changed: Any) -> Any:
    from anpord.results._model import CellSummary

    fields = {"case_id": "c", "variant": "v", "trials": 4, "passed": 2, "scored": 0, "failed": 1,
              "timed_out": 0, "void": 1, "skipped": 0, "pass_rate": 2 / 3, "pass_at_k": 1.0,
              "pass_hat_k": 0.0, "deterministic": False}
    return CellSummary(**{**fields, **changed})


@pytest.mark.parametrize("summary", [
    None,
    _summary(),
    _summary(trials=0, passed=0, failed=0, void=0),  # filed as no distribution at all
    _summary(pass_at_k=None, pass_hat_k=None),  # the store fills them in from the counts
    _summary(pass_rate=0.5, void=3, failed=0, passed=1, trials=4, skipped=0),  # measured 1
    _summary(pass_rate=0.25, trials=2, void=1, skipped=1, passed=0, failed=0),  # nothing measured
], ids=["no-trials", "plain", "zero-trials", "no-pass-at-k", "one-measured", "rate-of-nothing"])
def test_a_cell_in_hand_is_what_its_filed_row_reads_back_as(summary: Any) -> None:
    """Even a summary the store would not give back as it is (values it files as empty and reads
    as defaults): the row is then read as the store reads it."""
    from anpord.results._run_record import CellRecord
    from anpord.store._columns import CELL_COLUMNS, NULLED
    from anpord.store._rows import cell_row, cell_row_of, cell_tuple

    cell = CellRecord("c", "v", 4, 30.0, case_hash=None, summary=summary)
    variant = {"harness": "python:a:b", "model": None, "profile": ""}
    filed = dict(zip(CELL_COLUMNS, cell_tuple(0, cell, variant, summary)))
    read = {k: (None if k in NULLED and v == NULLED[k] else v) for k, v in filed.items()}  # NULLIF, as the SQL does
    assert cell_row_of("r", cell, variant) == cell_row(read, "r")


@pytest.mark.parametrize("gate", [[], ["--fail-on", "regressed"]], ids=["run.json-while-filing", "run.json-after"])
def test_a_finished_run_leaves_its_record_and_no_running_marker(tmp_path: Path, gate: list[str]) -> None:
    """Written while the store files the run's end, or after its answer (the gate's exit code
    waits on it): run.json says finished, and the run's running marker is gone."""
    project = build_project(tmp_path / "p", {"agents/mixed.py": AGENT, "evals/mixed.eval.py": EVAL}, config=CONFIG)
    run = project.run(*gate)
    assert run.code in (0, 1), run.output
    assert run.run_json()["status"] == "finished"
    assert run.run_dir is not None
    assert not (project.folder / ".anpord" / "running" / run.run_dir.name).exists()
