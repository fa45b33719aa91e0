"""Running one trial: sandbox, sessions, the test body under a deadline, then the verdict."""

from __future__ import annotations

import asyncio
import inspect
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..assertions import GateFailed, Recorder
from ..authoring._config import Variant
from ..drive import Skipped, T, TrialState
from ..events import USAGE, Event
from ..harnesses import Harness, HarnessContext, HarnessStartError
from ..results._model import TrialResult
from ..sandboxes._protocol import SandboxError, SandboxInstance, SandboxSpec
from ._capture import CURRENT_LOG, flush_partial
from ._contain import CURRENT_EXITS, ExitLog
from ._rewrite import CURRENT_RECORDER
from ._validate import SandboxHolder, ValidateError, run_declarative
from ._verdict import decide_verdict, exception_line

if TYPE_CHECKING:
    from .discovery import Case

__all__ = ["TrialJob", "TrialEnv", "run_trial", "TIMEOUT_GRACE"]

# After the deadline, how long the body gets to unwind once cancelled.
TIMEOUT_GRACE = 2.0


@dataclass
class TrialJob:
    case: "Case"
    variant: Variant
    index: int
    timeout: float
    harness: Harness | None
    harness_error: str | None = None


@dataclass
class TrialEnv:
    """Run-wide services a trial uses."""

    open_sandbox: Callable[[Variant, SandboxSpec], Any]  # async → SandboxInstance
    on_log: Callable[[str, str, int, str], None]
    max_concurrency: int = 8


