"""A run: turn the plan into trial specs, hand them to an executor, record and report what comes
back, and decide the exit code.

The driver owns everything that is about the run as a whole — the run folder, the reporters,
signals, totals — and nothing about where a trial runs (that is the executor's; see
``_executor``). ``execute`` returns a ``RunResult``: the run record as written, the summary the
exit code comes from, and every trial's record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from .._errors import UsageError
from .._owner import current_owner
from .._registry import PluginError, Registry
from ..events import Event
from ..results._model import VERDICTS, RunSummary, TrialResult, summarize_cell, usage_totals
from ..results._reporter import PlannedCell, Reporter, RunInfo
from ..results._run_record import CellRecord, RunRecord
from ..results.artifacts import Redactor, RunWriter, new_run_id
from ._capture import captured_output
from ._executor import Executor
from .._loop import run_bounded
from ._planning import FAIL_ON, Plan, RunOptions, build_plan, trial_seed
from ._services import discard_early_run_services, start_run_services_early
from ._spec import TrialSpec
from ._unawaited import unawaited_calls_fail

__all__ = [
    "FAIL_ON",
    "Plan",
    "RunOptions",
    "RunResult",
    "build_plan",
    "execute",
    "executor_for",
    "exit_code_for",
    "secret_values",
]

# After the first Ctrl-C, running trials get this long before they are cancelled.
INTERRUPT_GRACE = 2.0
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


@dataclass
class RunResult:
    """What ``execute`` returns: the run record (as in ``run.json``), the summary the exit code
    comes from, and every finished trial's record (in the order they finished)."""

    record: RunRecord
    summary: RunSummary
    trials: list[TrialResult] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return self.summary.exit_code


def exit_code_for(summary: RunSummary | dict[str, int], fail_on: str, comparison: Any = None) -> int:
    """The gate (DESIGN §7): 1 when a trial failed, timed out or was void (``strict``: also a
    scored one; ``regressed``: a cell regressed against its baseline), else 0; ``never``: 0.
    ``regressed`` without a comparison (the store could not be read) is 2: a gate that could not
    be checked does not hold."""
    if fail_on == "never":
        return 0
    if fail_on == "regressed":
        if comparison is None:
            return 2
        return 1 if comparison.fails else 0
    totals = summary.totals if isinstance(summary, RunSummary) else summary
    bad = totals.get("failed", 0) + totals.get("timed_out", 0) + totals.get("void", 0)
    if fail_on == "strict":
        bad += totals.get("scored", 0)
    return 1 if bad else 0


class _Reporters:
    """Fans each callback out; a reporter that raises is reported once and then ignored."""

    def __init__(self, reporters: Sequence[Reporter], err: Any, redact: Callable[[str], str] = lambda s: s):
        from ..results._reporter import check_reporter

        try:
            self.reporters = [check_reporter(r) for r in reporters]
        except ValueError as exc:  # one that is not a Reporter: before the run starts
            raise UsageError(str(exc)) from None
        self.err = err
        self.redact = redact
        # Each callback's bound methods, looked up once: two calls a trial at thousands a second.
        self._bound: dict[str, list[tuple[Any, Callable[..., Any]]]] = {}

    def call(self, method: str, *args: Any) -> None:
        bound = self._bound.get(method)
        if bound is None:
            # Every reporter has every method (checked above): the lookup is dispatch by name.
            bound = self._bound[method] = [(r, getattr(r, method)) for r in self.reporters]
        for r, fn in bound:
            try:
                fn(*args)
            except Exception as exc:  # noqa: BLE001
                self._drop(r)
                print(self.redact(f"anpord: reporter {type(r).__name__} failed in {method}: {exc}"), file=self.err)

    def _drop(self, reporter: Any) -> None:
        self.reporters.remove(reporter)
        for name, bound in self._bound.items():
            self._bound[name] = [(r, fn) for r, fn in bound if r is not reporter]


def _versions() -> dict[str, str]:
    from .._version import __version__

    return {"anpord": __version__, "python": platform.python_version(), "platform": platform.platform()}


def secret_values(plan: Plan) -> list[str]:
    """The values of every secret the plan's variants declare, and of the judges' API keys, for
    redaction."""
    names = {n for v in plan.variants for n in v.secrets}
    judges = {c.judge for c in plan.cells if c.judge is not None}
    if plan.project.config.judge is not None:
        judges.add(plan.project.config.judge)
    names |= {j.api_key_env for j in judges if j.api_key_env}
    return [os.environ[n] for n in names if os.environ.get(n)]


