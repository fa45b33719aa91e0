"""The runner: discovery, planning, scheduling, trial execution and verdicts."""

from ._run import FAIL_ON, Plan, RunOptions, build_plan, execute, exit_code_for
from ._verdict import CHECKED_NOTHING, decide_verdict
from .discovery import Case, EvalFile, Project, UsageError, find_project, load_cases, select_files, slug

__all__ = [
    "CHECKED_NOTHING",
    "Case",
    "EvalFile",
    "FAIL_ON",
    "Plan",
    "Project",
    "RunOptions",
    "UsageError",
    "build_plan",
    "decide_verdict",
    "execute",
    "exit_code_for",
    "find_project",
    "load_cases",
    "select_files",
    "slug",
]
