"""The ``tally`` reporter: one line of totals when the run ends, to a file or to stderr.

``--reporter tally`` writes ``tally: 3 trials, 2 passed, 1 failed`` to stderr;
``--reporter tally:out.txt`` (or ``reporters=["tally:out.txt"]`` in the config) writes it to
``out.txt``. A reporter plugin is a factory — here the class — called with the text after the
name's ``:``, or with nothing.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from anpord.results import RunInfo, RunSummary, TrialResult


class TallyReporter:
    def __init__(self, path: str | None = None):
        self.path = Path(path) if path else None
        self.started = 0

    def on_run_start(self, run: RunInfo) -> None:
        pass

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None:
        self.started += 1

    def on_log(self, case_id: str, variant: str, trial: int, message: str) -> None:
        pass

    def on_trial_end(self, result: TrialResult) -> None:
        pass

    def on_run_end(self, summary: RunSummary, results: Sequence[TrialResult]) -> None:
        counts = Counter(r.verdict for r in results)
        parts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
        line = f"tally: {len(results)} trials, {parts}\n"
        if self.path is None:
            sys.stderr.write(line)
        else:
            self.path.write_text(line)
