"""Per-trial services: programs of anpord's own that a trial's agent talks to over loopback (its
trace receiver; the same seam suits HTTP mocks and a model proxy).

A ``TrialService`` is started once the trial's sandbox is open and before the agent runs; what its
``env()`` returns is added to the environment of every program the sandbox starts; its
``settle()`` runs before the trial's checks (what is on its way has arrived); ``seal()`` once they
have run (what arrives later is not part of the trial); ``stop()`` once the trial's programs are
gone, whatever happened. A sandbox that closes the network bridges the service in
(``SandboxInstance.loopback_bridged``, ``bridge_loopback``); ``traces._listen.Listeners`` opens a
service's ports that way and closes them with their connections.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import exception_line
from .._service_protocol import ServiceContext, TrialService
from ..events import Event
from ..proxy import wants_proxy

if TYPE_CHECKING:
    from ..authoring._config import Variant
    from ..assertions import TrialLog

__all__ = ["ServiceContext", "TrialService", "TrialServices", "close_run_services", "deliver", "deliver_later",
           "discard_early_run_services", "hold_run_services", "start_run_services_early",
           "wants_services"]


def deliver(state: TrialLog | None, event: Event, early: list[Event]) -> None:
    """A service's event, into the trial (``TrialLog.record_arrival``); before the trial's state
    exists, kept in ``early``."""
    if state is None:
        early.append(event)
    else:
        state.record_arrival(event)


def deliver_later(state: TrialLog | None, produce: Callable[[], Sequence[Event]], early: list[Event]) -> None:
    """A service's events made later (``TrialLog.record_later``); before the trial's state
    exists, made now and kept in ``early``."""
    if state is None:
        early.extend(produce())
    else:
        state.record_later(produce)


def hold_run_services() -> None:
    """A run (or a worker) starts on the running loop: what its trials share — the model proxy's
    server — stays open between trials once started, until ``close_run_services()``."""
    from ..proxy import hold_shared_server

    hold_shared_server()


def start_run_services_early(variants: Iterable[Variant]) -> None:
    """A run about to start in this process: start now the shared services its trials will need,
    while the run still loads (the model proxy's process takes ~0.2 s to be ready)."""
    if any(wants_proxy(v) for v in variants):
        from ..proxy import start_shared_server_early

        start_shared_server_early()


def discard_early_run_services() -> None:
    """The run has ended: what ``start_run_services_early`` started and no trial used ends too."""
    if "anpord.proxy._server" in sys.modules:
        from ..proxy import discard_early_server

        discard_early_server()


async def close_run_services() -> None:
    """The run has ended: close what its trials shared."""
    from ..proxy import close_shared_server

    await close_shared_server()


def wants_services(variant: Variant, mocks: tuple[Any, ...] = ()) -> bool:
    """Whether a trial of ``variant`` with ``mocks`` runs any service: most run none, and then
    the trial skips every service step."""
    return bool(mocks) or variant.traces == "otlp" or wants_proxy(variant)


def _wanted(variant: Variant, mocks: tuple[Any, ...] = ()) -> list[TrialService]:
    services: list[TrialService] = []
    if wants_proxy(variant):
        from ..proxy._service import ModelProxyService

        services.append(ModelProxyService())
    if getattr(variant, "traces", None) == "otlp":
        from ..traces import TraceService

        services.append(TraceService())
    if mocks:
        from ..mocks._service import MockService

        services.append(MockService(mocks))
    return services


class TrialServices:
    """The services one trial runs, started and stopped together."""

    def __init__(self, variant: Variant, mocks: tuple[Any, ...] = ()):
        self.services = _wanted(variant, mocks)
        self._started: list[TrialService] = []
        self.started = False

    @property
    def needs_sandbox(self) -> bool:
        """A service whose programs the trial's commands find on their PATH (a CLI mock): the
        sandbox opens with the trial, so every command it starts, checks' included, has them."""
        return any(s.needs_sandbox for s in self.services)

    def mock_handles(self) -> dict[str, Any]:
        """The trial's running mocks by name (``turn.mocks``), once started."""
        return next((dict(s.handles) for s in self.services if s.name == "mocks"), {})  # type: ignore[attr-defined]

    def proxy_handle(self) -> Any:
        """The trial's model proxy (``ProxyHandle``), once started; None without one."""
        return next((s.handle for s in self.services if s.name == "model_proxy"), None)  # type: ignore[attr-defined]

    def void_reason(self) -> str | None:
        """Why the trial could not be measured, when a service says so (a replay's missing call)."""
        return next((r for s in self.services if (r := getattr(s, "void_reason", None))), None)

    async def start(self, ctx: ServiceContext) -> None:
        self.started = True
        if ctx.replay is not None and ctx.key is not None:
            from ..proxy._replay import ReplayCalls

            for service in self.services:
                if service.name == "model_proxy":
                    service.replay = ReplayCalls.read(Path(ctx.replay).name, ctx.replay, ctx.key)  # type: ignore[attr-defined]
        for service in self.services:
            await service.start(ctx)
            self._started.append(service)
            if ctx.sandbox is not None:
                ctx.sandbox.extend_environment(service.env())  # type: ignore[attr-defined]

    async def settle(self) -> None:
        for service in self._started:
            await service.settle()

    def seal(self) -> None:
        for service in self._started:
            service.seal()

    def seal_traces(self) -> None:
        """Seal the trace receiver alone: a declarative case's checks begin. Mocks and the model
        proxy stay open for them (a verifier may call a mock)."""
        for service in self._started:
            if service.name == "traces":
                service.seal()

    async def stop(self, log: Callable[[str], None]) -> None:
        started, self._started = self._started, []
        for service in reversed(started):
            try:
                await service.stop()
            except Exception as exc:  # noqa: BLE001 - a service fault never hides the verdict
                log(f"{service.name}: stopping failed: {exception_line(exc)}")
