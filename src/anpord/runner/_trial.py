"""Running one trial, in phases that each return what they found:

1. **prepare** — open the sandbox when the case or the harness needs one, snapshot the workspace
   for ``files_changed()``, build ``t``;
2. **drive** — run the test body (or the declarative prompt and checks) under the deadline →
   ``BodyOutcome``: skipped, void, timed out, or the error that ended it;
3. **settle** — wait for checks still being measured (judge calls), within the time left;
4. **close** — end the sessions, close the sandbox (always, whatever happened before);
5. **decide** — the verdict from all of the above (``decide_verdict``) → ``TrialResult``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .._errors import exception_line
from .._render import CURRENT_REDACT
from ..assertions import GateFailed, Recorder
from ..authoring._config import Variant
from ..drive import Skipped, T, TrialState
from ..events import PROCESS_EXITED, Event, usage_events
from ..harnesses import Harness, HarnessContext, HarnessStartError
from ..authoring._judge_spec import JudgeEnv
from ..results._model import ErrorInfo, TrialResult
from ..results._usage import sum_usage
from ..sandboxes._protocol import SandboxError, SandboxInstance, SandboxSpec
from ..authoring._user import UserSimulationError
from ._capture import CURRENT_LOG, flush_partial
from ._deadlines import Deadlines
from .._contain import CURRENT_EXITS, ExitLog, TaskExited, contains_exits
from ._limits import Breach, LimitWatcher
from ._rewrite import CURRENT_RECORDER
from ._services import ServiceContext, TrialServices, deliver, deliver_later, wants_services
from .._loop import IGNORED_CANCELLATION
from ._validate import SandboxHolder, ValidateError, run_declarative
from ._verdict import decide_verdict

from ._spec import as_path

if TYPE_CHECKING:
    from ._spec import TrialSpec
    from .discovery import Case

__all__ = ["TrialJob", "TrialEnv", "BodyOutcome", "run_trial", "TIMEOUT_GRACE", "LOG_CAP"]

# After the deadline, how long the body gets to unwind once cancelled.
TIMEOUT_GRACE = 2.0
# Bytes of log a trial keeps (what a Python agent prints, t.log): past it, lines are counted only.
LOG_CAP = 1 << 20


@dataclass
class TrialJob:
    spec: TrialSpec
    case: Case
    harness: Harness | None
    harness_error: str | None = None  # why there is no harness: every session's start fails with it


@dataclass
class TrialEnv:
    """Run-wide services a trial uses."""

    open_sandbox: Callable[[Variant, SandboxSpec], Awaitable[SandboxInstance]]
    on_log: Callable[[TrialSpec, str], None]
    sandbox_closed: Callable[[], None] = lambda: None  # gives back a max_sandboxes slot
    max_concurrency: int = 8
    host: str | None = None
    # Seconds of event-loop stall caused by other trials since a moment: deadlines do not count
    # them against this trial (see _stalls).
    lost_time: Callable[[str, float], float] = lambda _trial, _since: 0.0
    stalls_caused: Callable[[str], list[Any]] = lambda _trial: []
    deadlines: Deadlines | None = None  # one timer for every trial's deadline (made on first use)
    # The run's --max-run-cost: each trial's known spend so far, as it grows (see _limits).
    on_spend: Callable[[TrialSpec, float], None] | None = None


@dataclass
class BodyOutcome:
    """How the body ended. At most one of these is set, or none when it ran to its end."""

    skipped: str | None = None
    void: str | None = None  # could not be measured: the agent or its sandbox could not start
    timed_out: str | None = None
    error: ErrorInfo | None = None


class _Exited(Exception):
    """SystemExit/KeyboardInterrupt raised by a test, carried out of its task as a plain exception:
    asyncio would otherwise stop the whole run with it."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


def _usage(events: list[Event]) -> tuple[dict[str, float | None], list[str]]:
    """The trial's usage totals (implausible numbers left out, see results._usage) and a log line
    for each number left out."""
    return sum_usage(e.data for e in usage_events(events))


def _where(exc: BaseException, case: Case) -> str | None:
    """``file:line`` of the eval file's innermost frame in the traceback."""
    path = str(case.file.path)
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == path:
            return f"{path}:{frame.lineno}"
    return None


