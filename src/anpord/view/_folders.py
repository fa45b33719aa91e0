"""``FolderViewData``: the view's data read straight from the run folders.

What it reads, and how much:

- The runs list reads each ``run.json`` once and keeps it until the file changes (its mtime, size
  and inode); a finished run never changes, so it is read once per server.
- A run's grid needs five fields of each ``results.jsonl`` line (case, variant, trial, verdict,
  usage) and where the line is. It keeps just that — a run's **index** — built in one pass and
  kept until ``run.json`` or ``results.jsonl`` change (a running run's index is rebuilt as lines
  arrive). Full trial records are built one at a time, from the line's bytes, when a trial's page
  is opened; its events are read from their byte range only.
- History and baselines come from the cell summaries in each ``run.json``.

Safety: a run is a real folder listed in ``.anpord/runs`` (never a path built from a request, never
a symlink); its three files are opened without following links; the per-trial files a line names
are read through ``RunReading``, which refuses any that resolve outside the run folder.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._owner import owner_alive
from ..events import Event
from ..results import VERDICTS, RecordError, RunRecord, TrialResult, summarize_cell
from ..results._encode import decode
from ..results._model import FORMAT_VERSION, usage_totals
from ..results._usage import clean_usage
from ..results._reader import RunReading, runs_folder
from ._data import CellDelta, CellKey, CellRow, HistoryPoint, RunRow, RunView, TrialView

__all__ = ["FolderViewData", "earliest_run_baselines"]

# How many runs' indexes stay in memory (one 10,000-trial run's index is a few MB).
KEEP_INDEXES = 4
KEEP_OPEN = 8  # settled: files kept open (two a run: the runs being exported)
_Stamp = tuple[int, int, int]
_EMPTY = RunRecord("", "crashed", 0.0)  # the record shown with a run that cannot be read


class _Unreadable(Exception):
    """A run file that cannot be read: the message says which and why, in one line."""


def _open_regular(path: Path) -> int:
    """A file descriptor for ``path``, refusing a symlink (O_NOFOLLOW) or anything but a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Unreadable(f"{path.name} is a link: not followed") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Unreadable(f"{path.name} is not a regular file")
    return fd


def _stamp(fd: int) -> _Stamp:
    st = os.fstat(fd)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass
class _Head:
    """A ``run.json`` as read: the raw record; ``top``, its fields without the cells (checked
    when read: what the runs list shows); the full record, built when a page needs the cells."""

    run_id: str
    raw: Mapping[str, Any] | None
    error: str | None = None
    top: RunRecord | None = None
    _record: RunRecord | None = None
    _points: dict[CellKey, HistoryPoint] | None = None
    _summed: tuple[list[CellRow], list[str]] | None = None  # run_summary's cells and variants

    @property
    def record(self) -> RunRecord:
        """The full record. Raises RecordError (or TypeError, ValueError) for a cell that does
        not read: the run's page says so; the runs list, which never needs the cells, does not."""
        if self._record is None:
            assert self.raw is not None
            self._record = RunRecord.from_dict(self.raw)
        return self._record

    def cell_points(self) -> dict[CellKey, HistoryPoint]:
        """Each cell's figures from the summaries ``run.json`` holds (a finished, interrupted or
        crashed run has them; a running one does not yet)."""
        if self._points is not None:
            return self._points
        assert self.raw is not None
        started = float(self.raw.get("started_at") or 0.0)
        points: dict[CellKey, HistoryPoint] = {}
        for cell in self.raw.get("cells") or ():
            s = cell.get("summary") if isinstance(cell, Mapping) else None
            if not isinstance(s, Mapping):
                continue
            try:
                trials, void, skipped = int(s["trials"]), int(s["void"]), int(s["skipped"])
                rate = s.get("pass_rate")
                points[(str(cell["case_id"]), str(cell["variant"]))] = HistoryPoint(
                    self.run_id,
                    started,
                    float(rate) if isinstance(rate, (int, float)) else None,
                    int(s["passed"]),
                    trials - void - skipped,
                    trials,
                )
            except (KeyError, TypeError, ValueError):
                continue  # a cell that does not read is left out of history, not fatal
        self._points = points
        return points


