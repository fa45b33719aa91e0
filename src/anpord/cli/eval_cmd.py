"""``anpord eval``: select cases, run them over variants and trials, report, exit."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ._args import Parser, dollars, positive_float, positive_int, token_count, trials_arg

__all__ = ["build_parser", "main"]

DESCRIPTION = """Run eval cases. IDS_OR_PATHS are eval ids (`weather/brooklyn`), id prefixes (`weather`),
case ids (`sql/0003`), eval files or folders; none runs everything under the evals root."""


def build_parser() -> Parser:
    p = Parser(prog="anpord eval", description=DESCRIPTION)
    p.add_argument("targets", nargs="*", metavar="IDS_OR_PATHS")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="run only cases with this tag")
    p.add_argument("--exclude-tag", action="append", default=[], metavar="T", help="skip cases with this tag")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL", help="run only this variant")
    p.add_argument("--trials", type=trials_arg, metavar="N|auto|MIN..MAX",
                   help="trials per cell; auto (= 2..20) or MIN..MAX: as many as each cell needs "
                        "to decide (docs/statistics.md)")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="seconds per trial")
    p.add_argument("--max-concurrency", type=positive_int, metavar="N", help="trials running at once")
    p.add_argument("--token-limit", type=token_count, metavar="N",
                   help="tokens per trial: past it the agent is stopped and the trial fails")
    p.add_argument("--cost-limit", type=dollars, metavar="USD",
                   help="US dollars per trial: past it the agent is stopped and the trial fails")
    p.add_argument("--max-run-cost", type=dollars, metavar="USD",
                   help="once the run has spent this, start no more trials (those left are void)")
    p.add_argument("--list", action="store_true", help="list the selected cases; run nothing")
    p.add_argument("--json", action="store_true", help="print the machine summary (with --list: the cases)")
    p.add_argument("--junit", metavar="PATH", help="write JUnit XML here")
    p.add_argument("--reporter", action="append", default=[], metavar="NAME[:ARG]",
                   help="also report through this reporter plugin (repeatable; anpord plugins lists them)")
    p.add_argument("--summary", nargs="+", metavar=("md|none", "PATH"),
                   help="write the run's Markdown summary to PATH (`-`: stdout); `none`: not even to "
                        "$GITHUB_STEP_SUMMARY, where it is appended by default when that is set")
    p.add_argument("--verbose", action="store_true", help="stream t.log lines as cases run")
    p.add_argument("--fail-on", choices=["failures", "strict", "regressed", "never"], default=None,
                   help="what makes the exit code 1 (default: failures)")
    p.add_argument("--strict", action="store_true", help="same as --fail-on strict")
    p.add_argument("--harness", metavar="SPEC", help="run every case against this harness instead")
    p.add_argument("--model", metavar="M", help="override the model on every selected variant")
    p.add_argument("--sandbox", metavar="S", help="override the sandbox on every selected variant")
    p.add_argument("--cache", action="store_true",
                   help="reuse model and judge calls from earlier runs (keyed on the request and the trial index)")
    p.add_argument("--replay", metavar="RUN",
                   help="answer the agents' model calls from RUN's recorded ones (the model proxy: "
                        "docs/model-proxy.md); a call the recording lacks makes its trial void")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", metavar="RUN",
                       help="finish a run that died: run only its missing trials, into the same run")
    again.add_argument("--rerun-failed", metavar="RUN",
                       help="run the failed, timed-out and void trials of RUN again, as a new run")
    # How --fail-on regressed and the closing comparison judge a change (docs/statistics.md).
    from ._judging import add_judging

    add_judging(p, defaults=False)
    p.add_argument("--executor", metavar="NAME", default=None,
                   help="where trials run: local (this process, the default), ray (a Ray cluster: "
                        "pip install 'anpord[ray]'), or a plugin's executor (anpord plugins)")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="the Ray cluster's address (host:port); default RAY_ADDRESS, else a cluster on this machine")
    p.add_argument("--no-artifacts", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-snapshots", action="store_true",
                   help="do not keep each trial's workspace in the run folder (anpord regrade needs them "
                        "for checks that read the workspace)")
    _add_variant_flags(p)
    return p


# -- the variant fields on the command line -------------------------------------------------------


def _add_variant_flags(p: Parser) -> None:
    """``--secret``, ``--env``, ``--profile``, ``--network``, ``--mount``: set on every selected
    variant, and kept when ``--harness`` replaces the variants."""
    p.add_argument("--secret", action="append", default=[], type=_secret_name, metavar="NAME",
                   help="pass this variable from anpord's environment to the agent, redacted (repeatable)")
    p.add_argument("--env", action="append", default=[], type=_assignment, metavar="K=V",
                   help="set this variable for the agent (repeatable; wins over the variant's env)")
    p.add_argument("--profile", metavar="P",
                   help="apply this profile (evals/profiles/P) to every selected variant")
    p.add_argument("--network", action="store_true", help="give every selected variant the network")
    p.add_argument("--mount", action="append", default=[], type=_mount, metavar="PATH",
                   help="make this host folder or file visible, read-only, in the sandbox (repeatable)")


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _secret_name(text: str) -> str:
    if not _NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected an environment variable name, got {text!r}")
    return text


def _assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not _NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _mount(text: str) -> str:
    # Resolved against the caller's folder now: a relative path means the same in every sandbox.
    path = Path(text).expanduser().resolve()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: {path} does not exist")
    return str(path)


def _variant_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The RunOptions fields the variant flags set. A secret that is not set here is exit 2."""
    from ..runner import UsageError

    unset = [n for n in args.secret if n not in os.environ]
    if unset:
        raise UsageError(f"--secret {unset[0]}: {unset[0]} is not set in anpord's environment")
    return {"secrets": tuple(dict.fromkeys(args.secret)), "env": dict(args.env),
            "profile": args.profile, "network": args.network, "mounts": tuple(dict.fromkeys(args.mount))}


