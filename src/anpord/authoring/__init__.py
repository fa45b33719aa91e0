"""Authoring API: what eval files and ``evals.config.py`` call."""

from ..verifiers import command
from ._config import DEFAULT_TIMEOUT, EvalConfig, JudgeConfig, Variant, define_eval_config
from ._define import DefinitionError, Eval, Suite, define_eval, define_suite
from ..workspace import Directory, Files, Repo, Source, SourceError, directory, files, repo

__all__ = [
    "DEFAULT_TIMEOUT",
    "DefinitionError",
    "Directory",
    "Eval",
    "EvalConfig",
    "Files",
    "JudgeConfig",
    "Repo",
    "Source",
    "SourceError",
    "Suite",
    "Variant",
    "command",
    "define_eval",
    "define_eval_config",
    "define_suite",
    "directory",
    "files",
    "repo",
]
