"""``Store``: the run store as the commands and a web view use it.

Reads are SQLAlchemy Core queries returning the typed rows of ``_rows``; writes go through the
plain-SQL functions of ``_writes`` (the same ones a running run files itself with), on this
store's connection. Every method turns a database failure into one ``StoreError`` line; an unknown
run is a ``LookupError``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence

import sqlalchemy as sa

from ..results._model import TrialResult
from ..results._run_record import RunRecord
from . import _writes as w
from ._columns import CELL_COLUMNS
from ._compare import (
    ALPHA,
    DEFAULT_THRESHOLD,
    VARIANT_MARGIN,
    Comparison,
    compare_cells,
    flaky_bases,
)
from ._engine import connect, translate
from ._location import StoreLocation
from ._rows import (
    CellRow,
    RunRow,
    TrialRow,
    cell_row,
    cell_tuple,
    run_row,
    run_tuple,
    trial_row,
    trial_tuple,
    variants_by_label,
)
from ._schema import baseline_sets, baselines, cells, runs, trials

__all__ = ["Store", "file_run"]


_KIND_WORDS = {
    "rerun": "re-run of failed trials",
    "cached": "run with cached model calls",
    "replay": "replayed run",
    "audit": "suite audit",
    "regrade": "regrade",
}


def file_run(
    db: w.Db,
    project: str,
    record: RunRecord,
    run_dir: str | None,
    results: Sequence[TrialResult],
    redact: Callable[[str], str] = str,
) -> int:
    """File a whole run (its row, every planned cell, every trial), replacing what the store had
    for it, inside the caller's transaction. Returns the run's key."""
    pk = w.put_run(
        db, project, record.run_id, run_tuple(record, run_dir, time.time()), replace=True
    )
    places = {(c.case_id, c.variant): i for i, c in enumerate(record.cells)}
    by_cell: dict[int, dict[int, TrialResult]] = {}
    for r in results:
        idx = places.get(r.cell_key)
        if idx is not None:  # a later attempt of the same trial replaces the earlier
            by_cell.setdefault(idx, {})[r.trial] = r
    from ..results._model import summarize_cell

    variants = variants_by_label(record)
    w.put_cells(
        db,
        pk,
        [
            cell_tuple(
                i,
                c,
                variants.get(c.variant, {}),
                summarize_cell(sorted(by_cell[i].values(), key=lambda r: r.trial))
                if i in by_cell
                else None,
            )
            for i, c in enumerate(record.cells)
        ],
    )
    w.put_trials(
        db, pk, [trial_tuple(r, idx, redact) for idx, ts in by_cell.items() for r in ts.values()]
    )
    return pk


class Store:
    """One project's view of a run store. Open with ``anpord.store.open_store``; close when done."""

    def __init__(self, location: StoreLocation, engine: sa.Engine):
        self.location = location
        self.project = location.project
        self.engine = engine

    @classmethod
    def open(
        cls, location: StoreLocation, *, busy_timeout: float = 5.0, create: bool = True
    ) -> Store:
        with translate(location):
            return cls(location, connect(location, busy_timeout=busy_timeout, create=create))

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[w.Db]:
        with translate(self.location):
            proxy = self.engine.raw_connection()
            try:
                db = w.Db(proxy.driver_connection, self.engine.dialect.name, self.location)
                with db.transaction():
                    yield db
            finally:
                proxy.close()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[w.Db]:
        with translate(self.location):
            proxy = self.engine.raw_connection()
            try:
                raw = proxy.driver_connection
                assert raw is not None
                yield w.Db(raw, self.engine.dialect.name, self.location)
                raw.rollback()  # end PostgreSQL's implicit read transaction
            finally:
                proxy.close()

    # -- writing ----------------------------------------------------------------------------

    def index_run(
        self,
        record: RunRecord,
        run_dir: str | None,
        results: Sequence[TrialResult],
        redact: Callable[[str], str] = str,
    ) -> None:
        """File a whole run read from its folder (a rebuild, or a run the store missed); its cells
        that measured something become the baseline of cells that had none."""
        with self._writing() as db:
            pk = file_run(db, self.project, record, run_dir, results, redact)
            w.first_readings(db, self.project, pk)

    def delete_run(self, run_id: str) -> bool:
        with self._writing() as db:
            pk = w.run_pk(db, self.project, run_id)
            if pk is None:
                return False
            w.delete_run(db, pk)
            return True

    def set_baseline(self, ref: str, *, set_at: float | None = None) -> tuple[str, int]:
        """Make every measured cell of a run its cell's baseline. Returns (run id, cells)."""
        run_id = self.resolve(ref)
        with self._writing() as db:
            pk = w.run_pk(db, self.project, run_id)
            if pk is None:
                raise LookupError(f"unknown run {ref!r}")
            kind = db.scalar("SELECT kind FROM runs WHERE id = ?", (pk,)) or "eval"
            if kind != "eval":
                raise LookupError(
                    f"run {run_id} is a {_KIND_WORDS.get(kind, kind)}: it re-used earlier work, "
                    "so it cannot be a baseline (set one made by a plain `anpord eval`)"
                )
            n = w.set_baseline(
                db, self.project, run_id, pk, set_at if set_at is not None else time.time()
            )
        return run_id, n

    def reset_baselines(self) -> None:
        """Each cell's baseline back to its first measured reading (replay explicit ones with
        ``set_baseline``)."""
        with self._writing() as db:
            w.reset_baselines(db, self.project)

    def baseline_sets(self) -> list[tuple[str, float]]:
        """Every ``anpord baseline set`` of this project: (run id, when), oldest first."""
        with translate(self.location), self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(baseline_sets.c.run_id, baseline_sets.c.set_at)
                .where(baseline_sets.c.project == self.project)
                .order_by(baseline_sets.c.set_at)
            ).all()
        return [(r[0], float(r[1])) for r in rows]

    # -- reading ----------------------------------------------------------------------------

    def _resolve(self, conn: sa.Connection, ref: str) -> tuple[str, int]:
        mine = runs.c.project == self.project
        pick = sa.select(runs.c.run_id, runs.c.id)
        if ref == "latest":
            row = conn.execute(
                pick.where(mine).order_by(runs.c.started_at.desc(), runs.c.run_id.desc()).limit(1)
            ).first()
            if row is None:
                raise LookupError("no runs in the run history yet (run `anpord eval` first)")
            return row[0], row[1]
        row = conn.execute(pick.where(mine, runs.c.run_id == ref)).first()
        if row is not None:
            return row[0], row[1]
        hits = conn.execute(
            pick.where(mine, runs.c.run_id.startswith(ref, autoescape=True))
            .order_by(runs.c.run_id)
            .limit(6)
        ).all()
        if len(hits) == 1:
            return hits[0][0], hits[0][1]
        if hits:
            names = ", ".join(h[0] for h in hits[:5]) + (", …" if len(hits) > 5 else "")
            raise LookupError(f"run prefix {ref!r} is ambiguous: it matches {names}")
        raise LookupError(f"unknown run {ref!r} (see `anpord runs`, or use `latest`)")

    def resolve(self, ref: str) -> str:
        """A run id from an id, a unique prefix or ``latest``."""
        with translate(self.location), self.engine.connect() as conn:
            return self._resolve(conn, ref)[0]

    def runs(
        self, *, limit: int | None = 20, offset: int = 0, status: str | None = None
    ) -> list[RunRow]:
        """Runs, newest first."""
        q = sa.select(runs).where(runs.c.project == self.project)
        if status is not None:
            q = q.where(runs.c.status == status)
        q = q.order_by(runs.c.started_at.desc(), runs.c.run_id.desc()).offset(offset)
        if limit is not None:
            q = q.limit(limit)
        with translate(self.location), self.engine.connect() as conn:
            return [run_row(m) for m in conn.execute(q).mappings()]

    def run_states(self) -> dict[str, tuple[str, str | None]]:
        """Every run id of this project → (status, host)."""
        with translate(self.location), self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(runs.c.run_id, runs.c.status, runs.c.host).where(
                    runs.c.project == self.project
                )
            ).all()
        return {r[0]: (r[1], r[2]) for r in rows}

    def count_runs(self) -> int:
        with translate(self.location), self.engine.connect() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count())
                    .select_from(runs)
                    .where(runs.c.project == self.project)
                ).scalar_one()
            )

    def run(self, ref: str) -> RunRow:
        with translate(self.location), self.engine.connect() as conn:
            _, pk = self._resolve(conn, ref)
            return run_row(conn.execute(sa.select(runs).where(runs.c.id == pk)).mappings().one())

    def _cells(self, conn: sa.Connection, pk: int, run_id: str) -> list[CellRow]:
        q = (
            sa.select(*(cells.c[c] for c in CELL_COLUMNS))
            .where(cells.c.run_pk == pk)
            .order_by(cells.c.idx)
        )
        return [cell_row(m, run_id) for m in conn.execute(q).mappings()]

    def cells(self, ref: str) -> list[CellRow]:
        """A run's cells in plan order."""
        with translate(self.location), self.engine.connect() as conn:
            run_id, pk = self._resolve(conn, ref)
            return self._cells(conn, pk, run_id)

    def trials(
        self,
        ref: str,
        *,
        case_id: str | None = None,
        variant: str | None = None,
        verdicts: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[TrialRow]:
        """A run's trials in plan order (cell, then trial index), filtered as asked."""
        with translate(self.location), self.engine.connect() as conn:
            run_id, pk = self._resolve(conn, ref)
            q = (
                sa.select(trials, cells.c.case_id, cells.c.variant)
                .join(
                    cells,
                    sa.and_(cells.c.run_pk == trials.c.run_pk, cells.c.idx == trials.c.cell_idx),
                )
                .where(trials.c.run_pk == pk)
            )
            if case_id is not None:
                q = q.where(cells.c.case_id == case_id)
            if variant is not None:
                q = q.where(cells.c.variant == variant)
            if verdicts:
                q = q.where(trials.c.verdict.in_(list(verdicts)))
            q = q.order_by(trials.c.cell_idx, trials.c.trial).offset(offset)
            if limit is not None:
                q = q.limit(limit)
            return [trial_row(m, run_id) for m in conn.execute(q).mappings()]

    def cell_history(self, case_id: str, variant: str, *, limit: int = 20) -> list[CellRow]:
        """One cell's latest readings, newest first (a trend line)."""
        q = (
            sa.select(*(cells.c[c] for c in CELL_COLUMNS), runs.c.run_id)
            .join(runs, runs.c.id == cells.c.run_pk)
            .where(
                runs.c.project == self.project,
                cells.c.case_id == case_id,
                cells.c.variant == variant,
            )
            .order_by(runs.c.started_at.desc())
            .limit(limit)
        )
        with translate(self.location), self.engine.connect() as conn:
            return [cell_row(m, m["run_id"]) for m in conn.execute(q).mappings()]

    def cell_history_many(
        self, keys: Sequence[tuple[str, str]], *, limit: int = 20
    ) -> dict[tuple[str, str], list[CellRow]]:
        """``cell_history`` of each (case id, variant) in ``keys``, in one query."""
        wanted = set(keys)
        out: dict[tuple[str, str], list[CellRow]] = {k: [] for k in wanted}
        if not wanted:
            return out
        q = (
            sa.select(*(cells.c[c] for c in CELL_COLUMNS), runs.c.run_id)
            .join(runs, runs.c.id == cells.c.run_pk)
            .where(
                runs.c.project == self.project,
                cells.c.case_id.in_(sorted({k[0] for k in wanted})),
                cells.c.variant.in_(sorted({k[1] for k in wanted})),
            )
            .order_by(runs.c.started_at.desc())
        )
        with translate(self.location), self.engine.connect() as conn:
            for m in conn.execute(q).mappings():
                mine = out.get((m["case_id"], m["variant"]))
                if mine is not None and len(mine) < limit:
                    mine.append(cell_row(m, m["run_id"]))
        return out

    def history_runs(self, *, limit: int | None = None) -> list[str]:
        """The ids of the runs that count as history — made by a plain ``anpord eval``, not a
        re-run or a cached run — newest first."""
        kind = sa.or_(runs.c.kind.is_(None), runs.c.kind == "eval")
        q = (
            sa.select(runs.c.run_id)
            .where(runs.c.project == self.project, kind)
            .order_by(runs.c.started_at.desc(), runs.c.run_id.desc())
        )
        if limit is not None:
            q = q.limit(limit)
        with translate(self.location), self.engine.connect() as conn:
            return [r[0] for r in conn.execute(q).all()]

    def cell_histories(
        self, *, limit: int | None = None
    ) -> dict[tuple[str, str], list[CellRow]]:
        """Each cell's readings over the last ``limit`` history runs (``history_runs``), newest
        first, keeping only those that measured what its newest reading measured: the same case
        content, harness and model. A flake history never mixes two versions of a case."""
        ids = self.history_runs(limit=limit)
        if not ids:
            return {}
        q = (
            sa.select(*(cells.c[c] for c in CELL_COLUMNS), runs.c.run_id)
            .join(runs, runs.c.id == cells.c.run_pk)
            .where(runs.c.project == self.project, runs.c.run_id.in_(ids))
            .order_by(runs.c.started_at.desc(), runs.c.run_id.desc(), cells.c.idx)
        )
        out: dict[tuple[str, str], list[CellRow]] = {}
        with translate(self.location), self.engine.connect() as conn:
            for m in conn.execute(q).mappings():
                row = cell_row(m, m["run_id"])
                if row.summary is None:
                    continue
                mine = out.setdefault((row.case_id, row.variant), [])
                if mine and (mine[0].case_hash, mine[0].harness, mine[0].model) != (
                    row.case_hash, row.harness, row.model
                ):
                    continue
                mine.append(row)
        return out

    def baseline(self, case_id: str, variant: str) -> CellRow | None:
        """The reading a cell is compared with, if it has one."""
        q = (
            sa.select(*(cells.c[c] for c in CELL_COLUMNS), runs.c.run_id)
            .join(
                baselines,
                sa.and_(baselines.c.run_pk == cells.c.run_pk, baselines.c.cell_idx == cells.c.idx),
            )
            .join(runs, runs.c.id == cells.c.run_pk)
            .where(
                baselines.c.project == self.project,
                baselines.c.case_id == case_id,
                baselines.c.variant == variant,
            )
        )
        with translate(self.location), self.engine.connect() as conn:
            m = conn.execute(q).mappings().first()
        return cell_row(m, m["run_id"]) if m is not None else None

    def compare(
        self,
        base: str | None = None,
        candidate: str = "latest",
        *,
        threshold: float = DEFAULT_THRESHOLD,
        alpha: float = ALPHA,
        variant_margin: float = VARIANT_MARGIN,
    ) -> Comparison:
        """The candidate run's cells against a base run's, or (``base`` None) against each
        cell's baseline: each cell's change and each variant's paired change (``_compare``)."""
        judged = {"alpha": alpha, "variant_margin": variant_margin}
        with translate(self.location), self.engine.connect() as conn:
            cand_id, cand_pk = self._resolve(conn, candidate)
            base_ref = self._resolve(conn, base) if base is not None else None
        with self._reading() as db:  # plain SQL: the same query a run's end uses
            cells = w.run_cells(db, cand_pk)
            cands = [cell_row(m, cand_id) for m in cells]
            if base_ref is None:
                found = w.baseline_cells(db, self.project, cand_pk)
                bases = {(m["case_id"], m["variant"]): cell_row(m, m["run_id"]) for m in found}
                implicit = {(m["case_id"], m["variant"]) for m in found if not m["explicit"]}
                history = [cell_row(m, m["run_id"]) for m in w.history_cells(db, self.project, cand_pk, cells)]
        if base_ref is None:
            bases.update(flaky_bases(cands, bases, implicit, history))
            return compare_cells(cand_id, cands, bases, threshold, **judged)  # type: ignore[arg-type]
        with self._reading() as db:
            base_id, base_pk = base_ref
            base_cells = {
                (c.case_id, c.variant): c
                for c in (cell_row(m, base_id) for m in w.run_cells(db, base_pk))
            }
        keys = {(c.case_id, c.variant) for c in cands}
        base_only: dict[str, int] = {}
        for k, c in base_cells.items():
            if k not in keys and c.summary is not None:
                base_only[k[1]] = base_only.get(k[1], 0) + 1
        return compare_cells(
            cand_id,
            cands,
            base_cells,
            threshold,
            base_run=base_id,
            only_in_base=sum(base_only.values()),
            base_only=base_only,
            **judged,  # type: ignore[arg-type]
        )