def _check_profile(project: Any, name: str | None) -> None:
    """``--profile P`` names a profile of the evals root: exit 2 otherwise, listing them."""
    if name is None:
        return
    from ..harnesses._profile import ProfileError, load_profile
    from ..runner import UsageError

    try:
        load_profile(name, project.root / "profiles")
    except ProfileError as exc:
        raise UsageError(f"--profile {name}: {exc}") from None


def _threshold(text: str) -> float:
    from .compare_cmd import threshold

    return threshold(text)


def _fail(message: str) -> int:
    print(f"anpord eval: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from ._summary_flag import check_summary

    problem = check_summary(args)
    if problem:
        parser.error(problem)
    fail_on = "strict" if args.strict else (args.fail_on or "failures")
    if args.strict and args.fail_on and args.fail_on != "strict":
        return _fail(f"--strict contradicts --fail-on {args.fail_on}")
    for flag, given in (("--replay", args.replay), ("--resume", args.resume), ("--rerun-failed", args.rerun_failed)):
        if given is not None and not given.strip():
            # An unset shell variable (``--replay "$RUN"``): never a run without the option.
            return _fail(f"{flag} needs a run (an id, a unique prefix, `latest` or a run's folder), got an empty value")
    if args.resume or args.rerun_failed:
        which = "--resume" if args.resume else "--rerun-failed"
        extra = [flag for flag, given in (
            ("IDS_OR_PATHS", args.targets), ("--tag", args.tag), ("--exclude-tag", args.exclude_tag),
            ("--variant", args.variant), ("--trials", args.trials), ("--timeout", args.timeout),
            ("--harness", args.harness), ("--model", args.model), ("--sandbox", args.sandbox),
            ("--list", args.list), ("--secret", args.secret), ("--env", args.env),
            ("--profile", args.profile), ("--network", args.network), ("--mount", args.mount),
            ("--replay", args.replay), ("--token-limit", args.token_limit),
            ("--cost-limit", args.cost_limit)) if given]
        if extra:
            return _fail(f"{which} runs what the run planned: it takes no {', '.join(extra)}")
    if args.junit:
        # Resolved now, against the caller's folder: an agent that changes the working folder
        # during the run must not move where the report goes.
        args.junit_path = Path(args.junit).expanduser().resolve()
        parent = args.junit_path.parent
        if not parent.is_dir():
            return _fail(f"--junit {args.junit}: folder {parent} does not exist")

    with _guarded_streams(args.json) as out:
        return _run(args, fail_on, out)


@contextlib.contextmanager
def _guarded_streams(as_json: bool) -> Iterator[TextIO]:
    """Stdout and stderr for the run, on private copies of file descriptors 1 and 2.

    An agent runs in this process and may write to fd 1 or close fds 1 and 2; the console, the
    ``--json`` document and anpord's own messages must survive both. With ``--json`` the document
    goes to the copy of fd 1 alone, and fd 1 itself points at stderr for the run, so a
    subprocess or ``os.write(1, ...)`` cannot corrupt it. Yields the stream the document (or,
    without ``--json``, the console) is written to; both descriptors are put back at the end."""
    original_out, original_err = sys.stdout, sys.stderr
    for stream in (original_out, original_err):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        saved_out, saved_err = os.dup(1), os.dup(2)
    except OSError:  # no fd 1 or 2 to keep apart: run with what there is
        yield original_out
        return

    def text(fd: int, like: TextIO) -> TextIO:
        return open(
            fd, "w", encoding=getattr(like, "encoding", None) or "utf-8",
            errors=getattr(like, "errors", None) or "strict", closefd=False, buffering=1,
        )

    out, err = text(saved_out, original_out), text(saved_err, original_err)
    sys.stdout, sys.stderr = (err if as_json else out), err
    try:
        if as_json:
            os.dup2(2, 1)
        yield out
    finally:
        sys.stdout, sys.stderr = original_out, original_err
        for stream in (out, err):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
            stream.close()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)


