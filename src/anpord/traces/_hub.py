"""The receiver for HTTP agents: servers anpord talks to but did not start, so it cannot point
them at a trial's own receiver. Such a server exports wherever it was told (by default the
standard ``127.0.0.1:4318``); anpord listens there while traced trials of HTTP agents run, sends
each trial's W3C trace id in the ``traceparent`` of its requests, and routes each span that comes
back to the trial whose trace it continues. A span of a trace no running trial owns is refused.

One hub per port per process, shared by the trials that use it, closed when the last one ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ._listen import Listeners
from ._receiver import Receiver, TrialTrace
from ._spans import Span

__all__ = ["DEFAULT_PORT", "join"]

DEFAULT_PORT = 4318  # OTLP/HTTP's own: what an SDK exports to when told nothing
_hubs: dict[int, Hub] = {}


class Hub(Receiver):
    def __init__(self, port: int):
        super().__init__()
        self.port = port
        self.trials: dict[str, TrialTrace] = {}  # by trace id
        self.listeners = Listeners(None)
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def _log(self, message: str) -> None:
        # No one trial sent it: each trial listening here is told (its spans may be the ones lost).
        for service in list(self.trials.values()):
            service._log(message)

    def _route(self, batches: list[tuple[dict[str, Any], list[Span]]]) -> tuple[int, int, str]:
        accepted, foreign = 0, 0
        for _resource, spans in batches:
            by_trial: dict[str, list[Span]] = {}
            for span in spans:
                by_trial.setdefault(span.trace_id, []).append(span)
            for trace_id, mine in by_trial.items():
                service = self.trials.get(trace_id)
                if service is None:
                    foreign += len(mine)
                else:
                    service.take(mine)
                    accepted += len(mine)
        return accepted, foreign, "belong to no running trial's trace"

    def leave(self, service: TrialTrace) -> None:
        self.trials.pop(service.trace_id, None)
        if not self.trials and _hubs.get(self.port) is self:
            del _hubs[self.port]
            self.listeners.close()


def port_of(options: Mapping[str, Any]) -> int:
    port = options.get("traces_port", DEFAULT_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"Variant options traces_port must be a port number, got {port!r}")
    return port


async def join(service: TrialTrace, options: Mapping[str, Any]) -> Hub | None:
    """Listen (or go on listening) on the variant's ``traces_port`` for this trial's trace.
    ``None``, with a line in the trial's log, when the port cannot be had."""
    port = port_of(options)
    hub = _hubs.get(port)
    if hub is None:
        hub = _hubs[port] = Hub(port)
        try:
            await hub.listeners.listen(hub._connection, "hub", port)
        except OSError as exc:
            del _hubs[port]
            hub.ready.set_exception(exc)
            hub.ready.exception()  # retrieved: trials waiting on it read it themselves
            service._log(f"traces: cannot listen on 127.0.0.1:{port} for the agent server's spans: "
                         f"{exc.strerror or exc} (Variant(options={{'traces_port': N}}) picks another)")
            return None
        hub.ready.set_result(None)
    else:
        try:
            await asyncio.shield(hub.ready)
        except OSError:
            return None
    hub.trials[service.trace_id] = service
    return hub
