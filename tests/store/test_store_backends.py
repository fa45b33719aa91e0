"""The run store on SQLite and on a real PostgreSQL server: runs filed by `anpord eval`, read
back by the history commands and the query API, compared with baselines, rebuilt from folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_support import anpord, as_json, history_project

CELL_A = ("greet/0000", "python:agents.moody:agent/default")


def _results(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_runs_are_filed_read_back_and_compared_on_both_backends(
    backend_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = history_project(tmp_path / "p")
    good = project.run(env=backend_env)
    assert good.code == 0, good.output
    assert "not recorded" not in good.stderr
    bad = project.run("--fail-on", "regressed", env={**backend_env, "MOOD": "bad"})
    assert bad.code == 1, bad.output
    lines = bad.stdout.rstrip("\n").splitlines()
    # At 3 trials no single cell can be significant; the variant's paired change over both
    # cases is: one line for it right before the closing line, which stays last and unchanged.
    assert lines[-1] == "0 passed, 6 failed"
    assert lines[-2].startswith(
        "✗ regressed: variant python:agents.moody:agent/default  mean pass rate 100% → 0%, "
        "Δ −1.00 ["
    ), lines[-2]
    assert lines[-2].endswith("over 2 shared cases")
    assert good.run_dir is not None and bad.run_dir is not None

    runs = as_json(anpord(project, "runs", "--json", env=backend_env))
    assert [r["run_id"] for r in runs] == [bad.run_dir.name, good.run_dir.name]
    assert runs[0]["totals"]["failed"] == 6 and runs[0]["status"] == "finished"
    assert runs[1]["totals"]["passed"] == 6 and runs[1]["planned_trials"] == 6

    cmp = anpord(project, "compare", "--json", env=backend_env)
    assert cmp.returncode == 1, cmp.stderr
    doc = as_json(cmp)
    assert doc["counts"] == {
        "regressed": 0, "improved": 0, "unchanged": 0, "inconclusive": 2, "incomparable": 0
    }
    assert [v["status"] for v in doc["variants"]] == ["regressed"]
    # 5/5 → 0/5 would be p < 0.025 (the strictest Holm step for two cells)
    assert [c["trials_to_decide"] for c in doc["cells"]] == [5, 5]
    assert {c["base"]["run_id"] for c in doc["cells"]} == {good.run_dir.name}

    # The query API a web view uses, on the same store.
    for key, value in backend_env.items():
        monkeypatch.setenv(key, value)
    if not backend_env:
        monkeypatch.delenv("ANPORD_DB", raising=False)
    from anpord.store import open_store

    with open_store(project.folder) as store:
        cells = store.cells(bad.run_dir.name[:-2])  # a unique prefix
        assert [(c.case_id, c.summary.passed, c.summary.failed) for c in cells] == [
            ("greet/0000", 0, 3),
            ("greet/0001", 0, 3),
        ]
        assert all(c.case_hash and c.harness == "python:agents.moody:agent" for c in cells)
        trials = store.trials("latest", case_id="greet/0001")
        on_disk = {(r["case_id"], r["trial"]): r for r in _results(bad.run_dir)}
        assert len(trials) == 3
        for t in trials:
            line = on_disk[(t.case_id, t.trial)]
            assert t.verdict == line["verdict"] == "failed"
            assert (t.events_offset, t.events_length) == (
                line["events"]["offset"],
                line["events"]["length"],
            )
        history = store.cell_history(*CELL_A)
        assert [h.run_id for h in history] == [bad.run_dir.name, good.run_dir.name]
        assert store.baseline(*CELL_A).run_id == good.run_dir.name

    # `baseline set` moves every cell's baseline; a rebuild keeps it.
    assert anpord(project, "baseline", "set", "latest", env=backend_env).returncode == 0
    after = as_json(anpord(project, "compare", "--json", env=backend_env))
    assert after["counts"]["incomparable"] == 2 and after["counts"]["regressed"] == 0
    rebuilt = anpord(project, "db", "rebuild", env=backend_env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "from 2 run folders (12 trials, 1 baseline restored)" in rebuilt.stdout
    fixed = project.run(env=backend_env)
    assert fixed.code == 0
    final = anpord(project, "compare", "--json", env=backend_env)
    assert final.returncode == 0
    assert as_json(final)["counts"]["inconclusive"] == 2
    assert as_json(final)["variants"][0]["status"] == "improved"
    assert {c["base"]["run_id"] for c in as_json(final)["cells"]} == {bad.run_dir.name}


@pytest.mark.slow
def test_two_projects_share_one_postgres_database_without_mixing(
    pg_url: str, tmp_path: Path
) -> None:
    env = {"ANPORD_DB": pg_url}
    one, two = history_project(tmp_path / "one"), history_project(tmp_path / "two")
    assert one.run(env=env).code == 0
    assert two.run(env={**env, "MOOD": "bad"}).code == 1
    listed_one = as_json(anpord(one, "runs", "--json", env=env))
    listed_two = as_json(anpord(two, "runs", "--json", env=env))
    assert len(listed_one) == len(listed_two) == 1
    assert listed_one[0]["totals"]["passed"] == 6 and listed_two[0]["totals"]["failed"] == 6


def test_filing_runs_in_sqlite_imports_no_sqlalchemy_even_creating_the_store(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p", trials=1)
    probe = tmp_path / "modules.txt"
    project.write(
        {
            "evals/evals.config.py": f"""