def _run(args: argparse.Namespace, fail_on: str, out: TextIO) -> int:
    from ..runner import UsageError, filter_tags, find_project, load_cases, select_files

    try:
        project = find_project(args.targets)
        _sweep(project.folder)
        if not args.list and (args.executor or project.config.executor) == "local":
            from ..runner._services import start_run_services_early

            # What the configured variants' trials share (the model proxy's process, ~0.2 s to
            # be ready) starts while the cases load; the run adopts it, or ends it unused.
            start_run_services_early(project.config.variants)
        from ..runner import RunOptions, build_plan, executor_for

        opts = RunOptions(
            trials=args.trials, timeout=args.timeout, max_concurrency=args.max_concurrency,
            variants=args.variant, harness=args.harness, model=args.model, sandbox=args.sandbox,
            fail_on=fail_on, artifacts=not args.no_artifacts, cache=args.cache, compare=True,
            regression_threshold=args.regression_threshold or 0.2,
            alpha=args.alpha or 0.05, variant_margin=args.variant_margin or 0.05,
            executor=args.executor, ray_address=args.ray_address, **_variant_fields(args),
            token_limit=args.token_limit, cost_limit=args.cost_limit, max_run_cost=args.max_run_cost,
            snapshots=not args.no_snapshots,
        )
        _check_profile(project, args.profile)
        if args.replay:
            opts.replay = _replayed_run(args.replay, project.folder)
        if opts.fail_on == "regressed" and not args.list:
            _check_history(project.folder, opts)
        if args.resume or args.rerun_failed:
            return _again(args, project, opts, out)
        files = select_files(project, args.targets)
        loaded = load_cases(files)
        cases = filter_tags(loaded, args.tag, args.exclude_tag)
        if args.list:
            return _list(cases, args.json, out)
        if not cases:
            if loaded:
                raise UsageError("nothing to run: no selected case matches --tag/--exclude-tag")
            raise UsageError(
                f"nothing to run: no *.eval.py file under {os.path.relpath(project.root)} "
                "(write one, or run `anpord init`)"
            )
        plan = build_plan(project, cases, opts)
        if not plan.cells:
            raise UsageError("nothing to run: no variant selected")
        _note_missing_programs(plan)
        from ..runner._limits import unpriced_warnings

        for line in unpriced_warnings(plan.cells, run_limit=opts.max_run_cost is not None):
            print(line, file=sys.stderr)
        executor = executor_for(plan, opts)  # a cluster that cannot be used: exit 2, nothing written
    except UsageError as exc:
        from ..runner._services import discard_early_run_services

        discard_early_run_services()
        if args.json:
            # A CI step parsing stdout gets a document saying why, not an empty stream.
            out.write(json.dumps({"error": str(exc), "exit_code": 2}, ensure_ascii=False) + "\n")
        return _fail(str(exc))
    # What leaves the run folder keeps the same secrets out as its artifacts: console, reports.
    return _execute(args, fail_on, out, project, plan, opts, executor)