class _Trial:
    """One trial's state across its phases."""

    def __init__(self, job: TrialJob, env: TrialEnv):
        self.job, self.env = job, env
        self.case, self.spec = job.case, job.spec
        self.started_wall = time.time()
        self.started = time.monotonic()
        self.logs: list[str] = []
        self._log_bytes = 0
        self._dropped = 0
        self.recorder = Recorder()
        self.label = job.spec.label  # `case variant #n`, for sandboxes, harnesses and stalls
        self.exits = ExitLog(self.label)
        self.state: TrialState | None = None
        self.t: T | None = None
        self.judge_env: JudgeEnv | None = None
        self.holder: SandboxHolder | None = None
        self.snapshot: Any = None
        self.archive_base: Any = None  # the workspace before the agent ran, as archived (BaseRef)
        self.deadline_at = 0.0  # loop time at which the deadline is due
        self.limit: str | None = None  # a limit of the sandbox the trial broke (its size cap)
        # Its trace receiver, when traced; its mocks, when it has some.
        self.mocks = _mocks_of(job)
        # None for most trials: no proxy, traces or mocks, so no service step at all.
        self.services = (TrialServices(job.spec.variant, self.mocks)
                         if wants_services(job.spec.variant, self.mocks) else None)
        self._early: list[Event] = []  # what services recorded before the trial's state existed
        # Its token and cost limits, when it has some: a breach stops the agent (see _limits).
        self.watcher: LimitWatcher | None = None
        self._stop_body: Callable[[], None] | None = None  # set while the body runs
        spend = env.on_spend
        if job.spec.token_limit is not None or job.spec.cost_limit is not None or spend is not None:
            self.watcher = LimitWatcher(
                job.spec.token_limit, job.spec.cost_limit, model=job.spec.variant.model,
                options=job.spec.variant.options, on_breach=self._on_breach,
                on_spend=None if spend is None else functools.partial(spend, job.spec))

    def log(self, message: str) -> None:
        size = len(message)
        if self._log_bytes + size > LOG_CAP:
            self._dropped += size
            return
        self._log_bytes += size
        self.logs.append(message)
        self.env.on_log(self.spec, message)

    # What ``log`` needs, so a line logged late (a service stopping in the background) still lands.
    _KEPT = frozenset({"env", "spec", "logs", "_log_bytes", "_dropped"})

    def release(self) -> None:
        """Once decided: drop what the trial's phases held. Its state, services, sessions and
        contexts point back at it (``self.log``, closures over ``self``): cut here, they are freed
        by reference counting as the trial ends instead of by the cyclic collector, which at
        thousands of trials a run is a large share of the runner's CPU. The result and events
        ``decide`` returned hold none of them."""
        if self.state is not None:
            self.state.release()
        kept = {k: v for k, v in vars(self).items() if k in self._KEPT}
        vars(self).clear()
        vars(self).update(kept)

    # -- 1. prepare --------------------------------------------------------------------------

    async def prepare(self) -> None:
        case, spec, job = self.case, self.spec, self.job
        async def opener() -> SandboxInstance:
            sandbox_spec = SandboxSpec(variant=spec.variant, source=case.source,
                                       source_base=case.file.folder, label=self.label)
            return await self.env.open_sandbox(spec.variant, sandbox_spec)

        self.holder = holder = SandboxHolder(opener, None)
        services = self.services
        if (case.source is not None or (job.harness is not None and job.harness.needs_sandbox)
                or (services is not None and services.needs_sandbox)):
            instance = await holder.get()
            await self._start_services(instance)
            if job.harness is not None:
                # Before the snapshot: what the harness puts there is not the agent's change.
                await job.harness.prepare_sandbox(self._harness_context(instance))
            if spec.snapshots is not None:
                self.archive_base = await self._archive(instance, before=True)
            if case.eval.declarative:
                from ..workspace import snapshot

                # Before the agent runs, for files_changed(); in a thread: a large workspace
                # takes seconds to read, and the other trials must not stall meanwhile.
                self.snapshot = await asyncio.to_thread(snapshot, await instance.workspace_view())
        if services is not None:
            await self._start_services(holder.instance)
        ctx = self._harness_context(holder.instance) if job.harness is not None else None
        self.state = TrialState(
            harness=job.harness, harness_ctx=ctx, recorder=self.recorder,
            base_dir=case.file.folder, log=self.log, harness_error=job.harness_error,
        )
        if services is not None:
            self.state.mocks = services.mock_handles()
        if self.watcher is not None:
            self.state.watch = self.watcher.see
        if self.mocks:
            from ..mocks._dedupe import McpDedupe, mcp_servers

            servers = mcp_servers(self.mocks)
            if servers:
                bare = _kind_of(job.spec.variant.harness) == "gemini"  # names MCP tools bare
                self.state.admit = McpDedupe(servers, bare=bare).admit
        for event in self._early:
            self.state.record_event(event)
        judge_env = self.judge_env = JudgeEnv(spec.judge, cache_dir=None if spec.cache_dir is None else as_path(spec.cache_dir),
                             trial_index=spec.trial, seed=spec.seed, max_concurrency=self.env.max_concurrency)
        self.t = T(self.state, workspace=holder.instance.workspace if holder.instance else None,
                   row=case.row, seed=spec.seed, judge_env=judge_env)

    async def _start_services(self, instance: SandboxInstance | None) -> None:
        """Once, before the agent runs (see _services): with the sandbox when there is one."""
        services = self.services
        if services is not None and services.services and not services.started:
            await services.start(ServiceContext(
                variant=self.spec.variant, label=self.label, sandbox=instance, log=self.log,
                record=lambda event: deliver(self.state, event, self._early),
                key=self.spec.key, replay=self.spec.replay,
                record_later=lambda produce: deliver_later(self.state, produce, self._early),
                timeout=self.spec.timeout,
            ))

    def _harness_context(self, instance: SandboxInstance | None) -> HarnessContext:
        spec = self.spec
        extra: dict[str, Any] = {}
        if self.services is not None:
            mocks = self.services.mock_handles()
            proxy = self.services.proxy_handle()
            if mocks:
                extra["mocks"] = mocks
            if proxy is not None:
                extra["model_proxy"] = proxy
        return HarnessContext(
            extra=extra,
            variant=spec.variant, model=spec.variant.model, sandbox=instance, log=self.log,
            trial_id=self.label, max_concurrency=self.env.max_concurrency, seed=spec.seed,
            cache_dir=None if spec.cache_dir is None else as_path(spec.cache_dir),
            trial_index=spec.trial, evals_root=spec.root,
        )

    def _on_breach(self, breach: Breach) -> None:
        self.log(f"{breach.reason}: stopping the agent")
        if self._stop_body is not None:
            self._stop_body()

    # -- 2. drive ----------------------------------------------------------------------------

    @contains_exits
    async def _body(self, ended: Callable[[], None]) -> None:
        ev, case, t = self.case.eval, self.case, self.t
        assert t is not None and self.holder is not None and self.state is not None
        assert self.judge_env is not None
        try:
            if ev.declarative:
                await run_declarative(t, case.id, ev.prompt, ev.validate, self.holder, self.snapshot,
                                      state=self.state, judge_env=self.judge_env,
                                      user=ev.user, max_turns=ev.max_turns, judges=ev.judges,
                                      before_checks=self._settle_services)
                return
            assert ev.test is not None
            result = ev.test(t, case.row) if case.has_row else ev.test(t)
            if inspect.isawaitable(result):
                await result
        except (SystemExit, KeyboardInterrupt) as exc:
            raise _Exited(exc) from None
        finally:
            # In the body's last step, so its task is done by the time the waiter wakes anyone:
            # a callback fewer than waiting for the task's own done callback.
            ended()

    async def drive(self) -> BodyOutcome:
        t = self.t
        assert t is not None
        loop = asyncio.get_running_loop()
        # One waiter resolved by the body finishing, or by the grace period after a timeout:
        # cheaper than asyncio.wait per trial, and a body that swallows cancellation is abandoned.
        waiter = loop.create_future()
        timed_out: list[str] = []
        timeout = self.spec.timeout
        started = loop.time()

        def wake(_: object = None) -> None:
            if not waiter.done():
                waiter.set_result(None)

        task = asyncio.ensure_future(self._body(wake))

        deadlines = self.env.deadlines
        if deadlines is None:
            deadlines = self.env.deadlines = Deadlines(loop)

        def on_deadline() -> None:
            if task.done():
                return  # finished in the same loop iteration: its own result stands
            # Time the loop spent stalled by other trials does not count against this one.
            lost = self.env.lost_time(self.label, started)
            remaining = timeout + lost - (loop.time() - started)
            if remaining > 0.001:
                timers.append(deadlines.at(loop.time() + remaining, on_deadline))
                return
            timed_out.append(f"timed out after {timeout:g}s")
            stop()

        def stop() -> None:
            # As a timeout does: cancelling the body cancels the running turn, which kills a
            # command's process tree; a body that swallows it is abandoned after the grace.
            self._stop_body = None
            t.signal.set()
            task.cancel()
            task.add_done_callback(wake)  # cancelled before its first step, the body never ran
            loop.call_later(TIMEOUT_GRACE, wake)

        if self.watcher is not None:
            if self.watcher.breach is not None:  # passed while the trial was being prepared
                stop()
            else:
                def stop_soon() -> None:  # from the watcher's thread
                    if not task.done():
                        loop.call_soon_threadsafe(stop)

                self._stop_body = stop_soon
        t.deadline = time.time() + timeout  # from now, not from before the sandbox opened
        self.deadline_at = started + timeout
        timers = [deadlines.at(self.deadline_at, on_deadline)]
        try:
            await waiter
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._stop_body = None
            for timer in timers:
                timer.cancel()
            # on_deadline re-arms itself, so its closure holds it: emptying the cell frees the
            # body's task and the trial's objects by reference counting, not by the collector.
            del on_deadline
        if self.breached is not None:
            return BodyOutcome()  # decide() reads the breach
        if timed_out:
            return BodyOutcome(timed_out=timed_out[0])
        return self._classify(task)

    def _classify(self, task: asyncio.Future[None]) -> BodyOutcome:
        try:
            task.result()
        except Skipped as exc:
            return BodyOutcome(skipped=exc.reason)
        except GateFailed:
            return BodyOutcome()  # recorded already; the verdict reads it
        except (HarnessStartError, SandboxError, UserSimulationError) as exc:
            return BodyOutcome(void=str(exc) or type(exc).__name__)
        except ValidateError as exc:
            return BodyOutcome(error=ErrorInfo("validate", str(exc)))
        except asyncio.CancelledError:
            return BodyOutcome(error=ErrorInfo("test", "the test was cancelled"))
        except BaseException as exc:  # noqa: BLE001 - SystemExit etc. fail this trial, not the run
            original = exc.original if isinstance(exc, _Exited) else exc
            kind = "task_exit" if isinstance(original, TaskExited) else "test"
            return BodyOutcome(error=ErrorInfo(
                kind, exception_line(original), "".join(traceback.format_exception(original)),  # type: ignore[arg-type]
                _where(original, self.case),
            ))
        return BodyOutcome()

    @property
    def breached(self) -> Breach | None:
        return self.watcher.breach if self.watcher is not None else None

    # -- 3. settle ---------------------------------------------------------------------------

    async def settle_checks(self) -> None:
        """Checks still being measured (judge calls) get the time left before the deadline, at
        least the grace period; whatever is not measured then is ``void``."""
        if not self.recorder.pending:
            return
        left = self.deadline_at - asyncio.get_running_loop().time()
        await self.recorder.settle(max(left, TIMEOUT_GRACE))

    # -- 4. close ----------------------------------------------------------------------------

    async def _settle_services(self) -> None:
        """Before a declarative case's checks: what is on its way arrives, then the trace is
        sealed, so the spans the checks read are the spans the record keeps (later ones are
        counted and logged as late)."""
        if self.services is not None:
            await self.services.settle()
            self.services.seal_traces()

    async def close(self) -> None:
        services = self.services
        if services is not None:
            await services.settle()  # what the agent was answered is recorded (a proxied call)
            services.seal()  # the checks have run: what arrives from now on is not kept
        instance = self.holder.instance if self.holder is not None else None
        if instance is not None:
            # Asked first: a breach is what ended the agent's run, and closing the sessions
            # deletes their files, which would hide a full workspace.
            try:
                self.limit = await instance.limit_exceeded()
            except Exception:  # noqa: BLE001 - a failed measurement is no breach
                self.limit = None
        try:
            if self.state is not None:
                await self.state.close()
        finally:
            try:
                instance = self.holder.instance if self.holder is not None else None
                if instance is not None and self.spec.snapshots is not None:
                    await self._archive(instance, before=False)
                if instance is not None:
                    try:
                        await instance.close()
                    finally:
                        self.env.sandbox_closed()
            finally:
                if services is not None:
                    await services.stop(self.log)
                flush_partial(self.log)

    async def _archive(self, instance: SandboxInstance, *, before: bool) -> Any:
        """Keep the workspace in the run's archive (``workspace._archive``): before the agent
        runs as the trial's base, after its sessions ended as it was left — raw, before any
        redaction, for ``anpord regrade``. In a thread: a large workspace takes a while to read.
        A failure is logged; it never changes the verdict."""
        from ..workspace import take_base, take_snapshot, trial_key

        folder = self.spec.snapshots
        assert folder is not None
        try:
            root = await instance.workspace_view()  # a copy out of a container that copies
            if before:
                return await asyncio.to_thread(take_base, folder, root)
            key = trial_key(self.spec.case_id, self.spec.variant.label, self.spec.trial)
            await asyncio.to_thread(take_snapshot, folder, key, root, self.archive_base)
        except Exception as exc:  # noqa: BLE001 - a snapshot is a record, not part of the trial
            self.log(f"workspace snapshot not kept: {exception_line(exc)}")
        return None

    # -- 5. decide ---------------------------------------------------------------------------

    def decide(self, body: BodyOutcome) -> tuple[TrialResult, list[Event]]:
        state, spec, case = self.state, self.spec, self.case
        void, error = body.void, body.error
        if error is None and state is not None:
            error = state.unexpected_failure  # an agent failure the test did not expect
        if body.skipped is None and void is None and state is not None and state.start_error is not None:
            void = state.start_error  # even when the test caught the error and went on
        if body.skipped is None and void is None and self.services is not None:
            void = self.services.void_reason()  # a replayed model call the recording lacks
        self.exits.open = False
        # An exit in a task wins over the TaskExited that whoever awaited the task then raised.
        if self.exits.entries and (error is None or error.kind == "task_exit"):
            summary, tb = self.exits.entries[0]
            error = ErrorInfo("task_exit", f"a task it started raised {summary}", tb)
        timed_out = body.timed_out
        breach = self.breached
        if breach is not None and body.skipped is None and self.limit is None:
            # The limit is the cause, as a sandbox cap below: not the cancellation that followed.
            error, void, timed_out = None, None, None
            if breach.verdict == "failed":
                error = ErrorInfo("limit", breach.reason)
            else:
                void = breach.reason
        if self.limit is not None and body.skipped is None:
            # The breach is the cause; what followed (the agent killed, a void turn, a timeout
            # while it was being stopped) is not.
            error, void, timed_out = ErrorInfo("limit", self.limit), None, None
        verdict, reason = decide_verdict(
            skipped=body.skipped, void_reason=void, timed_out=timed_out,
            execution_error=error.message if error is not None else None,
            records=self.recorder.records,
        )
        if breach is None and self.watcher is not None and verdict in ("passed", "scored"):
            unchecked = self.watcher.final()  # a cost limit nobody could check: not measured
            if unchecked is not None:
                verdict, reason = "void", unchecked.reason
        events = state.events if state is not None else []
        if (verdict in ("failed", "scored", "void") and breach is None
                and (silent := silent_exit(events)) is not None):
            # The trial did not pass and the agent gave no answer: why is what the user needs.
            reason = f"{reason}; {silent}" if reason else silent
            if error is None:
                error = ErrorInfo("agent", silent)
        if self._dropped:
            self.logs.append(f"[{self._dropped} bytes of log not kept: cap {LOG_CAP} bytes per trial]")
        stalls = self.env.stalls_caused(self.label)
        if stalls:
            worst = max(s.duration for s in stalls)
            blame = (f"its code blocked the event loop for {worst:.1f} s, stalling every trial — use a "
                     "sync agent (it runs in a thread) or await instead of blocking")
            self.logs.append(blame)
            if verdict != "passed":
                reason = f"{reason}; {blame}" if reason else blame
        ignored = next((line for line in self.logs if line.startswith(IGNORED_CANCELLATION)), None)
        if ignored is not None and verdict != "passed":
            reason = f"{reason}; {ignored}" if reason else ignored
        usage, usage_notes = _usage(events)
        self.logs.extend(usage_notes)
        soft = [r.score for r in self.recorder.records if r.kind == "soft"]
        result = TrialResult(
            case_id=case.id,
            variant=spec.variant.label,
            trial=spec.trial,
            verdict=verdict,
            reason=reason,
            duration=round(time.monotonic() - self.started, 6),
            started_at=self.started_wall,
            assertions=list(self.recorder.records),
            judgments=list(self.recorder.judgments),
            score=sum(soft) / len(soft) if soft else None,
            error=error,
            logs=self.logs,
            usage=usage,
            tags=case.tags,
            file=str(case.file.path),
            seed=spec.seed,
            attempt=spec.attempt,
            host=self.env.host,
        )
        return result, events


