"""``TrialSpec``: one trial described as plain data, so it can run in another process or host.

A spec names the eval file and the case id rather than holding the case: a worker elsewhere
re-imports the eval file itself (``load_case``), resolves the harness from the variant's spec, and
runs the trial exactly as the local executor does. Everything in it pickles.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

from ..authoring._config import JudgeConfig, Variant
from .discovery import Case, EvalFile, cases_of, load_file

__all__ = ["TrialSpec", "as_path", "load_case"]


@dataclass(slots=True)
class TrialSpec:
    run_id: str
    evals_root: str  # the folder holding evals.config.py
    file: str  # the eval file, absolute
    file_id: str  # its id (path under the root, without .eval.py)
    case_id: str
    variant: Variant  # resolved: harness, model and sandbox filled in
    trial: int  # index within the cell
    timeout: float
    seed: int
    case_hash: str = ""
    judge: JudgeConfig | None = None
    attempt: int = 0  # > 0 when an executor runs it again after losing its worker
    cache_dir: str | None = None  # reuse model and judge calls from here (``--cache``)

    @property
    def variant_label(self) -> str:
        return self.variant.label

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.case_id, self.variant.label, self.trial)

    @property
    def root(self) -> Path:
        return as_path(self.evals_root)

    @property
    def project_folder(self) -> Path:
        return _parent(self.evals_root)

    @property
    def label(self) -> str:
        return f"{self.case_id} {self.variant.label} #{self.trial}"


@functools.lru_cache(maxsize=64)
def as_path(text: str) -> Path:
    """A spec's folder as a Path, parsed once: a trial reads it several times, and Path parsing
    showed in the runner's profile at thousands of trials a second."""
    return Path(text)


@functools.lru_cache(maxsize=64)
def _parent(text: str) -> Path:
    return Path(text).parent


# Cases already imported in this process, by (eval file, case id).
_loaded: dict[str, dict[str, Case]] = {}


def load_case(spec: TrialSpec) -> Case:
    """The spec's case, importing its eval file in this process the first time (with the evals
    root and the project folder on ``sys.path``, as discovery does). Raises ``UsageError``."""
    cases = _loaded.get(spec.file)
    if cases is None:
        root = Path(spec.evals_root)
        for folder in (root.parent, root):
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        ef = EvalFile(path=Path(spec.file), id=spec.file_id, case_filter=None,
                      cache_dir=root.parent / ".anpord" / "cache" / "code")
        cases = _loaded[spec.file] = {c.id: c for c in cases_of(ef, load_file(ef))}
    try:
        return cases[spec.case_id]
    except KeyError:
        from .._errors import UsageError

        raise UsageError(f"{spec.file}: defines no case {spec.case_id} any more") from None
