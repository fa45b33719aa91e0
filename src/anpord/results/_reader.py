"""Reading a run folder back as typed records: ``read_run(path | run id | prefix | "latest")``.

Reads runs that finished, were interrupted, or died mid-write: a torn last line of
``results.jsonl`` (a run killed while appending) is skipped and reported in ``problems``, as is any
other line that is not a trial record. Events are loaded on demand, per trial, from the byte range
its line points at. A run whose ``run.json`` still says ``running`` while its process is gone is
marked ``crashed`` (and ``run.json`` rewritten so) with what it had finished.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .._errors import UsageError
from .._fs import NotAFile, open_regular, read_regular, write_atomic
from .._owner import owner_alive
from ..events import Event
from ._encode import decode, encode
from ._model import VERDICTS, CellSummary, RecordError, TrialResult, summarize_cell, usage_totals
from ._run_record import RunRecord

__all__ = [
    "RunReading",
    "RUNS_FOLDER",
    "find_run",
    "list_run_dirs",
    "mark_crashed_runs",
    "read_record",
    "read_run",
    "read_trial_line",
    "runs_folder",
]

RUNS_FOLDER = Path(".anpord") / "runs"
# Runs in progress have a marker here, so finding crashed ones never reads every run.json.
RUNNING_FOLDER = Path(".anpord") / "running"


@dataclass
class RunReading:
    """A run as read back: its record, its trials (in the order they finished) and what could not
    be read."""

    run_dir: Path
    record: RunRecord
    trials: list[TrialResult]
    problems: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def cells(self) -> list[CellSummary]:
        """Each cell with finished trials, in plan order, summarised from those trials."""
        by_cell: dict[tuple[str, str], list[TrialResult]] = {}
        for r in sorted(self.trials, key=lambda r: r.trial):
            by_cell.setdefault(r.cell_key, []).append(r)
        order = [(c.case_id, c.variant) for c in self.record.cells]
        planned = set(order)
        order += [k for k in by_cell if k not in planned]
        return [summarize_cell(by_cell[k]) for k in dict.fromkeys(order) if k in by_cell]

    def totals(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(VERDICTS, 0)
        for r in self.trials:
            counts[r.verdict] += 1
        counts["trials"] = len(self.trials)
        return counts

    def trial(self, case_id: str, variant: str | None = None, index: int = 0) -> TrialResult:
        for r in self.trials:
            if r.case_id == case_id and r.trial == index and variant in (None, r.variant):
                return r
        raise KeyError(f"no trial {case_id} #{index}{f' on {variant}' if variant else ''} in run {self.run_id}")

    def events(self, trial: TrialResult) -> list[Event]:
        """The trial's events, read from its block of ``events.ndjson``."""
        ref = trial.events
        if ref is None or ref.length == 0:
            return []
        path = self.run_dir / "events.ndjson"
        try:
            fd = open_regular(path)
        except OSError as exc:
            raise RecordError(f"{path}: cannot read: {_why(exc)}") from None
        with open(fd, "rb") as f:
            f.seek(ref.offset)
            block = f.read(ref.length)
        if len(block) != ref.length:
            raise RecordError(
                f"{self.run_dir / 'events.ndjson'}: {trial.case_id} #{trial.trial}'s events end "
                f"early ({len(block)} of {ref.length} bytes)"
            )
        return [Event.from_dict(decode(line)) for line in block.splitlines() if line.strip()]

    def _file(self, trial: TrialResult, name: str) -> str | None:
        rel = trial.files.get(name)
        if rel is None:
            return None
        path = (self.run_dir / rel).resolve()
        if not path.is_relative_to(self.run_dir.resolve()):
            raise RecordError(f"{trial.case_id} #{trial.trial}: {name} file {rel!r} is outside the run")
        try:
            data = read_regular(self.run_dir / rel)
        except OSError as exc:
            raise RecordError(f"{trial.case_id} #{trial.trial}: {name} file: {_why(exc)}") from None
        return data.decode("utf-8", errors="replace")

    def traceback(self, trial: TrialResult) -> str | None:
        if trial.error is not None and trial.error.traceback:
            return trial.error.traceback
        return self._file(trial, "traceback")

    def logs(self, trial: TrialResult) -> list[str]:
        if trial.logs:
            return trial.logs
        text = self._file(trial, "logs")
        return text.splitlines() if text else []


