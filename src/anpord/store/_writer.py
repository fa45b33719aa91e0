"""``StoreWriter``: files a run in the store while it runs, without ever holding the run up.

The runner hands it each finished trial (``add``: a list append); a thread of its own connects
to the store and writes the trials in batches — every ``FLUSH_TRIALS`` trials or
``FLUSH_SECONDS`` seconds, and at the end (``finish``, which also compares the run's cells with
their baselines when asked), when the run's cells are filed too. A new run of ``APART_TRIALS``
trials or more, with a second core to run on, files its trials and cells from a process of its
own instead, which reads them from the run folder (``_filer``): ``add`` then does nothing, and
the runner's process spends nothing per trial on the store (in the thread, the filing holds the
interpreter's lock the trials need). A smaller run never starts one: the process's start would
cost it more than filing its trials.

A store that cannot be written (locked, damaged, newer, a database server down) only sets
``failure``: the run goes on, and its folder, which has everything, is filed later (``anpord db
rebuild``, or any history command, which catches up).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .._errors import exception_line
from ..results._model import TrialResult
from ..results._run_record import RunRecord
from ._filer import Filer, filer_wanted
from ._location import StoreError, StoreLocation
from ._rows import planned_count

__all__ = ["StoreWriter"]

FLUSH_TRIALS = 1000
FLUSH_SECONDS = 1.0
APART_TRIALS = 1000  # a run this big files from a process of its own (with a second core)
BUSY_TIMEOUT = 2.0  # a lock held longer than this fails the write (never the run)
FINISH_WAIT = 15.0  # at most this long at the end of a run for the last batch to be written


class _Finish(NamedTuple):
    """The ``finish`` operation's arguments, as the thread receives them."""

    record: RunRecord
    compare: bool
    threshold: float
    judged: dict[str, float]  # alpha, variant_margin: how compare_with_baselines judges
    wait: float  # how long the runner waits for the answer


def _warm_up() -> None:
    """What the run's end runs here, imported as the run starts: the thread is idle then (its
    trials come in batches, the runner's first trials are waiting for their agents), while at
    the end the runner waits for it. Its comparison with baselines and the statistics under it."""
    from ..stats import _paired  # noqa: F401
    from . import _compare  # noqa: F401


