"""``anpord plan [RUN] [--effect D]``: per variant, the smallest change a comparison of a run
like RUN can detect, and the trials or cases it would take to detect D."""

from __future__ import annotations

import argparse
import json

from ._args import Parser
from ._history import CommandError, fail, open_history, project_folder

__all__ = ["main"]

PROG = "anpord plan"
DESCRIPTION = """From RUN's observed variances (default: the latest run), for each variant: the
minimum detectable effect — the smallest change in mean pass rate a paired comparison at this
many cases and trials finds 80% of the time at --alpha — and, with --effect D, the trials a case
(at this many cases) or the cases (at this many trials) that would detect a change of D. The
correlation between runs is read from RUN's comparison with its baselines when it has one."""


def effect(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a pass-rate change between 0 and 1, got {text!r}")
    return value


def build_parser() -> Parser:
    from ._judging import alpha

    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("run", nargs="?", default="latest", metavar="RUN",
                   help="a run id, unique prefix or `latest` (default)")
    p.add_argument("--effect", type=effect, metavar="D", help="the change to detect, e.g. 0.05")
    p.add_argument("--alpha", type=alpha, default=0.05, metavar="A",
                   help="the test's significance level (default 0.05)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from ..stats import plan_variant
    from ..store import StoreError

    try:
        with open_history(project_folder()) as store:
            if not store.history_runs(limit=1):
                raise CommandError("not enough runs yet: 0 of 1 (run `anpord eval` first)")
            run_id = store.resolve(args.run)
            cells = store.cells(run_id)
            try:
                cmp = store.compare(None, run_id, alpha=args.alpha)
            except (StoreError, LookupError):
                cmp = None
    except (CommandError, StoreError, LookupError) as exc:
        return fail(PROG, str(exc).strip("'\""))
    correlations = {v.variant: v.correlation for v in (cmp.variants if cmp else [])}
    plans = []
    for variant in dict.fromkeys(c.variant for c in cells):
        mine = [(c.summary.passed, c.measured) for c in cells
                if c.variant == variant and c.summary is not None]
        plan = plan_variant(variant, mine, effect=args.effect, alpha=args.alpha,
                            correlation=correlations.get(variant))
        plans.append((variant, plan))
    if all(p is None for _, p in plans):
        return fail(PROG, f"run {run_id} measured no trial: nothing to plan from")
    if args.json:
        print(json.dumps({"run": run_id, "alpha": args.alpha, "power": 0.8,
                          "variants": [p.to_dict() for _, p in plans if p is not None]},
                         ensure_ascii=False, indent=2))
        return 0
    print(f"run {run_id}: paired comparisons at alpha {args.alpha:g}, 80% power")
    for variant, p in plans:
        if p is None:
            print(f"  {variant}: nothing measured")
            continue
        size = (f"{p.cases} case{'s' if p.cases != 1 else ''} × "
                f"{p.trials:.3g} trial{'s' if p.trials != 1 else ''}")
        if p.within == 0 and p.between == 0:
            print(f"  {variant}: no variation to plan from at {size} (every case passed or failed "
                  f"alike); run more trials (`anpord eval --trials 5`) or cases, then plan again")
            continue
        rho = (f"r = {p.correlation:.2f} observed" if p.correlation_observed
               else "r = 0.50 assumed (no comparison yet)")
        quiet = "; no case varied between its trials, so this is a floor" if p.within == 0 else ""
        print(f"  {variant}: detects a change of {p.mde:.3f} at {size} ({rho}{quiet})")
        if p.effect is not None:
            n = p.trials_needed
            trials = (f"{n} trial{'s' if n != 1 else ''} a case at {p.cases} cases"
                      if n else f"no number of trials at {p.cases} cases")
            print(f"    to detect {p.effect:g}: {trials}, or {p.cases_needed} cases at "
                  f"{p.trials:.3g} trials")
    return 0
