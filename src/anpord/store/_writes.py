"""The store's writes (and the one read a run's end needs), in plain SQL over a DB-API connection.

Filing a run must cost the run next to nothing, and importing SQLAlchemy alone costs more than
filing 10,000 trials, so this path does without it: ``open_db`` connects with the driver itself
(``sqlite3``, or ``psycopg`` for PostgreSQL) and creates a new SQLite store from ``_sqlite_ddl``;
SQLAlchemy is imported only to create a PostgreSQL store or migrate an older one (``_engine``). The SQL here is the subset SQLite and PostgreSQL share (``INSERT
… ON CONFLICT … DO UPDATE``, ``excluded``); their one difference, the placeholder, is ``Db``'s.
The commands' reads, which may filter and page, use SQLAlchemy Core (``_store``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ._columns import CELL_COLUMNS, NO_NUMBER, NO_TEXT, NULLED, RUN_COLUMNS, SCHEMA_VERSION, TRIAL_COLUMNS
from ._location import StoreError, StoreLocation

if TYPE_CHECKING:
    from ._rows import CellRow

__all__ = ["Db", "open_db", "read_schema_version"]

CONNECT_TIMEOUT = 5  # seconds to reach a PostgreSQL server


class Db:
    """A DB-API connection to the store. SQL is written with ``?`` placeholders."""

    def __init__(self, raw: Any, kind: str, location: StoreLocation):
        self.raw = raw
        self.kind = kind
        self.location = location
        self._sql: dict[str, str] = {}

    def sql(self, text: str) -> str:
        if self.kind == "sqlite":
            return text
        out = self._sql.get(text)
        if out is None:
            out = self._sql[text] = text.replace("?", "%s")
        return out

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        cur = self.raw.cursor()
        try:
            cur.execute(self.sql(text), params)
        except UnicodeEncodeError:  # refused while binding, before anything ran: see _utf8
            cur.execute(self.sql(text), _utf8(params))
        return cur

    def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            cur = self.raw.cursor()
            try:
                cur.executemany(self.sql(text), rows)
            except UnicodeEncodeError:
                cur.executemany(self.sql(text), [_utf8(r) for r in rows])
            cur.close()

    def all(self, text: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.execute(text, params)
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        cur.close()
        return rows

    def scalar(self, text: str, params: Sequence[Any] = ()) -> Any:
        cur = self.execute(text, params)
        row = cur.fetchone()
        cur.close()
        return None if row is None else row[0]

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Db]:
        """A write transaction (SQLite: the write lock taken up front, waiting up to the busy
        timeout, so a write never fails half-way for a lock another writer holds)."""
        if self.kind == "sqlite":
            self.raw.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.raw.rollback()
            raise
        self.raw.commit()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken connection
            self.raw.close()


def _connect_raw(location: StoreLocation, busy_timeout: float) -> tuple[Any, str]:
    if location.path is not None:
        import sqlite3

        raw = sqlite3.connect(
            location.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=NORMAL")
        return raw, "sqlite"
    import psycopg

    return psycopg.connect(
        location.url.replace("+psycopg", "", 1), connect_timeout=CONNECT_TIMEOUT
    ), "postgresql"


def read_schema_version(db: Db) -> int | None:
    """The store's schema version; ``None`` for a database without the store's tables."""
    try:
        version = db.scalar("SELECT max(version) FROM schema_version")
    except Exception:  # noqa: BLE001 - no such table (each driver says so its own way)
        db.raw.rollback()
        return None
    db.raw.rollback()  # end the read (PostgreSQL opened a transaction for it)
    return int(version) if version is not None else None


def open_db(location: StoreLocation, *, busy_timeout: float = 5.0, create: bool = True) -> Db:
    """A connection to a store whose schema is current. Creating or migrating the schema is the
    one thing that imports SQLAlchemy. Raises ``StoreError``."""
    from ._location import describe_failure

    if location.path is not None and not location.path.exists() and not create:
        raise StoreError(
            f"no run store at {location.display} yet (run `anpord eval`, or "
            "`anpord db rebuild` to file the runs already there)"
        )
    try:
        if location.path is not None:
            location.path.parent.mkdir(parents=True, exist_ok=True)
        raw, kind = _connect_raw(location, busy_timeout)
    except Exception as exc:
        raise StoreError(describe_failure(exc, location)) from exc
    db = Db(raw, kind, location)
    try:
        version = read_schema_version(db)
        if version is None and kind == "sqlite" and _create_sqlite_schema(db):
            version = SCHEMA_VERSION
        if version != SCHEMA_VERSION:
            from ._engine import connect

            connect(
                location, busy_timeout=busy_timeout
            ).dispose()  # creates or migrates, or refuses
    except StoreError:
        db.close()
        raise
    except Exception as exc:
        db.close()
        raise StoreError(describe_failure(exc, location)) from exc
    return db


def _create_sqlite_schema(db: Db) -> bool:
    """The store's tables in an empty SQLite database, without SQLAlchemy (``_sqlite_ddl``).
    ``False`` when the database is not empty (another process got there first, or it holds
    other tables): then SQLAlchemy's path decides."""
    from ._sqlite_ddl import SQLITE_SCHEMA

    with db.transaction():
        if db.scalar("SELECT count(*) FROM sqlite_master"):
            return False
        for statement in SQLITE_SCHEMA:
            db.execute(statement).close()
        db.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
            (SCHEMA_VERSION, time.time()),
        ).close()
    return True


