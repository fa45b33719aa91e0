"""The receiving end of OTLP/HTTP, below every trial's trace service: the ``Receiver`` base (read
an export, answer it, hand its spans on), ``CURRENT_TRACE`` (the running trial's trace, for
spans made in this process) and ``TrialTrace``, what ``_hub`` and ``_inprocess`` need of a
trial's trace service. The service itself (``_service``) stands on top of them all.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any, Protocol

from ._decode import decode_json, decode_protobuf, encode_response
from ._http import TRACES_PATH, Reply, Request, serve_connection
from ._spans import Span, TraceInputError

__all__ = ["CURRENT_TRACE", "LOG_REFUSALS", "Receiver", "TrialTrace"]


class TrialTrace(Protocol):
    """One trial's trace, as the routers see it: the hub routes by ``trace_id`` to ``take``,
    the in-process processor hands each ended SDK span to ``arrive``."""

    trace_id: str

    def take(self, spans: list[Span]) -> None: ...

    def arrive(self, span: Any) -> None: ...

    def _log(self, message: str) -> None: ...


# The running trial's trace, for spans made in this process (see _inprocess).
CURRENT_TRACE: contextvars.ContextVar[TrialTrace | None] = contextvars.ContextVar(
    "anpord_trial_trace", default=None
)
# Refusals logged one by one per trial; past that they are counted.
LOG_REFUSALS = 10
INLINE_DECODE = 256 * 1024  # bytes of export decoded on the event loop; bigger ones in a thread
_PROTOBUF, _JSON = "application/x-protobuf", "application/json"
OTHER_SIGNALS = ("/v1/metrics", "/v1/logs")


class Receiver:
    """An OTLP/HTTP trace endpoint: reads an export, answers it, hands its spans to ``_route``."""

    def __init__(self) -> None:
        self._refusals = self._other_signals = self._busy = 0
        self._idle: asyncio.Event | None = None

    def _log(self, message: str) -> None:
        raise NotImplementedError

    def _route(self, batches: list[tuple[dict[str, Any], list[Span]]]) -> tuple[int, int, str]:
        """Take what is this receiver's: (spans accepted, spans refused, why they were)."""
        raise NotImplementedError

    def _refuse(self, reply: Reply) -> Reply:
        self._refusals += 1
        if self._refusals <= LOG_REFUSALS:
            self._log(f"traces: refused an export: {reply.body.decode('utf-8', 'replace')}")
        return reply

    async def _handle(self, request: Request) -> Reply:
        if request.path in OTHER_SIGNALS and request.method == "POST":
            # An SDK exporting every signal to OTEL_EXPORTER_OTLP_ENDPOINT: taken, not kept, so
            # that it does not retry or print errors for the trial's log.
            if not self._other_signals:
                self._log(f"traces: {request.path} exports are taken but not kept (traces only)")
            self._other_signals += 1
            ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            return Reply(200, b"" if ctype == _PROTOBUF else b"{}", ctype or _JSON)
        if request.path != TRACES_PATH:
            return Reply(404, b"this receiver takes traces only, at " + TRACES_PATH.encode())
        if request.method != "POST":
            return Reply(405, b"POST an OTLP trace export")
        ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype not in (_PROTOBUF, _JSON):
            return self._refuse(Reply(400, f"Content-Type {ctype or 'none'!r} is not OTLP/HTTP "
                                           f"({_PROTOBUF} or {_JSON})".encode()))
        protobuf = ctype == _PROTOBUF
        self._busy += 1
        try:
            decode = decode_protobuf if protobuf else decode_json
            try:
                if len(request.body) > INLINE_DECODE:
                    # A big export takes tens of milliseconds to decode: not on the loop every
                    # trial shares.
                    batches = await asyncio.to_thread(decode, request.body)
                else:
                    batches = decode(request.body)
            except TraceInputError as exc:
                return self._refuse(Reply(400, str(exc).encode()))
            accepted, foreign, why = self._route(batches)
        finally:
            self._busy -= 1
            if not self._busy and self._idle is not None:
                self._idle.set()
        if foreign:
            message = f"{foreign} span(s) {why}: refused"
            if not accepted:
                return self._refuse(Reply(400, message.encode()))
            self._refusals += 1
            if self._refusals <= LOG_REFUSALS:
                self._log(f"traces: {message}")
            return Reply(200, encode_response(protobuf, foreign, message), ctype)
        return Reply(200, encode_response(protobuf), ctype)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_connection(reader, writer, self._handle, self._refuse)
