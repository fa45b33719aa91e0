"""``anpord regrade RUN [IDS...]``: decide a recorded run's trials again with today's checks,
judges and verifiers, without running the agents. The result is a new run (kind ``regrade``)
linked to the old one."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from ._args import Parser, positive_float, positive_int

__all__ = ["build_parser", "main"]

PROG = "anpord regrade"
DESCRIPTION = """Decide a recorded run again with the checks, judges and verifiers as they are
defined today, without running the agents: declarative cases on the recorded transcript and the
workspace as the agent left it; scripted cases by running test(t) against a replay of the
recorded turns (a test that now sends something else makes that trial void). The result is a
new run, "regrade of RUN", comparable with `anpord compare RUN NEW`. RUN is a run id, a unique
prefix or `latest`; IDS narrow it to some cases, as for `anpord eval`."""


def build_parser() -> Parser:
    p = Parser(prog=PROG, description=DESCRIPTION)
    p.add_argument("run", metavar="RUN")
    p.add_argument("targets", nargs="*", metavar="IDS")
    p.add_argument("--cache", action="store_true",
                   help="reuse judge (and simulated-user) model calls, keyed on the request and trial index")
    p.add_argument("--fail-on", choices=["failures", "strict", "never"], default="failures",
                   help="what makes the exit code 1, as for `anpord eval` (default: failures)")
    p.add_argument("--strict", action="store_true", help="same as --fail-on strict")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="regrade only cases with this tag")
    p.add_argument("--exclude-tag", action="append", default=[], metavar="T", help="skip cases with this tag")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL", help="regrade only this variant")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="seconds per trial (default: the case's)")
    p.add_argument("--max-concurrency", type=positive_int, metavar="N", help="trials regraded at once")
    p.add_argument("--verbose", action="store_true", help="stream each trial's log lines")
    p.add_argument("--json", action="store_true", help="print the regrade's summary as JSON on stdout")
    return p


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    from .eval_cmd import _guarded_streams

    args = build_parser().parse_args(argv)
    with _guarded_streams(args.json) as out:
        return _run(args, out)


def _plan(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """The regrade's plan and options; UsageError for anything the user must fix."""
    from dataclasses import replace

    from ..regrade import plan_regrade
    from ..results._model import RecordError
    from ..results._reader import read_run
    from ..runner._resume import options_of
    from ..runner._run import build_plan
    from ..runner.discovery import UsageError, filter_tags, find_project, load_cases, select_files
    from .eval_cmd import _sweep

    project = find_project(args.targets)
    _sweep(project.folder)
    try:
        reading = read_run(args.run, project=project.folder)
    except (RecordError, OSError) as exc:
        raise UsageError(f"cannot read run {args.run}: {exc}") from None
    if reading.record.run_kind == "audit":
        raise UsageError(f"run {reading.run_id} is an audit: saboteurs answered there, not the agent; "
                         "regrade a run of `anpord eval`")
    if reading.record.run_kind == "regrade":
        raise UsageError(f"run {reading.run_id} is itself a regrade (of {reading.record.regrade_of}): "
                         f"regrade {reading.record.regrade_of} instead")
    if reading.status == "running":
        raise UsageError(f"run {reading.run_id} is still running: wait for it to finish")
    fail_on = "strict" if args.strict else args.fail_on
    # The recorded run's options, so its variants come out with the same labels.
    opts = replace(options_of(reading.record), trials=None, fail_on=fail_on, cache=args.cache,
                   timeout=args.timeout, max_concurrency=args.max_concurrency or reading.record.config.get("max_concurrency"),
                   variants=list(args.variant) or list(reading.record.options.get("variants") or ()),
                   executor="local", compare=False, kind="regrade", regrade_of=reading.run_id,
                   rerun_of=None, snapshots=False)
    loaded = load_cases(select_files(project, args.targets))
    cases = filter_tags(loaded, args.tag, args.exclude_tag)
    if not cases:
        raise UsageError("nothing to regrade: no selected case" + (" matches --tag/--exclude-tag" if loaded else ""))
    plan = _resolved(build_plan(project, cases, opts, resolve=False))
    regrade = plan_regrade(plan, reading, {c.id for c in cases} if args.targets else None)
    if not regrade.plan.cells:
        listed = "; ".join(f"{c}: {why}" for c, _v, why in regrade.not_regradable[:3])
        raise UsageError(f"nothing to regrade in run {reading.run_id}" + (f" ({listed})" if listed else ""))
    return regrade, opts, reading


# Harness kinds that need nothing in a trial's sandbox (no ``needs_sandbox``, no
# ``prepare_sandbox``): a replay stands in for them without resolving them, which would import
# the agent's module or the model client for nothing.
_NOTHING_TO_PREPARE = ("python:", "openai:")


def _resolved(plan: Any) -> Any:
    """``plan`` with the harnesses a replay still needs (their sandbox set-up) resolved, and
    every sandbox name checked."""
    from ..harnesses import HarnessSpecError, resolve_harness
    from ..runner._planning import _check_sandbox
    from ..runner.discovery import UsageError

    for variant in plan.variants:
        spec = variant.harness
        if spec and spec not in plan.harnesses and not spec.startswith(_NOTHING_TO_PREPARE):
            try:
                plan.harnesses[spec] = resolve_harness(spec, plan.project.folder)
            except HarnessSpecError as exc:
                raise UsageError(str(exc)) from None
        _check_sandbox(variant.sandbox or "local")
    return plan


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from ..results._redact import Redactor
    from ..results.console import ConsoleReporter
    from ..runner._run import execute, late_signals, secret_values
    from ..runner.discovery import UsageError

    try:
        regrade, opts, reading = _plan(args)
    except UsageError as exc:
        if args.json:
            out.write(json.dumps({"error": str(exc), "exit_code": 2}, ensure_ascii=False) + "\n")
        return _fail(str(exc))
    err = sys.stderr
    n = regrade.trials
    print(f"{PROG}: regrading {n} trial{'s' if n != 1 else ''} of run {regrade.run_id} "
          f"({regrade.snapshots} with a workspace snapshot), without running the agents", file=err)
    for note in regrade.notes:
        print(f"{PROG}: {note}", file=err)
    for case_id, variant, why in regrade.not_regradable:
        print(f"{PROG}: not regradable: {case_id} on {variant}: {why}", file=err)
    redact = Redactor(secret_values(regrade.plan))
    console = ConsoleReporter(sys.stderr if args.json else out, verbose=args.verbose, redact=redact)
    with late_signals() as late:
        result = execute(regrade.plan, opts, [console])
    code = int(result.exit_code)
    if not result.summary.interrupted:
        print(f"regrade of {regrade.run_id}: run {result.record.run_id} "
              f"(compare: anpord compare {regrade.run_id} {result.record.run_id})", file=err if args.json else out)
    if args.json:
        from ..results.json_report import summary_dict

        doc = summary_dict(result.summary, result.trials)
        doc["kind"] = "regrade"
        doc["regrade_of"] = regrade.run_id
        doc["not_regradable"] = [{"case_id": c, "variant": v, "reason": why} for c, v, why in regrade.not_regradable]
        doc["notes"] = list(regrade.notes)
        out.write(redact(json.dumps(doc, ensure_ascii=False, indent=2)) + "\n")
    return 128 + late[0] if late else code
