"""``anpord compare [BASE] [CANDIDATE]``: each cell of a run against its baseline or another run,
and each variant's paired change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ._args import Parser
from ._history import CommandError, fail, open_history, project_folder
from ._judging import add_judging, threshold

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Comparison

__all__ = ["main", "threshold"]

PROG = "anpord compare"
DESCRIPTION = """Compare the cells of CANDIDATE (default: the latest run) with BASE (default: each
cell's baseline — the run named by `anpord baseline set`, else the cell's first reading), paired by
case. A cell is regressed or improved when Fisher's exact test, Holm-corrected over every cell
compared, says so at --alpha; unchanged when its change's 95% interval lies within
±--regression-threshold; inconclusive otherwise (with the trials that would decide it);
incomparable when either side measured nothing or the case, harness or model changed. Each
variant's change is the paired mean difference of per-case pass rates, judged against
--variant-margin. Exit 1 when a cell or a variant regressed (docs/statistics.md)."""

ORDER = ("regressed", "improved", "inconclusive", "incomparable", "unchanged")


def build_parser() -> Parser:
    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("base", nargs="?", metavar="BASE", help="a run id, unique prefix or `latest`")
    p.add_argument(
        "candidate",
        nargs="?",
        default="latest",
        metavar="CANDIDATE",
        help="a run id, unique prefix or `latest` (default)",
    )
    add_judging(p)
    p.add_argument("--format", choices=["text", "md", "json"], default=None,
                   help="text (default), md (a Markdown summary for a pull request) or json")
    p.add_argument("--json", action="store_true", help="same as --format json")
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.json and args.format not in (None, "json"):
        parser.error(f"--json contradicts --format {args.format}")
    form = "json" if args.json else (args.format or "text")
    from ..store import StoreError
    from ..store._compare import variant_line

    try:
        folder = project_folder()
        with open_history(folder) as store:
            cmp = store.compare(
                args.base,
                args.candidate,
                threshold=args.regression_threshold,
                alpha=args.alpha,
                variant_margin=args.variant_margin,
            )
    except (CommandError, StoreError, LookupError) as exc:
        return fail(PROG, str(exc).strip("'\""))
    if cmp.base_run is not None and cmp.base_run == cmp.candidate_run:
        return fail(PROG, f"{args.base} and {args.candidate} are the same run ({cmp.base_run}): "
                    "compare it with an earlier run (`anpord runs` lists them), or run "
                    "`anpord compare` alone to compare the latest run with its baselines")
    code = 1 if cmp.fails else 0
    if form == "md":
        print(_markdown(cmp, folder), end="")
        return code
    if form == "json":
        print(json.dumps({**cmp.to_dict(), "exit_code": code}, ensure_ascii=False, indent=2))
        return code
    for status in ORDER:
        for c in cmp.of(status):
            print(c.line())
    for v in cmp.variants:
        print(f"variant {variant_line(v)}")
    against = f"run {cmp.base_run}" if cmp.base_run else "the baselines"
    tail = f"; {cmp.only_in_base} cells of {cmp.base_run} are not in it" if cmp.only_in_base else ""
    print(
        f"run {cmp.candidate_run} against {against} (alpha {cmp.alpha:g}, cell margin "
        f"±{cmp.threshold:g}, variant margin ±{cmp.variant_margin:g}): {cmp.summary_line()}{tail}"
    )
    return code


def _markdown(cmp: Comparison, folder: Path) -> str:
    """The candidate's Markdown summary with this comparison; the candidate's totals and
    failures come from its run folder (left out when the folder cannot be read)."""
    from ..results._model import RecordError
    from ..results._reader import read_run
    from ..results._summary import markdown_summary

    run_id = cmp.candidate_run
    try:
        reading = read_run(run_id, project=folder)
    except (LookupError, OSError, RecordError, ValueError):
        return markdown_summary(run_id, {}, [], [], cmp)
    return markdown_summary(run_id, reading.totals(), reading.cells, reading.trials, cmp,
                            status=None if reading.status == "finished" else reading.status)
