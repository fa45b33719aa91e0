"""The store's column names and schema version, in plain Python: the writes (``_writes``) use them
without importing SQLAlchemy, and ``_schema`` builds its tables from the same names (a test holds
the two together)."""

from __future__ import annotations

__all__ = ["CELL_COLUMNS", "COUNTS", "RUN_COLUMNS", "SCHEMA_VERSION", "TRIAL_COLUMNS"]

SCHEMA_VERSION = 1

COUNTS = ("trials", "passed", "scored", "failed", "timed_out", "void", "skipped")

# Written by the runs upsert (besides project and run_id, the key).
RUN_COLUMNS = (
    "status",
    "started_at",
    "finished_at",
    "host",
    "run_dir",
    "evals_root",
    "anpord_version",
    "variants",
    "planned_trials",
    *COUNTS,
    "input_tokens",
    "output_tokens",
    "cost",
    "exit_code",
    "fail_on",
    "rerun_of",
    "resumed",
    "note",
    "indexed_at",
)

# Besides run_pk, the key with idx.
CELL_COLUMNS = (
    "idx",
    "case_id",
    "variant",
    "case_hash",
    "harness",
    "model",
    "profile",
    "planned",
    *COUNTS,
    "pass_rate",
    "pass_at_k",
    "pass_hat_k",
    "deterministic",
)

# Besides run_pk, the key with cell_idx and trial.
TRIAL_COLUMNS = (
    "cell_idx",
    "trial",
    "verdict",
    "reason",
    "duration",
    "started_at",
    "score",
    "input_tokens",
    "output_tokens",
    "cost",
    "error_kind",
    "error_message",
    "events_offset",
    "events_length",
    "events_count",
    "attempt",
)
