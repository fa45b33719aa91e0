"""The seam between a trial and the services it runs (its trace receiver, its mocks): what a
service is given when it starts, and what it must do. Kept below both the runner that starts
services and the packages that implement them, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .events import Event

if TYPE_CHECKING:
    from .sandboxes._protocol import SandboxInstance

__all__ = ["ServiceContext", "ServiceVariant", "TrialService"]


class ServiceVariant(Protocol):
    """What a service reads of the trial's variant (an ``anpord.Variant`` is one)."""

    @property
    def harness(self) -> str | None: ...

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


@dataclass
class ServiceContext:
    variant: ServiceVariant
    label: str  # `case variant #n`
    sandbox: SandboxInstance | None
    log: Callable[[str], None]
    record: Callable[[Event], None]  # adds an event to the trial's record (see ``deliver``)
    key: tuple[str, str, int] | None = None  # (case, variant, trial index)
    replay: str | None = None  # ``--replay RUN``: the run folder the model proxy answers from
    # Events made later, in one batch (``deliver_later``): a service with many arrivals in hand
    # (a trace's spans) makes and records them together. Without it, ``record`` each at once.
    record_later: Callable[[Callable[[], Sequence[Event]]], None] | None = None
    timeout: float | None = None  # the trial's, in seconds: no wait of its services outlasts it


class TrialService(Protocol):
    name: str
    # Whether the trial's commands use programs this service puts in the sandbox (a CLI mock on
    # their PATH): the sandbox then opens with the trial even when nothing else needs it.
    needs_sandbox: bool

    async def start(self, ctx: ServiceContext) -> None: ...

    def env(self) -> dict[str, str]: ...

    async def settle(self) -> None: ...

    def seal(self) -> None: ...

    async def stop(self) -> None: ...
