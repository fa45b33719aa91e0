"""``LocalExecutor``: trials run on this process's event loop, by up to ``max_concurrency`` workers.

Workers start as trials are taken — never more than there are trials — so a huge concurrency
setting costs nothing. Each harness is set up once, before its first trial here (an agent's own
``setup`` hook, a model client's connection pool), and torn down when the run ends, interrupted or
not. ``max_sandboxes`` bounds how many sandboxes are open at once across all workers.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .._errors import UsageError, exception_line
from ..authoring._config import Variant
from ..events import Event
from ..harnesses import Harness
from ..results._model import ErrorInfo, TrialResult
from ..sandboxes._protocol import Sandbox, SandboxInstance, SandboxSpec
from ._executor import TrialSink
from ._spec import TrialSpec, load_case
from ._stalls import StallMonitor
from ._trial import TrialEnv, TrialJob, run_trial

if TYPE_CHECKING:
    from .discovery import Case

__all__ = ["LocalExecutor"]

NO_HARNESS = "no harness: set harness= in evals.config.py or pass --harness"


class LocalExecutor:
    name = "local"

    def __init__(
        self,
        cases: dict[str, Case] | None = None,
        harnesses: dict[str, Harness] | None = None,
        *,
        max_concurrency: int = 8,
        max_sandboxes: int | None = None,
        host: str | None = None,
    ):
        # Cases and harnesses the driver already loaded; any other spec's case is imported from
        # its eval file (a worker in another process), its harness resolved from its spec.
        self.cases = cases if cases is not None else {}
        self.harnesses = harnesses if harnesses is not None else {}
        self.max_concurrency = max(1, max_concurrency)
        self.max_sandboxes = max_sandboxes
        self.host = host
        self._sandboxes: dict[str, Sandbox] = {}
        self._setups: dict[str, asyncio.Future[str | None]] = {}
        self._ready: dict[str, Harness] = {}  # harnesses set up without an error, by spec
        self.monitor: StallMonitor | None = None  # the driver plugs in its stall monitor
        self._one_env: TrialEnv | None = None

    # -- harness lifecycle -------------------------------------------------------------------

    async def _harness(self, spec: str | None, project_folder: Path) -> tuple[Harness | None, str | None]:
        """The harness for a variant's spec, set up on first use; or why there is none. (Once
        it is set up, ``_run_trial`` takes it from ``_ready`` without calling this.)"""
        if not spec:
            return None, NO_HARNESS
        harness = self.harnesses.get(spec)
        if harness is None:
            from ..harnesses import HarnessSpecError, resolve_harness

            try:
                harness = self.harnesses[spec] = resolve_harness(spec, project_folder)
            except HarnessSpecError as exc:
                return None, str(exc)
        setup = self._setups.get(spec)
        if setup is None:
            setup = self._setups[spec] = asyncio.ensure_future(self._set_up(spec, harness))
        # Set up already (every trial but the first few): no await, no shield.
        error = setup.result() if setup.done() else await asyncio.shield(setup)
        if error:
            return None, error
        self._ready[spec] = harness
        return harness, None

    @staticmethod
    async def _set_up(spec: str, harness: Harness) -> str | None:
        try:
            await harness.setup()
        except Exception as exc:  # noqa: BLE001 - its trials are void with the reason
            return f"harness {spec} could not be set up: {exception_line(exc)}"
        return None

    async def _tear_down(self) -> None:
        from ._services import close_run_services

        self._ready.clear()  # a trial from now on sets its harness up again
        # The judge clients' connections, shared by every trial here: there are none unless a
        # judge (or a simulated user) was asked, which loaded their module.
        endpoint = sys.modules.get("anpord.judges._endpoint")
        if endpoint is not None:
            await endpoint.close_clients()
        await close_run_services()  # the model proxy's server, likewise
        for spec, setup in self._setups.items():
            if not setup.done():
                setup.cancel()
                continue
            if setup.cancelled() or setup.result() is not None:
                continue
            try:
                await self.harnesses[spec].teardown()
            except Exception as exc:  # noqa: BLE001 - the run's results stand
                print(f"anpord: {spec}: the agent's teardown failed: {exception_line(exc)}", file=sys.stderr)
        self._setups.clear()

    # -- sandboxes ---------------------------------------------------------------------------

    def _sandbox_env(self) -> tuple[object, object]:
        from ..sandboxes import get_sandbox

        slots = asyncio.Semaphore(self.max_sandboxes) if self.max_sandboxes else None

        async def open_sandbox(variant: Variant, spec: SandboxSpec) -> SandboxInstance:
            name = variant.sandbox or "local"
            sandbox = self._sandboxes.get(name)
            if sandbox is None:
                sandbox = self._sandboxes[name] = get_sandbox(name)
            if slots is None:
                return await sandbox.open(spec)
            await slots.acquire()
            try:
                return await sandbox.open(spec)
            except BaseException:
                slots.release()
                raise

        def closed() -> None:
            if slots is not None:
                slots.release()

        return open_sandbox, closed

    # -- running trials ----------------------------------------------------------------------

    def _env(self, on_log: Callable[[TrialSpec, str], None],
             on_spend: Callable[[TrialSpec, float], None] | None = None) -> TrialEnv:
        from ._services import hold_run_services

        hold_run_services()  # the trials' shared services stay open until _tear_down
        open_sandbox, sandbox_closed = self._sandbox_env()
        env = TrialEnv(
            open_sandbox=open_sandbox,  # type: ignore[arg-type]
            sandbox_closed=sandbox_closed,  # type: ignore[arg-type]
            on_log=on_log,
            max_concurrency=self.max_concurrency,
            host=self.host,
            on_spend=on_spend,
        )
        if self.monitor is not None:
            env.lost_time = self.monitor.lost_time
            env.stalls_caused = self.monitor.caused_by
        return env

    async def _run_trial(self, spec: TrialSpec, env: TrialEnv) -> tuple[TrialResult, list[Event]]:
        case = self.cases.get(spec.case_id)
        if case is None:
            try:
                case = self.cases[spec.case_id] = load_case(spec)
            except UsageError as exc:
                return _unrunnable(spec, str(exc), self.host), []
        harness: Harness | None = self._ready.get(spec.variant.harness or "")
        error = None
        if harness is None:
            harness, error = await self._harness(spec.variant.harness, spec.project_folder)
        return await run_trial(TrialJob(spec, case, harness, error), env)

    async def run_one(
        self, spec: TrialSpec, on_log: Callable[[TrialSpec, str], None] = lambda _s, _m: None
    ) -> tuple[TrialResult, list[Event]]:
        """Run one trial (in a worker that serves another process's run). Call ``close()`` when
        the worker is done, so harnesses are torn down."""
        if self._one_env is None:
            self._one_env = self._env(on_log)
        return await self._run_trial(spec, self._one_env)

    async def close(self) -> None:
        await self._tear_down()

    # -- the Executor protocol ---------------------------------------------------------------

    async def run(self, specs: Iterator[TrialSpec], sink: TrialSink, stop: asyncio.Event) -> None:
        # A run with --max-run-cost counts what its running trials have spent so far, too.
        env = self._env(sink.trial_log, getattr(sink, "trial_spent", None))

        async def one(spec: TrialSpec) -> None:
            sink.trial_started(spec)
            result, events = await self._run_trial(spec, env)
            sink.trial_finished(spec, result, events)

        async def worker(first: TrialSpec) -> None:
            spec: TrialSpec | None = first
            try:
                while spec is not None:
                    await one(spec)
                    spec = None if stop.is_set() else next(specs, None)
                    if spec is not None:
                        top_up()
            finally:
                active[0] -= 1
            top_up()  # this slot is free now

        def top_up() -> None:
            # Specs that answer "none now" (adaptive trials waiting on running ones) may have
            # more once a trial finishes: each finished trial fills the free slots again.
            while active[0] < self.max_concurrency and not stop.is_set():
                spec = next(specs, None)
                if spec is None:
                    break
                active[0] += 1
                workers.append(asyncio.ensure_future(worker(spec)))

        active = [0]  # workers still running trials
        workers: list[asyncio.Future[None]] = []
        try:
            top_up()
            while running := [w for w in workers if not w.done()]:
                await asyncio.wait(running, return_when=asyncio.FIRST_EXCEPTION)
                for w in workers:
                    if w.done() and not w.cancelled() and w.exception() is not None:
                        raise w.exception()  # type: ignore[misc]
        except BaseException:
            for w in workers:
                w.cancel()
            if workers:
                await asyncio.wait(workers)
                for w in workers:  # their cancellations are expected: not unretrieved errors
                    if not w.cancelled():
                        w.exception()
            raise
        finally:
            await self._tear_down()


def _unrunnable(spec: TrialSpec, reason: str, host: str | None) -> TrialResult:
    """A trial that could not even be set up here (its eval file no longer defines the case):
    ``void`` with the reason, never dropped."""
    return TrialResult(
        case_id=spec.case_id, variant=spec.variant.label, trial=spec.trial, verdict="void",
        reason=reason, error=ErrorInfo("internal", reason), seed=spec.seed, attempt=spec.attempt,
        host=host, file=spec.file,
    )