def short_secret_warnings(plan: Plan) -> list[str]:
    """A line for each declared secret whose value is too short to redact (1 to 3 characters once
    stripped): it is passed to the agent as declared, but may show in the outputs."""
    from ..results._redact import MIN_SECRET_LENGTH

    names = sorted({n for v in plan.variants for n in v.secrets})
    return [
        f"anpord: warning: secret {n} is shorter than {MIN_SECRET_LENGTH} characters, too short to "
        "redact without hiding ordinary text: it is not redacted from the outputs"
        for n in names
        if 0 < len(os.environ.get(n, "").strip()) < MIN_SECRET_LENGTH
    ]


def _totals(results: Sequence[TrialResult]) -> dict[str, int]:
    """Trials per verdict, and ``trials`` in all."""
    totals: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for r in results:
        totals[r.verdict] += 1
    totals["trials"] = len(results)
    return totals


def _specs(plan: Plan, run_id: str, cache_dir: str | None,
           done: set[tuple[str, str, int]], replay: str | None = None,
           snapshots: str | None = None) -> Iterator[TrialSpec]:
    root = str(plan.project.root)
    for cell in plan.cells:
        case, variant = cell.case, cell.variant
        label = variant.label
        for i in cell.planned:
            if (case.id, label, i) in done:
                continue
            yield TrialSpec(
                run_id=run_id, evals_root=root, file=str(case.file.path), file_id=case.file.id,
                case_id=case.id, variant=variant, trial=i, timeout=cell.timeout,
                seed=trial_seed(case.id, label, i), case_hash=cell.case_hash, judge=cell.judge,
                cache_dir=cache_dir, replay=replay, token_limit=cell.token_limit, cost_limit=cell.cost_limit,
                snapshots=snapshots,
            )


NOT_RUN_COST = "not run: the run's cost limit was reached"


def _cost(result: TrialResult) -> float:
    """A trial's known cost, for the run's spend (an unknown cost adds nothing it can tell)."""
    cost = (result.usage or {}).get("cost")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0


def not_run(spec: TrialSpec, reason: str) -> TrialResult:
    """A trial the run did not start: ``void``, with why."""
    return TrialResult(
        case_id=spec.case_id, variant=spec.variant.label, trial=spec.trial, verdict="void",
        reason=reason, seed=spec.seed, file=spec.file, started_at=time.time(),
    )


def _outcome(result: TrialResult) -> float | None:
    """A trial's outcome for adaptive trials: 1 passed, 0 failed or timed out, else none."""
    return 1.0 if result.verdict == "passed" else 0.0 if result.verdict in ("failed", "timed_out") else None