from anpord import define_eval_config
from anpord.results import ReporterBase


class Probe(ReporterBase):
    def on_run_end(self, summary, results):
        import sys
        with open({str(probe)!r}, "a") as fh:
            fh.write(str("sqlalchemy" in sys.modules) + "\\n")


config = define_eval_config(harness="python:agents.moody:agent", reporters=[Probe()])
"""
        }
    )
    assert project.run().code == 0  # creates the store from its DDL, through the driver alone
    assert project.run().code == 0  # files the run in it
    assert probe.read_text().split() == ["False", "False"]
    assert (project.folder / ".anpord" / "anpord.db").is_file()
    listed = as_json(anpord(project.folder, "runs", "--json"))  # read back through SQLAlchemy
    assert [r["totals"]["trials"] for r in listed] == [2, 2]


def test_the_sqlite_ddl_is_the_schema_sqlalchemy_would_create(tmp_path: Path) -> None:
    import sqlite3

    from anpord.store._columns import SCHEMA_VERSION
    from anpord.store._engine import connect
    from anpord.store._location import StoreLocation
    from anpord.store._sqlite_ddl import SQLITE_SCHEMA, schema_from_metadata
    from anpord.store._writes import open_db

    assert SQLITE_SCHEMA == schema_from_metadata()  # the tables changed: regenerate _sqlite_ddl

    def schema_of(path: Path) -> list[tuple[str, str, str]]:
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        return [(kind, name, " ".join((sql or "").split())) for kind, name, sql in rows]

    def location(path: Path) -> StoreLocation:
        return StoreLocation(url=f"sqlite:///{path}", project="p", project_folder=tmp_path, path=path)

    open_db(location(tmp_path / "raw.db")).close()
    connect(location(tmp_path / "sa.db")).dispose()
    raw, made_by_sqlalchemy = schema_of(tmp_path / "raw.db"), schema_of(tmp_path / "sa.db")
    assert len(raw) >= len(SQLITE_SCHEMA)
    assert [(k, n) for k, n, _ in raw] == [(k, n) for k, n, _ in made_by_sqlalchemy]
    normalize = lambda sql: sql.replace("( ", "(").replace(" )", ")")  # noqa: E731
    assert [normalize(s) for *_, s in raw] == [normalize(s) for *_, s in made_by_sqlalchemy]
    with sqlite3.connect(tmp_path / "raw.db") as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_anpord_help_imports_no_sqlalchemy() -> None:
    import subprocess
    import sys

    from project_support import run_env

    code = "import sys; from anpord.cli.main import main; main(['--help']); print('sqlalchemy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=run_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "False"
