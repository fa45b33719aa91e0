"""``--replay RUN``: a trial's model calls answered from a run's record instead of the upstream.

The recording is the ``model.called`` events the proxy wrote in the replayed run (``source:
"proxy"``), for the same trial (case, variant, trial index). A request is answered by the first
call of that trial not answered yet whose request key matches (``_record.request_key``), so a
conversation replays in order and a repeated request gets each recorded answer in turn. A
request the recording does not hold — or holds only unanswered, the agent having given up on it
— is answered 400 and makes the trial ``void``, naming it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..events import MODEL_CALLED
from ._providers import Route
from ._record import ABANDONED, KEPT

__all__ = ["ReplayCalls", "recorded_calls"]

_LOADED: dict[str, dict[tuple[str, str, int], list[Mapping[str, Any]]]] = {}
_LOCK = threading.Lock()


def recorded_calls(run_dir: str) -> dict[tuple[str, str, int], list[Mapping[str, Any]]]:
    """Every trial's proxied calls in the run at ``run_dir``, oldest first (read once per process)."""
    with _LOCK:
        found = _LOADED.get(run_dir)
        if found is None:
            from ..results._reader import read_run

            reading = read_run(Path(run_dir))
            found = {}
            for trial in reading.trials:
                calls = [e.data for e in reading.events(trial)
                         if e.type == MODEL_CALLED and e.data.get("source") == "proxy"]
                if calls:
                    found[trial.key] = calls
            _LOADED[run_dir] = found
        return found


class ReplayCalls:
    """One trial's recorded calls, taken as the trial's requests come."""

    def __init__(self, run: str, key: tuple[str, str, int], calls: Sequence[Mapping[str, Any]]):
        self.run, self.key = run, key
        self.calls = list(calls)
        self.used = [False] * len(self.calls)
        self.asked = 0

    @classmethod
    def read(cls, run: str, run_dir: str, key: tuple[str, str, int]) -> ReplayCalls:
        """Trial ``key``'s calls as run ``run`` (in ``run_dir``) recorded them. The proxy's
        process is handed the calls the run read, not the run's folder."""
        return cls(run, key, recorded_calls(run_dir).get(key, ()))

    def take(self, request_key: str) -> Mapping[str, Any] | None:
        """The first recorded call not used yet that asked this and got its answer. A call the
        agent gave up on (its own timeout) holds no answer: a replay never invents one from it,
        and the agent's retry, when recorded, is what answers."""
        self.asked += 1
        for i, call in enumerate(self.calls):
            if not self.used[i] and call.get("request_key") == request_key and call.get("error") != ABANDONED:
                self.used[i] = True
                return call
        return None

    def describe(self, route: Route, method: str, path: str, body: bytes, *, kept: bool = True) -> str:
        """Why a request cannot be answered: which, and what the recording holds (``kept=False``:
        its call, but not the whole answer)."""
        model = None
        try:
            value = json.loads(body) if body else None
            model = value.get("model") if isinstance(value, dict) else None
        except ValueError:
            pass
        what = f"{method} {path}" + (f" (model {model})" if model else "")
        case, variant, index = self.key
        if not kept:
            return (f"not run: --replay {self.run}: the recording holds request #{self.asked} {what} of {case} "
                    f"{variant} #{index} but not its whole answer (one over {KEPT >> 20} MiB is cut, and bytes "
                    "that may hold a credential are not kept): it cannot be replayed")
        if not self.calls:
            held = "it holds no model calls for this trial"
        else:
            left = sum(1 for u in self.used if not u)
            held = f"it holds {len(self.calls)} call{'s' if len(self.calls) != 1 else ''} for this trial, {left} not replayed yet, none with this request"
            abandoned = sum(1 for c in self.calls if c.get("error") == ABANDONED)
            if abandoned:
                held += (f" answered ({abandoned} the agent gave up on before {'its' if abandoned == 1 else 'their'}"
                         " answer came)")
        return (f"not run: --replay {self.run}: the recording has no answer for request #{self.asked} "
                f"{what} of {case} {variant} #{index}; {held}")