class _AdaptiveSpecs:
    """The run's trial specs when some cells are adaptive (``--trials auto``, ``MIN..MAX``):
    fixed cells' trials as usual, then one trial at a time to whichever adaptive cell the
    allocator (``stats._adaptive``) picks, until every cell has stopped. Taken lazily by the
    executor as capacity frees, so each pick sees every trial finished by then."""

    def __init__(self, plan: Plan, run_id: str, cache_dir: str | None, alpha: float, margin: float,
                 baselines: dict[tuple[str, str], tuple[int, int]], snapshots: str | None = None):
        import zlib

        from ..stats._adaptive import AdaptivePolicy, Allocator

        self.plan, self.run_id, self.cache_dir, self.snapshots = plan, run_id, cache_dir, snapshots
        self.replay: str | None = None
        self.cells = {(c.case.id, c.variant.label): c for c in plan.cells}
        self.fixed = {k: 0 for k, c in self.cells.items() if c.adaptive is None}
        by_range: dict[tuple[int, int], dict[Any, Any]] = {}
        for k, c in self.cells.items():
            if c.adaptive is not None:
                by_range.setdefault(c.adaptive, {})[k] = (k[1], baselines.get(k))
        seed = zlib.crc32(run_id.encode())
        self.allocators = [Allocator(members, AdaptivePolicy(lo, hi, alpha=alpha, margin=margin), seed=seed)
                           for (lo, hi), members in by_range.items()]
        self.owner = {k: a for a in self.allocators for k in a.cells}

    def __iter__(self) -> _AdaptiveSpecs:
        return self

    def __next__(self) -> TrialSpec:
        key = next((k for k, n in self.fixed.items() if n < self.cells[k].trials), None)
        if key is not None:
            i = self.fixed[key]
            self.fixed[key] += 1
        else:
            for allocator in self.allocators:
                key = allocator.next()  # type: ignore[assignment]
                if key is not None:
                    i = allocator.cells[key].taken - 1
                    break
        if key is None:
            raise StopIteration
        cell = self.cells[key]
        case, variant = cell.case, cell.variant
        return TrialSpec(
            run_id=self.run_id, evals_root=str(self.plan.project.root), file=str(case.file.path),
            file_id=case.file.id, case_id=case.id, variant=variant, trial=i, timeout=cell.timeout,
            seed=trial_seed(case.id, variant.label, i), case_hash=cell.case_hash, judge=cell.judge,
            cache_dir=self.cache_dir, replay=self.replay, token_limit=cell.token_limit, cost_limit=cell.cost_limit,
            snapshots=self.snapshots,
        )

    def finished(self, result: TrialResult) -> None:
        allocator = self.owner.get(result.cell_key)
        if allocator is not None:
            allocator.finished(result.cell_key, _outcome(result), result.trial)

    def stop_reasons(self) -> dict[tuple[str, str], str | None]:
        """Why each adaptive cell stopped, in words about the cell (``None``: it had not, the
        run was stopped)."""
        out: dict[tuple[str, str], str | None] = {}
        for a in self.allocators:
            for key, c in a.cells.items():
                k = cast(tuple[str, str], key)  # the allocators were given this run's cell keys
                reason = a.stop_reason(k)
                if reason is None:
                    reason = (f"the run stopped before this cell was done, after {c.taken} "
                              f"trial{'s' if c.taken != 1 else ''}")
                out[k] = reason
        return out

    def complete(self) -> bool:
        return all(n >= self.cells[k].trials for k, n in self.fixed.items()) and all(
            a.complete() for a in self.allocators)


def _baseline_rates(plan: Plan) -> dict[tuple[str, str], tuple[int, int]]:
    """Each adaptive cell's baseline, ``(passed, measured)``, from the run store, when it has a
    comparable one (the reading ``compare`` uses, on the same case content); none when history
    is off."""
    from ..store import StoreError, open_store

    out: dict[tuple[str, str], tuple[int, int]] = {}
    try:
        store = open_store(plan.project.folder, create=False)
    except Exception:  # noqa: BLE001 - no store, or none to read: no baselines
        return out
    try:
        for c in plan.cells:
            if c.adaptive is None:
                continue
            try:
                row = store.baseline(c.case.id, c.variant.label)
            except StoreError:
                continue
            if row is None or row.summary is None or not row.measured:
                continue
            if row.case_hash and c.case_hash and row.case_hash != c.case_hash:
                continue
            # Counts, not the rate: a baseline at 2/3 is an estimate, and a cell's own drop is
            # judged against the baseline's interval.
            out[(c.case.id, c.variant.label)] = (row.summary.passed, row.measured)
    finally:
        store.close()
    return out


class _Signals:
    """SIGINT, SIGTERM and SIGHUP for the whole of a run, from planning to the last write.

    Plain ``signal.signal`` handlers, never the event loop's: those are removed when the loop
    closes, and a signal landing in the run's last moments would then kill the process instead of
    ending it with the documented exit code and a final run.json. The first signal stops the run
    (``on_first``); a second forces the exit (``on_second``, which does not return).
    """

    def __init__(self, on_first: Callable[[int], None], on_second: Callable[[int], None]):
        self.received: list[int] = []
        self._on_first, self._on_second = on_first, on_second
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        for name in _SIGNALS:
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):  # not the main thread: the caller handles signals
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            try:
                signal.signal(sig, previous)
            except (ValueError, OSError):
                pass

    def _handle(self, signum: int, frame: object) -> None:
        self.received.append(signum)
        if len(self.received) >= 2:
            self._on_second(self.received[0])
        else:
            self._on_first(signum)

    @property
    def first(self) -> int | None:
        return self.received[0] if self.received else None


@contextlib.contextmanager
def late_signals() -> Iterator[list[int]]:
    """Record SIGINT, SIGTERM and SIGHUP instead of dying by them (a run installs its own
    handlers inside this); yields the signals received."""
    with _Signals(lambda _signum: None, lambda _first: None) as signals:
        yield signals.received


