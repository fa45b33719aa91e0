"""Planning a run again from its record: finishing a dead run (``--resume``) and re-running a
run's failed trials as a new run (``--rerun-failed``).

The plan is rebuilt from the same eval files, as they are now, with the options the run was
started with; each cell keeps the trials (and trial indices) the record planned. What changed
since is said, one line each: a case that no longer exists cannot run; a case whose content
changed (its hash) has, when resumed, its finished trials run again, so no cell mixes two versions
of a case; a variant whose settings changed is treated the same way for its cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._errors import UsageError
from ..results._reader import RunReading
from ..results._run_record import CellRecord, RunRecord
from ._planning import Plan, PlannedCase, RunOptions, build_plan
from .discovery import Project, load_cases, select_files

__all__ = ["RERUN_VERDICTS", "Replan", "options_of", "plan_rerun", "plan_resume"]

RERUN_VERDICTS = ("failed", "timed_out", "void")


@dataclass
class Replan:
    plan: Plan
    notes: list[str] = field(default_factory=list)
    changed: set[tuple[str, str]] = field(
        default_factory=set
    )  # cells whose case or variant changed


def options_of(record: RunRecord, **overrides: Any) -> RunOptions:
    """The options a run was started with (``overrides`` win where not None)."""
    o = record.options
    opts = RunOptions(
        trials=o.get("trials"),
        timeout=o.get("timeout"),
        max_concurrency=record.config.get("max_concurrency"),
        variants=list(o.get("variants") or ()),
        harness=o.get("harness"),
        model=o.get("model"),
        sandbox=o.get("sandbox"),
        fail_on=o.get("fail_on") or "failures",
        cache=bool(o.get("cache")),
        replay=o.get("replay"),  # a replayed run is resumed (or re-run) replaying the same calls
        executor=o.get("executor"),
        regression_threshold=float(o.get("regression_threshold") or 0.2),
        secrets=tuple(o.get("secrets") or ()),
        env=dict(o.get("env") or {}),
        profile=o.get("profile"),
        network=bool(o.get("network")),
        mounts=tuple(o.get("mounts") or ()),
        alpha=float(o.get("alpha") or 0.05),
        variant_margin=float(o.get("variant_margin") or 0.05),
        token_limit=o.get("token_limit"),
        cost_limit=o.get("cost_limit"),
        max_run_cost=o.get("max_run_cost"),
        snapshots=o.get("snapshots") is not False,
    )
    return replace(opts, **{k: v for k, v in overrides.items() if v is not None})


def _variant_change(old: dict[str, Any] | None, new: dict[str, Any]) -> str | None:
    if old is None:
        return None
    diffs = [
        f"{k} {old.get(k)!r} → {new.get(k)!r}"
        for k in new
        if k != "label" and old.get(k) != new.get(k)
    ]
    return ", ".join(diffs) or None


def _rebuild(
    project: Project,
    record: RunRecord,
    cells: Sequence[CellRecord],
    opts: RunOptions,
    replan: Replan,
) -> tuple[list[PlannedCase], Plan]:
    """The planned cells for ``cells`` of the record, as the eval files define them now."""
    files = sorted({c.file for c in cells if c.file and Path(c.file).is_file()})
    wanted = {c.case_id for c in cells}
    cases = [c for c in load_cases(select_files(project, files)) if c.id in wanted] if files else []
    plan = build_plan(project, cases, opts)
    by_key = {(p.case.id, p.variant.label): p for p in plan.cells}
    old_variants = {str(v.get("label")): v for v in record.variants}
    out: list[PlannedCase] = []
    for cell in cells:
        key = (cell.case_id, cell.variant)
        planned = by_key.get(key)
        if planned is None:
            gone = (
                "its eval file is gone"
                if not (cell.file and Path(cell.file).is_file())
                else "no longer defined"
            )
            replan.notes.append(f"{cell.case_id} on {cell.variant}: {gone}; its trials cannot run")
            continue
        change = _variant_change(old_variants.get(cell.variant), planned.variant.snapshot())
        if cell.case_hash and planned.case_hash != cell.case_hash:
            replan.changed.add(key)
            replan.notes.append(
                f"{cell.case_id} on {cell.variant}: the case changed since the run started"
            )
        elif change:
            replan.changed.add(key)
            replan.notes.append(
                f"{cell.case_id} on {cell.variant}: the variant changed since the run started ({change})"
            )
        out.append(
            replace(
                planned,
                trials=cell.trials,
                timeout=cell.timeout,
                indices=None if cell.indices is None else tuple(cell.indices),
                adaptive=None,  # the trials the record names, however they were chosen
            )
        )
    return out, plan


def plan_resume(project: Project, reading: RunReading, opts: RunOptions) -> Replan:
    """The plan that finishes ``reading``'s run. A changed cell's finished trials are dropped
    from ``reading`` (they run again) and the record takes the cell's new hash and variant."""
    record = reading.record
    empty = Plan(project=project, cells=[])
    replan = Replan(empty)
    cells, plan = _rebuild(project, record, record.cells, opts, replan)
    replan.plan = replace(plan, cells=cells)
    if replan.changed:
        again = [r for r in reading.trials if r.cell_key in replan.changed]
        reading.trials = [r for r in reading.trials if r.cell_key not in replan.changed]
        if again:
            replan.notes.append(
                f"{len(again)} finished trial{'s' if len(again) != 1 else ''} of changed "
                "cells run again"
            )
        now = {(c.case.id, c.variant.label): c for c in cells}
        for cell in record.cells:
            if (cell.case_id, cell.variant) in now:
                cell.case_hash = now[(cell.case_id, cell.variant)].case_hash
        fresh = {v.label: v.snapshot() for v in replan.plan.variants}
        record.variants = [fresh.get(str(v.get("label")), v) for v in record.variants]
    return replan


def plan_rerun(project: Project, reading: RunReading, opts: RunOptions) -> Replan:
    """A new run of ``reading``'s failed, timed-out and void trials (same cells, same trial
    indices, so the same seeds), linked to it."""
    record = reading.record
    failed: dict[tuple[str, str], list[int]] = {}
    for r in reading.trials:
        if r.verdict in RERUN_VERDICTS:
            failed.setdefault(r.cell_key, []).append(r.trial)
    if not failed:
        raise UsageError(
            f"nothing to re-run: run {record.run_id} has no failed, timed-out or void trial"
        )
    cells = [
        replace(c, indices=sorted(failed[(c.case_id, c.variant)]), summary=None)
        for c in record.cells
        if (c.case_id, c.variant) in failed
    ]
    replan = Replan(Plan(project=project, cells=[]))
    planned, plan = _rebuild(project, record, cells, opts, replan)
    replan.notes = [
        n.replace("since the run started", f"since run {record.run_id}") for n in replan.notes
    ]
    replan.plan = replace(plan, cells=planned)
    return replan
