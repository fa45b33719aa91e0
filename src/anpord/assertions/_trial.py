"""``TrialLog``: the narrow, public face of a running trial for the parts that grade or feed it.

Judges, simulated users and a trial's services (trace receiver, mocks) add to a trial — an
assertion record, a judgment, a model call's usage, a span that arrived — and read its events;
they never need the driver's sessions, turns or harness. The driver's trial state
(``anpord.drive.TrialState``) is one; so is anything else with these members, which keeps those
parts below the driver and testable without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..events import Event
from ._recorder import Recorder

__all__ = ["TrialLog"]


class TrialLog(Protocol):
    @property
    def recorder(self) -> Recorder:
        """The trial's assertion records, judgments and checks still being measured."""
        ...

    @property
    def events(self) -> Sequence[Event]:
        """Every event of the trial so far, in order."""
        ...

    def record_event(self, event: Event) -> None:
        """Add an event to the trial's log, outside any turn."""
        ...

    def record_arrival(self, event: Event) -> None:
        """An event from outside the harness (a span): into the running turn when exactly one
        runs, else into the trial's log."""
        ...

    def record_later(self, produce: Callable[[], Sequence[Event]]) -> None:
        """Arrivals to make into events later (``produce()``), recorded as ``record_arrival``
        records them, before any later event of the trial and by the loop's next turn."""
        ...
