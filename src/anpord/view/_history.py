"""``ViewData`` with history from the run store: the baseline a cell is compared with (the one a
team set with ``anpord baseline set RUN``, else the cell's first reading) and a cell's pass rate
over runs come from the store's index; everything else — a run's grid, a trial's events — is read
from the run folders, which stay the source of truth. When the store cannot be used (history off,
a locked or damaged database, Postgres down), the view falls back to the folders' own rule and
says so once on stderr.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._data import CellDelta, CellKey, HistoryPoint
from ._folders import FolderViewData

__all__ = ["StoreViewData"]

# How long the store's answers for one run or cell are reused (the store changes as runs end).
TTL = 5.0


class StoreViewData(FolderViewData):
    def __init__(self, project_folder: Path, **kwargs: Any):
        super().__init__(project_folder, **kwargs)
        self._store: Any = None
        self._store_error: str | None = None
        self._store_lock = threading.Lock()
        self._cache: dict[tuple[str, ...], tuple[float, Any]] = {}
        self._settled_starts: dict[str, float | None] | None = None

    def _open(self) -> Any:
        with self._store_lock:
            if self._store is None and self._store_error is None:
                from ..store import StoreError, catch_up, open_store

                try:
                    self._store = open_store(self.project_folder)
                    catch_up(self._store, self.project_folder)
                except StoreError as exc:
                    self._store_error = str(exc)
                    print(f"anpord view: history from the run folders only: {exc}", file=sys.stderr)
            return self._store

    def _cached(self, key: tuple[str, ...], compute: Any) -> Any:
        hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < TTL:
            return hit[1]
        value = compute()
        self._cache[key] = (time.monotonic(), value)
        return value

    def prefetch_histories(self, keys: Sequence[CellKey]) -> None:
        """Read the history of each cell in ``keys`` in one query, for the ``cell_history``
        calls that follow (within the cache's lifetime)."""
        store = self._open()
        if store is None:
            return
        try:
            many = store.cell_history_many(keys, limit=200)
        except Exception:  # noqa: BLE001 - each cell_history asks on its own
            return
        now = time.monotonic()
        for (case_id, variant), rows in many.items():
            self._cache[("history", case_id, variant)] = (now, rows)

    def _starts(self) -> dict[str, float | None]:
        """Each listed run's start time; settled (``settle``), listed once."""
        if self._settled is not None and self._settled_starts is not None:
            return self._settled_starts
        started = {r.run_id: r.started_at for r in self.runs()}
        if self._settled is not None:
            self._settled_starts = started
        return started

    def cell_history(self, case_id: str, variant: str) -> Sequence[HistoryPoint]:  # type: ignore[override]
        store = self._open()
        if store is None:
            return super().cell_history(case_id, variant)
        try:
            rows = self._cached(("history", case_id, variant),
                                lambda: store.cell_history(case_id, variant, limit=200))
        except Exception:  # noqa: BLE001 - the store is an index: the folders still answer
            return super().cell_history(case_id, variant)
        started = self._starts()
        points = []
        for row in reversed(rows):  # the store gives newest first
            s = row.summary
            if s is None or row.run_id not in started:
                continue  # no finished trial yet, or its folder is gone
            points.append(HistoryPoint(row.run_id, started[row.run_id] or 0.0, s.pass_rate, s.passed,
                                       s.measured, s.trials))
        return points

    def baseline_deltas(self, run_id: str) -> Mapping[CellKey, CellDelta]:  # type: ignore[override]
        store = self._open()
        if store is None:
            return super().baseline_deltas(run_id)
        try:
            comparison = self._cached(("compare", run_id), lambda: store.compare(None, run_id))
        except Exception:  # noqa: BLE001 - a run the store does not know (unreadable, just made)
            return super().baseline_deltas(run_id)
        try:
            chosen = self._cached(("chosen",), lambda: {r for r, _ in store.baseline_sets()})
        except Exception:  # noqa: BLE001 - without the list, no baseline reads as chosen
            chosen = set()
        started = {r.run_id: (r.started_at or 0.0, r.run_id) for r in self.runs()}
        this = started.get(run_id, (float("inf"), run_id))
        deltas: dict[CellKey, CellDelta] = {}
        for cell in comparison.cells:
            base = cell.base
            if base is None or base.run_id == run_id:
                continue  # this run is the cell's baseline, or the first to measure it
            if started.get(base.run_id, (0.0, "")) > this:
                continue  # a baseline set on a later run: an older run is not measured by it
            rate = base.summary.pass_rate if base.summary is not None else None
            deltas[(cell.case_id, cell.variant)] = CellDelta(
                base.run_id, rate, cell.delta, cell.status == "regressed", base.run_id in chosen
            )
        return deltas

    def flaky_history(self) -> frozenset[CellKey]:
        """The cells whose history in the store (same case content, harness and model, plain
        ``anpord eval`` runs) has seen both outcomes: the grid's flaky badge and filter."""
        store = self._open()
        if store is None:
            return frozenset()
        try:
            histories = self._cached(("flaky",), lambda: store.cell_histories(limit=20))
        except Exception:  # noqa: BLE001 - the store is an index: the grid shows without it
            return frozenset()
        out = set()
        for key, rows in histories.items():
            passed = sum(r.summary.passed for r in rows if r.summary is not None)
            n = sum(r.measured for r in rows)
            if len(rows) > 1 and 0 < passed < n:
                out.add(key)
        return frozenset(out)