def _replayed_run(ref: str, project_folder: Path) -> str:
    """``--replay RUN``: the run's folder, absolute; a run that cannot be read is exit 2."""
    from ..results._reader import read_run

    reading = read_run(ref, project=project_folder)
    return str(reading.run_dir.resolve())


def _check_history(project_folder: Path, opts: Any) -> None:
    """``--fail-on regressed`` needs the run store: a store that cannot be used is exit 2 before
    anything runs."""
    from ..runner import UsageError
    from ..store import StoreError, open_store

    if not opts.artifacts:
        raise UsageError("--fail-on regressed compares with the run history, which --no-artifacts does not keep")
    try:
        open_store(project_folder).close()
    except StoreError as exc:
        raise UsageError(f"--fail-on regressed needs the run history: {exc}") from None


def _again(args: argparse.Namespace, project: Any, opts: Any, out: TextIO) -> int:
    """``--resume RUN`` and ``--rerun-failed RUN``."""
    from dataclasses import replace

    from ..results._reader import read_run
    from ..runner import options_of, plan_rerun, plan_resume
    from ..runner import executor_for
    from ..runner import UsageError

    ref = args.resume or args.rerun_failed
    try:
        reading = read_run(ref, project=project.folder)
        overrides = {"fail_on": opts.fail_on if (args.fail_on or args.strict) else None,
                     "max_concurrency": args.max_concurrency, "cache": True if args.cache else None,
                     "regression_threshold": args.regression_threshold,
                     "alpha": args.alpha, "variant_margin": args.variant_margin,
                     "executor": args.executor, "ray_address": args.ray_address,
                     "max_run_cost": args.max_run_cost}
        again = replace(options_of(reading.record, **overrides), artifacts=opts.artifacts, compare=True)
        if args.resume:
            if reading.status == "running":
                owner = reading.record.owner
                raise UsageError(f"run {reading.run_id} is still running (process {owner.get('pid')} on "
                                 f"{owner.get('host')}): wait for it, or stop it first")
            if any(c.stop_reason is not None for c in reading.record.cells):
                raise UsageError(f"run {reading.run_id} chose its trials adaptively (--trials auto or "
                                 "MIN..MAX): it cannot be resumed; start a new run")
            replan = plan_resume(project, reading, again)
            done = {r.key for r in reading.trials}
            missing = sum(1 for c in replan.plan.cells for i in c.planned
                          if (c.case.id, c.variant.label, i) not in done)
        else:
            again = replace(again, rerun_of=reading.run_id)
            replan = plan_rerun(project, reading, again)
            missing = replan.plan.total_trials
        for note in replan.notes:
            print(f"anpord eval: {note}", file=sys.stderr)
        # A run killed after its last trial but before its record was closed has nothing left to
        # run, yet is not finished: resuming it closes it, with its totals.
        if not missing and not (args.resume and reading.status in ("crashed", "interrupted")):
            raise UsageError(f"nothing to resume: run {reading.run_id} has every trial it can run")
        executor = executor_for(replan.plan, again)
    except UsageError as exc:
        if args.json:
            out.write(json.dumps({"error": str(exc), "exit_code": 2}, ensure_ascii=False) + "\n")
        return _fail(str(exc))
    what = (f"resuming run {reading.run_id}: {missing} trial{'s' if missing != 1 else ''} to run"
            if args.resume else
            f"re-running {missing} failed, timed-out and void trial{'s' if missing != 1 else ''} of run {reading.run_id}")
    print(f"anpord eval: {what}", file=sys.stderr)
    return _execute(args, again.fail_on, out, project, replan.plan, again, executor,
                    resume=reading if args.resume else None)


