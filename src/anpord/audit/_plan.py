"""Planning an audit: every selected cell once per saboteur, the saboteur standing in for the
variant's harness (the variant's sandbox, source, profile and checks unchanged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..runner._planning import Plan, PlannedCase
from ._recorded import Recording, latest_recording
from ._saboteurs import RECORDED, SPEC_PREFIX, SaboteurHarness, describe

__all__ = ["AuditCell", "AuditPlan", "plan_audit"]


@dataclass(frozen=True)
class AuditCell:
    """One case on one variant under one saboteur."""

    case_id: str
    variant: str  # the variant's own label
    saboteur: str
    label: str  # the label the audit run files it under


@dataclass
class AuditPlan:
    plan: Plan
    saboteurs: list[str]
    cells: dict[str, AuditCell] = field(default_factory=dict)  # keyed by "case_id\0label"
    stood_in: dict[str, str] = field(default_factory=dict)  # variant label → what was replaced
    # (case id, variant label, saboteur) → why it was not run (no recorded answer to replay)
    not_run: dict[tuple[str, str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    recording: Recording | None = None

    def cell(self, case_id: str, label: str) -> AuditCell | None:
        return self.cells.get(f"{case_id}\0{label}")


def audit_label(saboteur: str, variant: str) -> str:
    return f"{saboteur}:{variant}"


def plan_audit(plan: Plan, saboteurs: Sequence[str], project_folder: Path) -> AuditPlan:
    """``plan`` (one trial per cell, harnesses resolved) turned into the audit's plan."""
    wanted = list(saboteurs)
    out = AuditPlan(plan, wanted)
    recording = None
    if any(s in RECORDED for s in wanted):
        recording = latest_recording(project_folder)
        if recording is None:
            skipped = [s for s in wanted if s in RECORDED]
            out.notes.append(f"{' and '.join(skipped)} skipped: no recorded run to take answers from "
                             "(run `anpord eval` first)")
            wanted = [s for s in wanted if s not in RECORDED]
            out.saboteurs = wanted
    out.recording = recording
    order = list(dict.fromkeys(c.case.id for c in plan.cells))
    harnesses: dict[str, SaboteurHarness] = {}
    cells: list[PlannedCase] = []
    for cell in plan.cells:
        variant, case_id = cell.variant, cell.case.id
        inner_spec = variant.harness
        inner = plan.harnesses.get(inner_spec) if inner_spec else None
        out.stood_in[variant.label] = describe(inner_spec)
        for sab in wanted:
            answers: tuple[str, ...] = ()
            outputs: tuple[object, ...] = ()
            spec = f"{SPEC_PREFIX}{sab}:{inner_spec or ''}"
            if sab in RECORDED:
                assert recording is not None
                if sab == "mutate":
                    answers = recording.own_passing(case_id, variant.label)
                    outputs = recording.own_passing_outputs(case_id, variant.label)
                    missing = "no passing recorded answer of this case"
                else:
                    answers = recording.other_case(case_id, variant.label, order)
                    outputs = recording.other_case_outputs(case_id, variant.label, order)
                    missing = "no other case has a recorded answer"
                if not answers:
                    out.not_run[(case_id, variant.label, sab)] = f"{missing} in run {recording.run_id}"
                    continue
                spec = f"{spec}#{case_id}"  # the answers are this case's own
            if spec not in harnesses:
                harnesses[spec] = SaboteurHarness(spec, sab, inner, answers, outputs)
            label = audit_label(sab, variant.label)
            sab_variant = replace(variant, name=label, harness=spec)
            cells.append(replace(cell, variant=sab_variant, trials=1, indices=None))
            out.cells[f"{case_id}\0{label}"] = AuditCell(case_id, variant.label, sab, label)
    out.plan = replace(plan, cells=cells, harnesses=harnesses, executor="local")  # type: ignore[arg-type]
    return out
