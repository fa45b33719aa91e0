"""The store's tables, and the migrations that bring an older store up to them.

One schema for SQLite and PostgreSQL, written with SQLAlchemy Core. ``schema_version`` holds one
row per applied version. A new store gets the current tables at once (``metadata.create_all``)
and is stamped ``SCHEMA_VERSION``; a store at an older version runs each later step of
``MIGRATIONS`` in order, in one transaction; a store at a newer version is refused (a newer anpord
wrote it). Events are not stored: a trial row keeps the byte range of its events in the run
folder's ``events.ndjson``.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from ._columns import COUNTS, SCHEMA_VERSION

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "baseline_sets",
    "baselines",
    "cells",
    "metadata",
    "runs",
    "schema_version",
    "trials",
]

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("applied_at", sa.Float, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project", sa.String(200), nullable=False),
    sa.Column("run_id", sa.String(100), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float),
    sa.Column("host", sa.String(255)),
    sa.Column("run_dir", sa.Text),
    sa.Column("evals_root", sa.Text),
    sa.Column("anpord_version", sa.String(50)),
    sa.Column("variants", sa.Text, nullable=False, default=""),  # labels, one a line
    sa.Column("planned_trials", sa.Integer, nullable=False, default=0),
    *(sa.Column(name, sa.Integer, nullable=False, default=0) for name in COUNTS),
    sa.Column("input_tokens", sa.Float),
    sa.Column("output_tokens", sa.Float),
    sa.Column("cost", sa.Float),
    sa.Column("exit_code", sa.Integer),
    sa.Column("fail_on", sa.String(20)),
    sa.Column("rerun_of", sa.String(100)),
    sa.Column("resumed", sa.Integer, nullable=False, default=0),
    sa.Column("note", sa.Text),
    sa.Column("indexed_at", sa.Float),
    sa.Column("kind", sa.String(20)),  # RunRecord.run_kind; None: filed before kinds ("eval")
    sa.UniqueConstraint("project", "run_id", name="runs_project_run_id"),
    sa.Index("runs_project_started", "project", "started_at"),
)

cells = sa.Table(
    "cells",
    metadata,
    sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),  # its place in the plan
    sa.Column("case_id", sa.Text, nullable=False),
    sa.Column("variant", sa.Text, nullable=False),
    sa.Column("case_hash", sa.String(64)),
    sa.Column("harness", sa.Text),
    sa.Column("model", sa.Text),
    sa.Column("profile", sa.Text),
    sa.Column("planned", sa.Integer, nullable=False),
    *(sa.Column(name, sa.Integer, nullable=False, default=0) for name in COUNTS),
    sa.Column("pass_rate", sa.Float),
    sa.Column("pass_at_k", sa.Float),
    sa.Column("pass_hat_k", sa.Float),
    sa.Column("deterministic", sa.Boolean),
    sa.Index("cells_case_variant", "case_id", "variant"),
)

trials = sa.Table(
    "trials",
    metadata,
    sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("cell_idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("trial", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("verdict", sa.String(20), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("duration", sa.Float, nullable=False, default=0.0),
    sa.Column("started_at", sa.Float, nullable=False, default=0.0),
    sa.Column("score", sa.Float),
    sa.Column("input_tokens", sa.Float),
    sa.Column("output_tokens", sa.Float),
    sa.Column("cost", sa.Float),
    sa.Column("error_kind", sa.String(20)),
    sa.Column("error_message", sa.Text),
    sa.Column("events_offset", sa.BigInteger),
    sa.Column("events_length", sa.BigInteger),
    sa.Column("events_count", sa.Integer),
    sa.Column("attempt", sa.Integer, nullable=False, default=0),
)

# Each cell's baseline reading: its first reading that measured something, or the cell of the run
# last named by `anpord baseline set` (explicit).
baselines = sa.Table(
    "baselines",
    metadata,
    sa.Column("project", sa.String(200), primary_key=True),
    sa.Column("case_id", sa.Text, primary_key=True),
    sa.Column("variant", sa.Text, primary_key=True),
    sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("cell_idx", sa.Integer, nullable=False),
    sa.Column("explicit", sa.Boolean, nullable=False, default=False),
)

# Every `anpord baseline set RUN`, so a rebuild can replay them.
baseline_sets = sa.Table(
    "baseline_sets",
    metadata,
    sa.Column("project", sa.String(200), primary_key=True),
    sa.Column("run_id", sa.String(100), primary_key=True),
    sa.Column("set_at", sa.Float, nullable=False),
)

# version → the step that brings a store at version - 1 to it. Version 1 is the first schema:
# there is nothing before it to migrate from.
def _add_run_kind(conn: sa.Connection) -> None:
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN kind VARCHAR(20)"))
    # What a version-1 store can tell: a re-run names the run it re-ran.
    conn.execute(sa.text("UPDATE runs SET kind = 'rerun' WHERE rerun_of IS NOT NULL"))


MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {2: _add_run_kind}
