"""The run store: an index of runs, cells and trials for history, baselines and regressions.

SQLite by default (``<project>/.anpord/anpord.db``), PostgreSQL through ``ANPORD_DB``; one schema
(SQLAlchemy Core) for both. The run folders stay the source of truth — the store never holds
events — and ``anpord db rebuild`` re-creates it from them.

For a reader (the commands, a web view)::

    from anpord.store import open_store

    with open_store(project_folder) as store:
        store.runs(limit=20)                 # RunRow, newest first
        store.cells("latest")                # CellRow of a run, in plan order
        store.trials(run_id, verdicts=["failed"], limit=50)   # TrialRow, with event byte ranges
        store.cell_history("weather/rain", "python/small")   # a cell's readings, newest first
        store.compare(candidate="latest")    # Comparison with each cell's baseline
        store.compare("base-run", "latest")  # ... or with another run

Every failure is a ``StoreError`` (one line naming the store and the fix); an unknown run is a
``LookupError``. Importing this package does not import SQLAlchemy: opening a store does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ._location import DB_ENV, PROJECT_ENV, StoreError, StoreLocation, store_location
from ._rows import CellRow, RunRow, TrialRow

if TYPE_CHECKING:  # pragma: no cover
    from ._compare import DEFAULT_THRESHOLD as DEFAULT_THRESHOLD
    from ._compare import STATUSES as STATUSES
    from ._compare import CellComparison as CellComparison
    from ._compare import Comparison as Comparison
    from ._compare import compare_cell as compare_cell
    from ._store import Store as Store
    from ._sync import catch_up as catch_up
    from ._sync import rebuild as rebuild
    from ._writer import StoreWriter as StoreWriter

# Loaded when first asked for: a run files itself without the comparison (or SQLAlchemy) loaded.
_LAZY = {"Store": "._store", "StoreWriter": "._writer", "catch_up": "._sync", "rebuild": "._sync",
         "DEFAULT_THRESHOLD": "._compare", "STATUSES": "._compare", "CellComparison": "._compare",
         "Comparison": "._compare", "compare_cell": "._compare"}

__all__ = [
    "DB_ENV",
    "DEFAULT_THRESHOLD",
    "PROJECT_ENV",
    "STATUSES",
    "CellComparison",
    "CellRow",
    "Comparison",
    "RunRow",
    "Store",
    "StoreError",
    "StoreLocation",
    "StoreWriter",
    "TrialRow",
    "catch_up",
    "compare_cell",
    "open_store",
    "rebuild",
    "store_location",
]


def open_store(project_folder: str | Path, *, create: bool = True) -> Store:
    """The project's run store, schema up to date. Raises ``StoreError``."""
    location = store_location(Path(project_folder))
    if location is None:
        raise StoreError(f"run history is off ({DB_ENV}=off): unset {DB_ENV} to keep it")
    from ._store import Store

    return Store.open(location, create=create)


__getattr__ = lazy_names(__name__, _LAZY)
