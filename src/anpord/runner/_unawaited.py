"""A drive call without ``await`` never runs: make that a failed check, not a silent pass.

Python warns (RuntimeWarning "coroutine ... was never awaited") when such a coroutine is dropped,
which happens at once, inside the trial that dropped it. While a run is going, that warning is
turned into a failed gate on the current trial.
"""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

from ._rewrite import CURRENT_RECORDER

__all__ = ["unawaited_calls_fail"]

_NEVER_AWAITED = re.compile(r"coroutine '([^']+)' was never awaited")


@contextmanager
def unawaited_calls_fail() -> Iterator[None]:
    original = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        recorder = CURRENT_RECORDER.get()
        found = _NEVER_AWAITED.search(str(message))
        if recorder is None or found is None or not issubclass(category, RuntimeWarning):
            original(message, category, filename, lineno, file, line)
            return
        from ..results._model import AssertionRecord

        name = found.group(1)  # e.g. "T.send", "Session.respond"
        owner, _, method = name.rpartition(".")
        call = f"{'t' if owner == 'T' else owner.lower() or 'the object'}.{method}(...)"
        recorder.record(AssertionRecord(
            name=f"await {call}", kind="gate", status="failed", score=0.0,
            message=f"{call} was called without await, so it never ran: write `await {call}`",
        ))

    with warnings.catch_warnings():
        # "always": the default shows a warning once per place, and every trial must hear of it.
        warnings.filterwarnings("always", message=r"coroutine .* was never awaited", category=RuntimeWarning)
        warnings.showwarning = show
        try:
            yield
        finally:
            warnings.showwarning = original