# The young objects the cyclic collector lets pile up before it looks, per trial the run holds
# at once: a trial in flight holds a few hundred (its state, turn, requests), none of them
# garbage, and each young collection rescans all of them. Sized to the concurrency, collections
# come about once per wave of trials however wide the wave: with 500 trials at once and 20,000,
# the collections took 8% of a model-bound run's wall and found nothing to collect
# (``bench/w1_model_bound.py`` 5000x500). Capped, so cyclic garbage an agent makes is still
# collected before it grows large.
YOUNG_PER_TRIAL = 200
YOUNG_MIN, YOUNG_MAX = 20_000, 500_000


def young_threshold(concurrency: int) -> int:
    return min(max(YOUNG_MIN, YOUNG_PER_TRIAL * concurrency), YOUNG_MAX)


@contextlib.contextmanager
def _gc_for_a_run(concurrency: int) -> Iterator[None]:
    """Trials allocate many short-lived objects; with the default thresholds the cyclic garbage
    collector runs every few hundred of them and rescans everything loaded before the run (eval
    files, cases, modules). Freezing what exists and collecting young objects less often (as
    often for a wide run as for a narrow one: ``young_threshold``) saves about a tenth of the
    runner's time per trial; both are undone after the run."""
    import gc

    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young_threshold(concurrency), 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


