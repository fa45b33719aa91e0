"""What an audit found: each case × saboteur outcome, each case's standing, the catch rate.

Outcomes: ``caught`` (the trial failed or timed out: the case told the saboteur from an agent),
``passed`` / ``scored`` (let through: the suite would have gone green), ``void`` (the saboteur
could not stand in: the trial could not be measured, with the reason), ``skipped`` (the case
skipped itself) and ``not run`` (no recorded answer to replay). A case is ``hollow`` when any
saboteur but ``mutate`` got through, ``weak`` when only ``mutate`` did (a damaged answer may
still be right), ``sound`` when every saboteur that ran was caught.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..results._model import TrialResult
from ._plan import AuditPlan

__all__ = ["CaseAudit", "AuditReport", "build_report", "LET_THROUGH"]

LET_THROUGH = ("passed", "scored")
_OUTCOME = {"failed": "caught", "timed_out": "caught", "passed": "passed", "scored": "scored",
            "void": "void", "skipped": "skipped"}


@dataclass
class Outcome:
    outcome: str
    reason: str = ""
    checks: list[str] = field(default_factory=list)  # the checks that passed, when let through

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": self.outcome}
        if self.reason:
            out["reason"] = self.reason
        if self.outcome in LET_THROUGH:
            out["let_through_by"] = self.checks
        return out


@dataclass
class CaseAudit:
    case_id: str
    variant: str
    stood_in: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    @property
    def status(self) -> str:
        through = [s for s, o in self.outcomes.items() if o.outcome in LET_THROUGH]
        if any(s != "mutate" for s in through):
            return "hollow"
        if through:
            return "weak"
        if any(o.outcome == "caught" for o in self.outcomes.values()):
            return "sound"
        return "unaudited"

    def to_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "variant": self.variant, "stood_in_for": self.stood_in,
                "status": self.status, "saboteurs": {s: o.to_dict() for s, o in self.outcomes.items()}}


@dataclass
class AuditReport:
    run_id: str
    saboteurs: list[str]
    cases: list[CaseAudit]
    notes: list[str]
    recording: str | None = None

    def count(self, *outcomes: str) -> int:
        return sum(1 for c in self.cases for o in c.outcomes.values() if o.outcome in outcomes)

    @property
    def catch_rate(self) -> float | None:
        caught, through = self.count("caught"), self.count(*LET_THROUGH)
        return caught / (caught + through) if caught + through else None

    def with_status(self, status: str) -> list[CaseAudit]:
        return [c for c in self.cases if c.status == status]

    def exit_code(self, fail_on: str) -> int:
        # Fail closed: a case no saboteur could be measured on has not shown that it catches one.
        if fail_on != "hollow":
            return 0
        return 1 if self.with_status("hollow") or self.with_status("unaudited") else 0

    def to_dict(self, fail_on: str) -> dict[str, Any]:
        rate = self.catch_rate
        return {
            "run_id": self.run_id, "kind": "audit", "saboteurs": self.saboteurs,
            "recorded_run": self.recording, "notes": self.notes,
            "catch_rate": None if rate is None else round(rate, 4),
            "caught": self.count("caught"), "let_through": self.count(*LET_THROUGH),
            "could_not_stand_in": self.count("void"),
            "hollow": len(self.with_status("hollow")), "weak": len(self.with_status("weak")),
            "sound": len(self.with_status("sound")),
            "cases": [c.to_dict() for c in self.cases],
            "fail_on": fail_on, "exit_code": self.exit_code(fail_on),
        }


def _passed_checks(result: TrialResult) -> list[str]:
    """The checks that passed (a judge's verdict is one of them: it records an assertion)."""
    return [a.display_name for a in result.assertions if a.status == "passed"]


def build_report(audit: AuditPlan, run_id: str, results: Sequence[TrialResult]) -> AuditReport:
    by_cell: dict[tuple[str, str], CaseAudit] = {}
    for cell in audit.plan.cells:
        ac = audit.cell(cell.case.id, cell.variant.label)
        assert ac is not None
        key = (ac.case_id, ac.variant)
        if key not in by_cell:
            by_cell[key] = CaseAudit(ac.case_id, ac.variant, audit.stood_in.get(ac.variant, ""))
    for (case_id, variant, sab), why in audit.not_run.items():
        ca = by_cell.setdefault((case_id, variant), CaseAudit(case_id, variant, audit.stood_in.get(variant, "")))
        ca.outcomes[sab] = Outcome("not run", why)
    for r in results:
        ac = audit.cell(r.case_id, r.variant)
        if ac is None:
            continue
        outcome = _OUTCOME.get(r.verdict, r.verdict)
        checks = _passed_checks(r) if outcome in LET_THROUGH else []
        by_cell[(ac.case_id, ac.variant)].outcomes[ac.saboteur] = Outcome(outcome, r.reason, checks)
    cases = sorted(by_cell.values(), key=lambda c: (c.case_id, c.variant))
    for c in cases:  # every column in the saboteurs' order
        c.outcomes = {s: c.outcomes[s] for s in [*audit.saboteurs, "shuffle", "mutate"] if s in c.outcomes}
    recording = audit.recording.run_id if audit.recording is not None else None
    return AuditReport(run_id, list(audit.saboteurs), cases, list(audit.notes), recording)