def runs_folder(project_folder: Path) -> Path:
    return project_folder / RUNS_FOLDER


def list_run_dirs(project_folder: Path) -> list[Path]:
    """Run folders, oldest first (run ids start with their start time)."""
    runs = runs_folder(project_folder)
    try:
        # A link in the runs folder is not a run: it could lead anywhere.
        names = sorted(e.name for e in os.scandir(runs)
                       if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
    except FileNotFoundError:
        return []
    return [runs / n for n in names]


def find_run(ref: str, project_folder: Path) -> Path:
    """A run folder by id, unique id prefix or ``latest``. Raises UsageError (one line)."""
    dirs = list_run_dirs(project_folder)
    if not dirs:
        raise UsageError(f"no runs yet under {runs_folder(project_folder)} (run `anpord eval` first)")
    if ref == "latest":
        return _latest(dirs)
    exact = [d for d in dirs if d.name == ref]
    if exact:
        return exact[0]
    hits = [d for d in dirs if d.name.startswith(ref)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        names = ", ".join(d.name for d in hits[:5]) + (", …" if len(hits) > 5 else "")
        raise UsageError(f"run prefix {ref!r} is ambiguous: it matches {names}")
    recent = ", ".join(d.name for d in dirs[-3:])
    raise UsageError(f"unknown run {ref!r} (the latest runs are {recent}; or use `latest`)")


# A run.json larger than this is not one anpord wrote (a 100,000-cell grid is about 60 MB).
RECORD_LIMIT = 256 << 20


def _latest(dirs: list[Path]) -> Path:
    """The newest run. Ids sort by their start second; runs that started in the same second (a
    random suffix orders them) are told apart by the start time their records hold."""
    second = dirs[-1].name[:15]  # YYYYmmdd-HHMMSS
    same = [d for d in dirs if d.name[:15] == second]
    if len(same) == 1:
        return dirs[-1]

    def started(run_dir: Path) -> float:
        try:
            return float(read_record(run_dir).started_at or 0)
        except (UsageError, TypeError, ValueError):
            return 0.0

    return max(same, key=lambda d: (started(d), d.name))


def _why(exc: OSError) -> str:
    """One line for a read that failed: ``NotAFile`` names the path and what it is."""
    if isinstance(exc, NotAFile):
        return str(exc).rpartition(": ")[2]
    return exc.strerror or str(exc)


def _project_folder() -> Path:
    from .._project import find_root

    return find_root([]).parent


def read_run(ref: str | os.PathLike[str] = "latest", *, project: str | os.PathLike[str] | None = None) -> RunReading:
    """Read a run: a run folder path, or a run id / unique prefix / ``"latest"`` looked up in the
    project's ``.anpord/runs`` (the project found from the current folder unless given)."""
    path = Path(ref)
    if isinstance(ref, os.PathLike) or os.sep in str(ref) or (path / "run.json").is_file():
        run_dir = path
    else:
        run_dir = find_run(str(ref), Path(project) if project is not None else _project_folder())
    return _read(run_dir)


def read_record(run_dir: Path) -> RunRecord:
    """A run folder's ``run.json`` alone (its trials are not read); ``UsageError`` saying why not."""
    try:
        raw = read_regular(run_dir / "run.json", RECORD_LIMIT)
    except FileNotFoundError:
        raise UsageError(f"{run_dir}: not a run folder (no run.json)") from None
    except OSError as exc:
        raise UsageError(f"{run_dir / 'run.json'}: cannot read: {_why(exc)}") from None
    try:
        return RunRecord.from_dict(decode(raw))
    except ValueError as exc:  # RecordError, or JSON that does not parse
        raise UsageError(f"{run_dir / 'run.json'}: {exc}") from None


def read_trial_line(line: bytes, *, lean: bool = False) -> TrialResult:
    """One line of ``results.jsonl`` as its trial. ``lean``: without the assertions, judgments
    and logs, which a trial's row in the run store and its cell's distribution never read, left
    unparsed. Raises ``RecordError`` for a record this version cannot read (one from a newer
    anpord says so), ``ValueError`` or ``TypeError`` for a line that is not one."""
    raw = decode(line)
    if lean and type(raw) is dict:
        raw["assertions"] = raw["judgments"] = raw["logs"] = None
    return TrialResult.from_dict(raw)


def _read_trials(run_dir: Path, problems: list[str]) -> list[TrialResult]:
    path = run_dir / "results.jsonl"
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {_why(exc)}") from None
    lines = data.split(b"\n")
    torn = lines.pop() if lines else b""  # after the last newline: empty unless a write was cut
    trials: list[TrialResult] = []
    seen: dict[tuple[str, str, int], int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            trial = read_trial_line(line)
        except RecordError as exc:
            if "newer anpord" in str(exc):
                raise UsageError(f"{path}: {exc}") from None
            problems.append(f"{path.name} line {number}: not a trial record ({exc}): skipped")
            continue
        except (ValueError, TypeError) as exc:
            problems.append(f"{path.name} line {number}: not JSON ({exc}): skipped")
            continue
        if trial.key in seen:  # an older attempt of a trial that was run again
            trials[seen[trial.key]] = trial
            continue
        seen[trial.key] = len(trials)
        trials.append(trial)
    if torn.strip():
        problems.append(
            f"{path.name}: the last line is torn ({len(torn)} bytes, the run was stopped while "
            "writing it): skipped"
        )
    return trials


def _read(run_dir: Path) -> RunReading:
    record = read_record(run_dir)
    problems: list[str] = []
    trials = _read_trials(run_dir, problems)
    reading = RunReading(run_dir, record, trials, problems)
    if record.status == "running" and owner_alive(record.owner) is False:
        _mark_crashed(reading)
    return reading


def last_activity(reading: RunReading) -> float:
    """When a run that died last did something: its last trial's end, or the last write to its
    records, whichever is later; its start when it left neither."""
    ends = [t.started_at + t.duration for t in reading.trials if t.started_at]
    for name in ("results.jsonl", "events.ndjson"):
        try:
            ends.append((reading.run_dir / name).stat().st_mtime)
        except OSError:
            pass
    start = reading.record.started_at or 0.0
    return max([start, *ends]) if ends or start else time.time()


def _mark_crashed(reading: RunReading) -> None:
    record = reading.record
    record.status = "crashed"
    record.totals = reading.totals()
    record.usage = usage_totals(reading.trials)
    record.note = f"its process ({record.owner.get('pid')}) was gone when this was read"
    if record.finished_at is None:
        # When it stopped, not when its death was noticed (that may be days later).
        record.finished_at = last_activity(reading)
    summaries = {(c.case_id, c.variant): c for c in reading.cells}
    for cell in record.cells:
        cell.summary = summaries.get((cell.case_id, cell.variant))
    try:
        write_atomic(reading.run_dir / "run.json", encode(record.to_dict()) + b"\n")
    except OSError:
        pass  # a read-only copy of a run still reads as crashed
    marker = reading.run_dir.parent.parent / "running" / record.run_id
    try:
        marker.unlink()
    except OSError:
        pass


def running_marker(project_folder: Path, run_id: str) -> Path:
    return project_folder / RUNNING_FOLDER / run_id


def mark_crashed_runs(project_folder: Path) -> list[str]:
    """Mark every run whose process died without finishing it as ``crashed``; returns their ids.
    Cheap: only runs that left a running marker are read. Never raises."""
    crashed: list[str] = []
    try:
        markers = list(os.scandir(project_folder / RUNNING_FOLDER))
    except OSError:
        return crashed
    for marker in markers:
        run_dir = runs_folder(project_folder) / marker.name
        try:
            record = read_record(run_dir)
        except UsageError:
            try:
                os.unlink(marker.path)  # its run folder is gone
            except OSError:
                pass
            continue
        if record.status != "running":
            try:
                os.unlink(marker.path)
            except OSError:
                pass
        elif owner_alive(record.owner) is False:
            problems: list[str] = []
            _mark_crashed(RunReading(run_dir, record, _read_trials(run_dir, problems), problems))
            crashed.append(record.run_id)
    return crashed


def iter_readings(project_folder: Path) -> Iterator[RunReading]:
    for run_dir in list_run_dirs(project_folder):
        try:
            yield _read(run_dir)
        except UsageError:
            continue
