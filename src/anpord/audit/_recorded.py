"""The answers ``shuffle`` and ``mutate`` replay: from the project's latest run that measured an
agent (an audit's answers are saboteurs' own, and are never replayed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ._saboteurs import answer_of

__all__ = ["Recording", "latest_recording"]

# Runs whose answers are an agent's: an eval, a re-run of one, one with cached model calls.
_AGENT_KINDS = ("eval", "rerun", "cached")


@dataclass
class Recording:
    run_id: str
    # (case id, variant label) → the answers of its first trial with any, and of its first
    # passing trial (what ``mutate`` damages: a right answer made wrong).
    answers: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    passing: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def _of(self, table: dict[tuple[str, str], tuple[str, ...]], case_id: str, variant: str) -> tuple[str, ...]:
        if (case_id, variant) in table:
            return table[(case_id, variant)]
        # Another variant's answer to the same case is still this case's answer.
        return next((a for (c, _v), a in table.items() if c == case_id), ())

    def own_passing(self, case_id: str, variant: str) -> tuple[str, ...]:
        return self._of(self.passing, case_id, variant)

    def other_case(self, case_id: str, variant: str, order: list[str]) -> tuple[str, ...]:
        """The recorded answer of the next case (in ``order``, wrapping round) that has one."""
        cases = [c for c in order if c != case_id and self._of(self.answers, c, variant)]
        if not cases:
            return ()
        after = [c for c in cases if c > case_id]
        return self._of(self.answers, (after or cases)[0], variant)


def latest_recording(project_folder: Path) -> Recording | None:
    from ..results._reader import list_run_dirs, read_run
    from ..results._model import RecordError
    from .._errors import UsageError

    for run_dir in reversed(list_run_dirs(project_folder)):
        try:
            reading = read_run(run_dir)
        except (RecordError, UsageError, OSError, ValueError):
            continue
        if reading.record.run_kind not in _AGENT_KINDS:
            continue
        rec = Recording(reading.run_id)
        for trial in sorted(reading.trials, key=lambda t: (t.case_id, t.variant, t.trial)):
            key = (trial.case_id, trial.variant)
            if key in rec.answers and (key in rec.passing or trial.verdict != "passed"):
                continue
            try:
                answers = tuple(answer_of(reading.events(trial)))
            except (RecordError, OSError, ValueError):
                continue
            if not any(answers):
                continue
            rec.answers.setdefault(key, answers)
            if trial.verdict == "passed":
                rec.passing.setdefault(key, answers)
        return rec
    return None
