"""The runner: discovery, planning, scheduling, trial execution and verdicts.

Names are loaded lazily: listing cases needs only discovery, not asyncio and the harnesses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CHECKED_NOTHING": "._verdict",
    "decide_verdict": "._verdict",
    "FAIL_ON": "._run",
    "Plan": "._run",
    "RunOptions": "._run",
    "build_plan": "._run",
    "execute": "._run",
    "exit_code_for": "._run",
    "Case": ".discovery",
    "EvalFile": ".discovery",
    "Project": ".discovery",
    "UsageError": ".discovery",
    "find_project": ".discovery",
    "load_cases": ".discovery",
    "select_files": ".discovery",
    "slug": ".discovery",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from ._run import FAIL_ON as FAIL_ON
    from ._run import Plan as Plan
    from ._run import RunOptions as RunOptions
    from ._run import build_plan as build_plan
    from ._run import execute as execute
    from ._run import exit_code_for as exit_code_for
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'anpord.runner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
