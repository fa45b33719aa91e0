"""The ``Reporter`` protocol: how a run tells the world what is happening."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from .._errors import exception_line
from .._registry import PluginError, Registry
from ._model import RunSummary, TrialResult

__all__ = ["REPORTERS", "Reporter", "ReporterBase", "RunInfo", "PlannedCell", "check_reporter", "reporter_of"]


@dataclass(frozen=True)
class PlannedCell:
    case_id: str
    variant: str
    trials: int
    file: str | None = None


@dataclass
class RunInfo:
    run_id: str
    run_dir: str
    variants: list[str]
    cells: list[PlannedCell] = field(default_factory=list)

    @property
    def total_trials(self) -> int:
        return sum(c.trials for c in self.cells)

    @property
    def case_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.cells:
            seen.setdefault(c.case_id, None)
        return list(seen)


@runtime_checkable
class Reporter(Protocol):
    """Every method is called from the runner's event loop thread; keep them quick."""

    def on_run_start(self, run: RunInfo) -> None: ...

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None: ...

    def on_log(self, case_id: str, variant: str, trial: int, message: str) -> None: ...

    def on_trial_end(self, result: TrialResult) -> None: ...

    def on_run_end(self, summary: RunSummary, results: Sequence[TrialResult]) -> None: ...


REPORTER_METHODS = ("on_run_start", "on_trial_start", "on_log", "on_trial_end", "on_run_end")


class ReporterBase:
    """Every ``Reporter`` method, doing nothing: subclass it and define the ones you need."""

    def on_run_start(self, run: RunInfo) -> None:
        pass

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None:
        pass

    def on_log(self, case_id: str, variant: str, trial: int, message: str) -> None:
        pass

    def on_trial_end(self, result: TrialResult) -> None:
        pass

    def on_run_end(self, summary: RunSummary, results: Sequence[TrialResult]) -> None:
        pass


def check_reporter(obj: Any) -> Reporter:
    """``obj`` if it is a ``Reporter`` (all five methods); else ``PluginError`` in one line
    naming what it lacks."""
    if isinstance(obj, Reporter):
        return obj
    missing = [m for m in REPORTER_METHODS if not callable(getattr(obj, m, None))]
    raise PluginError(
        f"reporter {type(obj).__name__} lacks {', '.join(missing)}: a reporter has all five Reporter "
        "methods (subclass anpord.results.ReporterBase to define only the ones it needs)"
    )


# Reporters by name (``--reporter NAME[:ARG]``, or a name in ``define_eval_config(reporters=...)``);
# packages add them through ``anpord.reporters`` entry points. Each entry is a factory — usually
# the reporter's class — called with no argument, or with the text after the name's ``:``. The
# console, ``--json`` and ``--junit`` are the built-in reports; they are flags, not names here.
_REPORTERS: dict[str, Callable[..., Reporter] | str] = {}
REPORTERS: Registry[Callable[..., Reporter]] = Registry("anpord.reporters", _REPORTERS, kind="reporter")


def reporter_of(spec: Any) -> Reporter:
    """A reporter from a config entry: an object is used as it is; a ``"name"`` or
    ``"name:arg"`` string is made by the named reporter's factory. Unknown, not loading, or a
    factory that raises: ``PluginError`` with one line."""
    if not isinstance(spec, str):
        return check_reporter(spec)
    name, sep, arg = spec.partition(":")
    factory = REPORTERS.get(name)
    try:
        made = factory(arg) if sep else factory()
    except Exception as exc:  # noqa: BLE001 - the plugin's own failure, reported in one line
        raise PluginError(f"reporter {spec!r} could not be made: {exception_line(exc)}") from exc
    return check_reporter(made)
