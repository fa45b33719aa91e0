"""A run: plan the grid of cells, schedule trials, write artifacts, tell reporters, exit code."""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ..authoring._config import Variant
from ..events import Event
from ..harnesses import Harness, HarnessSpecError, HarnessStartError, resolve_harness
from ..results._model import VERDICTS, RunSummary, TrialResult, summarize_cell
from ..results._reporter import PlannedCell, RunInfo
from ..results.artifacts import Redactor, RunWriter, new_run_id
from ..sandboxes._protocol import SandboxSpec
from ._capture import captured_output
from ._unawaited import unawaited_calls_fail
from ._trial import TrialEnv, TrialJob, run_trial
from ._verdict import exception_line
from .discovery import Case, Project, UsageError

__all__ = ["RunOptions", "Plan", "build_plan", "execute", "exit_code_for", "FAIL_ON"]

FAIL_ON = ("failures", "strict", "regressed", "never")
# After the first Ctrl-C, running trials get this long before they are cancelled.
INTERRUPT_GRACE = 2.0


@dataclass
class RunOptions:
    trials: int | None = None
    timeout: float | None = None
    max_concurrency: int | None = None
    variants: Sequence[str] = ()
    harness: str | None = None
    model: str | None = None
    sandbox: str | None = None
    fail_on: str = "failures"
    artifacts: bool = True


@dataclass
class PlannedCase:
    case: Case
    variant: Variant
    trials: int
    timeout: float


