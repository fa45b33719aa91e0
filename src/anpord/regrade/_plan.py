"""Planning a regrade: the recorded run's trials, each to be decided again by the case as it is
defined today, with the replay harness standing in for the agent.

Cells pair up by case id and variant label. A recorded cell whose case is gone (or not selected)
is not regraded; a case the recording does not hold (added after the run) is listed as not
regradable. Trial indices — and so seeds — are the recorded ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..authoring._config import Variant
from ..results._model import RecordError, TrialResult
from ..results._reader import RunReading
from ..runner._planning import Plan, PlannedCase
from ._harness import SPEC_PREFIX, ReplayHarness
from ._recorded import RecordedTrial, recorded_trial

if TYPE_CHECKING:
    from ..harnesses import Harness
    from ..workspace._archive import Archive

__all__ = ["RegradePlan", "plan_regrade"]


@dataclass
class RegradePlan:
    plan: Plan
    run_id: str
    # (case id, variant label, why): selected today, but nothing recorded to regrade
    not_regradable: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    snapshots: int = 0  # recorded trials whose workspace the run kept

    @property
    def trials(self) -> int:
        return self.plan.total_trials


def _archive(run_dir: Path) -> tuple[Archive | None, str | None]:
    from ..workspace import ARCHIVE_DIR, ArchiveError, read_archive

    folder = run_dir / ARCHIVE_DIR
    if not folder.is_dir():
        return None, None
    try:
        return read_archive(folder), None
    except ArchiveError as exc:
        return None, f"its workspace archive cannot be read ({exc})"


def _event_blocks(reading: RunReading) -> Callable[[TrialResult], list[Any]]:
    """Each trial's events, from ``events.ndjson`` read once (``RunReading.events`` opens it per
    trial: a thousand opens are a large share of a regrade)."""
    from ..results._encode import decode

    try:
        from .._fs import read_regular

        data = read_regular(reading.run_dir / "events.ndjson")
    except OSError:
        return reading.events  # it says why, per trial

    def events(trial: TrialResult) -> list[Any]:
        ref = trial.events
        if ref is None or ref.length == 0:
            return []
        block = data[ref.offset: ref.offset + ref.length]
        if len(block) != ref.length:
            raise RecordError(f"{trial.case_id} #{trial.trial}'s events end early")
        # The records as decoded: recorded_trial makes events of only what a replay streams.
        return [decode(line) for line in block.splitlines() if line.strip()]

    return events


def plan_regrade(plan: Plan, reading: RunReading, selected_ids: set[str] | None = None) -> RegradePlan:
    """``plan`` (today's cases on the recorded run's variants) turned into the regrade's plan."""
    run_id = reading.run_id
    out = RegradePlan(plan, run_id)
    archive, archive_note = _archive(reading.run_dir)
    if archive_note:
        out.notes.append(f"run {run_id}: {archive_note}")
    elif archive is None and reading.record.options.get("snapshots") is False:
        archive_note = f"run {run_id} was made with --no-snapshots"
    elif archive is None:
        archive_note = f"run {run_id} kept no workspace snapshots (made before anpord kept them)"
    for problem in getattr(archive, "problems", ()):
        out.notes.append(f"run {run_id} workspace archive: {problem}")
    by_cell: dict[tuple[str, str], dict[int, RecordedTrial]] = {}
    unreadable = 0
    blocks = _event_blocks(reading)
    for trial in reading.trials:
        try:
            events = blocks(trial)
        except (RecordError, OSError, ValueError):
            unreadable += 1
            events = []
        by_cell.setdefault(trial.cell_key, {})[trial.trial] = recorded_trial(trial.verdict, trial.reason, events)
    if unreadable:
        out.notes.append(f"{unreadable} recorded trial{'s' if unreadable != 1 else ''} of run {run_id} "
                         "had unreadable events: regraded without them")
    today = {(c.case.id, c.variant.label) for c in plan.cells}
    for record in reading.record.cells:
        key = (record.case_id, record.variant)
        if key not in today and key in by_cell and (selected_ids is None or record.case_id in selected_ids):
            out.notes.append(f"{record.case_id} on {record.variant}: no longer defined; its recorded trials are not regraded")
    harnesses: dict[str, ReplayHarness] = {}
    variants: dict[str, Variant] = {}
    cells: list[PlannedCase] = []
    for cell in plan.cells:
        variant, case_id = cell.variant, cell.case.id
        recorded = by_cell.get((case_id, variant.label))
        if not recorded:
            known = any(c == case_id for c, _v in by_cell)
            why = (f"run {run_id} has no trial of it on this variant" if known
                   else f"not in run {run_id} (added after it): no recording to regrade")
            out.not_regradable.append((case_id, variant.label, why))
            continue
        replay_variant = variants.get(variant.label)
        if replay_variant is None:
            inner = plan.harnesses.get(variant.harness) if variant.harness else None
            spec = f"{SPEC_PREFIX}{run_id}:{variant.label}"
            harnesses[spec] = ReplayHarness(spec, run_id, variant.label, inner, {}, archive, archive_note)
            # The label stays the recorded one, so the regrade compares cell for cell with its
            # run; traces come from the recording, not from a receiver.
            replay_variant = variants[variant.label] = replace(variant, name=variant.label, harness=spec, traces=None)
        harness = harnesses[str(replay_variant.harness)]
        harness.trials.update({(case_id, i): t for i, t in recorded.items()})
        if archive is not None:
            from ..workspace import trial_key

            out.snapshots += sum(1 for i in recorded if trial_key(case_id, variant.label, i) in archive.trials)
        indices = tuple(sorted(recorded))
        cells.append(replace(cell, variant=replay_variant, trials=max(indices) + 1, indices=indices, adaptive=None))
    planned: dict[str, Harness] = dict(harnesses)
    out.plan = replace(plan, cells=cells, harnesses=planned, executor="local")
    return out
