"""``TrialSpec``: one trial described as plain data, so it can run in another process or host.

A spec names the eval file and the case id rather than holding the case: a worker elsewhere
re-imports the eval file itself (``load_case``), resolves the harness from the variant's spec, and
runs the trial exactly as the local executor does. Everything in it pickles.

Paths in a spec are the driver's. A worker that reads the project from a copy (a Ray worker's
runtime-env working directory) says where with ``use_project_copy``; ``local_path`` then maps the
driver's paths into the copy, and ``driver_paths`` maps what the trial reports back, so a record
names the files the user has, wherever the trial ran.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..authoring._config import JudgeConfig, Variant
from .discovery import Case, EvalFile, cases_of, load_file

__all__ = ["TrialSpec", "as_path", "driver_paths", "load_case", "local_path", "use_project_copy"]


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
    replay: str | None = None  # the run folder whose model calls the model proxy answers from
    token_limit: int | None = None  # past it the agent is stopped and the trial fails (_limits)
    cost_limit: float | None = None
    # The run's workspace archive: the workspace is kept there at the trial's end (None: not kept).
    snapshots: str | None = None

    @property
    def variant_label(self) -> str:
        return self.variant.label

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.case_id, self.variant.label, self.trial)

    @property
    def root(self) -> Path:
        """The folder holding evals.config.py as this process finds it."""
        return local_path(self.evals_root)

    @property
    def project_folder(self) -> Path:
        """The project folder as this process finds it (see ``use_project_copy``)."""
        return local_path(self.evals_root).parent

    @property
    def label(self) -> str:
        return f"{self.case_id} {self.variant.label} #{self.trial}"


@functools.lru_cache(maxsize=64)
def as_path(text: str) -> Path:
    """A spec's folder as a Path, parsed once: a trial reads it several times, and Path parsing
    showed in the runner's profile at thousands of trials a second."""
    return Path(text)


# The driver's project folder -> this process's copy of it. Empty in the driver itself.
_copies: dict[str, str] = {}


def use_project_copy(driver_folder: str | Path, copy: str | Path) -> None:
    """Trials of the project the driver has at ``driver_folder`` read it from ``copy`` here."""
    driver, here = os.path.normpath(driver_folder), os.path.normpath(copy)
    if driver != here:
        _copies[driver] = here


def local_path(path: str | Path) -> Path:
    """Where this process finds what the driver calls ``path``."""
    text = os.fspath(path)
    if not _copies:  # the driver itself, and every local run: parse each folder once
        return as_path(text)
    for driver, here in _copies.items():
        if text == driver or text.startswith(driver + os.sep):
            return Path(here + text[len(driver):])
    return Path(text)


def driver_paths(value: Any) -> Any:
    """``value`` (a record or an event as JSON data) with the copies' paths put back as the
    driver's: a traceback or a ``file`` field names the user's file, not a worker's copy."""
    if not _copies:
        return value
    if isinstance(value, str):
        for driver, here in _copies.items():
            if here in value:
                value = value.replace(here, driver)
        return value
    if isinstance(value, dict):
        return {k: driver_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [driver_paths(v) for v in value]
    return value


# Cases already imported in this process, by (eval file, case id).
_loaded: dict[str, dict[str, Case]] = {}


def load_case(spec: TrialSpec) -> Case:
    """The spec's case, importing its eval file in this process the first time (with the evals
    root and the project folder on ``sys.path``, as discovery does). Raises ``UsageError``."""
    cases = _loaded.get(spec.file)
    if cases is None:
        root = local_path(spec.evals_root)
        for folder in (root.parent, root):
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        # A copy's compiled-code cache would be written into the copy (shared by a node's
        # workers, thrown away with it): compile instead.
        copied = root != Path(spec.evals_root)
        ef = EvalFile(path=local_path(spec.file), id=spec.file_id, case_filter=None,
                      cache_dir=None if copied else root.parent / ".anpord" / "cache" / "code")
        cases = _loaded[spec.file] = {c.id: c for c in cases_of(ef, load_file(ef))}
    try:
        return cases[spec.case_id]
    except KeyError:
        from .._errors import UsageError

        raise UsageError(f"{spec.file}: defines no case {spec.case_id} any more") from None
