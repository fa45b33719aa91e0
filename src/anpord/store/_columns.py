"""The store's column names and schema version, in plain Python: the writes (``_writes``) use them
without importing SQLAlchemy, and ``_schema`` builds its tables from the same names (a test holds
the two together)."""

from __future__ import annotations

__all__ = [
    "CELL_COLUMNS",
    "COUNTS",
    "NO_NUMBER",
    "NO_TEXT",
    "NULLED",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "TRIAL_COLUMNS",
]

SCHEMA_VERSION = 2

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
    "kind",
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


# The columns a trial or cell row often leaves empty. Binding None costs the database driver an
# adapter lookup per value (it doubled the cost of filing a trial), so the rows carry a sentinel
# instead and the SQL turns it back into NULL (`NULLIF(?, -1)`): -1 is never a token count, a
# cost, a score, a rate or an offset, and an empty text never names anything.
NO_NUMBER = -1
NO_TEXT = ""
NULLED = {
    "case_hash": NO_TEXT,
    "harness": NO_TEXT,
    "model": NO_TEXT,
    "profile": NO_TEXT,
    "pass_rate": NO_NUMBER,
    "pass_at_k": NO_NUMBER,
    "pass_hat_k": NO_NUMBER,
    "score": NO_NUMBER,
    "input_tokens": NO_NUMBER,
    "output_tokens": NO_NUMBER,
    "cost": NO_NUMBER,
    "error_kind": NO_TEXT,
    "error_message": NO_TEXT,
    "events_offset": NO_NUMBER,
    "events_length": NO_NUMBER,
    "events_count": NO_NUMBER,
}