class _Run:
    """One run's driver state."""

    def __init__(self, plan: Plan, opts: RunOptions, reporters: Sequence[Any],
                 executor: Executor | None, resume: Any = None):
        self.plan, self.opts = plan, opts
        project = plan.project
        self.resume = resume
        if resume is not None:
            self.record: RunRecord = resume.record
            self.run_dir = resume.run_dir
            self.results: list[TrialResult] = list(resume.trials)
        else:
            run_id = new_run_id()
            self.run_dir = project.folder / ".anpord" / "runs" / run_id
            self.record = self._new_record(run_id)
            self.results = []
        self.done = {r.key for r in self.results}
        self.fan = _Reporters(list(reporters), sys.stderr, Redactor(secret_values(plan)))
        self.writer: RunWriter | None = None
        self.history: Any = None  # the store writer (anpord.store.StoreWriter), when recording
        self.history_failure: str | None = None
        self.executor = executor
        self.started = time.time()
        self.stop: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.forced_by: int | None = None
        self.adaptive: _AdaptiveSpecs | None = None
        # --max-run-cost: what the finished trials have spent (known costs), and how many trials
        # were not started once it was reached (see _budgeted).
        self.spent = sum(_cost(r) for r in self.results)
        self.live: dict[tuple[str, str, int], float] = {}  # running trials' spend so far
        # Offered to the executor only with --max-run-cost: metering costs every trial a little.
        self.trial_spent: Callable[[TrialSpec, float], None] | None = (
            self._trial_spent if opts.max_run_cost is not None else None)
        self.not_run = 0
        self.budget_reached = False

    def _new_record(self, run_id: str) -> RunRecord:
        plan, opts, cfg = self.plan, self.opts, self.plan.project.config
        return RunRecord(
            run_id=run_id,
            status="running",
            started_at=time.time(),
            argv=sys.argv[1:],
            evals_root=str(plan.project.root),
            versions=_versions(),
            owner=current_owner(),
            executor=plan.executor,
            config={
                "harness": cfg.harness, "model": cfg.model, "sandbox": cfg.sandbox, "trials": cfg.trials,
                "max_concurrency": plan.max_concurrency, "timeout": cfg.timeout,
                "max_sandboxes": cfg.max_sandboxes, "executor": plan.executor,
                "judge": None if cfg.judge is None else {
                    "model": cfg.judge.model, "base_url": cfg.judge.base_url, "api_key_env": cfg.judge.api_key_env},
            },
            options={
                "trials": opts.trials, "timeout": opts.timeout, "variants": list(opts.variants),
                "harness": opts.harness, "model": opts.model, "sandbox": opts.sandbox,
                "fail_on": opts.fail_on, "cache": opts.cache, "executor": opts.executor,
                **({"replay": opts.replay} if opts.replay else {}),
                "regression_threshold": opts.regression_threshold,
                "secrets": list(opts.secrets), "env": dict(opts.env), "profile": opts.profile,
                "network": opts.network, "mounts": list(opts.mounts),
                "alpha": opts.alpha, "variant_margin": opts.variant_margin,
                "token_limit": opts.token_limit, "cost_limit": opts.cost_limit,
                "max_run_cost": opts.max_run_cost, "snapshots": opts.snapshots,
            },
            variants=[v.snapshot() for v in plan.variants],
            cells=[CellRecord(c.case.id, c.variant.label, c.trials, c.timeout, str(c.case.file.path),
                              c.case_hash, indices=None if c.indices is None else list(c.indices),
                              stop_reason=None if c.adaptive is None else "unfinished")
                   for c in plan.cells],
            rerun_of=opts.rerun_of,
            regrade_of=opts.regrade_of,
            # Derived runs never become baselines (RunRecord.DERIVED_KINDS).
            kind=opts.kind or ("rerun" if opts.rerun_of else "cached" if opts.cache else "eval"),
        )

    def _snapshot_dir(self) -> str | None:
        """Where trials keep their workspaces: the run folder's archive, when the run writes a
        folder, keeps snapshots and runs its trials on this machine (a remote worker's workspace
        is not here to read)."""
        if not (self.opts.snapshots and self.opts.artifacts) or self.plan.executor != "local":
            return None
        from ..workspace import ARCHIVE_DIR

        return str(self.run_dir / ARCHIVE_DIR)

    # -- the sink the executor reports to ----------------------------------------------------

    def trial_started(self, spec: TrialSpec) -> None:
        self.fan.call("on_trial_start", spec.case_id, spec.variant.label, spec.trial)

    def trial_log(self, spec: TrialSpec, message: str) -> None:
        self.fan.call("on_log", spec.case_id, spec.variant.label, spec.trial, message)

    def trial_finished(self, spec: TrialSpec, result: TrialResult, events: Sequence[Event]) -> None:
        if self.writer is not None:
            self.writer.write_trial(result, events)
        if self.history is not None:
            self.history.add(result)
        self.results.append(result)
        self.live.pop(spec.key, None)
        self.spent += _cost(result)
        if self.adaptive is not None:
            self.adaptive.finished(result)
        self.fan.call("on_trial_end", result)

    def _trial_spent(self, spec: TrialSpec, cost: float) -> None:
        """A running trial's known spend so far (local trials, with ``--max-run-cost``)."""
        self.live[spec.key] = cost

    def _budgeted(self, specs: Iterator[TrialSpec]) -> Iterator[TrialSpec]:
        """``specs`` while the run's spend — finished trials, and what running local trials have
        reported so far — is under ``--max-run-cost``. Once it is reached no more trials start: each one left is recorded ``void`` as not run (so the exit code says
        the run is incomplete); an adaptive run's cells just stop. Trials in flight finish."""
        limit = self.opts.max_run_cost
        for spec in specs:
            if limit is None or self.spent + sum(self.live.values()) < limit:
                yield spec
                continue
            self.budget_reached = True
            if self.adaptive is not None:
                return
            self.not_run += 1
            self.trial_finished(spec, not_run(spec, NOT_RUN_COST), [])

    async def _sandboxes_checked(self, specs: Iterator[TrialSpec]) -> Iterator[TrialSpec]:
        """``specs``, once each sandbox the variants use was checked: a trial whose sandbox
        cannot open on this machine (no container CLI) is ``void`` with why, and never starts."""
        from ._preflight import sandbox_problems, without_unusable_sandboxes

        problems = await sandbox_problems(v.sandbox for v in self.plan.variants)
        if not problems:
            return specs

        def unusable(spec: TrialSpec, reason: str) -> TrialResult:
            from ..results._model import ErrorInfo

            result = not_run(spec, reason)
            result.error = ErrorInfo("sandbox", reason)
            return result

        return without_unusable_sandboxes(
            specs, problems, unusable, lambda spec, result: self.trial_finished(spec, result, []))

    # -- signals -----------------------------------------------------------------------------

    def on_first_signal(self, signum: int) -> None:
        loop, stop = self.loop, self.stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._stop_soon, signum)
            except RuntimeError:
                pass

    def _stop_soon(self, signum: int) -> None:
        assert self.stop is not None
        # Ctrl-C lets running trials finish within a grace period; SIGTERM/SIGHUP (a supervisor,
        # a closed terminal) cancel them at once, so their sandboxes close before a SIGKILL.
        self.forced_by = None if signum == signal.SIGINT else signum
        self.stop.set()

    def on_second_signal(self, first: int) -> None:
        # Forced exit: no finally blocks run, so write run.json and remove sandboxes first.
        from ..sandboxes import cleanup_all

        try:
            self.finish(interrupted=True, forced=True, code=128 + first)
        except Exception:  # noqa: BLE001 - exiting regardless
            pass
        finally:
            cleanup_all()
            os._exit(128 + first)

    # -- running -----------------------------------------------------------------------------

    async def drive(self) -> None:
        from .._contain import task_factory
        from ._local import LocalExecutor
        from ._stalls import StallMonitor

        loop = asyncio.get_running_loop()
        loop.set_task_factory(task_factory)  # type: ignore[arg-type]
        self.loop, self.stop = loop, asyncio.Event()
        executor = self.executor
        monitor = None
        if executor is None:
            executor = LocalExecutor(
                {c.case.id: c.case for c in self.plan.cells}, self.plan.harnesses,
                max_concurrency=self.plan.max_concurrency, max_sandboxes=self.plan.max_sandboxes,
                host=None,
            )
        if isinstance(executor, LocalExecutor):
            monitor = executor.monitor = StallMonitor(loop)
            monitor.start()
        cache_dir = str(self.plan.project.folder / ".anpord" / "cache" / "models") if self.opts.cache else None
        snapshots = self._snapshot_dir()
        if any(c.adaptive is not None for c in self.plan.cells):
            specs: Iterator[TrialSpec] = _AdaptiveSpecs(
                self.plan, self.record.run_id, cache_dir, self.opts.alpha, self.opts.variant_margin,
                _baseline_rates(self.plan) if self.opts.history else {}, snapshots)
            specs.replay = self.opts.replay  # type: ignore[attr-defined]
            self.adaptive = specs  # type: ignore[assignment]
        else:
            specs = _specs(self.plan, self.record.run_id, cache_dir, self.done, self.opts.replay, snapshots)
        if isinstance(executor, LocalExecutor):  # elsewhere, the workers' machines may differ
            specs = await self._sandboxes_checked(specs)
        if self.opts.max_run_cost is not None:
            specs = self._budgeted(specs)
        work = asyncio.ensure_future(executor.run(specs, self, self.stop))
        stopper = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait([work, stopper], return_when=asyncio.FIRST_COMPLETED)
            if self.stop.is_set() and not work.done():
                # Stop scheduling (the executor checks `stop`), give running trials a grace
                # period unless forced, then cancel them: their finally blocks close sandboxes.
                if self.forced_by is None:
                    await asyncio.wait({work}, timeout=INTERRUPT_GRACE)
                work.cancel()
                await asyncio.wait({work})
                if not work.cancelled() and work.exception() is not None:
                    work.exception()  # the cancellation is expected: not an unretrieved error
            else:
                await work
        finally:
            stopper.cancel()
            if monitor is not None:
                monitor.stop()

    def finish(self, *, interrupted: bool, forced: bool = False, code: int | None = None) -> RunSummary:
        results = self.results
        totals = _totals(results)
        by_cell: dict[tuple[str, str], list[TrialResult]] = {}
        for r in sorted(results, key=lambda r: r.trial):
            by_cell.setdefault(r.cell_key, []).append(r)
        cells = [summarize_cell(by_cell[k]) for k in dict.fromkeys((c.case_id, c.variant) for c in self.record.cells)
                 if k in by_cell]
        summary = RunSummary(
            run_id=self.record.run_id, run_dir=str(self.run_dir), totals=totals, cells=cells,
            exit_code=code if code is not None else exit_code_for(totals, self.opts.fail_on),
            fail_on=self.opts.fail_on, duration=time.time() - self.started, interrupted=interrupted,
            usage=usage_totals(results),
        )
        if self.opts.max_run_cost is not None:
            summary.run_cost = {"limit": self.opts.max_run_cost, "spent": round(self.spent, 6),
                                "reached": self.budget_reached, "not_run": self.not_run}
        record = self.record
        record.status = "interrupted" if interrupted else "finished"
        record.finished_at = time.time()
        record.totals, record.usage = totals, summary.usage
        record.exit_code, record.forced = summary.exit_code, forced
        dist = {(c.case_id, c.variant): c for c in cells}
        reasons = self.adaptive.stop_reasons() if self.adaptive is not None else {}
        for cell in record.cells:
            cell.summary = dist.get((cell.case_id, cell.variant))
            if (cell.case_id, cell.variant) in reasons:
                cell.stop_reason = reasons[(cell.case_id, cell.variant)] or "stopped"
                summary.stop_reasons[(cell.case_id, cell.variant)] = cell.stop_reason
        early = False  # run.json written while the store files: its answer cannot change it
        if self.history is not None and forced:
            self.history.abandon()
        elif self.history is not None:
            settled = code is not None
            self._send_history()
            if self.writer is not None and (self.opts.fail_on != "regressed" or settled):
                self.writer.write_run(record)
                early = True
            self._finish_history(summary, settled=settled)
        if self.writer is not None:
            if not early:
                self.writer.write_run(record)
            try:
                (self.plan.project.folder / ".anpord" / "running" / record.run_id).unlink()
            except OSError:
                pass
        return summary

    def _start_history(self) -> None:
        """Start filing the run in the run store, unless history is off. A store that cannot be
        used costs the run nothing but a warning at its end."""
        from ..store import StoreError, StoreWriter, store_location

        assert self.writer is not None
        try:
            location = store_location(self.plan.project.folder)
        except StoreError as exc:
            self.history_failure = str(exc)
            return
        if location is None:
            if self.opts.fail_on == "regressed":
                self.history_failure = "run history is off (ANPORD_DB=off)"
            return
        self.history = StoreWriter(location, str(self.run_dir), self.writer.redact)
        self.history.start(self.record, self.results, compare=self._compares())

    def _compares(self) -> bool:
        """Whether the run's end compares its cells with their baselines: asked to, or for the
        ``--fail-on regressed`` gate."""
        return self.opts.compare or self.opts.fail_on == "regressed"

    def _send_history(self) -> None:
        """The run's last batch, its final state and, when asked, the comparison of its cells
        with their baselines, to the store's thread (``_finish_history`` takes the answer)."""
        assert self.history is not None
        opts = self.opts
        self.history.send_finish(self.record, compare=self._compares(), threshold=opts.regression_threshold,
                                 alpha=opts.alpha, variant_margin=opts.variant_margin)

    def _finish_history(self, summary: RunSummary, *, settled: bool) -> None:
        """The store's answer: the comparison, which the gate and the console use."""
        assert self.history is not None
        opts = self.opts
        summary.comparison = self.history.answer()
        if self.history.failure is not None:
            self.history_failure = self.history.failure
        if opts.fail_on == "regressed" and not settled:
            summary.exit_code = self.record.exit_code = exit_code_for(summary, "regressed", summary.comparison)

    def report_history_failure(self) -> None:
        """One warning line when the run could not be filed in the run store."""
        if self.history_failure is None:
            return
        gate = ("; --fail-on regressed could not be checked (exit 2)"
                if self.opts.fail_on == "regressed" and self.record.exit_code == 2 else "")
        print(self.fan.redact(f"anpord: warning: this run was not recorded in the run history: "
                              f"{self.history_failure}; its folder has everything, and `anpord db "
                              f"rebuild` records it once the store is fixed{gate}"), file=self.fan.err)

    def start_writer(self) -> None:
        if not self.opts.artifacts:
            if self.opts.fail_on == "regressed":
                self.history_failure = "--no-artifacts keeps no history to compare with"
            return
        self.writer = RunWriter(self.run_dir, Redactor(secret_values(self.plan)), resume=self.resume is not None)
        if self.resume is not None:
            self.record.status = "running"
            self.record.owner = current_owner()
            self.record.resumed_at.append(time.time())
            self.record.finished_at = None
        self.writer.write_run(self.record)
        if self.opts.history:
            self._start_history()
        elif self.opts.fail_on == "regressed":
            self.history_failure = "run history is off for this run"
        marker = self.plan.project.folder / ".anpord" / "running" / self.record.run_id
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass

    def release(self) -> None:
        """The run is over and reported: drop everything it held (the plan, the executor and
        its trials' environments, the reporters, the loop). Those point back at the run through
        its bound methods, so unreleased the whole run (tens of objects per cell) is left for
        the cyclic collector, which at the interpreter's exit walks all of it once more: freed
        here by reference counting instead. The ``RunResult`` keeps the record, summary and
        results it was made with."""
        vars(self).clear()

    def info(self) -> RunInfo:
        return RunInfo(
            run_id=self.record.run_id,
            run_dir=str(self.run_dir),
            variants=self.plan.variant_labels,
            cells=[PlannedCell(c.case.id, c.variant.label, len(c.planned), str(c.case.file.path))
                   for c in self.plan.cells],
        )


