"""The trace service: one OTLP/HTTP receiver per trial (``Variant(traces="otlp")``).

It listens on ``127.0.0.1`` (and, for a sandbox with its network closed, on a unix socket bridged
in), points the agent at itself through the standard ``OTEL_*`` variables, and turns each span
that arrives into the trial's events as it arrives (``_map``). Python agents, which run in this
process, reach it through ``_inprocess`` instead: their spans are routed here by context; HTTP
agents, servers of their own, through ``_hub``: by the trial's trace id, sent in ``traceparent``.

Faults: a request it cannot read gets a 400 saying why and a line in the trial's log, and the
trial is judged on what did arrive; spans naming another trial (``anpord.trial.id``) are refused;
spans arriving once the trial's checks have run are not kept, and the log says how many.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random
import threading
from typing import TYPE_CHECKING, Any

from ..events import Event
from ._decode import prewarm_protobuf
from ._http import TRACES_PATH
from ._hub import Hub, join
from ._inprocess import install, sdk_events
from ._listen import Listeners
from ._map import span_events
from ._receiver import CURRENT_TRACE, LOG_REFUSALS, Receiver, TrialTrace
from ._spans import (
    MAX_ARRAY,
    MAX_ATTRIBUTES,
    MAX_JSON_STRING,
    MAX_STRING,
    TRIAL_ATTRIBUTE,
    Clips,
    Span,
)

if TYPE_CHECKING:
    from .._service_protocol import ServiceContext

__all__ = ["SCHEDULE_DELAY_MS", "TraceService"]

# OTEL_BSP_SCHEDULE_DELAY given to agents: a batch leaves within this many ms of its first span,
# so what a turn did has arrived soon after it settles (a program's exit flushes it anyway).
SCHEDULE_DELAY_MS = 100
# Spans kept per trial: an agent exporting in a loop must not grow the runner without bound (each
# request is bounded by _http.MAX_BODY; their number is not). Past it spans are counted, not kept.
MAX_SPANS = 100_000
SETTLE_TIMEOUT = 2.0  # seconds settle() waits for exports being read

# Trial, trace and span ids: unique, not secret (nothing is guarded by them), so drawn from a
# generator of this module's, seeded from the system's random source, instead of a system call
# each (``secrets``), which under load costs a trial several microseconds. Not ``random``'s own:
# an agent seeding that for its own reproducibility would make every run's ids alike. Reseeded
# in a forked child, so two processes never draw the same ids.
_ids = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.seed)


def _new_id(bits: int) -> str:
    """``bits`` random bits as lowercase hex, never all zeros (W3C trace context's invalid id)."""
    return f"{_ids.getrandbits(bits) or 1:0{bits // 4}x}"


class TraceService(Receiver):
    name = "traces"
    needs_sandbox = False

    def __init__(self) -> None:
        super().__init__()
        # The trial's id (its spans' resource attribute) and its W3C trace id: agent servers
        # anpord only talks to (HTTP agents) are sent it in ``traceparent``, and their spans come
        # back in it (see _hub).
        self.trial_id, self.trace_id = _new_id(64), _new_id(128)
        self._hub: Hub | None = None
        self._parents: dict[str, asyncio.Event] = {}  # traceparent span ids sent, by whether answered
        self.port = 0
        self._ctx: ServiceContext | None = None
        self._listeners: Listeners | None = None
        self._open = True  # spans are folded in until the trial's checks have run
        self._seen: set[tuple[str, str]] = set()  # an exporter retrying resends a batch
        self._late = 0
        self._kept = self._over = 0
        self._token: contextvars.Token[TrialTrace | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0  # the loop's thread: spans ended elsewhere are handed to it
        self._unreadable = 0  # SDK spans whose reading raised (logged once)
        self._held: list[Any] = []  # SDK spans ended on the loop, not read yet (see arrive)
        self._clips = Clips()  # what the limits cut of this process's spans (logged once)
        self._clip_logged = False

    # -- the TrialService protocol ------------------------------------------------------------

    async def start(self, ctx: ServiceContext) -> None:
        self._ctx = ctx
        self._loop, self._thread = asyncio.get_running_loop(), threading.get_ident()
        harness = ctx.variant.harness or ""
        sandbox = ctx.sandbox
        if sandbox is None and harness.startswith(("python:", "http://", "https://")):
            # In-process and remote agents start no program of the trial's: nothing would read
            # the endpoint, so there is none (their spans come by context, or by trace id).
            self._token = CURRENT_TRACE.set(self)
            await self._join(harness, ctx)
            return
        # The agent's program exports OTLP/protobuf unless told otherwise: its classes are
        # imported while the program starts.
        prewarm_protobuf()
        self._listeners = Listeners(sandbox)
        self.port = await self._listeners.listen(self._connection, "otlp")
        self._token = CURRENT_TRACE.set(self)
        await self._join(harness, ctx)

    async def _join(self, harness: str, ctx: ServiceContext) -> None:
        """Where spans of agents that are not pointed at this receiver come from."""
        if harness.startswith("python:"):
            install(ctx.log)
        elif harness.startswith(("http://", "https://")):
            prewarm_protobuf()  # the agent server's exports come to the shared receiver
            try:
                self._hub = await join(self, ctx.variant.options)
            except ValueError as exc:  # a bad traces_port: the harness refuses it too
                ctx.log(f"traces: {exc}")

    def env(self) -> dict[str, str]:
        if not self.port:
            return {}
        endpoint = f"http://127.0.0.1:{self.port}"
        mine = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint + TRACES_PATH,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_BSP_SCHEDULE_DELAY": str(SCHEDULE_DELAY_MS),
            "OTEL_RESOURCE_ATTRIBUTES": f"{TRIAL_ATTRIBUTE}={self.trial_id}",
        }
        declared = dict(self._ctx.variant.env) if self._ctx is not None else {}
        # The variant may choose the protocol, the delay, more resource attributes; the
        # endpoints and the trial's attribute are the receiver's.
        for key in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                    "OTEL_TRACES_EXPORTER", "OTEL_BSP_SCHEDULE_DELAY"):
            if key in declared:
                mine[key] = str(declared[key])
        if "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" not in declared:  # the signal's own would win
            mine["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = mine["OTEL_EXPORTER_OTLP_PROTOCOL"]
        extra = str(declared.get("OTEL_RESOURCE_ATTRIBUTES", "")).strip(", ")
        if extra:
            mine["OTEL_RESOURCE_ATTRIBUTES"] = f"{extra},{mine['OTEL_RESOURCE_ATTRIBUTES']}"
        return mine

    async def settle(self) -> None:
        """Wait (briefly) for exports being read right now: their spans belong to the checks."""
        if self._listeners is None and self._hub is None:
            # A Python agent's: every span it ended is in hand, none is on its way. Held ones
            # are recorded at the loop's next turn, which this waits for.
            if self._held:
                await asyncio.sleep(0)
            return
        await asyncio.sleep(0)
        if self._busy:
            self._idle = self._idle or asyncio.Event()
            try:
                await asyncio.wait_for(self._idle.wait(), SETTLE_TIMEOUT)
            except TimeoutError:
                pass

    def seal(self) -> None:
        self._open = False

    async def stop(self) -> None:
        self._open = False
        if self._held:  # never recorded: the trial ended before the loop turned
            self._late += len(self._held)
            self._held = []
        if self._listeners is not None:
            self._listeners.close()
        if self._hub is not None:
            self._hub.leave(self)
            self._hub = None
        if self._token is not None:
            try:
                CURRENT_TRACE.reset(self._token)
            except ValueError:  # stopped from another context: it ends with its task anyway
                pass
            self._token = None
        if self._ctx is not None:
            if self._late:
                self._ctx.log(f"traces: {self._late} span(s) arrived after the trial's checks ran: not kept")
            if self._over:
                self._ctx.log(f"traces: {self._over} span(s) past the trial's {MAX_SPANS} not kept")
            if self._refusals > LOG_REFUSALS:
                self._ctx.log(f"traces: {self._refusals} export requests refused in all")

    # -- spans ------------------------------------------------------------------------------

    def take(self, spans: list[Span]) -> None:
        """Fold spans of this trial into its events (or count them, once its checks have run)."""
        if self._ctx is None:
            return
        if threading.get_ident() != self._thread and self._loop is not None:
            # A sync agent's thread: the trial's events belong to its loop. Handed over in order,
            # ahead of the agent's own return (which reaches the loop the same way, later).
            try:
                self._loop.call_soon_threadsafe(self.take, spans)
            except RuntimeError:  # the loop is closed: the trial is long over
                pass
            return
        new = self._unseen(spans)
        for span in self._fold(new):  # only spans kept are remembered: a refused one costs nothing lasting
            self._seen.add((span.trace_id, span.span_id))
        if self._parents:
            for span in new:
                answered = self._parents.get(span.parent_span_id or "")
                if answered is not None:
                    answered.set()

    def _unseen(self, spans: list[Span]) -> list[Span]:
        """The spans not kept before, once each: an exporter retrying resends a batch."""
        seen, batch, new = self._seen, set(), []
        for span in spans:
            key = (span.trace_id, span.span_id)
            if key not in seen and key not in batch:
                batch.add(key)
                new.append(span)
        return new

    def arrive(self, span: Any) -> None:
        """An SDK span of this trial's Python agent, just ended (``_inprocess``). On the loop's
        thread it is held, and the spans held are read into events together when the trial
        records its next event, or at the loop's next turn (``ServiceContext.record_later``):
        in the turn that made them, in the order they ended, as if each had been recorded at
        once. Ended in a sync agent's thread, it is read there and its events handed to the
        loop in order, ahead of the agent's return (which reaches the loop the same way, later)."""
        if threading.get_ident() != self._thread:
            events = self._read(span)
            if events is not None and self._loop is not None:
                try:
                    self._loop.call_soon_threadsafe(self._arrived, events)
                except RuntimeError:  # the loop is closed: the trial is long over
                    pass
            return
        if not self._open:
            self._late += 1  # not read: it would be kept nowhere
            return
        ctx = self._ctx
        if ctx is None:
            return
        if ctx.record_later is None:
            events = self._read(span)
            if events is not None:
                self._arrived(events)
            return
        if self._kept + len(self._held) >= MAX_SPANS:
            self._over += 1  # not held: an agent ending spans in a loop must not grow the runner
            return
        if not self._held:
            ctx.record_later(self._held_events)
        self._held.append(span)

    def _held_events(self) -> list[Event]:
        """The held spans' events, oldest first (``record_later``'s producer)."""
        held, self._held = self._held, []
        if not self._open:  # the trial's checks ran before they were read
            self._late += len(held)
            return []
        events: list[Event] = []
        read = self._read
        for span in held:
            made = read(span)
            if made is not None:
                events += made
        self._kept += len(held)
        return events

    def _read(self, span: Any) -> list[Event] | None:
        clips = self._clips
        try:
            events = sdk_events(span, clips)
        except Exception as exc:  # noqa: BLE001 - the agent's own code ended the span: never fail it
            self._unreadable += 1
            if self._unreadable == 1:
                self._log(f"traces: a span of this process could not be read: {type(exc).__name__}: {exc}")
            return None
        if clips.first and not self._clip_logged:
            self._clipped(getattr(span, "name", ""), clips.first)
        return events

    def _clipped(self, span: str, key: str) -> None:
        """Once per trial: a value was cut to the limits, so a check on it may not match."""
        self._clip_logged = True
        self._log(f"traces: span {span!r}: attribute {key!r} was cut to the receiver's limits (strings "
                  f"{MAX_STRING} characters, JSON tool arguments and results {MAX_JSON_STRING}, arrays "
                  f"{MAX_ARRAY} elements, maps {MAX_ATTRIBUTES} keys); later cuts are not logged")

    def _arrived(self, events: list[Event]) -> None:
        """One SDK span's events, on the loop."""
        ctx = self._ctx
        if ctx is None:
            return
        if not self._open:
            self._late += 1
            return
        if self._kept >= MAX_SPANS:
            self._over += 1
            return
        self._kept += 1
        record = ctx.record
        for event in events:
            record(event)

    def _fold(self, spans: list[Span]) -> list[Span]:
        """Record the spans the trial still takes; those it kept."""
        ctx = self._ctx
        if ctx is None or not spans:
            return []
        if not self._open:
            self._late += len(spans)
            return []
        room = MAX_SPANS - self._kept
        if len(spans) > room:
            self._over += len(spans) - max(room, 0)
            spans = spans[:max(room, 0)]
        self._kept += len(spans)
        events: list[Event] = []
        for span in spans:
            if span.clipped and not self._clip_logged:
                self._clipped(span.name, span.clipped)
            events += span_events(span)
        if ctx.record_later is not None:
            # One batch for the export, recorded as each event at once would be (in order,
            # before the trial's next event): one look-up of the running turn, not one an event.
            ctx.record_later(lambda: events)
        else:
            for event in events:
                ctx.record(event)
        return spans

    # -- HTTP agents (W3C trace context) ---------------------------------------------------------

    def traceparent(self) -> tuple[str, str]:
        """A ``traceparent`` header for one request to an agent server, and its span id."""
        span_id = _new_id(64)
        self._parents[span_id] = asyncio.Event()
        return f"00-{self.trace_id}-{span_id}-01", span_id

    async def answered(self, span_id: str, timeout: float) -> bool:
        """Wait until a span the server made for that request (its child) has arrived: the
        server's exporter sends a request's spans together, children before their parent."""
        event = self._parents.get(span_id)
        if event is None:
            return False
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except TimeoutError:
            return False

    # -- the receiver ---------------------------------------------------------------------------

    def _log(self, message: str) -> None:
        if self._ctx is not None:
            self._ctx.log(message)

    def _route(self, batches: list[tuple[dict[str, Any], list[Span]]]) -> tuple[int, int, str]:
        accepted, foreign = 0, 0
        for resource, spans in batches:
            owner = resource.get(TRIAL_ATTRIBUTE)
            if owner is not None and owner != self.trial_id:
                foreign += len(spans)
                continue
            self.take(spans)
            accepted += len(spans)
        return accepted, foreign, f"name another trial ({TRIAL_ATTRIBUTE})"
