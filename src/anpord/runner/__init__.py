"""The runner: discovery, planning, scheduling, trial execution and verdicts.

Names are loaded lazily: listing cases needs only discovery, not asyncio and the harnesses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

_EXPORTS = {
    "CHECKED_NOTHING": "._verdict",
    "decide_verdict": "._verdict",
    "FAIL_ON": "._planning",
    "Plan": "._planning",
    "PlannedCase": "._planning",
    "RunOptions": "._planning",
    "build_plan": "._planning",
    "RunResult": "._run",
    "execute": "._run",
    "EXECUTORS": "._run",
    "executor_for": "._run",
    "exit_code_for": "._run",
    "Executor": "._executor",
    "TrialSink": "._executor",
    "LocalExecutor": "._local",
    "TrialSpec": "._spec",
    "load_case": "._spec",
    "Case": ".discovery",
    "EvalFile": ".discovery",
    "Project": ".discovery",
    "UsageError": ".discovery",
    "find_project": ".discovery",
    "load_cases": ".discovery",
    "select_files": ".discovery",
    "slug": ".discovery",
    "late_signals": "._run",
    "secret_values": "._run",
    "short_secret_warnings": "._run",
    "options_of": "._resume",
    "plan_rerun": "._resume",
    "plan_resume": "._resume",
    "filter_tags": ".discovery",
    "load_config": ".discovery",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from ._executor import Executor as Executor
    from ._executor import TrialSink as TrialSink
    from ._local import LocalExecutor as LocalExecutor
    from ._planning import FAIL_ON as FAIL_ON
    from ._planning import Plan as Plan
    from ._planning import PlannedCase as PlannedCase
    from ._planning import RunOptions as RunOptions
    from ._planning import build_plan as build_plan
    from ._run import RunResult as RunResult
    from ._run import execute as execute
    from ._run import EXECUTORS as EXECUTORS
    from ._run import executor_for as executor_for
    from ._run import exit_code_for as exit_code_for
    from ._spec import TrialSpec as TrialSpec
    from ._spec import load_case as load_case
    from ._verdict import CHECKED_NOTHING as CHECKED_NOTHING
    from ._verdict import decide_verdict as decide_verdict
    from .discovery import Case as Case
    from .discovery import EvalFile as EvalFile
    from .discovery import Project as Project
    from .discovery import UsageError as UsageError
    from .discovery import find_project as find_project
    from .discovery import load_cases as load_cases
    from .discovery import select_files as select_files
    from .discovery import slug as slug
    from ._run import late_signals as late_signals
    from ._run import secret_values as secret_values
    from ._run import short_secret_warnings as short_secret_warnings
    from ._resume import options_of as options_of
    from ._resume import plan_rerun as plan_rerun
    from ._resume import plan_resume as plan_resume
    from .discovery import filter_tags as filter_tags
    from .discovery import load_config as load_config


__getattr__ = lazy_names(__name__, _EXPORTS)