def _local_executor(plan: Plan, opts: RunOptions) -> Executor | None:
    if opts.ray_address:
        raise UsageError("--ray-address needs --executor ray (or executor=\"ray\" in evals.config.py)")
    return None  # ``execute`` builds the local pool itself


def _ray_executor(plan: Plan, opts: RunOptions) -> Executor | None:
    if opts.cache:
        raise UsageError("--cache is not available with --executor ray: the cache is on this machine, "
                         "the trials are not")
    if any(c.adaptive is not None for c in plan.cells):
        raise UsageError("adaptive trials (--trials auto or MIN..MAX) run on the local executor only: "
                         "give --trials N with --executor ray")
    from ._ray import RayExecutor

    return RayExecutor.connect(plan.project.folder, address=opts.ray_address,
                               max_concurrency=plan.max_concurrency, max_sandboxes=plan.max_sandboxes,
                               secrets={n: os.environ[n] for v in plan.variants for n in v.secrets if n in os.environ})


ExecutorFactory = Callable[[Plan, RunOptions], "Executor | None"]
# Executors by name (``--executor``, ``executor=`` in the config); packages add more through
# ``anpord.executors`` entry points, each a factory like these: ``(plan, opts) -> Executor``.
_EXECUTORS: dict[str, ExecutorFactory | str] = {"local": _local_executor, "ray": _ray_executor}
EXECUTORS: Registry[ExecutorFactory] = Registry("anpord.executors", _EXECUTORS, kind="executor")


