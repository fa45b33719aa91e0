"""The Python harness: ``"python:package.module:attr"`` — an agent callable in the runner's process.

Sessions keep their message history. ``request_input`` parks the agent's coroutine on a future;
the turn settles ``waiting`` and the next turn (the eval's answers) resolves the future and waits
on the same coroutine again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import importlib
import inspect
import itertools
import json
import queue
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

from .._errors import exception_line
from ..agent import SyncTurnContext, TurnCancelled, TurnContext
from ..results._model import ErrorInfo
from .._contain import contains_exits
from .._eager import start_eagerly
from .._loop import IGNORED_CANCELLATION, abandon, abandoned
from ..events import (
    INPUT_REQUESTED,
    INPUT_RESOLVED,
    MESSAGE_COMPLETED,
    Event,
    message_text,
    to_jsonable,
)
from ._protocol import (
    Emit,
    HarnessContext,
    HarnessSpecError,
    HarnessStartError,
    TurnOutcome,
    TurnRequest,
)

__all__ = ["PythonHarness", "resolve", "load_agent", "CANCEL_GRACE", "IGNORED_CANCELLATION"]

# How long a cancelled agent gets to unwind before the turn is reported cancelled regardless.
CANCEL_GRACE = 1.0


def load_agent(target: str, project_dir: Path | None = None) -> Callable[..., Any]:
    """Import ``package.module:attr`` (attr may be dotted). Raises HarnessSpecError with one line."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise HarnessSpecError(f"python harness spec must be 'python:package.module:attr', got 'python:{target}'")
    if project_dir is not None and str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise HarnessSpecError(
            f"python:{target}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise HarnessSpecError(f"python:{target}: {module_name} has no attribute {attr!r}") from None
    if not callable(obj):
        raise HarnessSpecError(f"python:{target}: {attr} is not callable ({type(obj).__name__})")
    return obj


def _is_async_callable(obj: Any) -> bool:
    if inspect.iscoroutinefunction(obj):
        return True
    call = getattr(obj, "__call__", None)
    return call is not None and inspect.iscoroutinefunction(call)


class _DaemonPool:
    """A thread pool whose threads are daemons: a sync agent stuck past its timeout never keeps
    the process alive (concurrent.futures joins its workers at exit)."""

    def __init__(self, size: int):
        self.size = max(1, size)
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._threads = 0
        self._idle = 0
        # Work submitted and not yet taken by a worker: one idle worker serves only one of them,
        # so the pool grows while more is waiting than there are idle workers.
        self._pending = 0
        self._abandoned: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            self._pending += 1
            self._queue.put((fn, future))
            self._grow()
        return future

    def _grow(self) -> None:
        """Start a worker if work may be waiting and no thread is free (call with the lock held)."""
        if self._pending > self._idle and self._threads < self.size:
            self._threads += 1
            threading.Thread(target=self._work, daemon=True, name="anpord-sync-agent").start()

    def abandon(self, future: concurrent.futures.Future[Any]) -> None:
        """The turn gave up on ``future`` (timeout, cancel). If a worker is still running it, that
        worker stops counting against the size, so a replacement can start; the stuck thread
        exits once the agent returns."""
        with self._lock:
            if future.cancel() or future.done() or future in self._abandoned:
                return  # never started, or finished: its worker is free already
            self._abandoned.add(future)
            self._threads -= 1
            self._grow()

    @contextlib.contextmanager
    def parked(self) -> Iterator[None]:
        """A worker waiting on the eval (an input request) lends its slot meanwhile, so parked
        sessions never starve the others."""
        with self._lock:
            self.size += 1
            self._grow()
        try:
            yield
        finally:
            with self._lock:
                self.size -= 1

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            item = self._queue.get()
            with self._lock:
                self._idle -= 1
                if item is not None:
                    self._pending -= 1
            if item is None:
                return
            fn, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - delivered to the awaiting turn
                future.set_exception(exc)
            with self._lock:
                if future in self._abandoned:  # replaced already: this thread is surplus
                    self._abandoned.discard(future)
                    return


class PythonHarness:
    needs_sandbox = False

    def __init__(self, spec: str, agent: Callable[..., Any]):
        self.spec = spec
        self.agent = agent
        self.is_async = _is_async_callable(agent)
        self._pool: _DaemonPool | None = None

    def pool(self, size: int) -> _DaemonPool:
        if self._pool is None:
            self._pool = _DaemonPool(size)
        return self._pool

    async def setup(self) -> None:
        """Run the agent's own ``setup`` hook, if it has one (an agent object's method, or an
        attribute set on the function): once per run, before its first turn."""
        await _call_hook(self.agent, "setup")

    async def teardown(self) -> None:
        """Run the agent's ``teardown`` hook, if it has one: once, when the run ends."""
        await _call_hook(self.agent, "teardown")

    async def prepare_sandbox(self, ctx: HarnessContext) -> None:
        pass  # nothing to put in a trial's sandbox before the agent runs

    async def open_session(self, ctx: HarnessContext, session_id: str) -> "PythonSession":
        return PythonSession(self, ctx, session_id)


def _is_model_outage(exc: BaseException) -> bool:
    """An error from anpord's model client (``chat_agent``, ``ChatClient``) that says the endpoint
    could not answer. Only looked up when the agent has used the client."""
    models = sys.modules.get("anpord.models")
    return models is not None and isinstance(exc, models.ModelError)


async def _call_hook(agent: Any, name: str) -> None:
    # The agent is user code, not a protocol object: its hooks are optional.
    hook = getattr(agent, name, None)
    if hook is None or not callable(hook):
        return
    result = hook()
    if inspect.isawaitable(result):
        await result


class PythonSession:
    _request_ids = itertools.count(1)

    def __init__(self, harness: PythonHarness, ctx: HarnessContext, session_id: str):
        self.harness = harness
        self.ctx = ctx
        self.session_id = session_id
        self.messages: list[dict[str, Any]] = []
        # The agent's run: a task while it runs or waits, a finished future once it ended (or
        # if it ended in its first step, see ``start_eagerly``).
        self._task: asyncio.Future[Any] | None = None
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._emit: Emit = lambda e: None
        self._parked: asyncio.Future[None] | None = None
        self._sync_ctx: SyncTurnContext | None = None
        self._cancel_requested = False

    # -- the agent's side -------------------------------------------------------------------

    def _route(self, event: Event) -> None:
        # Events of a resumed agent belong to whichever turn is current.
        self._emit(event)

    async def _request_input(self, *, prompt: str, options: list[dict[str, str]], tool_name: str | None,
                             input: Any, display: str | None = None) -> Any:
        request_id = f"req_{next(self._request_ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        data = {"session_id": self.session_id, "request_id": request_id, "prompt": prompt,
                "options": options, "tool_name": tool_name, "input": input}
        if display is not None:
            data["display"] = display
        self._route(Event(INPUT_REQUESTED, data))
        if self._parked is not None and not self._parked.done():
            self._parked.set_result(None)
        try:
            return await future
        finally:
            self._pending.pop(request_id, None)

    async def _invoke(self, turn: TurnContext) -> Any:
        agent = self.harness.agent
        if self.harness.is_async:
            return await agent(turn)
        loop = asyncio.get_running_loop()
        pool = self.harness.pool(self.ctx.max_concurrency)
        sync_turn = SyncTurnContext(turn, loop, parked=pool.parked)
        self._sync_ctx = sync_turn
        context = contextvars.copy_context()
        cfuture = pool.submit(lambda: context.run(agent, sync_turn))
        try:
            return await asyncio.wrap_future(cfuture)
        except asyncio.CancelledError:
            sync_turn.cancelled = True  # its next context call raises
            pool.abandon(cfuture)  # a thread stuck in the agent no longer holds a slot
            raise

    # -- the harness protocol ---------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        self._emit = emit
        self._cancel_requested = False
        if request.responses:
            if self._task is None or self._task.done():
                return TurnOutcome("failed", error="there is no pending input request to answer")
            for response in request.responses:
                future = self._pending.get(response.request_id)
                if future is None or future.done():
                    return TurnOutcome("failed", error=f"no pending input request {response.request_id!r}")
                answer = response.option_id if response.option_id is not None else response.value
                emit(Event(INPUT_RESOLVED, {"session_id": self.session_id, **response.to_dict()}))
                future.set_result(answer)
        else:
            if self._task is not None and not self._task.done() and self._task not in abandoned():
                return TurnOutcome(
                    "failed", error="the session is waiting on input requests; answer them with t.respond()"
                )
            self.messages.append({"role": "user", "content": message_text(request.input)})
            turn = TurnContext(
                input=request.input,
                messages=list(self.messages),
                session_id=self.session_id,
                model=self.ctx.model,
                workspace=self.ctx.workspace,
                emit=self._route,
                request_input=self._request_input,
                mocks=self.ctx.extra.get("mocks"),
                model_proxy=self.ctx.extra.get("model_proxy"),
            )
            # Started now: an agent that answers without waiting costs no task of its own. (Its
            # spans, when traced, are recorded before the turn's next event: TrialState.record_later.)
            trial = getattr(asyncio.current_task(), "_anpord_trial", None)
            self._task = start_eagerly(self._guarded(turn), trial)
        return await self._settle()

    @contains_exits
    async def _guarded(self, turn: TurnContext) -> tuple[str, Any, ErrorInfo | None]:
        """Run the agent; never let its exceptions (even SystemExit) escape the task."""
        try:
            value = await self._invoke(turn)
        except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt fail the trial only
            if isinstance(exc, (asyncio.CancelledError, TurnCancelled)) and self._was_cancelled():
                return ("cancelled", None, None)
            tb = "".join(traceback.format_exception(exc))
            self.ctx.log(f"agent raised:\n{tb}")
            if isinstance(exc, (asyncio.CancelledError, TurnCancelled)):
                # Raised by the agent itself: a crash, which must not read as a cancel (a test
                # would take it for one it asked for).
                message = f"agent raised {exception_line(exc)} although its turn was not cancelled"
                return ("failed", None, ErrorInfo("agent", message, tb))
            if _is_model_outage(exc):
                # The model endpoint gave no answer (down, rate limited, broken): nothing about
                # the agent was measured.
                return ("void", None, ErrorInfo("harness", f"the model call failed: {exception_line(exc)}", tb))
            return ("failed", None, ErrorInfo("agent", f"agent raised {exception_line(exc)}", tb))
        return ("completed", value, None)

    def _was_cancelled(self) -> bool:
        """Whether this turn's cancellation was asked for: by the test (``cancel``) or by the
        runner cancelling the agent's task (a timeout, the session closing)."""
        task = asyncio.current_task()
        return self._cancel_requested or (task is not None and task.cancelling() > 0)

    async def _settle(self) -> TurnOutcome:
        assert self._task is not None
        task = self._task
        if not task.done():
            # One future resolved by whichever comes first: the agent finishing or parking.
            loop = asyncio.get_running_loop()
            self._parked = settled = loop.create_future()
            if self._pending and any(not f.done() for f in self._pending.values()):
                # Only some of several requests were answered: the agent still waits on the rest.
                settled.set_result(None)

            def on_done(_: object) -> None:
                if not settled.done():
                    settled.set_result(None)

            task.add_done_callback(on_done)
            try:
                await settled
                if not task.done():
                    # Let sibling requests (asyncio.gather of several approvals) register first.
                    for _ in range(3):
                        await asyncio.sleep(0)
            except asyncio.CancelledError:
                await self._abort()
                raise
            finally:
                task.remove_done_callback(on_done)
        if not self._task.done():
            if self._task in abandoned():
                # It ignored the cancel: the turn ends without it (see _give_up).
                return TurnOutcome("cancelled", error=f"cancelled; {IGNORED_CANCELLATION}")
            return TurnOutcome("waiting")
        if self._task.cancelled():
            # Cancelled before it ran a step: _guarded never saw the CancelledError to report it.
            return TurnOutcome("cancelled", error="cancelled")
        status, value, failure = self._task.result()
        if self._cancel_requested and status != "completed":
            status, failure = "cancelled", None
        if status == "cancelled":
            return TurnOutcome("cancelled", error="cancelled")
        if status == "void" and failure is not None:
            raise HarnessStartError(failure.message)
        if failure is not None:
            return TurnOutcome("failed", error=failure.message, failure=failure)
        if value is None:
            return TurnOutcome("completed")
        if isinstance(value, str):
            message, data = value, None
        else:
            try:
                data = to_jsonable(value)
            except RecursionError:
                # Nested thousands deep: kept as the records keep it, cut with a note where a
                # reader would give up, rather than failing the turn at the test's line.
                from ..results._encode import decode, encode

                data = decode(encode(value))
            message = json.dumps(data, ensure_ascii=False)
        self.messages.append({"role": "assistant", "content": message})
        self._route(Event(MESSAGE_COMPLETED, {"session_id": self.session_id, "role": "assistant", "text": message}))
        return TurnOutcome("completed", message=message, data=data)

    async def _abort(self) -> None:
        task = self._task
        if task is None or task.done() or task in abandoned():
            return
        if self._sync_ctx is not None:
            self._sync_ctx.cancelled = True
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), CANCEL_GRACE)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
            pass
        self._give_up(task)

    def _give_up(self, task: asyncio.Future[Any]) -> None:
        """If ``task`` is still running after its cancel and the grace period, it caught the
        CancelledError and carried on: it is left running, never waited for again (the run
        still ends, see runner._loop), a turn waiting on it ends ``cancelled``, and the trial's
        log says so."""
        if task.done() or task in abandoned() or task is not self._task:
            return
        abandon(task)
        self.ctx.log(f"{IGNORED_CANCELLATION} for {CANCEL_GRACE:g}s: it was abandoned, still running")
        if self._parked is not None and not self._parked.done():
            self._parked.set_result(None)

    async def cancel(self) -> bool:
        task = self._task
        if task is None or task.done():
            return False
        self._cancel_requested = True
        for future in list(self._pending.values()):
            future.cancel()
        if self._sync_ctx is not None:
            self._sync_ctx.cancelled = True
        # The CancelledError reaches the agent's coroutine inside _guarded, which reports the turn
        # cancelled; a task cancelled before its first step is reported so by _settle.
        task.cancel()
        asyncio.get_running_loop().call_later(CANCEL_GRACE, self._give_up, task)
        return True

    async def close(self) -> None:
        await self._abort()
        # Let go of the conversation now: the session sits in reference cycles (its emit and
        # print sinks are bound methods), which only the cyclic collector's rare full passes
        # free, and a long-lived server (anpord serve) would hold every deleted session's
        # messages — large inputs included — until then.
        self.messages.clear()
        self._pending.clear()
        self._emit = lambda e: None
        self._sync_ctx = None
        if self._task is not None and self._task.done():
            self._task = None


def resolve(spec: str, project_dir: Path | None = None) -> PythonHarness:
    target = spec[len("python:"):]
    return PythonHarness(spec, load_agent(target, project_dir))
