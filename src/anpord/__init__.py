"""anpord: evaluate AI agents the way a test runner checks code.

The public names are re-exported lazily so ``import anpord`` (and ``anpord --help``) stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names
from ._version import __version__

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
    "judge": "anpord.judges",
    "script": "anpord.users",
    "persona": "anpord.users",
    "Event": "anpord.events",
    "TurnContext": "anpord.agent",
    "Turn": "anpord.drive",
    "Reporter": "anpord.results",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers: `from anpord import X` is explicit
    from .agent import TurnContext as TurnContext
    from .authoring import Eval as Eval
    from .authoring import EvalConfig as EvalConfig
    from .authoring import JudgeConfig as JudgeConfig
    from .authoring import Suite as Suite
    from .authoring import Variant as Variant
    from .authoring import command as command
    from .authoring import define_eval as define_eval
    from .authoring import define_eval_config as define_eval_config
    from .authoring import define_suite as define_suite
    from .authoring import directory as directory
    from .authoring import files as files
    from .authoring import repo as repo
    from .drive import Turn as Turn
    from .events import Event as Event
    from .judges import judge as judge
    from .results import Reporter as Reporter
    from .users import persona as persona
    from .users import script as script


__getattr__ = lazy_names(__name__, _EXPORTS)