def executor_for(plan: Plan, opts: RunOptions) -> Executor | None:
    """The executor the plan names (``--executor``, else the config's), ready to run: ``None``
    for the local pool, which ``execute`` builds itself. Choosing Ray connects to the cluster
    and checks it here, so a cluster that cannot run the trials is a ``UsageError`` (exit 2)
    before anything is written; so is a name no executor has, or a plugin that does not load."""
    try:
        factory = EXECUTORS.get(plan.executor)
    except PluginError as exc:
        raise UsageError(f"--executor {plan.executor}: {exc}") from None
    return factory(plan, opts)


def execute(plan: Plan, opts: RunOptions, reporters: Sequence[Any], *,
            executor: Executor | None = None, resume: Any = None) -> RunResult:
    """Run the plan to completion, or until SIGINT (exit 130), SIGTERM (143) or SIGHUP (129).

    ``executor`` defaults to the one the plan names (``executor_for``). ``resume`` (a
    ``RunReading`` of a run that did not finish) runs only its missing trials, appending to the
    same run folder."""
    if executor is None:
        executor = executor_for(plan, opts)
    if executor is None:  # the local pool: the trials' shared services run in this process
        start_run_services_early(c.variant for c in plan.cells)
    try:
        return _execute(plan, opts, reporters, executor, resume)
    finally:
        discard_early_run_services()


