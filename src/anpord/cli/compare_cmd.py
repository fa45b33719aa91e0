"""``anpord compare [BASE] [CANDIDATE]``: each cell of a run against its baseline or another run."""

from __future__ import annotations

import argparse
import json

from ._args import Parser
from ._history import CommandError, fail, open_history, project_folder

__all__ = ["main", "threshold"]

PROG = "anpord compare"
DESCRIPTION = """Compare the cells of CANDIDATE (default: the latest run) with BASE (default: each
cell's baseline — the run named by `anpord baseline set`, else the cell's first reading). A cell is
regressed when its pass rate dropped by at least the threshold, or it stopped being deterministic
without its pass rate rising; improved when it rose by at least the threshold; incomparable when
either side measured nothing or the case, harness or model changed. Exit 1 when a cell regressed."""

ORDER = ("regressed", "improved", "incomparable", "unchanged")


def threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a pass-rate difference between 0 and 1, got {text!r}"
        ) from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(
            f"expected a pass-rate difference between 0 and 1, got {text!r}"
        )
    return value


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
    p.add_argument(
        "--regression-threshold",
        type=threshold,
        default=0.2,
        metavar="D",
        help="the pass-rate change that counts (default 0.2)",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from ..store import StoreError

    try:
        with open_history(project_folder()) as store:
            cmp = store.compare(args.base, args.candidate, threshold=args.regression_threshold)
    except (CommandError, StoreError, LookupError) as exc:
        return fail(PROG, str(exc).strip("'\""))
    code = 1 if cmp.regressed else 0
    if args.json:
        print(json.dumps({**cmp.to_dict(), "exit_code": code}, ensure_ascii=False, indent=2))
        return code
    for status in ORDER:
        for c in cmp.of(status):
            print(c.line())
    against = f"run {cmp.base_run}" if cmp.base_run else "the baselines"
    tail = f"; {cmp.only_in_base} cells of {cmp.base_run} are not in it" if cmp.only_in_base else ""
    print(
        f"run {cmp.candidate_run} against {against} (threshold {cmp.threshold:g}): "
        f"{cmp.summary_line()}{tail}"
    )
    return code