# -- writing ---------------------------------------------------------------------------------

_RUN_UPSERT = (
    f"INSERT INTO runs (project, run_id, {', '.join(RUN_COLUMNS)}) "
    f"VALUES (?, ?, {', '.join('?' * len(RUN_COLUMNS))}) "
    f"ON CONFLICT (project, run_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in RUN_COLUMNS)
)
def _values(columns: Sequence[str]) -> str:
    """One row's placeholders, with the sentinel of each often-empty column turned into NULL."""
    def one(c: str) -> str:
        if c not in NULLED:
            return "?"
        return "NULLIF(?, '')" if NULLED[c] == NO_TEXT else f"NULLIF(?, {NO_NUMBER})"

    return "(?, " + ", ".join(one(c) for c in columns) + ")"


# Rows per INSERT statement: many rows a statement, not one statement a row (executemany), so
# the driver releases and retakes the GIL once per statement rather than once per row — with the
# runner's event loop busy in the same process, a release per row made filing a trial cost three
# times as much. Yet not too many: SQLite fills 10,000 trial rows in ~17 ms CPU at 50 rows a
# statement, ~28 ms at 400 (the wider the statement, the dearer each row of it).
ROWS_PER_STATEMENT = 50


def _multi_upsert(table: str, columns: Sequence[str], key: Sequence[str], rows: int) -> str:
    return (
        f"INSERT INTO {table} (run_pk, {', '.join(columns)}) VALUES "
        + ", ".join([_values(columns)] * rows)
        + f" ON CONFLICT (run_pk, {', '.join(key)}) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    )


def _put_rows(db: Db, table: str, columns: Sequence[str], key: Sequence[str], pk: int,
              rows: Sequence[Sequence[Any]]) -> None:
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[start : start + ROWS_PER_STATEMENT]
        params: list[Any] = []
        for r in chunk:
            params.append(pk)
            params.extend(r)
        db.execute(_statement(table, columns, key, len(chunk)), params).close()


_statements: dict[tuple[str, int], str] = {}


def _statement(table: str, columns: Sequence[str], key: Sequence[str], rows: int) -> str:
    sql = _statements.get((table, rows))
    if sql is None:
        sql = _statements[(table, rows)] = _multi_upsert(table, columns, key, rows)
    return sql
_MEASURED = "(cells.trials - cells.void - cells.skipped)"


def put_run(db: Db, project: str, run_id: str, values: Sequence[Any], *, replace: bool) -> int:
    """Insert or update a run's row; ``replace`` also drops the cells and trials it had."""
    db.execute(_RUN_UPSERT, (project, run_id, *values)).close()
    pk = int(db.scalar("SELECT id FROM runs WHERE project = ? AND run_id = ?", (project, run_id)))
    if replace:
        db.execute("DELETE FROM trials WHERE run_pk = ?", (pk,)).close()
        db.execute("DELETE FROM cells WHERE run_pk = ?", (pk,)).close()
    return pk


def put_cells(db: Db, pk: int, rows: Sequence[Sequence[Any]]) -> None:
    _put_rows(db, "cells", CELL_COLUMNS, ("idx",), pk, rows)


def put_trials(db: Db, pk: int, rows: Sequence[Sequence[Any]]) -> None:
    _put_rows(db, "trials", TRIAL_COLUMNS, ("cell_idx", "trial"), pk, rows)


# A run that re-used or re-judged earlier work (RunRecord.DERIVED_KINDS) is never a baseline.
MEASURES_HISTORY = "(runs.kind IS NULL OR runs.kind = 'eval')"


def first_readings(db: Db, project: str, pk: int) -> None:
    """The run's cells that measured something become the baseline of cells that have none —
    unless the run is derived (a re-run, a cached run, …)."""
    db.execute(
        "INSERT INTO baselines (project, case_id, variant, run_pk, cell_idx, explicit) "
        "SELECT ?, case_id, variant, run_pk, idx, ? FROM cells JOIN runs ON runs.id = cells.run_pk "
        f"WHERE run_pk = ? AND {_MEASURED} > 0 AND {MEASURES_HISTORY} "
        "ON CONFLICT (project, case_id, variant) DO NOTHING",
        (project, False, pk),
    ).close()


def run_pk(db: Db, project: str, run_id: str) -> int | None:
    pk = db.scalar("SELECT id FROM runs WHERE project = ? AND run_id = ?", (project, run_id))
    return None if pk is None else int(pk)


def delete_run(db: Db, pk: int) -> None:
    for table, key in (("trials", "run_pk"), ("cells", "run_pk"), ("baselines", "run_pk")):
        db.execute(f"DELETE FROM {table} WHERE {key} = ?", (pk,)).close()
    db.execute("DELETE FROM runs WHERE id = ?", (pk,)).close()


def set_baseline(db: Db, project: str, run_id: str, pk: int, set_at: float) -> int:
    """Every measured cell of the run becomes its cell's baseline. Returns how many."""
    found = db.all(
        f"SELECT case_id, variant, idx FROM cells WHERE run_pk = ? AND {_MEASURED} > 0", (pk,)
    )
    db.executemany(
        "INSERT INTO baselines (project, case_id, variant, run_pk, cell_idx, explicit) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project, case_id, variant) DO UPDATE SET "
        "run_pk = excluded.run_pk, cell_idx = excluded.cell_idx, explicit = excluded.explicit",
        [(project, c["case_id"], c["variant"], pk, c["idx"], True) for c in found],
    )
    db.execute(
        "INSERT INTO baseline_sets (project, run_id, set_at) VALUES (?, ?, ?) "
        "ON CONFLICT (project, run_id) DO UPDATE SET set_at = excluded.set_at",
        (project, run_id, set_at),
    ).close()
    return len(found)


def reset_baselines(db: Db, project: str) -> None:
    """Each cell's baseline back to its first reading that measured something."""
    db.execute("DELETE FROM baselines WHERE project = ?", (project,)).close()
    for row in db.all(
        "SELECT id FROM runs WHERE project = ? ORDER BY started_at, run_id", (project,)
    ):
        first_readings(db, project, int(row["id"]))


# -- the comparison with baselines ------------------------------------------------------------

_CELL_SELECT = ", ".join(f"cells.{c}" for c in CELL_COLUMNS)


def run_cells(db: Db, pk: int) -> list[dict[str, Any]]:
    return db.all(f"SELECT {_CELL_SELECT} FROM cells WHERE run_pk = ? ORDER BY idx", (pk,))


def baseline_cells(db: Db, project: str, pk: int) -> list[dict[str, Any]]:
    """The baseline reading of each cell of run ``pk`` that has one other than itself, with its
    run id (a cell that is its own baseline has nothing to be compared with)."""
    return db.all(
        f"SELECT {_CELL_SELECT}, runs.run_id, baselines.explicit FROM baselines "
        "JOIN cells ON cells.run_pk = baselines.run_pk AND cells.idx = baselines.cell_idx "
        "JOIN runs ON runs.id = cells.run_pk "
        "JOIN cells cand ON cand.case_id = baselines.case_id AND cand.variant = baselines.variant "
        "WHERE baselines.project = ? AND cand.run_pk = ? AND baselines.run_pk <> cand.run_pk",
        (project, pk),
    )


FLAKE_HISTORY = 20  # the runs a flaky cell's own variation is read from


_FLAKE_CASES = 500  # case ids named in one query for the flaky cells' history (chunks of it)


def history_cells(db: Db, project: str, pk: int, cells: Sequence[dict[str, Any]],
                  limit: int = FLAKE_HISTORY) -> list[dict[str, Any]]:
    """Earlier readings of run ``pk``'s ``cells`` (its rows, as ``run_cells`` reads them) that
    measured the same thing (case content, harness, model), from the last ``limit`` runs that
    count as history (``pk`` among them, if it is one), with their run ids — of the cells one of
    whose readings was flaky (its trials disagreed) only: no other cell is judged against its
    history (``_compare.flaky_bases``).

    Read run by run: those runs' flaky cells first (an index on the run), then, if any matches,
    the readings of their cases in those runs. A join from the run's cells to every reading of
    the same case would read the project's whole history at every run's end: a suite of 5,000
    cells with 100 runs behind it took 0.2 s there, and more with each run."""
    runs = [r["id"] for r in db.all(
        f"SELECT id FROM runs WHERE project = ? AND {MEASURES_HISTORY} ORDER BY started_at DESC LIMIT ?",
        (project, limit)) if r["id"] != pk]
    if not runs:
        return []
    in_runs = f"cells.run_pk IN ({', '.join('?' * len(runs))})"
    measured = {_measured(m) for m in cells}
    flaky = {(m["case_id"], m["variant"]) for m in db.all(
        f"SELECT case_id, variant, case_hash, harness, model FROM cells WHERE {in_runs} "
        "AND trials > 0 AND deterministic = ?", (*runs, False)) if _measured(m) in measured}
    if not flaky:
        return []
    cases = sorted({case for case, _ in flaky})
    rows: list[dict[str, Any]] = []
    for at in range(0, len(cases), _FLAKE_CASES):
        chunk = cases[at:at + _FLAKE_CASES]
        rows += db.all(
            f"SELECT {_CELL_SELECT}, runs.run_id FROM cells JOIN runs ON runs.id = cells.run_pk "
            f"WHERE {in_runs} AND cells.case_id IN ({', '.join('?' * len(chunk))})", (*runs, *chunk))
    return [m for m in rows if (m["case_id"], m["variant"]) in flaky and _measured(m) in measured]


def _measured(cell: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """What a reading of a cell measured: its case and variant, the case's content, the harness
    and the model (an absent one matches an absent one)."""
    return (cell["case_id"], cell["variant"], cell["case_hash"] or "", cell["harness"] or "",
            cell["model"] or "")


def compare_with_baselines(
    db: Db, project: str, run_id: str, pk: int, threshold: float,
    cands: Sequence[CellRow] | None = None, **judged: float,
) -> Any:
    """The run's cells against their baselines (``judged``: ``alpha``, ``variant_margin``); a
    flaky cell against its own history (``_compare.flaky_bases``). ``cands``: the run's cells as
    the store holds them (``_rows.cell_row_of``), when the caller has them; else read back."""
    from ._compare import compare_cells, flaky_bases
    from ._rows import cell_row

    if cands is None:
        cells = run_cells(db, pk)
        cands = [cell_row(m, run_id) for m in cells]
    else:
        cells = [{"case_id": c.case_id, "variant": c.variant, "case_hash": c.case_hash,
                  "harness": c.harness, "model": c.model} for c in cands]
    found = baseline_cells(db, project, pk)
    bases = {(m["case_id"], m["variant"]): cell_row(m, m["run_id"]) for m in found}
    implicit = {(m["case_id"], m["variant"]) for m in found if not m["explicit"]}
    history = [cell_row(m, m["run_id"]) for m in history_cells(db, project, pk, cells)]
    bases.update(flaky_bases(cands, bases, implicit, history))
    return compare_cells(run_id, cands, bases, threshold, **judged)  # type: ignore[arg-type]


def now() -> float:
    return time.time()


def _utf8(params: Sequence[Any]) -> list[Any]:
    """The parameters with each lone surrogate (a string Python holds and UTF-8 cannot: half an
    emoji cut off, bytes that were not UTF-8) written as its backslash escape, since neither
    SQLite nor PostgreSQL takes one. Only on the rare statement refused for it."""
    return [p.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(p, str) else p
            for p in params]