def _execute(plan: Plan, opts: RunOptions, reporters: Sequence[Any], executor: Executor | None,
             resume: Any) -> RunResult:
    run = _Run(plan, opts, reporters, executor, resume)
    with (_Signals(run.on_first_signal, run.on_second_signal) as signals,
          _gc_for_a_run(plan.max_concurrency)):
        run.start_writer()
        try:
            with captured_output(), unawaited_calls_fail():
                run.fan.call("on_run_start", run.info())
                if resume is not None:
                    for r in resume.trials:  # trials of the earlier attempt, for the console's grid
                        run.fan.call("on_trial_end", r)
                try:
                    if signals.first is None:
                        # Not asyncio.run: an agent task that ignores its cancellation must not
                        # keep the run from ending (see _loop).
                        run_bounded(run.drive())
                finally:
                    if run.writer is not None:
                        run.writer.close()
                stopped_by = signals.first
                summary = run.finish(
                    interrupted=stopped_by is not None and (
                        not run.adaptive.complete() if run.adaptive is not None
                        else len(run.results) < plan.total_trials),
                    code=128 + stopped_by if stopped_by is not None else None,
                )
                run.report_history_failure()
                run.fan.call("on_run_end", summary, run.results)
                if stopped_by is None and signals.first is not None:
                    # Landed while the run was being reported: the run is whole, and the exit
                    # code still says it was stopped, as documented.
                    summary.exit_code = run.record.exit_code = 128 + signals.first
                    if run.writer is not None:
                        run.writer.write_run(run.record)
        finally:
            if run.writer is not None:
                run.writer.close()
    result = RunResult(run.record, summary, run.results)
    run.release()
    return result

