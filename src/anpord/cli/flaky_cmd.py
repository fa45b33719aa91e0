"""``anpord flaky [--runs N]``: the cells whose history shows both outcomes, flakiest first."""

from __future__ import annotations

import argparse
import json

from ._args import Parser, positive_int
from ._history import CommandError, fail, open_history, project_folder

__all__ = ["main"]

PROG = "anpord flaky"
DESCRIPTION = """List the flakiest cells over the last N runs: each cell's history (its readings
with the same case content, harness and model, from runs made by a plain `anpord eval`) pooled
into a flake rate — the share of the minority outcome — with its 95% interval, and the evidence,
run by run. Re-runs and cached runs are not history."""
MIN_RUNS = 2


def window(text: str) -> int:
    value = positive_int(text)
    if value < MIN_RUNS:
        raise argparse.ArgumentTypeError(f"flakiness needs at least {MIN_RUNS} runs, got {text!r}")
    return value


def build_parser() -> Parser:
    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("--runs", type=window, default=20, metavar="N",
                   help="how many recent runs make the history (default 20)")
    p.add_argument("--limit", type=positive_int, default=20, metavar="N",
                   help="how many cells to list (default 20)")
    p.add_argument("--json", action="store_true", help="print the cells as JSON")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from ..stats import Reading, flake_estimate
    from ..store import StoreError

    try:
        with open_history(project_folder()) as store:
            runs = store.history_runs(limit=args.runs)
            if len(runs) < MIN_RUNS:
                raise CommandError(f"not enough runs yet: {len(runs)} of {MIN_RUNS} (each `anpord eval` adds one)")
            histories = store.cell_histories(limit=args.runs)
    except (CommandError, StoreError, LookupError) as exc:
        return fail(PROG, str(exc).strip("'\""))
    estimates = [
        flake_estimate(case, variant, [Reading(r.run_id, r.summary.passed, r.measured)
                                       for r in rows if r.summary is not None])
        for (case, variant), rows in histories.items()
    ]
    flaky = sorted((e for e in estimates if e.flaky),
                   key=lambda e: (-(e.flake_rate or 0), -e.n, e.case_id, e.variant))
    if args.json:
        doc = {"runs": len(runs), "cells": len(estimates), "flaky": [e.to_dict() for e in flaky]}
        print(json.dumps(doc, ensure_ascii=False, indent=2))
        return 0
    for e in flaky[: args.limit]:
        assert e.flake_rate is not None and e.ci_low is not None and e.ci_high is not None
        evidence = " ".join(f"{r.passed}/{r.n}" for r in reversed(e.readings))
        print(f"{e.case_id}  {e.variant}  flakes {e.flake_rate:.0%} [{e.ci_low * 100:.0f}–"
              f"{e.ci_high * 100:.0f}%]: {e.passed}/{e.n} passed over {e.runs} "
              f"run{'s' if e.runs != 1 else ''} ({evidence}, oldest first)")
    more = f", {len(flaky) - args.limit} more not listed" if len(flaky) > args.limit else ""
    print(f"{len(flaky)} of {len(estimates)} cells flaky over the last {len(runs)} runs{more}")
    return 0
