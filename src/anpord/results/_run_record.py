"""The run record: what ``run.json`` holds — what ran, where, how it ended, and its cells.

Written when the run starts (status ``running``), rewritten when it ends (``finished`` or
``interrupted``), and marked ``crashed`` by the next anpord command that finds its process gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._model import FORMAT_VERSION, CellSummary, RecordError, _need
from ._upgrade import upgrade_run
from ._usage import clean_usage

__all__ = ["DERIVED_KINDS", "RunStatus", "RUN_STATUSES", "CellRecord", "RunRecord"]

# Runs that re-use or re-judge earlier work (a hook for each command that makes one: set
# ``RunRecord.kind``). Their readings are kept and shown, never made a baseline or flake history.
DERIVED_KINDS = ("rerun", "cached", "audit", "regrade", "replay")

RunStatus = Literal["running", "finished", "interrupted", "crashed"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "finished", "interrupted", "crashed")


@dataclass
class CellRecord:
    """One planned cell: the case on a variant, its planned trials and timeout, the eval file, a
    hash of the case's content (the eval file's text and the case's row), and once trials have
    finished, its distribution. ``indices`` names the trials a run re-runs (``--rerun-failed``):
    then only those of the cell's ``trials`` are planned; ``None`` plans them all."""

    case_id: str
    variant: str
    trials: int
    timeout: float
    file: str | None = None
    case_hash: str | None = None
    summary: CellSummary | None = None
    indices: list[int] | None = None
    # Adaptive trials: why the cell took no more ("decided: unchanged", "max trials"...);
    # ``trials`` is then the most it could take. None for a fixed number of trials.
    stop_reason: str | None = None

    @property
    def planned(self) -> list[int]:
        return list(self.indices) if self.indices is not None else list(range(self.trials))

    def to_dict(self) -> dict[str, Any]:
        out = {
            "case_id": self.case_id,
            "variant": self.variant,
            "trials": self.trials,
            "timeout": self.timeout,
            "file": self.file,
            "case_hash": self.case_hash,
            "summary": self.summary.to_dict() if self.summary is not None else None,
        }
        if self.indices is not None:
            out["indices"] = list(self.indices)
        if self.stop_reason is not None:
            out["stop_reason"] = self.stop_reason
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CellRecord:
        summary = raw.get("summary")
        indices = raw.get("indices")
        return cls(
            case_id=_need(raw, "case_id", "cell"),
            variant=_need(raw, "variant", "cell"),
            trials=_need(raw, "trials", "cell"),
            timeout=_need(raw, "timeout", "cell"),
            file=raw.get("file"),
            case_hash=raw.get("case_hash"),
            summary=CellSummary.from_dict(summary) if summary is not None else None,
            indices=[int(i) for i in indices] if indices is not None else None,
            stop_reason=raw.get("stop_reason"),
        )


@dataclass
class RunRecord:
    """``run.json``. ``variants`` are the variants' snapshots (environment names only, never
    values); ``owner`` identifies the process that writes the run (pid, its start time in clock
    ticks, host), so a reader can tell a live run from a crashed one."""

    run_id: str
    status: RunStatus
    started_at: float
    finished_at: float | None = None
    argv: list[str] = field(default_factory=list)
    evals_root: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    owner: dict[str, Any] = field(default_factory=dict)
    executor: str = "local"
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    variants: list[dict[str, Any]] = field(default_factory=list)
    cells: list[CellRecord] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    usage: dict[str, float | None] = field(default_factory=dict)
    exit_code: int | None = None
    forced: bool = False
    resumed_at: list[float] = field(default_factory=list)  # each `--resume` of this run
    rerun_of: str | None = None  # the run whose failed trials this run re-ran
    regrade_of: str | None = None  # the run a regrade re-decided (kind "regrade")
    note: str | None = None  # how a crash was found, say
    # What made the run: "eval" measures the agent; any of DERIVED_KINDS re-used or re-judged
    # earlier work, so it never becomes a baseline nor feeds the flake history.
    kind: str = "eval"

    @property
    def run_kind(self) -> str:
        """``kind``, or what the options say of a run recorded before kinds: a re-run of failed
        trials, or one whose model calls came from the cache."""
        if self.kind != "eval":
            return self.kind
        if self.rerun_of:
            return "rerun"
        if self.options.get("cache"):
            return "cached"
        return "eval"

    @property
    def measures_history(self) -> bool:
        return self.run_kind == "eval"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "run_id": self.run_id,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "argv": list(self.argv),
            "evals_root": self.evals_root,
            "versions": dict(self.versions),
            "owner": dict(self.owner),
            "executor": self.executor,
            "config": dict(self.config),
            "options": dict(self.options),
            "variants": [dict(v) for v in self.variants],
            "cells": [c.to_dict() for c in self.cells],
            "totals": dict(self.totals),
            "usage": dict(self.usage),
            "exit_code": self.exit_code,
            "forced": self.forced,
            "resumed_at": list(self.resumed_at),
            "rerun_of": self.rerun_of,
            "regrade_of": self.regrade_of,
            "note": self.note,
            "kind": self.kind,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunRecord:
        if not isinstance(raw, Mapping):
            raise RecordError(f"run.json holds a JSON object, got {type(raw).__name__}")
        raw = upgrade_run(raw, "run.json")
        status = _need(raw, "status", "run.json")
        if status not in RUN_STATUSES:
            raise RecordError(f"run.json: unknown status {status!r}")
        return cls(
            run_id=_need(raw, "run_id", "run.json"),
            status=status,
            started_at=_need(raw, "started_at", "run.json"),
            finished_at=raw.get("finished_at"),
            argv=list(raw.get("argv") or ()),
            evals_root=raw.get("evals_root"),
            versions=dict(raw.get("versions") or {}),
            owner=dict(raw.get("owner") or {}),
            executor=raw.get("executor", "local"),
            config=dict(raw.get("config") or {}),
            options=dict(raw.get("options") or {}),
            variants=[dict(v) for v in raw.get("variants") or ()],
            cells=[CellRecord.from_dict(c) for c in raw.get("cells") or ()],
            totals=dict(raw.get("totals") or {}),
            usage=clean_usage(raw.get("usage"), run=True),
            exit_code=raw.get("exit_code"),
            forced=bool(raw.get("forced", False)),
            resumed_at=list(raw.get("resumed_at") or ()),
            rerun_of=raw.get("rerun_of"),
            regrade_of=raw.get("regrade_of"),
            note=raw.get("note"),
            kind=str(raw.get("kind") or "eval"),
        )
