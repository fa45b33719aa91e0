"""The store's tables as SQLite DDL, so that a new SQLite store (the first run of every project)
is created without importing SQLAlchemy, which costs more than filing thousands of trials.

``SQLITE_SCHEMA`` is what SQLAlchemy emits for ``_schema.metadata`` on SQLite, whitespace aside;
``schema_from_metadata()`` emits it afresh, and a test holds the two equal, so a change to the
tables that is not made here too fails the tests. PostgreSQL stores, and migrations, go through
SQLAlchemy (``_engine``).
"""

from __future__ import annotations

__all__ = ["SQLITE_SCHEMA", "schema_from_metadata"]

SQLITE_SCHEMA: tuple[str, ...] = (
    (
        "CREATE TABLE baseline_sets (project VARCHAR(200) NOT NULL, "
        "run_id VARCHAR(100) NOT NULL, set_at FLOAT NOT NULL, PRIMARY KEY (project, run_id))"
    ),
    (
        "CREATE TABLE runs (id INTEGER NOT NULL, project VARCHAR(200) NOT NULL, "
        "run_id VARCHAR(100) NOT NULL, status VARCHAR(20) NOT NULL, started_at FLOAT NOT NULL, "
        "finished_at FLOAT, host VARCHAR(255), run_dir TEXT, evals_root TEXT, "
        "anpord_version VARCHAR(50), variants TEXT NOT NULL, planned_trials INTEGER NOT NULL, "
        "trials INTEGER NOT NULL, passed INTEGER NOT NULL, scored INTEGER NOT NULL, "
        "failed INTEGER NOT NULL, timed_out INTEGER NOT NULL, void INTEGER NOT NULL, "
        "skipped INTEGER NOT NULL, input_tokens FLOAT, output_tokens FLOAT, cost FLOAT, "
        "exit_code INTEGER, fail_on VARCHAR(20), rerun_of VARCHAR(100), "
        "resumed INTEGER NOT NULL, note TEXT, indexed_at FLOAT, kind VARCHAR(20), PRIMARY KEY (id), "
        "CONSTRAINT runs_project_run_id UNIQUE (project, run_id))"
    ),
    "CREATE INDEX runs_project_started ON runs (project, started_at)",
    (
        "CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at FLOAT NOT NULL, "
        "PRIMARY KEY (version))"
    ),
    (
        "CREATE TABLE baselines (project VARCHAR(200) NOT NULL, case_id TEXT NOT NULL, "
        "variant TEXT NOT NULL, run_pk INTEGER NOT NULL, cell_idx INTEGER NOT NULL, "
        "explicit BOOLEAN NOT NULL, PRIMARY KEY (project, case_id, variant), "
        "FOREIGN KEY(run_pk) REFERENCES runs (id) ON DELETE CASCADE)"
    ),
    (
        "CREATE TABLE cells (run_pk INTEGER NOT NULL, idx INTEGER NOT NULL, "
        "case_id TEXT NOT NULL, variant TEXT NOT NULL, case_hash VARCHAR(64), harness TEXT, "
        "model TEXT, profile TEXT, planned INTEGER NOT NULL, trials INTEGER NOT NULL, "
        "passed INTEGER NOT NULL, scored INTEGER NOT NULL, failed INTEGER NOT NULL, "
        "timed_out INTEGER NOT NULL, void INTEGER NOT NULL, skipped INTEGER NOT NULL, "
        "pass_rate FLOAT, pass_at_k FLOAT, pass_hat_k FLOAT, deterministic BOOLEAN, "
        "PRIMARY KEY (run_pk, idx), FOREIGN KEY(run_pk) REFERENCES runs (id) ON DELETE CASCADE)"
    ),
    "CREATE INDEX cells_case_variant ON cells (case_id, variant)",
    (
        "CREATE TABLE trials (run_pk INTEGER NOT NULL, cell_idx INTEGER NOT NULL, "
        "trial INTEGER NOT NULL, verdict VARCHAR(20) NOT NULL, reason TEXT NOT NULL, "
        "duration FLOAT NOT NULL, started_at FLOAT NOT NULL, score FLOAT, input_tokens FLOAT, "
        "output_tokens FLOAT, cost FLOAT, error_kind VARCHAR(20), error_message TEXT, "
        "events_offset BIGINT, events_length BIGINT, events_count INTEGER, "
        "attempt INTEGER NOT NULL, PRIMARY KEY (run_pk, cell_idx, trial), "
        "FOREIGN KEY(run_pk) REFERENCES runs (id) ON DELETE CASCADE)"
    ),
)


def schema_from_metadata() -> tuple[str, ...]:
    """The statements SQLAlchemy's ``metadata.create_all`` runs on SQLite, one line each."""
    import sqlalchemy as sa
    from sqlalchemy.dialects import sqlite

    from ._schema import metadata

    dialect = sqlite.dialect()
    out = []
    for table in metadata.sorted_tables:
        out.append(_one_line(str(sa.schema.CreateTable(table).compile(dialect=dialect))))
        for index in sorted(table.indexes, key=lambda i: i.name or ""):
            out.append(_one_line(str(sa.schema.CreateIndex(index).compile(dialect=dialect))))
    return tuple(out)


def _one_line(sql: str) -> str:
    return " ".join(sql.split()).replace("( ", "(").replace(" )", ")")