def _execute(args: argparse.Namespace, fail_on: str, out: TextIO, project: Any, plan: Any, opts: Any,
             executor: Any, resume: Any = None) -> int:
    from ..results._redact import Redactor
    from ..results.console import ConsoleReporter
    from ..runner import execute, late_signals, secret_values, short_secret_warnings

    try:
        extra = _plugin_reporters([*project.config.reporters, *args.reporter])
    except ValueError as exc:  # an unknown reporter, or one that does not load: nothing has run
        return _fail(str(exc))
    redact = Redactor(secret_values(plan))
    for warning in short_secret_warnings(plan):
        print(warning, file=sys.stderr)
    console_stream = sys.stderr if args.json else sys.stdout
    console = ConsoleReporter(console_stream, verbose=args.verbose, redact=redact)
    reporters = [console, *extra]
    with late_signals() as late:
        code = _report(args, fail_on, out, redact,
                       execute(plan, opts, reporters, executor=executor, resume=resume))
    # A signal after the run ended (while reports were written): its documented exit code.
    return 128 + late[0] if late else code


def _plugin_reporters(specs: list[Any]) -> list[Any]:
    """The config's reporters and ``--reporter`` names as reporter objects (``PluginError``, a
    ``ValueError``, for a name that is unknown or does not load)."""
    from ..results._reporter import reporter_of

    return [reporter_of(spec) for spec in specs]


def _report(args: argparse.Namespace, fail_on: str, out: TextIO, redact: Any, result: Any) -> int:
    summary, results = result.summary, result.trials
    from ._summary_flag import write_summaries

    code = write_summaries(args, summary, results, redact, out, int(summary.exit_code))
    if not (args.junit or args.json):
        return code
    if args.junit:
        from ..results.junit import write_junit

        try:
            write_junit(args.junit_path, summary, results, strict=(fail_on == "strict"), redact=redact)
        except (OSError, ValueError) as exc:
            # The --json document is still printed: a CI step parsing it loses nothing.
            print(f"anpord eval: cannot write --junit {args.junit}: {exc}", file=sys.stderr)
            code = 2
    if args.json:
        from ..results.json_report import summary_json

        out.write(summary_json(summary, results, redact=redact) + "\n")
    return code


def _note_missing_programs(plan: Any) -> None:
    """Say once, before running, when a variant's agent program is not installed here (an imported
    suite defaults to `claude`): its trials will be void, and --harness points the suite at
    another agent. The trials stay void; this only says why up front."""
    import shutil

    from ..harnesses import program_of, spec_head

    for variant in plan.variants:
        spec = variant.harness or ""
        if variant.traces == "otlp" and spec_head(spec) == "python" and not _has_otel_sdk():
            print(
                f"anpord eval: note: variant {variant.label} traces a Python agent, but the "
                "OpenTelemetry SDK is not installed here, so its spans will not be recorded: "
                "pip install 'anpord[traces]' (opentelemetry-sdk)",
                file=sys.stderr,
            )
        program = program_of(spec, variant.options)
        if program is None or shutil.which(program, path=variant.env.get("PATH")):
            continue
        trials = sum(c.trials for c in plan.cells if c.variant.label == variant.label)
        print(
            f"anpord eval: note: {program} is not installed here, so the {trials} trial(s) of variant "
            f"{variant.label} will be void; point the suite at your agent with --harness SPEC "
            "(e.g. --harness python:agents.mine:agent, or "
            "--harness \"command:python3 $PWD/agent.py\": a command runs in the trial's "
            "workspace, so name its program by an absolute path)",
            file=sys.stderr,
        )


def _has_otel_sdk() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("opentelemetry.sdk.trace") is not None
    except (ImportError, ValueError):
        return False


def _sweep(project_folder: Path) -> None:
    """What earlier runs killed with SIGKILL left behind: runs still marked ``running`` become
    ``crashed``. Cheap (only runs that left a marker are read), and never fails the command."""
    from ..results._reader import mark_crashed_runs

    mark_crashed_runs(project_folder)


def _list(cases: list, as_json: bool, out: TextIO) -> int:  # type: ignore[type-arg]
    if as_json:
        rows = [
            {
                "id": c.id,
                "file": os.path.relpath(c.file.path),
                "tags": list(c.tags),
                "name": c.eval.name,
                "description": c.eval.description,
                "declarative": c.eval.declarative,
            }
            for c in cases
        ]
        out.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return 0
    for c in cases:
        tags = f"  [{', '.join(c.tags)}]" if c.tags else ""
        out.write(f"{c.id}{tags}\n")
    out.write(f"{len(cases)} case{'s' if len(cases) != 1 else ''}\n")
    return 0
