"""Authoring API: what eval files and ``evals.config.py`` call."""

from ._config import DEFAULT_TIMEOUT, EvalConfig, JudgeConfig, Variant, define_eval_config
from ._define import DefinitionError, Eval, Suite, define_eval, define_suite
from ._sources import Files, Source, SourceError, files

__all__ = [
    "DEFAULT_TIMEOUT",
    "DefinitionError",
    "Eval",
    "EvalConfig",
    "Files",
    "JudgeConfig",
    "Source",
    "SourceError",
    "Suite",
    "Variant",
    "define_eval",
    "define_eval_config",
    "define_suite",
    "files",
]