def _kind_of(spec: str | None) -> str:
    """A harness spec's kind: ``gemini`` for ``gemini`` and ``gemini:/opt/bin/gemini``."""
    return (spec or "").partition(":")[0]


def _mocks_of(job: TrialJob) -> tuple[Any, ...]:
    """The trial's mocks: the variant's (with the config's), then the suite's, then the case's own;
    a later one replaces an earlier one of the same name."""
    suite = job.case.suite.mocks if job.case.suite is not None else ()
    own = job.case.eval.mocks
    if not (job.spec.variant.mocks or suite or own):
        return ()
    from ..mocks._declare import merge_mocks

    return merge_mocks(job.spec.variant.mocks, suite, own)


def _stderr_cause(tail: str) -> str:
    """What a program's last stderr lines say went wrong: the first line that reads as an error
    (node's ``Error: Cannot find module …``, before its stack and object dump), with the last line
    when it says more (a Python traceback's exception); else the last three lines."""
    from ..harnesses.coding._stderr import _ERRORISH, stderr_reason

    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    cause = stderr_reason(tail) if any(_ERRORISH.search(line) for line in lines) else ""
    if not cause:
        return " | ".join(lines[-3:])
    last = stderr_reason("", tail)
    return cause if not last or last in cause else f"{cause} | {last}"


