"""The answers ``shuffle`` and ``mutate`` replay: from the project's latest run that measured an
agent (an audit's answers are saboteurs' own, and are never replayed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._saboteurs import answer_of, outputs_of

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
    # The structured outputs of the same trials, one per completed turn (None where it had none).
    outputs: dict[tuple[tuple[str, str], bool], tuple[Any, ...]] = field(default_factory=dict)

    def _key(self, table: dict[tuple[str, str], tuple[str, ...]], case_id: str, variant: str) -> tuple[str, str] | None:
        if (case_id, variant) in table:
            return (case_id, variant)
        # Another variant's answer to the same case is still this case's answer.
        return next((k for k in table if k[0] == case_id), None)

    def _of(self, table: dict[tuple[str, str], tuple[str, ...]], case_id: str, variant: str) -> tuple[str, ...]:
        key = self._key(table, case_id, variant)
        return table[key] if key is not None else ()

    def own_passing(self, case_id: str, variant: str) -> tuple[str, ...]:
        return self._of(self.passing, case_id, variant)

    def own_passing_outputs(self, case_id: str, variant: str) -> tuple[Any, ...]:
        key = self._key(self.passing, case_id, variant)
        return self.outputs.get((key, True), ()) if key is not None else ()

    def _other(self, case_id: str, variant: str, order: list[str]) -> tuple[str, str] | None:
        cases = [c for c in order if c != case_id and self._of(self.answers, c, variant)]
        if not cases:
            return None
        after = [c for c in cases if c > case_id]
        return self._key(self.answers, (after or cases)[0], variant)

    def other_case(self, case_id: str, variant: str, order: list[str]) -> tuple[str, ...]:
        """The recorded answer of the next case (in ``order``, wrapping round) that has one."""
        key = self._other(case_id, variant, order)
        return self.answers[key] if key is not None else ()

    def other_case_outputs(self, case_id: str, variant: str, order: list[str]) -> tuple[Any, ...]:
        key = self._other(case_id, variant, order)
        return self.outputs.get((key, False), ()) if key is not None else ()


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
                events = reading.events(trial)
                answers = tuple(answer_of(events))
            except (RecordError, OSError, ValueError):
                continue
            if not any(answers):
                continue
            outputs = tuple(outputs_of(events))
            if key not in rec.answers:
                rec.answers[key], rec.outputs[(key, False)] = answers, outputs
            if trial.verdict == "passed" and key not in rec.passing:
                rec.passing[key], rec.outputs[(key, True)] = answers, outputs
        return rec
    return None