def _started(head: _Head) -> float:
    if head.raw is not None and isinstance(head.raw.get("started_at"), (int, float)):
        return float(head.raw["started_at"])
    try:  # the id's own time: YYYYmmdd-HHMMSS-…
        return time.mktime(time.strptime(head.run_id[:15], "%Y%m%d-%H%M%S"))
    except ValueError:
        return 0.0


@dataclass
class _Index:
    """A run's ``results.jsonl`` reduced to what the grid needs, and where each line is."""

    lines: dict[tuple[str, str, int], tuple[int, int]]
    cells: list[CellRow]
    variants: list[str]
    totals: dict[str, int]
    usage: dict[str, float | None]
    problems: list[str] = field(default_factory=list)
    _by_key: dict[CellKey, CellRow] | None = None

    def cell(self, key: CellKey) -> CellRow | None:
        if self._by_key is None:
            self._by_key = {c.key: c for c in self.cells}
        return self._by_key.get(key)


def _measures_history(raw: Mapping[str, Any]) -> bool:
    kind = raw.get("kind") or "eval"
    return kind == "eval" and not raw.get("rerun_of") and not (raw.get("options") or {}).get("cache")


def _light_trial(raw: Any) -> TrialResult:
    """The fields the grid needs, checked as the reader checks them."""
    if not isinstance(raw, dict):
        raise RecordError(f"a trial record is a JSON object, got {type(raw).__name__}")
    v = raw.get("v", FORMAT_VERSION)
    if isinstance(v, int) and v > FORMAT_VERSION:
        raise _Unreadable(
            f"results.jsonl was written in format {v} by a newer anpord; this anpord reads "
            f"format {FORMAT_VERSION}"
        )
    case_id, variant, trial, verdict = raw.get("case_id"), raw.get("variant"), raw.get("trial"), raw.get("verdict")
    if not isinstance(case_id, str) or not isinstance(variant, str):
        raise RecordError("missing case_id or variant")
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        raise RecordError(f"trial {trial!r} is not a trial number")
    if verdict not in VERDICTS:
        raise RecordError(f"unknown verdict {verdict!r}")
    # Checked as every reader checks it: an implausible number (1e308, Infinity) reads as None.
    return TrialResult(case_id, variant, trial, verdict, usage=clean_usage(raw.get("usage")))


def _build_index(data: bytes, record: RunRecord) -> _Index:
    lines: dict[tuple[str, str, int], tuple[int, int]] = {}
    trials: dict[tuple[str, str, int], TrialResult] = {}
    problems: list[str] = []
    offset = 0
    parts = data.split(b"\n")
    torn = parts.pop() if parts else b""
    for number, line in enumerate(parts, 1):
        start, offset = offset, offset + len(line) + 1
        if not line.strip():
            continue
        try:
            trial = _light_trial(decode(line))
        except RecordError as exc:
            problems.append(f"results.jsonl line {number}: not a trial record ({exc}): skipped")
            continue
        except (ValueError, TypeError) as exc:
            problems.append(f"results.jsonl line {number}: not JSON ({exc}): skipped")
            continue
        trial_key = (trial.case_id, trial.variant, trial.trial)
        trials[trial_key] = trial  # a later attempt of the same trial replaces the earlier one
        lines[trial_key] = (start, len(line))
    if torn.strip():
        problems.append(
            f"results.jsonl: the last line is torn ({len(torn)} bytes, the run was stopped while "
            "writing it): skipped"
        )
    by_cell: dict[CellKey, list[TrialResult]] = {}
    for t in sorted(trials.values(), key=lambda t: t.trial):
        by_cell.setdefault((t.case_id, t.variant), []).append(t)
    planned = {(c.case_id, c.variant): c.trials for c in record.cells}
    order = list(dict.fromkeys([*planned, *by_cell]))
    cells = []
    for key in order:
        done = by_cell.get(key)
        if not done:
            continue
        width = max(planned.get(key, 0), done[-1].trial + 1)
        verdicts: list[str | None] = [None] * width
        for t in done:
            verdicts[t.trial] = t.verdict
        cells.append(CellRow(summarize_cell(done), tuple(verdicts)))
    variants = [str(v.get("label")) for v in record.variants if v.get("label")]
    variants = list(dict.fromkeys([*variants, *(k[1] for k in order if k in by_cell)]))
    variants = [v for v in variants if any(c.summary.variant == v for c in cells)] or variants
    totals: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for t in trials.values():
        totals[t.verdict] += 1
    totals["trials"] = len(trials)
    return _Index(lines, cells, variants, totals, usage_totals(list(trials.values())), problems)