def silent_exit(events: list[Event]) -> str | None:
    """``agent exited 2 with no answer; stderr: …`` for the last agent program that exited
    non-zero without answering (the command harness marks it with ``stderr_tail``), else None."""
    for ev in reversed(events):
        if ev.type == PROCESS_EXITED and "stderr_tail" in ev.data:
            tail = _stderr_cause(str(ev.data["stderr_tail"]))
            code = ev.data.get("exit_code")
            return f"agent exited {code} with no answer" + (f"; stderr: {tail}" if tail else "")
    return None


@functools.lru_cache(maxsize=32)
def _redactor(values: tuple[str, ...]) -> Callable[[str], str]:
    from ..results._redact import Redactor

    return Redactor(values)


def trial_redactor(variant: Variant) -> Callable[[str], str]:
    """What the trial's values are redacted with before a cut shortens them (a preview, a clipped
    ``actual``): its variant's declared secrets, as the run's writers redact them."""
    return _redactor(tuple(os.environ[n] for n in variant.secrets if os.environ.get(n)))


async def run_trial(job: TrialJob, env: TrialEnv) -> tuple[TrialResult, list[Event]]:
    trial = _Trial(job, env)
    redacting = CURRENT_REDACT.set(trial_redactor(job.spec.variant))
    tokens = (
        CURRENT_RECORDER.set(trial.recorder),
        CURRENT_LOG.set(trial.log),
        # SystemExit/KeyboardInterrupt in a task the test or the agent started (see _contain).
        CURRENT_EXITS.set(trial.exits),
    )
    body = BodyOutcome()
    try:
        await trial.prepare()
        body = await trial.drive()
        if body.timed_out is None and trial.breached is None:
            if trial.recorder.pending:
                await trial.settle_checks()
        else:
            await trial.recorder.settle(0)  # the verdict is timed_out: stop what is still measuring
    except (HarnessStartError, SandboxError) as exc:
        body = BodyOutcome(void=str(exc) or type(exc).__name__)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - an infrastructure fault voids this trial only
        body = BodyOutcome(void=f"internal error: {exception_line(exc)}", error=ErrorInfo(
            "internal", exception_line(exc), "".join(traceback.format_exception(exc))))
    finally:
        trial.recorder.abandon()  # a measurement never outlives its trial, even when it was cancelled
        try:
            await trial.close()
        finally:
            CURRENT_RECORDER.reset(tokens[0])
            CURRENT_LOG.reset(tokens[1])
            CURRENT_EXITS.reset(tokens[2])
            CURRENT_REDACT.reset(redacting)
    decided = trial.decide(body)
    trial.release()
    return decided
