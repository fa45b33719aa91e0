"""Keeping the store in step with the run folders, which are the source of truth.

``catch_up`` files what the store missed — runs made while it could not be written, runs that
crashed or were stopped before telling it how they ended — and is cheap when there is nothing to
do (one query and one folder listing). ``rebuild`` re-creates the store from the run folders and
the baselines named with ``anpord baseline set`` (kept in ``.anpord/baselines.json`` too, so a
damaged database loses none of them).
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import UsageError
from .._fs import write_atomic
from ..results._reader import (
    RUNNING_FOLDER,
    _read,
    list_run_dirs,
    mark_crashed_runs,
)
from ._location import StoreError, StoreLocation
from ._store import Store

__all__ = [
    "BASELINES_FILE",
    "RebuildReport",
    "catch_up",
    "read_baseline_sets",
    "rebuild",
    "record_baseline_set",
]

BASELINES_FILE = Path(".anpord") / "baselines.json"


def read_baseline_sets(project_folder: Path) -> list[tuple[str, float]]:
    try:
        raw = json.loads((project_folder / BASELINES_FILE).read_text(encoding="utf-8"))
        return [(str(s["run_id"]), float(s["set_at"])) for s in raw.get("sets", [])]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []


def record_baseline_set(project_folder: Path, run_id: str, set_at: float) -> None:
    sets = [s for s in read_baseline_sets(project_folder) if s[0] != run_id] + [(run_id, set_at)]
    data = {"format": 1, "sets": [{"run_id": r, "set_at": t} for r, t in sets]}
    path = project_folder / BASELINES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def _index_folder(store: Store, run_dir: Path) -> int:
    reading = _read(run_dir)
    store.index_run(reading.record, str(run_dir), reading.trials)
    return len(reading.trials)


def catch_up(store: Store, project_folder: Path) -> tuple[list[str], list[str]]:
    """File the runs the store missed or holds as still running when they are not. Returns
    (the run ids filed, one line per run folder that could not be read)."""
    crashed = set(mark_crashed_runs(project_folder))
    states = store.run_states()
    running = project_folder / RUNNING_FOLDER
    filed: list[str] = []
    problems: list[str] = []
    for run_dir in list_run_dirs(project_folder):
        run_id = run_dir.name
        state = states.get(run_id)
        stale = state is not None and state[0] == "running" and not (running / run_id).exists()
        if state is not None and run_id not in crashed and not stale:
            continue
        try:
            _index_folder(store, run_dir)
        except UsageError as exc:
            problems.append(str(exc))
            continue
        filed.append(run_id)
    return filed, problems


@dataclass
class RebuildReport:
    runs: int = 0
    trials: int = 0
    removed: int = 0
    baselines: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def _fill(store: Store, project_folder: Path, report: RebuildReport) -> None:
    for run_dir in list_run_dirs(project_folder):
        try:
            report.trials += _index_folder(store, run_dir)
            report.runs += 1
        except UsageError as exc:
            report.problems.append(f"{run_dir.name}: skipped: {exc}")
    # Folders are filed in name order, and two runs started in the same second are named in the
    # order of their random suffixes: each cell's first reading is decided again by start time.
    store.reset_baselines()


def _replay(store: Store, sets: list[tuple[str, float]], report: RebuildReport) -> None:
    for run_id, set_at in sorted(dict(sets).items(), key=lambda s: s[1]):
        try:
            store.set_baseline(run_id, set_at=set_at)
            report.baselines += 1
        except LookupError:
            report.problems.append(f"baseline {run_id}: its run is gone: not restored")


def rebuild(location: StoreLocation) -> RebuildReport:
    """Re-create the store from the project's run folders. A SQLite store is built beside the old
    file and swapped in whole, so a rebuild that fails leaves the old one as it was. A shared
    PostgreSQL store keeps other machines' runs: only this project's runs from this machine are
    re-filed (or dropped when their folder is gone)."""
    started = time.monotonic()
    report = RebuildReport()
    folder = location.project_folder
    sets = dict(read_baseline_sets(folder))
    if location.path is not None:
        try:
            with Store.open(location, create=False) as old:
                sets.update(old.baseline_sets())
        except StoreError:
            pass  # damaged, newer, absent: the baselines file has the sets
        _rebuild_file(location, report, sorted(sets.items(), key=lambda s: s[1]))
    else:
        with Store.open(location) as store:
            sets.update(store.baseline_sets())
            here = socket.gethostname()
            present = {d.name for d in list_run_dirs(folder)}
            for run_id, (_status, host) in store.run_states().items():
                if host == here and run_id not in present and store.delete_run(run_id):
                    report.removed += 1
            _fill(store, folder, report)
            _replay(store, sorted(sets.items(), key=lambda s: s[1]), report)
    report.seconds = time.monotonic() - started
    return report


def _rebuild_file(
    location: StoreLocation, report: RebuildReport, sets: list[tuple[str, float]]
) -> None:
    old = _lock_old(location)  # a writer at work on the old file: wait for it, never lose it
    try:
        _swap_in(location, report, sets)
    finally:
        if old is not None:
            old.close()


def _lock_old(location: StoreLocation) -> Any:
    """The old file's write lock, held until the new file is in place; ``None`` when there is no
    old file or it is not a database any more."""
    import sqlite3

    assert location.path is not None
    if not location.path.exists():
        return None
    db = sqlite3.connect(location.path, timeout=2.0, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.DatabaseError as exc:
        db.close()
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreError(
                f"the run store {location.display} is locked by another process (a run "
                "in progress?): rebuild it when that is done"
            ) from None
        return None  # damaged: nothing in it to protect
    return db


def _swap_in(location: StoreLocation, report: RebuildReport, sets: list[tuple[str, float]]) -> None:
    import sqlite3

    assert location.path is not None
    path = location.path
    temp = path.with_name(f".{path.name}.rebuild-{os.getpid()}")
    for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
        leftover.unlink(missing_ok=True)
    fresh = StoreLocation(f"sqlite:///{temp}", location.project, location.project_folder, temp)
    try:
        with Store.open(fresh) as store:
            _fill(store, location.project_folder, report)
            _replay(store, sets, report)
        # One self-contained file (no -wal beside it) to move into place.
        db = sqlite3.connect(temp)
        try:
            db.execute("PRAGMA journal_mode=DELETE")
        finally:
            db.close()
        for stale in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
        os.replace(temp, path)
    finally:
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            leftover.unlink(missing_ok=True)