class StoreWriter:
    def __init__(self, location: StoreLocation, run_dir: str, redact: Callable[[str], str] = str):
        self.location = location
        self.run_dir = run_dir
        self.redact = redact
        self.failure: str | None = None
        self._pending: list[TrialResult] = []
        self._last_flush = time.monotonic()
        self._ops: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._done = threading.Event()
        self._comparison: Any = None
        # The thread's own: the run's key in the store, and each cell's place in the plan.
        self._pk: int | None = None
        self._places: dict[tuple[str, str], int] = {}
        self._filer: Filer | None = None
        self._filed_apart = False  # trials and cells go to the filer (``start`` decides)
        self._thread = threading.Thread(target=self._work, name="anpord-store", daemon=True)
        self._thread.start()

    # -- the runner's side ------------------------------------------------------------------

    def start(self, record: RunRecord, done: Sequence[TrialResult] = (), *, compare: bool = False) -> None:
        """File the run (resumed: with the trials it has); ``compare``: its end will compare it
        with its baselines (what that needs is imported meanwhile)."""
        # A resumed run's trials, as the runner holds them, may differ from its folder's lines.
        try:
            self._filed_apart = not done and filer_wanted(sum(planned_count(c) for c in record.cells),
                                                          APART_TRIALS)
        except StoreError as exc:
            self.failure = str(exc)
        self._ops.put(("begin", (record, list(done))))
        if self._filed_apart:
            self._ops.put(("apart", None))
        if compare:
            self._ops.put(("warm", None))

    def add(self, result: TrialResult) -> None:
        if self._filed_apart:
            return  # the filer reads it from the run folder
        self._pending.append(result)
        if (
            len(self._pending) >= FLUSH_TRIALS
            or time.monotonic() - self._last_flush >= FLUSH_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._ops.put(("trials", self._pending))
            self._pending = []
        self._last_flush = time.monotonic()

    def send_finish(
        self,
        record: RunRecord,
        *,
        compare: bool = False,
        threshold: float = 0.2,
        alpha: float = 0.05,
        variant_margin: float = 0.05,
        wait: float = FINISH_WAIT,
    ) -> None:
        """Write what is left and the run's final state, and with ``compare`` compare the run's
        cells with their baselines, in the thread: the runner does its own last writes meanwhile,
        then takes the ``answer``. ``record`` is read by the thread until then, never changed."""
        self.flush()
        judged = {"alpha": alpha, "variant_margin": variant_margin}
        self._ops.put(("finish", _Finish(record, compare, threshold, judged, wait)))

    def answer(self, wait: float = FINISH_WAIT) -> Any:
        """Once the thread has done what ``send_finish`` asked: with ``compare``, the run's
        ``Comparison`` with its cells' baselines (``None`` when the store failed: see
        ``failure``)."""
        if not self._done.wait(wait):
            self.failure = self.failure or (
                f"the run store {self.location.display} did not answer within {wait:.0f}s"
            )
            return None
        return self._comparison if self.failure is None else None

    def abandon(self) -> None:
        """The run ends without a final state (a forced exit): stop writing."""
        self._ops.put(("stop", None))

    # -- the thread -------------------------------------------------------------------------

    def _work(self) -> None:
        db = None
        try:
            while True:
                op, arg = self._ops.get()
                if op == "stop":
                    if self._filer is not None:
                        self._filer.abandon()
                    return
                if op == "finish" and self._filer is not None:
                    # A second less than the runner waits: the filer's answer comes in time.
                    failure = self._filer.finish(max(arg.wait - 1.0, 1.0))
                    self.failure = self.failure or failure
                if op == "warm":
                    try:
                        _warm_up()
                    except Exception:  # noqa: BLE001, S110 - the comparison itself says what is wrong
                        pass
                    continue
                if op == "apart" and self.failure is None:
                    assert self._pk is not None
                    try:
                        self._filer = Filer.start(self.location, self.run_dir, self._pk, BUSY_TIMEOUT)
                    except OSError as exc:
                        self.failure = f"the run store's filer could not start: {exception_line(exc)}"
                    continue
                if self.failure is None:
                    try:
                        if db is None:
                            from ._writes import open_db

                            db = open_db(self.location, busy_timeout=BUSY_TIMEOUT)
                        with db.transaction():
                            self._apply(db, op, arg)
                    except StoreError as exc:
                        self.failure = str(exc)
                    except Exception as exc:  # noqa: BLE001 - the run must go on regardless
                        from ._location import describe_failure

                        try:
                            self.failure = describe_failure(exc, self.location)
                        except Exception:  # noqa: BLE001
                            self.failure = f"the run store failed: {exception_line(exc)}"
                if op == "finish":
                    return
        finally:
            # Done once all is committed: closing (SQLite copies its write-ahead log into the
            # database then) takes a while the run need not wait for.
            self._done.set()
            if db is not None:
                db.close()

    def _apply(self, db: Any, op: str, arg: Any) -> None:
        from . import _writes as w
        from ._rows import cell_row_of, cell_tuple, run_tuple, variants_by_label

        if op == "begin":
            # The run's row, replacing what the store had for it, and the trials it has (resumed).
            # Cells are filed with the run's end, when their distributions are known: a running
            # run's plan is in its run.json, its trials' cell_idx the place of their cell there.
            record, done = arg
            self._places = {(c.case_id, c.variant): i for i, c in enumerate(record.cells)}
            self._pk = w.put_run(
                db,
                self.location.project,
                record.run_id,
                run_tuple(record, self.run_dir, time.time()),
                replace=True,
            )
            self._write_trials(db, done)
            return
        assert self._pk is not None
        if op == "trials":
            self._write_trials(db, arg)
        elif op == "finish":
            record, compare, threshold, judged = arg.record, arg.compare, arg.threshold, arg.judged
            if self._filer is None:  # else the filer filed them
                variants = variants_by_label(record)
                w.put_cells(
                    db,
                    self._pk,
                    [
                        cell_tuple(i, c, variants.get(c.variant, {}), c.summary)
                        for i, c in enumerate(record.cells)
                    ],
                )
            w.put_run(
                db,
                self.location.project,
                record.run_id,
                run_tuple(record, self.run_dir, time.time()),
                replace=False,
            )
            w.first_readings(db, self.location.project, self._pk)
            if compare:
                # The run's cells as just filed (by this thread or the filer, from the same
                # results): made here, not read back.
                variants = variants_by_label(record)
                cands = [cell_row_of(record.run_id, c, variants.get(c.variant, {})) for c in record.cells]
                self._comparison = w.compare_with_baselines(
                    db, self.location.project, record.run_id, self._pk, threshold, cands, **judged
                )

    def _write_trials(self, db: Any, results: list[TrialResult]) -> None:
        from . import _writes as w
        from ._rows import trial_tuple

        places, redact = self._places, self.redact
        rows: dict[tuple[int, int], tuple[Any, ...]] = {}
        for r in results:
            idx = places.get(r.cell_key)
            if idx is not None:  # a later attempt of the same trial replaces the earlier
                rows[(idx, r.trial)] = trial_tuple(r, idx, redact)
        assert self._pk is not None
        w.put_trials(db, self._pk, list(rows.values()))
