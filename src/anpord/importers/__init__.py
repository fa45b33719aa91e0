"""Import case files a team already wrote as a runnable ``*.eval.py`` suite.

``import_cases("evals-json", "evals.json")`` reads, checks and renders; it raises an
``ImportRefusal`` (one of the named refusals below) instead of writing a suite it is not sure of.
Checks that convert mechanically are converted exactly; everything written as prose becomes a
placeholder that always fails, so an imported suite is red until a person writes those checks.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any, TypeVar

from .._registry import Registry
from ._codegen import DEFAULT_HARNESS, render_module
from ._errors import (
    CaseDirectoryEmpty,
    CaseDirectoryUnreadable,
    CaseFileEmpty,
    CaseFileIsLfsPointer,
    CaseFileNotDataset,
    CaseFileNotEvalsJson,
    CaseFileNotJson,
    CaseFileNotOpenAIEvals,
    CaseFileNotPromptfoo,
    CaseFileNotYaml,
    CaseFileNotYamlCase,
    CaseFileUnreadable,
    ImportRefusal,
    SuiteFileExists,
    SuiteFileUnwritable,
    SuiteFolderMissing,
)
from ._evals_json import read_evals_json
from ._files import write_atomic
from ._model import CaseFile, ImportedSuite, Tally, summary_of, tally_of
from ._dataset import read_dataset
from ._openai_evals import read_openai_evals
from ._promptfoo import read_promptfoo
from ._yaml_cases import read_yaml_cases

__all__ = [
    "DEFAULT_HARNESS",
    "FORMATS",
    "IMPORTERS",
    "CaseDirectoryEmpty",
    "CaseDirectoryUnreadable",
    "CaseFileEmpty",
    "CaseFileIsLfsPointer",
    "CaseFileNotDataset",
    "CaseFileNotEvalsJson",
    "CaseFileNotJson",
    "CaseFileNotOpenAIEvals",
    "CaseFileNotPromptfoo",
    "CaseFileNotYaml",
    "CaseFileNotYamlCase",
    "CaseFileUnreadable",
    "ImportRefusal",
    "ImportedSuite",
    "SuiteFileExists",
    "SuiteFileUnwritable",
    "SuiteFolderMissing",
    "Tally",
    "import_cases",
    "import_dataset",
    "import_evals_json",
    "import_openai_evals",
    "import_promptfoo",
    "import_yaml_cases",
    "summary_of",
    "write_suite",
]


_F = TypeVar("_F", bound=Callable[..., Any])


def _collector_paused(reader: _F) -> _F:
    """Run ``reader`` with the cyclic garbage collector paused. An import builds hundreds of
    thousands of small tuples, strings and lists and frees none of them until it returns, so
    every collection on the way scans them all and finds nothing (a quarter of a large
    import's time); what it leaves is collected as usual afterwards."""

    @functools.wraps(reader)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return reader(*args, **kwargs)
        gc.disable()
        try:
            return reader(*args, **kwargs)
        finally:
            gc.enable()

    return paused  # type: ignore[return-value]


def _suite_of(file: CaseFile) -> ImportedSuite:
    source, id_notes = render_module(file)
    return ImportedSuite(source=source, tally=tally_of(file.cases), notes=(*file.notes, *id_notes))


@_collector_paused
def import_evals_json(path: str) -> ImportedSuite:
    """One JSON file holding every case."""
    return _suite_of(read_evals_json(path))


@_collector_paused
def import_yaml_cases(path: str) -> ImportedSuite:
    """One YAML file per case, or a directory of them."""
    return _suite_of(read_yaml_cases(path))


@_collector_paused
def import_promptfoo(path: str) -> ImportedSuite:
    """A promptfoo config, or a folder holding promptfooconfig.yaml."""
    return _suite_of(read_promptfoo(path))


@_collector_paused
def import_openai_evals(path: str) -> ImportedSuite:
    """An OpenAI evals registry spec YAML (its samples read from the registry's data/), or a
    samples JSONL."""
    return _suite_of(read_openai_evals(path))


@_collector_paused
def import_dataset(
    path: str,
    *,
    input_column: str | None = None,
    expected_column: str | None = None,
    match: str | None = None,
) -> ImportedSuite:
    """A JSONL, JSON or CSV dataset; ``match`` is ``equals``, ``includes``, ``judge`` or None
    (a placeholder naming the expected value)."""
    return _suite_of(
        read_dataset(
            path, input_column=input_column, expected_column=expected_column, match=match
        )
    )


# Formats by name (``--format``); packages add more through ``anpord.importers`` entry points,
# each a reader like these: ``(path, **options) -> ImportedSuite``.
FORMATS: dict[str, Callable[..., ImportedSuite] | str] = {
    "evals-json": import_evals_json,
    "yaml": import_yaml_cases,
    "promptfoo": import_promptfoo,
    "openai-evals": import_openai_evals,
    "dataset": import_dataset,
}


IMPORTERS: Registry[Callable[..., ImportedSuite]] = Registry("anpord.importers", FORMATS, kind="format")


def import_cases(format: str, path: str, **options: str) -> ImportedSuite:
    """Import ``path`` read as ``format`` (a built-in of ``FORMATS`` or a plugin's); ``options``
    are the format's own (``dataset``: ``input_column``, ``expected_column``, ``match``). An
    unknown format, or a plugin that does not load: ``PluginError`` (a ``ValueError``)."""
    return IMPORTERS.get(format)(path, **options)


def write_suite(path: str, suite: ImportedSuite, *, force: bool = False) -> None:
    """Write the suite atomically; an existing file is replaced only with ``force``."""
    write_atomic(path, suite.source, force=force)
