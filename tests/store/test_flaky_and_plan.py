"""``anpord flaky`` and ``anpord plan`` over real runs, and a flaky cell judged against its own
history; each says "not enough runs yet" in one line when the history is too short."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from history_support import anpord, as_json, history_project


def test_an_empty_history_says_how_many_runs_it_has(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    flaky = anpord(project, "flaky")
    assert flaky.returncode == 2
    assert flaky.stderr.strip().splitlines() == ["anpord flaky: not enough runs yet: 0 of 2 (each `anpord eval` adds one)"]
    plan = anpord(project, "plan")
    assert plan.returncode == 2
    assert plan.stderr.strip() == "anpord plan: not enough runs yet: 0 of 1 (run `anpord eval` first)"
    assert project.run().code == 0
    assert anpord(project, "flaky").stderr.strip() == "anpord flaky: not enough runs yet: 1 of 2 (each `anpord eval` adds one)"
    window = anpord(project, "flaky", "--runs", "1")
    assert window.returncode == 2 and "flakiness needs at least 2 runs, got '1'" in window.stderr
    one = anpord(project, "plan")  # every trial passed: no variance, so no "change of 0.000"
    assert one.returncode == 0, one.stderr
    assert "no variation to plan from at 2 cases × 3 trials" in one.stdout
    assert "change of 0.000" not in one.stdout
    bad = anpord(project, "plan", "--effect", "2")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "expected a pass-rate change between 0 and 1, got '2'" in bad.stderr


def test_flaky_cells_are_listed_with_their_evidence_and_judged_by_their_history(
    tmp_path: Path,
) -> None:
    project = history_project(tmp_path / "p", trials=4)
    steady = project.run()  # every trial passes
    assert steady.code == 0
    for _ in range(2):
        run = project.run(env={"MOOD": "flaky"})  # every other call fails
        assert run.run_dir is not None
    out = anpord(project, "flaky")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "2 of 2 cells flaky over the last 3 runs"
    assert lines[0].startswith("greet/000")
    assert "flakes 33% [" in lines[0] and "8/12 passed over 3 runs (4/4 2/4 2/4, oldest first)" in lines[0]
    doc = as_json(anpord(project, "flaky", "--json"))
    assert doc["runs"] == 3 and len(doc["flaky"]) == 2
    first = doc["flaky"][0]
    assert first["flaky"] and first["n"] == 12 and 0 < first["ci_low"] < first["flake_rate"] < first["ci_high"]

    # A re-run is not history: the flake figures stay as they were.
    assert run.run_dir is not None
    project.run("--rerun-failed", run.run_dir.name, env={"MOOD": "flaky"})
    assert anpord(project, "flaky").stdout.strip().splitlines()[-1].endswith("over the last 3 runs")

    # The next flaky run is judged against the cell's whole history, not its first reading.
    project.run(env={"MOOD": "flaky"})
    cmp = as_json(anpord(project, "compare", "--json"))
    bases = {c["base"]["run_id"] for c in cmp["cells"]}
    assert bases == {"history of 3 runs"}, bases
    assert all(c["status"] != "regressed" for c in cmp["cells"])
    assert [c["base"]["measured"] for c in cmp["cells"]] == [12, 12]

    plan = anpord(project, "plan", "--effect", "0.1")
    assert plan.returncode == 0, plan.stderr
    text = plan.stdout
    assert "detects a change of 0." in text and "at 2 cases × 4 trials" in text
    assert "to detect 0.1:" in text
    doc = as_json(anpord(project, "plan", "--json", "--effect", "0.1"))
    (variant,) = doc["variants"]
    assert variant["cases"] == 2 and variant["within_variance"] > 0 and variant["mde"] > 0.1


def test_compare_lists_cells_then_variants_then_the_judgement_it_used(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p", trials=3)
    assert project.run().code == 0
    bad = project.run(env={"MOOD": "bad"})
    assert bad.run_dir is not None
    out = anpord(project, "compare", "--alpha", "0.01", "--variant-margin", "0.1")
    assert out.returncode == 1, out.stderr  # the variant regressed
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("greet/0000  python:agents.moody:agent/default  inconclusive: ")
    assert "trials a side would decide it" in lines[0]
    assert lines[2].startswith("variant python:agents.moody:agent/default  regressed: mean pass rate 100% → 0%")
    assert lines[-1] == (
        f"run {bad.run_dir.name} against the baselines (alpha 0.01, cell margin ±0.2, variant "
        "margin ±0.1): 0 regressed, 0 improved, 0 unchanged, 2 inconclusive, 0 incomparable"
    )
    show = anpord(project, "show", "latest")
    assert "python:agents.moody:agent/default: pass rate 0% [0–" in show.stdout
    assert "✗ 0/3 0% [0–56%]" in show.stdout


def test_comparing_a_run_with_itself_is_refused_in_one_line(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    assert project.run().code == 0
    same = anpord(project, "compare", "latest", "latest")
    assert same.returncode == 2 and same.stdout == ""
    (line,) = same.stderr.strip().splitlines()
    assert line.startswith("anpord compare: latest and latest are the same run (")
    assert "`anpord compare` alone" in line
    assert anpord(project, "compare").returncode == 0  # against the baselines: fine


# What the history of flaky cells was read with before it was read run by run: one join from the
# run's cells to every reading of the same case in the project's history (the oracle below).
_JOINED_HISTORY = (
    "FROM cells JOIN runs ON runs.id = cells.run_pk "
    "JOIN cells cand ON cand.case_id = cells.case_id AND cand.variant = cells.variant "
    "AND COALESCE(cand.case_hash, '') = COALESCE(cells.case_hash, '') "
    "AND COALESCE(cand.harness, '') = COALESCE(cells.harness, '') "
    "AND COALESCE(cand.model, '') = COALESCE(cells.model, '') "
    "WHERE cand.run_pk = ? AND cells.run_pk <> ? AND (runs.kind IS NULL OR runs.kind = 'eval') AND runs.id IN "
    "(SELECT id FROM runs WHERE project = ? AND (runs.kind IS NULL OR runs.kind = 'eval') "
    "ORDER BY started_at DESC LIMIT ?)"
)


def _joined_history(db: Any, project: str, pk: int, limit: int) -> list[dict[str, Any]]:
    from anpord.store._writes import _CELL_SELECT

    params = (pk, pk, project, limit)
    flaky = {(m["case_id"], m["variant"]) for m in db.all(
        f"SELECT DISTINCT cells.case_id, cells.variant {_JOINED_HISTORY} AND cells.trials > 0 "
        "AND cells.deterministic = ?", (*params, False))}
    rows = db.all(f"SELECT {_CELL_SELECT}, runs.run_id {_JOINED_HISTORY}", params) if flaky else []
    return [m for m in rows if (m["case_id"], m["variant"]) in flaky]


def test_a_flaky_cells_history_is_the_readings_the_whole_history_join_finds(
    tmp_path: Path, backend_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 30 runs of a project (the window reads the last 20), some re-runs (never history), another
    # project's runs, cells whose case content, harness or model differ from the candidate's or
    # are absent (an absent one matches an absent one), flaky and steady readings; each of the
    # last runs as the candidate. The history read run by run is what the one join read.
    from anpord.store._columns import CELL_COLUMNS, COUNTS, RUN_COLUMNS
    from anpord.store._location import store_location
    from anpord.store._writes import history_cells, open_db, put_cells, put_run, run_cells

    for key, value in backend_env.items():
        monkeypatch.setenv(key, value)
    db = open_db(store_location(tmp_path))
    rng = random.Random(7)
    pks: list[int] = []
    with db.transaction():
        for n in range(36):
            project = "other" if n % 9 == 8 else "p"
            run = {c: 0 for c in RUN_COLUMNS} | {
                "status": "finished", "started_at": 1000.0 + n, "variants": "[]",
                "kind": "rerun" if n % 7 == 3 else ("eval" if n % 2 else None)}
            for c in ("finished_at", "host", "run_dir", "evals_root", "anpord_version", "input_tokens",
                      "output_tokens", "cost", "exit_code", "fail_on", "rerun_of", "note", "indexed_at"):
                run[c] = None
            pk = put_run(db, project, f"run-{n:02d}", [run[c] for c in RUN_COLUMNS], replace=True)
            if project == "p":
                pks.append(pk)
            cells = []
            for idx, (case, variant) in enumerate((f"c{i}", v) for i in range(12) for v in ("a", "b")):
                trials = rng.choice([0, 2, 3])
                cell = {c: 0 for c in CELL_COLUMNS} | {
                    "idx": idx, "case_id": case, "variant": variant,
                    "case_hash": rng.choice(["h1", "h1", "h2", ""]), "harness": rng.choice(["x", "x", ""]),
                    "model": rng.choice(["m", ""]), "profile": "", "planned": 3, "trials": trials,
                    "passed": rng.randint(0, trials), "pass_rate": -1, "pass_at_k": -1, "pass_hat_k": -1,
                    "deterministic": rng.choice([True, True, False])}
                cells.append([cell[c] for c in CELL_COLUMNS])
            put_cells(db, pk, cells)
    assert COUNTS[0] == "trials"

    def key(m: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(sorted((k, str(v)) for k, v in m.items()))

    compared = 0
    for pk in pks[-8:]:
        for limit in (20, 5):
            expected = _joined_history(db, "p", pk, limit)
            got = history_cells(db, "p", pk, run_cells(db, pk), limit)
            assert sorted(map(key, got)) == sorted(map(key, expected))
            compared += len(expected)
    db.close()
    assert compared > 100  # the data does hold flaky histories to compare