def earliest_run_baselines(history: Sequence[tuple[str, Mapping[CellKey, HistoryPoint]]]) -> dict[CellKey, HistoryPoint]:
    """The interim baseline rule: each cell's baseline is the same cell in the earliest run (by
    start time) that measured it. ``history`` is every run's cells, oldest first.

    The run store replaces this with the baseline a team sets (``anpord baseline set RUN``)."""
    first: dict[CellKey, HistoryPoint] = {}
    for _run_id, points in history:
        for key, point in points.items():
            if key not in first and point.pass_rate is not None:
                first[key] = point
    return first


class FolderViewData:
    """``ViewData`` over a project's run folders (``<project>/.anpord/runs``). Thread-safe: one
    lock around each call, so two first requests for a big run read it once."""

    def __init__(self, project_folder: Path, *, keep_indexes: int = KEEP_INDEXES):
        self.project_folder = project_folder
        self.runs_dir = runs_folder(project_folder)
        self._lock = threading.RLock()
        self._summary_lock = threading.Lock()  # run_summary's
        self._heads: dict[str, tuple[_Stamp, _Head]] = {}
        self._indexes: OrderedDict[str, tuple[tuple[_Stamp, _Stamp], _Index]] = OrderedDict()
        self._keep = keep_indexes
        self._settled: dict[str, Any] | None = None  # settle(): each run as first read
        self._open_files: OrderedDict[Path, int] = OrderedDict()  # settled: kept open
        self._baselines: tuple[tuple[tuple[str, _Stamp], ...], dict[CellKey, HistoryPoint]] | None = None

    # -- finding runs ------------------------------------------------------------------------

    def _run_ids(self) -> list[str]:
        """Run folders, oldest first: real folders only (a symlink here is not a run)."""
        try:
            entries = list(os.scandir(self.runs_dir))
        except OSError:
            return []
        ids = sorted(
            e.name for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
        )
        for gone in set(self._heads) - set(ids):  # deleted by hand: forget it
            self._heads.pop(gone, None)
            self._indexes.pop(gone, None)
        return ids

    def _run_dir(self, run_id: str) -> Path | None:
        """The folder of a listed run, or None: a request's run id is only ever compared with
        the names listed, never joined to a path first."""
        return self.runs_dir / run_id if run_id in self._run_ids() else None

    def _head(self, run_id: str) -> _Head | None:
        """``run.json``, read again only when it changed. None when the folder is gone."""
        path = self.runs_dir / run_id / "run.json"
        try:
            fd = _open_regular(path)
        except FileNotFoundError:
            if not (self.runs_dir / run_id).is_dir():
                self._heads.pop(run_id, None)
                return None
            return _Head(run_id, None, "no run.json (not a run folder, or its run has not started)")
        except _Unreadable as exc:
            return _Head(run_id, None, str(exc))
        except OSError as exc:
            return _Head(run_id, None, f"run.json: cannot read: {exc.strerror or exc}")
        try:
            stamp = _stamp(fd)
            cached = self._heads.get(run_id)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            head = self._parse_head(run_id, _read_all(fd))
        finally:
            os.close(fd)
        self._heads[run_id] = (stamp, head)
        return head

    @staticmethod
    def _parse_head(run_id: str, data: bytes) -> _Head:
        try:
            raw = decode(data)
        except (ValueError, TypeError) as exc:
            return _Head(run_id, None, f"run.json is not JSON ({exc})")
        if not isinstance(raw, dict):
            return _Head(run_id, None, f"run.json holds a JSON {type(raw).__name__}, not an object")
        try:  # every field but the cells, checked now so a bad one shows in the list
            top = RunRecord.from_dict({k: v for k, v in raw.items() if k != "cells"})
        except (RecordError, TypeError, ValueError, AttributeError) as exc:
            text = str(exc)
            return _Head(run_id, None, text if text.startswith("run.json") else f"run.json: {text}")
        return _Head(run_id, raw, top=top)

    def _index(self, run_id: str, head: _Head) -> _Index:
        run_dir = self.runs_dir / run_id
        try:
            fd = _open_regular(run_dir / "results.jsonl")
        except FileNotFoundError:
            return _build_index(b"", head.record)
        try:
            stamp = _stamp(fd)
            key = (self._heads[run_id][0], stamp)
            cached = self._indexes.get(run_id)
            if cached is not None and cached[0] == key:
                self._indexes.move_to_end(run_id)
                return cached[1]
            index = _build_index(_read_all(fd), head.record)
        finally:
            os.close(fd)
        self._indexes[run_id] = (key, index)
        while len(self._indexes) > self._keep:
            self._indexes.popitem(last=False)
        return index

    def _ordered(self) -> list[tuple[str, _Head]]:
        """Every run with its ``run.json``, oldest first: by start time, then id. (Ids sort by
        start time to the second only; two runs started in the same second sort by their random
        suffix.) An unreadable run goes where its id's time puts it."""
        heads = [(i, h) for i in self._run_ids() if (h := self._head(i)) is not None]
        return sorted(heads, key=lambda ih: (_started(ih[1]), ih[0]))

    def _row(self, run_id: str, head: _Head) -> RunRow:
        run_dir = self.runs_dir / run_id
        if head.error is not None or head.raw is None:
            return RunRow(run_id, run_dir, "unreadable", error=head.error or "run.json is not a JSON object")
        record = head.top
        assert record is not None
        status, totals, usage = record.status, record.totals, record.usage
        if status == "running":
            if owner_alive(record.owner) is False:
                status = "crashed"  # shown so; the next `anpord eval` marks it in run.json
            try:
                index = self._index(run_id, head)  # a live run's totals come from its lines
                totals, usage = index.totals, index.usage
            except (OSError, _Unreadable, RecordError, TypeError, ValueError):
                pass
        return RunRow(run_id, run_dir, status, record.started_at, record.finished_at, totals, usage,
                      kind=record.run_kind)

    # -- ViewData ----------------------------------------------------------------------------

    def runs(self) -> list[RunRow]:
        with self._lock:
            return [self._row(run_id, head) for run_id, head in reversed(self._ordered())]

    def run(self, run_id: str) -> RunView | None:
        with self._lock:
            if self._run_dir(run_id) is None:
                return None
            head = self._head(run_id)
            if head is None:
                return None
            row = self._row(run_id, head)
            if row.status == "unreadable":
                return RunView(row, _EMPTY, [], [])
            try:
                index = self._index(run_id, head)
            except FileNotFoundError:
                return None  # deleted while being read
            except (RecordError, TypeError, ValueError, AttributeError) as exc:
                message = f"run.json: {exc}"  # a cell of run.json that does not read
                return RunView(RunRow(run_id, row.run_dir, "unreadable", error=message), head.top or _EMPTY, [], [])
            except (OSError, _Unreadable) as exc:
                message = str(exc) if isinstance(exc, _Unreadable) else f"results.jsonl: cannot read: {exc}"
                return RunView(RunRow(run_id, row.run_dir, "unreadable", error=message), head.top or _EMPTY, [], [])
            return RunView(row, head.record, index.cells, index.variants, list(index.problems))

    def run_summary(self, run_id: str) -> RunView | None:
        """A run's cells as its ``run.json`` sums them up: a finished or interrupted run holds
        each cell's summary there, which is all a comparison shows, so ``results.jsonl`` is not
        read. Each cell's ``verdicts`` are empty. A run without the summaries (running, crashed,
        unreadable) is read as ``run`` reads it.

        Its own lock, not the one around reading a run's trials: a comparison asked for while
        the server reads a big run (its warm-up) does not wait for it. What it shares with the
        other calls is the cache of ``run.json`` records: an entry is replaced whole, and what is
        remembered on a record (its cells, their summaries) is the same whoever works it out."""
        with self._summary_lock:
            if self._run_dir(run_id) is None:
                return None
            head = self._head(run_id)
            if head is None:
                return None
            summed = self._summed(head)
            if summed is not None:  # finished: its row and cells from run.json alone
                return RunView(self._row(run_id, head), head.record, summed[0], summed[1])
        return self.run(run_id)  # says what does not read, or reads the trials there are

    @staticmethod
    def _summed(head: _Head) -> tuple[list[CellRow], list[str]] | None:
        """A finished or interrupted run's cells and variants from its ``run.json``; None when
        it has no summaries to give."""
        if head.error is not None or head.raw is None or head.top is None or \
                head.top.status not in ("finished", "interrupted"):
            return None
        if head._summed is None:
            try:
                record = head.record
            except (RecordError, TypeError, ValueError, AttributeError):
                return None
            cells = [CellRow(c.summary, ()) for c in record.cells if c.summary is not None]
            if not cells and head.top.totals.get("trials"):
                return None  # trials, but no summary of them
            labels = [str(v.get("label")) for v in record.variants if v.get("label")]
            variants = list(dict.fromkeys([*labels, *(c.summary.variant for c in cells)]))
            variants = [v for v in variants if any(c.summary.variant == v for c in cells)] or variants
            head._summed = (cells, variants)
        return head._summed

    def trial(self, run_id: str, case_id: str, variant: str, index: int) -> TrialView | None:
        with self._lock:
            found = self._trial_run(run_id)
            if found is None:
                return None
            view, head, idx = found
            where = idx.lines.get((case_id, variant, index))
            if where is None:
                return None
            run_dir = self.runs_dir / run_id
            try:
                result = TrialResult.from_dict(decode(self._pread(run_dir / "results.jsonl", *where)))
            except (OSError, _Unreadable, RecordError, ValueError, TypeError):
                return None  # rewritten or cut since it was indexed
            problems: list[str] = []
            events = self._events(run_dir, result, problems)
            reading = RunReading(run_dir, head.record, [result])
            traceback: str | None = None
            logs: list[str] = []
            try:
                traceback = reading.traceback(result)
            except (RecordError, OSError) as exc:
                problems.append(f"traceback: {exc}")
            try:
                logs = reading.logs(result)
            except (RecordError, OSError) as exc:
                problems.append(f"logs: {exc}")
            cell = idx.cell((case_id, variant))
            count = len(cell.verdicts) if cell is not None else index + 1
            return TrialView(view.row, result, events, traceback, logs, count, problems)

    def settle(self) -> None:
        """From now on each run is taken as it was first read here: its trials are read without
        checking ``run.json`` and ``results.jsonl`` again, and a run's ``results.jsonl`` and
        ``events.ndjson`` stay open while its trials are read (a static export reads one moment's
        runs, each trial in file order: one sequential pass, not an open per trial)."""
        self._settled = {}

    def close(self) -> None:
        """Close the files ``settle`` keeps open."""
        while self._open_files:
            os.close(self._open_files.popitem()[1])

    def _trial_run(self, run_id: str) -> tuple[RunView, _Head, _Index] | None:
        if self._settled is not None and run_id in self._settled:
            return self._settled[run_id]
        view = self.run(run_id)
        found = None
        if view is not None and view.row.status != "unreadable":
            head = self._head(run_id)
            assert head is not None
            found = (view, head, self._index(run_id, head))
        if self._settled is not None:
            self._settled[run_id] = found
        return found

    def cell_history(self, case_id: str, variant: str) -> list[HistoryPoint]:
        with self._lock:
            key = (case_id, variant)
            return [p for _, points in self._history() if (p := points.get(key)) is not None]

    def baseline_deltas(self, run_id: str) -> dict[CellKey, CellDelta]:
        view = self.run(run_id)
        if view is None:
            return {}
        with self._lock:
            # The interim rule (earliest run that measured the cell). The run store's baseline,
            # set by `anpord baseline set RUN`, takes its place behind ViewData.baseline_deltas.
            baselines = self._baseline_points()
        deltas: dict[CellKey, CellDelta] = {}
        this = (view.row.started_at or 0.0, run_id)
        compared = []
        for cell in view.cells:
            base = baselines.get(cell.key)
            if base is None or (base.started_at, base.run_id) >= this:
                continue  # this run is the cell's baseline, or the first to measure it
            compared.append((cell, base))
        # Regressed as `anpord compare` judges it: Fisher's test, Holm-corrected over the run's
        # compared cells — not any drop at all (docs/statistics.md).
        from ..stats import Counts, Pair, compare_paired

        pairs = [Pair(c.summary.case_id, c.summary.variant, Counts(b.passed, b.measured),
                      Counts(c.summary.passed, c.summary.measured))
                 for c, b in compared if b.measured and c.summary.measured]
        status = {(p.case_id, p.variant): p.status for p in compare_paired(pairs).cells}
        for cell, base in compared:
            rate = cell.summary.pass_rate
            delta = rate - base.pass_rate if rate is not None and base.pass_rate is not None else None
            deltas[cell.key] = CellDelta(base.run_id, base.pass_rate, delta, status.get(cell.key) == "regressed")
        return deltas

    # -- helpers -----------------------------------------------------------------------------

    def _history(self) -> list[tuple[str, dict[CellKey, HistoryPoint]]]:
        return [(i, h.cell_points()) for i, h in self._ordered() if h.raw is not None and h.error is None]

    def _baseline_points(self) -> dict[CellKey, HistoryPoint]:
        ids = self._run_ids()
        heads = [(i, self._head(i)) for i in ids]
        key = tuple((i, self._heads[i][0]) for i, h in heads if h is not None and i in self._heads)
        if self._baselines is None or self._baselines[0] != key:
            # A re-run or a cached run re-used earlier work: never a baseline (RunRecord.kind).
            measured = {i for i, h in self._ordered() if h.raw is not None and h.error is None
                        and _measures_history(h.raw)}
            self._baselines = (key, earliest_run_baselines([(i, p) for i, p in self._history() if i in measured]))
        return self._baselines[1]

    def _pread(self, path: Path, offset: int, length: int) -> bytes:
        if self._settled is not None:  # settled: the file stays open for the trials that follow
            fd = self._open_files.get(path)
            if fd is None:
                fd = self._open_files[path] = _open_regular(path)
                while len(self._open_files) > KEEP_OPEN:
                    os.close(self._open_files.popitem(last=False)[1])
            data = os.pread(fd, length, offset)
        else:
            fd = _open_regular(path)
            try:
                data = os.pread(fd, length, offset)
            finally:
                os.close(fd)
        if len(data) != length:
            raise _Unreadable(f"{path.name} ends early")
        return data

    def _events(self, run_dir: Path, result: TrialResult, problems: list[str]) -> list[Event]:
        ref = result.events
        if ref is None or ref.length == 0:
            return []
        try:
            block = self._pread(run_dir / "events.ndjson", ref.offset, ref.length)
        except FileNotFoundError:
            problems.append("events.ndjson is missing: no events to show")
            return []
        except (OSError, _Unreadable) as exc:
            problems.append(f"events: {exc}")
            return []
        lines = block.splitlines()
        try:  # every line at once, as one JSON array (an export reads thousands of trials)
            return [Event.from_dict(raw) for raw in decode(b"[" + b",".join(x for x in lines if x.strip()) + b"]")]
        except (ValueError, TypeError, KeyError, AttributeError):
            pass  # a line that does not read: each on its own, to say which
        events = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = decode(line)
                events.append(Event.from_dict(raw))
            except (ValueError, TypeError, KeyError, AttributeError) as exc:  # AttributeError: not an object
                problems.append(f"event {number} of this trial does not read ({exc}): skipped")
        return events

