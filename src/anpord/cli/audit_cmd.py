"""``anpord audit``: run the selected cases with saboteurs standing in for the agent, report the
cases a saboteur passes, exit 1 on a hollow case."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from ._args import Parser, positive_float, positive_int
from ..results._reporter import ReporterBase

__all__ = ["build_parser", "main"]

PROG = "anpord audit"
DESCRIPTION = """Check that the suite fails a broken agent. Each selected case runs once per saboteur,
under its variant's sandbox, checks and judges, with the saboteur standing in for the agent:
empty (answers nothing, changes nothing), echo (repeats the prompt), refuse, noise (fluent,
off-topic), shuffle (another case's recorded answer) and mutate (this case's recorded passing
answer, damaged). A case a saboteur other than mutate passes is hollow; one only mutate passes
is weak. IDS are eval ids, id prefixes, case ids, eval files or folders, as for `anpord eval`."""


def _saboteurs(text: str) -> list[str]:
    from ..audit import SABOTEURS

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SABOTEURS]
    if unknown or not names:
        import difflib

        close = difflib.get_close_matches(unknown[0], SABOTEURS, n=1) if unknown else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        what = f"unknown saboteur {unknown[0]!r}{hint}" if unknown else "no saboteur named"
        raise argparse.ArgumentTypeError(f"{what}; the saboteurs are {','.join(SABOTEURS)}")
    return list(dict.fromkeys(names))


def build_parser() -> Parser:
    from ..audit import SABOTEURS

    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("targets", nargs="*", metavar="IDS")
    p.add_argument("--saboteurs", type=_saboteurs, default=list(SABOTEURS), metavar="LIST",
                   help=f"comma-separated saboteurs to run (default: {','.join(SABOTEURS)})")
    p.add_argument("--fail-on", choices=["hollow", "never"], default="hollow",
                   help="what makes the exit code 1 (default: a hollow case)")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="audit only cases with this tag")
    p.add_argument("--exclude-tag", action="append", default=[], metavar="T", help="skip cases with this tag")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL", help="audit only this variant")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="seconds per trial")
    p.add_argument("--max-concurrency", type=positive_int, metavar="N", help="trials running at once")
    p.add_argument("--json", action="store_true", help="print the audit as JSON")
    return p


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    from .eval_cmd import _guarded_streams

    args = build_parser().parse_args(argv)
    with _guarded_streams(args.json) as out:
        return _run(args, out)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from ..audit import build_report, plan_audit
    from ..runner import RunOptions, build_plan, execute, late_signals
    from ..runner import UsageError, filter_tags, find_project, load_cases, select_files
    from .eval_cmd import _sweep

    try:
        project = find_project(args.targets)
        _sweep(project.folder)
        # One trial a cell: a saboteur answers the same way every time.
        opts = RunOptions(trials=1, timeout=args.timeout, max_concurrency=args.max_concurrency,
                          variants=args.variant, fail_on="never", compare=False, executor="local",
                          kind="audit", snapshots=False)
        loaded = load_cases(select_files(project, args.targets))
        cases = filter_tags(loaded, args.tag, args.exclude_tag)
        if not cases:
            if loaded:
                raise UsageError("nothing to audit: no selected case matches --tag/--exclude-tag")
            raise UsageError(
                f"nothing to audit: no *.eval.py file under {os.path.relpath(project.root)} "
                "(write one, or run `anpord init`)"
            )
        plan = build_plan(project, cases, opts)
        if not plan.cells:
            raise UsageError("nothing to audit: no variant selected")
        audit = plan_audit(plan, args.saboteurs, project.folder)
        if not audit.plan.cells:
            raise UsageError("nothing to audit: " + ("; ".join(audit.notes) or "no saboteur can run"))
    except UsageError as exc:
        if args.json:
            out.write(json.dumps({"error": str(exc), "exit_code": 2}, ensure_ascii=False) + "\n")
        return _fail(str(exc))
    if not args.json:
        n = len({c.case.id for c in audit.plan.cells})
        v = len(audit.stood_in)
        on = f" on {v} variants" if v > 1 else ""
        print(f"auditing {n} case{'s' if n != 1 else ''}{on} with {', '.join(audit.saboteurs)}", file=out)
    with late_signals() as late:
        result = execute(audit.plan, opts, [_Progress(sys.stderr if args.json else out)])
    if result.summary.interrupted:
        return int(result.exit_code)
    report = build_report(audit, result.record.run_id, result.trials)
    code = report.exit_code(args.fail_on)
    if args.json:
        out.write(json.dumps(report.to_dict(args.fail_on), ensure_ascii=False, indent=2) + "\n")
    else:
        from ..audit._console import render

        render(report, out)
    return 128 + late[0] if late else code


class _Progress(ReporterBase):
    """A dot a trial, so a long audit shows it is moving."""

    def __init__(self, out: TextIO):
        self.out, self.n = out, 0

    def on_trial_end(self, result: Any) -> None:
        self.n += 1
        if self.out.isatty():
            self.out.write("." if self.n % 80 else ".\n")
            self.out.flush()

    def on_run_end(self, summary: Any, results: Any) -> None:
        if self.out.isatty() and self.n % 80:
            self.out.write("\n")
