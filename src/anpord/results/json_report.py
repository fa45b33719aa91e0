"""The machine summary printed by ``anpord eval --json`` (schema documented in docs/results.md).

Keys are stable: new keys may be added, none is renamed or removed without bumping ``schema``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Sequence

from ._model import VERDICTS, RunSummary, TrialResult

__all__ = ["SCHEMA_VERSION", "summary_dict", "summary_json"]

SCHEMA_VERSION = 2


def _num(value: float | None) -> float | None:
    """JSON has no NaN or infinity: an undefined figure is ``null``."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def _trial(r: TrialResult) -> dict[str, Any]:
    return {
        "trial": r.trial,
        "verdict": r.verdict,
        "reason": r.reason,
        "score": _num(r.score),
        "duration": round(r.duration, 6),
        "error": r.error.message if r.error is not None else None,
        "error_kind": r.error.kind if r.error is not None else None,
        "usage": dict(r.usage),
        "files": dict(r.files),
    }


def summary_dict(summary: RunSummary, results: Sequence[TrialResult]) -> dict[str, Any]:
    """The ``--json`` document as a dict."""
    by_cell: dict[tuple[str, str], list[TrialResult]] = {}
    for r in results:
        by_cell.setdefault(r.cell_key, []).append(r)

    totals = {"trials": sum(summary.totals.get(v, 0) for v in VERDICTS)}
    totals.update({v: summary.totals.get(v, 0) for v in VERDICTS})

    cells = []
    for c in summary.cells:
        trials = sorted(by_cell.get((c.case_id, c.variant), []), key=lambda r: r.trial)
        cells.append(
            {
                "case_id": c.case_id,
                "variant": c.variant,
                "trials": c.trials,
                "passed": c.passed,
                "scored": c.scored,
                "failed": c.failed,
                "timed_out": c.timed_out,
                "void": c.void,
                "skipped": c.skipped,
                "pass_rate": _num(c.pass_rate),
                **_interval(c.estimate()),
                "pass_at_k": _num(c.pass_at_k),
                "pass_hat_k": _num(c.pass_hat_k),
                "deterministic": c.deterministic,
                **({"stop_reason": summary.stop_reasons[(c.case_id, c.variant)]}
                   if (c.case_id, c.variant) in summary.stop_reasons else {}),
                "results": [_trial(r) for r in trials],
            }
        )

    variants: dict[str, dict[str, Any]] = {}
    for c in summary.cells:
        v = variants.setdefault(
            c.variant, {"variant": c.variant, "trials": 0, "passed": 0, "measured": 0, "void": 0}
        )
        v["trials"] += c.trials
        v["passed"] += c.passed
        v["measured"] += c.trials - c.void - c.skipped
        v["void"] += c.void
    from ..stats import estimate_variant

    for v in variants.values():
        # The mean of per-case pass rates, its cluster-robust interval and the void share
        # (docs/statistics.md); ``pooled_pass_rate`` is passed over measured trials.
        mine = [c for c in summary.cells if c.variant == v["variant"]]
        e = estimate_variant([(c.passed, c.measured) for c in mine], trials=v["trials"], void=v["void"])
        v["pooled_pass_rate"] = _num(v["passed"] / v["measured"]) if v["measured"] else None
        v.update(_interval(e))
        v["cases"] = e.cases
        v["se"] = _num(e.se)
        v["void_rate"] = _num(e.void_rate)

    return {
        "schema": SCHEMA_VERSION,
        "run_id": summary.run_id,
        "run_dir": summary.run_dir,
        "exit_code": summary.exit_code,
        "fail_on": summary.fail_on,
        "interrupted": summary.interrupted,
        "duration": round(summary.duration, 4),
        "totals": totals,
        "usage": {k: _num(v) if isinstance(v, float) else v for k, v in summary.usage.items()},
        "run_cost": summary.run_cost,
        "closing_line": summary.closing_line(),
        "variants": list(variants.values()),
        "cells": cells,
        "comparison": _comparison(summary.comparison),
    }


def _interval(e: Any) -> dict[str, Any]:
    """``pass_rate``, ``ci_low``, ``ci_high``, ``n`` (cells) of an estimate, and why there is no
    interval when there is none."""
    d = e.to_dict()
    out = {"pass_rate": _num(d["pass_rate"]), "ci_low": _num(d["ci_low"]), "ci_high": _num(d["ci_high"])}
    if "n" in d:
        out["n"] = d["n"]
    if d.get("no_interval"):
        out["no_interval"] = d["no_interval"]
    return out


def _comparison(comparison: Any) -> dict[str, Any] | None:
    """The run's cells against their baselines: the counts and each regressed cell."""
    if comparison is None:
        return None
    return {
        "threshold": comparison.threshold,
        "alpha": comparison.alpha,
        "variant_margin": comparison.variant_margin,
        "counts": comparison.counts(),
        "variants": [v.to_dict() for v in comparison.variants],
        "regressed": [
            {"case_id": c.case_id, "variant": c.variant, "reason": c.reason,
             "base_run": c.base.run_id if c.base is not None else None, "delta": _num(c.delta)}
            for c in comparison.regressed
        ],
    }


def summary_json(
    summary: RunSummary,
    results: Sequence[TrialResult],
    *,
    redact: Callable[[str], str] | None = None,
) -> str:
    """The ``--json`` document: indented, ASCII-only (safe on any terminal encoding), no NaN.
    ``redact`` (a ``Redactor``) is applied to every string in it, never to the JSON text: a
    secret such as ``1796`` is also JSON syntax."""
    text = json.dumps(summary_dict(summary, results), indent=2, allow_nan=False, default=str)
    if redact is None:
        return text
    from ._redact import redact_value

    return json.dumps(redact_value(json.loads(text), redact), indent=2, allow_nan=False)
