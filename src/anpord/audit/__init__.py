"""Auditing a suite: does it tell a broken agent from a working one?

``anpord audit`` runs every selected case with a saboteur standing in for the agent (see
``_saboteurs``) and reports the cases a saboteur passes (``hollow``) or only a damaged right
answer passes (``weak``). An audit is a run of kind ``audit``: filed and shown like any run,
never a baseline nor part of the flake history."""

from __future__ import annotations

from ._damage import damage
from ._plan import AuditCell, AuditPlan, plan_audit
from ._report import AuditReport, CaseAudit, build_report
from ._saboteurs import SABOTEURS, SaboteurHarness

__all__ = ["SABOTEURS", "AuditCell", "AuditPlan", "AuditReport", "CaseAudit", "SaboteurHarness",
           "build_report", "damage", "plan_audit"]