class _Exited(Exception):
    """SystemExit/KeyboardInterrupt raised by a test, carried out of its task as a plain exception:
    asyncio would otherwise stop the whole run with it."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


def _usage(events: list[Event]) -> dict[str, float]:
    total: dict[str, float] = {}
    for e in events:
        if e.type == USAGE:
            for key in ("input_tokens", "output_tokens", "cost"):
                v = e.data.get(key)
                if isinstance(v, (int, float)):
                    total[key] = total.get(key, 0) + v
    return total


async def run_trial(job: TrialJob, env: TrialEnv) -> tuple[TrialResult, list[Event]]:
    case, variant = job.case, job.variant
    started_wall = time.time()
    started = time.monotonic()
    logs: list[str] = []

    def log(message: str) -> None:
        logs.append(message)
        env.on_log(case.id, variant.label, job.index, message)

    recorder = Recorder()
    rec_token = CURRENT_RECORDER.set(recorder)
    log_token = CURRENT_LOG.set(log)
    # SystemExit/KeyboardInterrupt in a task the test or the agent started (see _contain).
    task_exits = ExitLog()
    exits_token = CURRENT_EXITS.set(task_exits)

    skipped: str | None = None
    void_reason: str | None = None
    timed_out: str | None = None
    execution_error: str | None = None
    tb: str | None = None

    spec = SandboxSpec(variant=variant, source=case.source, source_base=case.file.path.parent,
                       label=f"{case.id} {variant.label} #{job.index}")

    async def opener() -> SandboxInstance:
        return await env.open_sandbox(variant, spec)

    holder = SandboxHolder(opener, None)
    state: TrialState | None = None
    snapshot: Any = None
    try:
        needs_sandbox = case.source is not None or bool(job.harness and job.harness.needs_sandbox)
        if needs_sandbox:
            await holder.get()
            if case.eval.declarative and holder.instance is not None:
                from ..workspace import snapshot as take_snapshot

                # Before the agent runs, for files_changed(); in a thread: a large workspace
                # takes seconds to read, and the other trials must not stall meanwhile.
                snapshot = await asyncio.to_thread(take_snapshot, holder.instance.workspace)
        ctx = None
        if job.harness is not None:
            ctx = HarnessContext(
                variant=variant, model=variant.model, sandbox=holder.instance, log=log,
                trial_id=spec.label, max_concurrency=env.max_concurrency,
            )
        state = TrialState(
            harness=job.harness, harness_ctx=ctx, recorder=recorder, base_dir=case.file.path.parent,
            log=log, harness_error=job.harness_error,
        )
        t = T(state, workspace=holder.instance.workspace if holder.instance else None, row=case.row)

        async def body() -> None:
            ev = case.eval
            try:
                if ev.declarative:
                    await run_declarative(t, case.id, ev.prompt, ev.validate, holder, snapshot)
                    return
                assert ev.test is not None
                result = ev.test(t, case.row) if case.has_row else ev.test(t)
                if inspect.isawaitable(result):
                    await result
            except (SystemExit, KeyboardInterrupt) as exc:
                raise _Exited(exc) from None

        task = asyncio.ensure_future(body())
        loop = asyncio.get_running_loop()
        # One waiter resolved by the body finishing, or by the grace period after a timeout:
        # cheaper than asyncio.wait per trial, and a body that swallows cancellation is abandoned.
        waiter = loop.create_future()

        def wake(_: object = None) -> None:
            if not waiter.done():
                waiter.set_result(None)

        def on_deadline() -> None:
            nonlocal timed_out
            if task.done():
                return  # finished in the same loop iteration: its own result stands
            timed_out = f"timed out after {job.timeout:g}s"
            t.signal.set()
            task.cancel()
            loop.call_later(TIMEOUT_GRACE, wake)

        task.add_done_callback(wake)
        t.deadline = time.time() + job.timeout  # from now, not from before the sandbox opened
        timer = loop.call_later(job.timeout, on_deadline)
        try:
            await waiter
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            timer.cancel()
        if timed_out is None:
            try:
                task.result()
            except Skipped as exc:
                skipped = exc.reason
            except GateFailed:
                pass  # recorded already; the verdict reads it
            except (HarnessStartError, SandboxError) as exc:
                void_reason = str(exc) or type(exc).__name__
            except ValidateError as exc:
                execution_error = str(exc)
            except asyncio.CancelledError:
                execution_error = "the test was cancelled"
            except BaseException as exc:  # noqa: BLE001 - SystemExit etc. fail this trial, not the run
                if isinstance(exc, _Exited):
                    exc = exc.original
                execution_error = exception_line(exc)
                tb = "".join(traceback.format_exception(exc))
        if execution_error is None and state.execution_errors:
            execution_error = state.execution_errors[0]
            if tb is None and ctx is not None:
                tb = ctx.extra.get("traceback")
        if skipped is None and void_reason is None and state.start_error is not None:
            void_reason = state.start_error  # even when the test caught the error and went on
    except (HarnessStartError, SandboxError) as exc:
        void_reason = str(exc) or type(exc).__name__
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - an infrastructure fault voids this trial only
        void_reason = f"internal error: {exception_line(exc)}"
        tb = "".join(traceback.format_exception(exc))
    finally:
        try:
            if state is not None:
                await state.close()
        finally:
            if holder.instance is not None:
                await holder.instance.close()
            flush_partial(log)
            CURRENT_RECORDER.reset(rec_token)
            CURRENT_LOG.reset(log_token)
            CURRENT_EXITS.reset(exits_token)

    task_exits.open = False
    # An exit in a task wins over the TaskExited that whoever awaited the task then raised.
    if task_exits.entries and (execution_error is None or "TaskExited" in execution_error):
        execution_error = f"a task it started raised {task_exits.entries[0][0]}"
        tb = task_exits.entries[0][1]

    verdict, reason = decide_verdict(
        skipped=skipped, void_reason=void_reason, timed_out=timed_out,
        execution_error=execution_error, records=recorder.records,
    )
    events = state.events if state is not None else []
    soft = [r.score for r in recorder.records if r.kind == "soft"]
    result = TrialResult(
        case_id=case.id,
        variant=variant.label,
        trial=job.index,
        verdict=verdict,
        reason=reason,
        duration=time.monotonic() - started,
        assertions=list(recorder.records),
        score=sum(soft) / len(soft) if soft else None,
        error=execution_error,
        traceback=tb,
        logs=logs,
        usage=_usage(events),
        tags=case.tags,
        file=str(case.file.path),
        started_at=started_wall,
    )
    return result, events
