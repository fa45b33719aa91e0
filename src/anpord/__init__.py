"""anpord: evaluate AI agents the way a test runner checks code.

The public names are re-exported lazily so ``import anpord`` (and ``anpord --help``) stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "define_eval": "anpord.authoring",
    "define_suite": "anpord.authoring",
    "define_eval_config": "anpord.authoring",
    "Variant": "anpord.authoring",
    "JudgeConfig": "anpord.authoring",
    "Eval": "anpord.authoring",
    "Suite": "anpord.authoring",
    "EvalConfig": "anpord.authoring",
    "files": "anpord.authoring",
    "directory": "anpord.authoring",
    "repo": "anpord.authoring",
    "command": "anpord.authoring",
    "Event": "anpord.events",
    "TurnContext": "anpord.agent",
    "Turn": "anpord.drive",
    "Reporter": "anpord.results",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from .agent import TurnContext
    from .authoring import (
        Eval,
        EvalConfig,
        JudgeConfig,
        Suite,
        Variant,
        define_eval,
        define_eval_config,
        define_suite,
        files,
    )
    from .events import Event


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'anpord' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