@dataclass
class Plan:
    project: Project
    cells: list[PlannedCase]
    harnesses: dict[str, Harness] = field(default_factory=dict)
    max_concurrency: int = 8

    @property
    def variant_labels(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.cells:
            seen.setdefault(c.variant.label, None)
        return list(seen)


def _variants_for(case: Case, project: Project, opts: RunOptions) -> list[Variant]:
    cfg = project.config
    declared = list(case.variants or cfg.variants or (Variant(),))
    if opts.harness:
        # One variant with the new harness. It keeps where and how the first declared variant
        # ran (sandbox, network, env, secrets, mounts): those describe the machine, not the agent.
        first = declared[0]
        base = [replace(first, harness=opts.harness, model=None, name=None, profile=None)]
    else:
        base = declared
    out = []
    for v in base:
        v = v.with_defaults(cfg.harness, cfg.model, cfg.sandbox)
        if opts.model is not None:
            v = replace(v, model=opts.model)
        if opts.sandbox is not None:
            v = replace(v, sandbox=opts.sandbox)
        out.append(v)
    labels = [v.label for v in out]
    dups = sorted({x for x in labels if labels.count(x) > 1})
    if dups:
        raise UsageError(f"{case.id}: several variants share the label {', '.join(dups)}; give them name=")
    return out


def _select_variants(wanted: Sequence[str], variants: Sequence[Variant]) -> set[str] | None:
    """``--variant`` values to labels. A value is a full label, or a variant's name, model,
    harness or profile when that names exactly one label; otherwise exit 2 listing the labels."""
    if not wanted:
        return None
    labels: dict[str, Variant] = {}
    for v in variants:
        labels.setdefault(v.label, v)
    listing = ", ".join(labels) or "none"
    chosen: set[str] = set()
    for w in wanted:
        if w in labels:
            chosen.add(w)
            continue
        hits = sorted(label for label, v in labels.items() if w in (v.name, v.model, v.harness, v.profile))
        if not hits:
            raise UsageError(f"unknown variant {w}; the variants are: {listing}")
        if len(hits) > 1:
            raise UsageError(f"ambiguous variant {w}: it names {', '.join(hits)}; give a full label")
        chosen.add(hits[0])
    return chosen


def build_plan(project: Project, cases: Sequence[Case], opts: RunOptions, *, resolve: bool = True) -> Plan:
    cfg = project.config
    cells: list[PlannedCase] = []
    per_case = [(case, _variants_for(case, project, opts)) for case in cases]
    selected = _select_variants(opts.variants, [v for _, vs in per_case for v in vs])
    for case, variants in per_case:
        if selected is not None:
            variants = [v for v in variants if v.label in selected]
        ev = case.eval
        suite = case.suite
        trials = opts.trials or ev.trials or (suite.trials if suite else None) or cfg.trials
        timeout = opts.timeout or ev.timeout or (suite.timeout if suite else None) or cfg.timeout
        for v in variants:
            cells.append(PlannedCase(case, v, trials, float(timeout)))
    plan = Plan(project=project, cells=cells, max_concurrency=opts.max_concurrency or cfg.max_concurrency)
    if resolve:
        for cell in cells:
            spec = cell.variant.harness
            if spec and spec not in plan.harnesses:
                try:
                    plan.harnesses[spec] = resolve_harness(spec, project.folder)
                except HarnessSpecError as exc:
                    raise UsageError(str(exc)) from None
        for cell in cells:
            _check_sandbox(cell.variant.sandbox or "local")
    return plan


def _check_sandbox(name: str) -> None:
    from ..sandboxes import get_sandbox

    try:
        get_sandbox(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def exit_code_for(totals: dict[str, int], fail_on: str) -> int:
    if fail_on == "never":
        return 0
    bad = totals.get("failed", 0) + totals.get("timed_out", 0) + totals.get("void", 0)
    if fail_on == "strict":
        bad += totals.get("scored", 0)
    return 1 if bad else 0


class _Reporters:
    """Fans each callback out; a reporter that raises is reported once and then ignored."""

    def __init__(self, reporters: Sequence[Any], err: Any):
        self.reporters = list(reporters)
        self.err = err

    def call(self, method: str, *args: Any) -> None:
        for r in list(self.reporters):
            fn = getattr(r, method, None)
            if fn is None:
                continue
            try:
                fn(*args)
            except Exception as exc:  # noqa: BLE001
                self.reporters.remove(r)
                print(f"anpord: reporter {type(r).__name__} failed in {method}: {exc}", file=self.err)


def _versions() -> dict[str, str]:
    from .. import __version__

    return {"anpord": __version__, "python": platform.python_version(), "platform": platform.platform()}


def _secret_values(plan: Plan) -> list[str]:
    names = {n for c in plan.cells for n in c.variant.secrets}
    return [os.environ[n] for n in names if os.environ.get(n)]


async def _execute(plan: Plan, opts: RunOptions, reporters: _Reporters, writer: RunWriter | None,
                   info: RunInfo, max_sandboxes: int | None,
                   on_forced_exit: Callable[[list[TrialResult]], None] = lambda _: None,
                   ) -> tuple[list[TrialResult], int | None]:
    """Run every trial; returns the results and the signal that stopped the run, if one did."""
    from ..sandboxes import get_sandbox
    from ._contain import task_factory

    loop = asyncio.get_running_loop()
    loop.set_task_factory(task_factory)  # type: ignore[arg-type]
    results: list[TrialResult] = []
    stop = asyncio.Event()
    sandbox_slots = asyncio.Semaphore(max_sandboxes) if max_sandboxes else None
    sandboxes: dict[str, Any] = {}

    async def open_sandbox(variant: Variant, spec: SandboxSpec) -> Any:
        name = variant.sandbox or "local"
        sb = sandboxes.get(name)
        if sb is None:
            sb = sandboxes[name] = get_sandbox(name)
        if sandbox_slots is None:
            return await sb.open(spec)
        await sandbox_slots.acquire()
        try:
            inst = await sb.open(spec)
        except BaseException:
            sandbox_slots.release()
            raise
        return _SlotReleasing(inst, sandbox_slots)

    # Run-level harness setup (a connection pool, a protocol check, the agent's own hook): a
    # harness whose setup failed makes each of its trials void with the reason.
    setup_errors = await _set_up_harnesses(plan.harnesses)
    ready = {spec: h for spec, h in plan.harnesses.items() if spec not in setup_errors}

    env = TrialEnv(
        open_sandbox=open_sandbox,
        on_log=lambda c, v, i, m: reporters.call("on_log", c, v, i, m),
        max_concurrency=plan.max_concurrency,
    )

    def jobs() -> Any:
        for cell in plan.cells:
            spec = cell.variant.harness
            harness = ready.get(spec) if spec else None
            error = setup_errors.get(spec) if spec else "no harness: set harness= in evals.config.py or pass --harness"
            for i in range(cell.trials):
                yield TrialJob(cell.case, cell.variant, i, cell.timeout, harness, error)

    queue = jobs()

    def finish(result: TrialResult, events: list[Event]) -> None:
        if writer is not None:
            writer.write_trial(result, events)
        results.append(result)
        reporters.call("on_trial_end", result)

    async def worker() -> None:
        for job in queue:
            if stop.is_set():
                return
            reporters.call("on_trial_start", job.case.id, job.variant.label, job.index)
            result, events = await run_trial(job, env)
            finish(result, events)

    signals: list[int] = []  # received so far; the first one names the exit code
    forced = False
    installed: list[int] = []

    def on_signal(signum: int) -> None:
        nonlocal forced
        signals.append(signum)
        if len(signals) >= 2:
            # Forced exit: no finally blocks run, so remove sandboxes (folders, processes) first.
            from ..sandboxes import cleanup_all

            try:
                on_forced_exit(results)  # run.json says "interrupted", not "running"
            finally:
                cleanup_all()
                os._exit(128 + signals[0])
        # Ctrl-C lets running trials finish within a grace period; SIGTERM/SIGHUP (a supervisor,
        # a closed terminal) cancel them at once, so their sandboxes close before a SIGKILL follows.
        forced = signum != signal.SIGINT
        stop.set()

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            loop.add_signal_handler(sig, on_signal, int(sig))
            installed.append(int(sig))
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    workers = [asyncio.ensure_future(worker()) for _ in range(plan.max_concurrency)]
    try:
        all_done: asyncio.Future[Any] = asyncio.gather(*workers)
        stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        await asyncio.wait([all_done, stopper], return_when=asyncio.FIRST_COMPLETED)
        if stop.is_set() and not all_done.done():
            # Stop scheduling (workers check `stop`), give running trials a grace period unless
            # forced, then cancel them: their finally blocks close the sandboxes.
            if not forced:
                await asyncio.wait({all_done}, timeout=INTERRUPT_GRACE)
            for w in workers:
                w.cancel()
            await asyncio.wait({all_done})
            if not all_done.cancelled():
                all_done.exception()  # the cancellations are expected: not an unretrieved error
        else:
            await all_done
        stopper.cancel()
    finally:
        for installed_sig in installed:
            loop.remove_signal_handler(installed_sig)
        await _tear_down_harnesses(ready)
    return results, signals[0] if signals else None


async def _set_up_harnesses(harnesses: dict[str, Harness]) -> dict[str, str]:
    """Call every harness's ``setup`` at once; returns spec → why it failed."""

    async def one(spec: str, harness: Harness) -> str | None:
        try:
            await harness.setup()
        except HarnessStartError as exc:
            return str(exc) or f"harness {spec} could not be set up"
        except Exception as exc:  # noqa: BLE001 - a harness or an agent hook: its trials are void
            return f"harness {spec} could not be set up: {exception_line(exc)}"
        return None

    specs = list(harnesses)
    errors = await asyncio.gather(*(one(spec, harnesses[spec]) for spec in specs))
    return {spec: error for spec, error in zip(specs, errors) if error is not None}


async def _tear_down_harnesses(harnesses: dict[str, Harness]) -> None:
    """Call ``teardown`` on every harness set up; a failure is reported, never raised."""
    for spec, harness in harnesses.items():
        try:
            await harness.teardown()
        except Exception as exc:  # noqa: BLE001
            print(f"anpord: harness {spec} teardown failed: {exception_line(exc)}", file=sys.stderr)


class _SlotReleasing:
    """A sandbox instance that gives back its max_sandboxes slot when closed."""

    def __init__(self, inner: Any, slots: asyncio.Semaphore):
        self._inner = inner
        self._slots = slots
        self._released = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def close(self) -> None:
        try:
            await self._inner.close()
        finally:
            if not self._released:
                self._released = True
                self._slots.release()


def execute(plan: Plan, opts: RunOptions, reporters: Sequence[Any]) -> RunSummary:
    """Run the plan to completion (or until Ctrl-C, SIGTERM or SIGHUP: exit 128 + the signal).
    Returns the summary; artifacts are on disk."""
    project = plan.project
    run_id = new_run_id()
    run_dir = project.folder / ".anpord" / "runs" / run_id
    info = RunInfo(
        run_id=run_id,
        run_dir=str(run_dir),
        variants=plan.variant_labels,
        cells=[PlannedCell(c.case.id, c.variant.label, c.trials, str(c.case.file.path)) for c in plan.cells],
    )
    writer = RunWriter(run_dir, Redactor(_secret_values(plan))) if opts.artifacts else None
    started = time.time()
    cfg = project.config
    planned: list[dict[str, Any]] = [
        {"case_id": c.case.id, "variant": c.variant.label, "trials": c.trials, "timeout": c.timeout,
         "file": str(c.case.file.path)} for c in plan.cells
    ]
    snapshot = {
        "run_id": run_id,
        "status": "running",
        "started_at": started,
        "argv": sys.argv[1:],
        "evals_root": str(project.root),
        "versions": _versions(),
        "config": {
            "harness": cfg.harness, "model": cfg.model, "sandbox": cfg.sandbox, "trials": cfg.trials,
            "max_concurrency": plan.max_concurrency, "timeout": cfg.timeout, "max_sandboxes": cfg.max_sandboxes,
        },
        "options": {
            "trials": opts.trials, "timeout": opts.timeout, "variants": list(opts.variants),
            "harness": opts.harness, "model": opts.model, "sandbox": opts.sandbox, "fail_on": opts.fail_on,
        },
        "variants": _unique_variants(plan),
        "cells": planned,
    }
    if writer is not None:
        writer.write_run(snapshot)
    fan = _Reporters(list(reporters), sys.stderr)
    with captured_output(), unawaited_calls_fail():
        fan.call("on_run_start", info)
        try:
            def on_forced_exit(done: list[TrialResult]) -> None:
                if writer is not None:
                    snapshot.update(status="interrupted", forced=True, finished_at=time.time(),
                                    totals=_totals(done))
                    writer.write_run(snapshot)

            results, stopped_by = asyncio.run(
                _execute(plan, opts, fan, writer, info, cfg.max_sandboxes, on_forced_exit)
            )
        finally:
            if writer is not None:
                writer.close()
        totals = _totals(results)
        by_cell: dict[tuple[str, str], list[TrialResult]] = {}
        for r in sorted(results, key=lambda r: r.trial):
            by_cell.setdefault(r.cell_key, []).append(r)
        cells = [summarize_cell(by_cell[(c.case.id, c.variant.label)]) for c in plan.cells
                 if (c.case.id, c.variant.label) in by_cell]
        interrupted = stopped_by is not None
        code = 128 + stopped_by if stopped_by is not None else exit_code_for(totals, opts.fail_on)
        summary = RunSummary(
            run_id=run_id, run_dir=str(run_dir), totals=totals, cells=cells, exit_code=code,
            fail_on=opts.fail_on, duration=time.time() - started, interrupted=interrupted,
        )
        if writer is not None:
            # Each planned cell (its timeout, file) gains its distribution; cells never started
            # (an interrupted run) keep only their plan.
            dist = {(c.case_id, c.variant): c.to_dict() for c in cells}
            finished = [{**p, **dist.get((p["case_id"], p["variant"]), {})} for p in planned]
            snapshot.update(status="interrupted" if interrupted else "finished", finished_at=time.time(),
                            totals=totals, exit_code=code, cells=finished)
            writer.write_run(snapshot)
        fan.call("on_run_end", summary, results)
    return summary


def _totals(results: Sequence[TrialResult]) -> dict[str, int]:
    """Trials per verdict, and ``trials`` in all."""
    totals: dict[str, int] = {v: 0 for v in VERDICTS}
    for r in results:
        totals[r.verdict] += 1
    totals["trials"] = len(results)
    return totals


def _unique_variants(plan: Plan) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for c in plan.cells:
        seen.setdefault(c.variant.label, c.variant.snapshot())
    return list(seen.values())

