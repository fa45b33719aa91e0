"""Refusals: why an import stopped, each named so a user (or a script) can tell them apart.

Every refusal prints as one line, ``<Name>: <message>``, and nothing is written.
"""

from __future__ import annotations

from ._text import one_line

__all__ = [
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
    "SuiteFileExists",
    "SuiteFileUnwritable",
    "SuiteFolderMissing",
]


class ImportRefusal(Exception):
    """Base of every refusal. ``message`` is one line; ``str()`` adds the refusal's name."""

    def __init__(self, path: str, reason: str = "") -> None:
        self.path = path
        self.reason = reason
        super().__init__(self.line())

    @property
    def message(self) -> str:
        return one_line(self._message())

    def _message(self) -> str:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def line(self) -> str:
        return f"{type(self).__name__}: {self.message}"


def _with_reason(text: str, reason: str) -> str:
    return f"{text}: {reason}" if reason else text


class CaseFileUnreadable(ImportRefusal):
    """The path does not exist or cannot be read."""

    def _message(self) -> str:
        return _with_reason(f"Could not read {self.path}", self.reason)


class CaseFileNotJson(ImportRefusal):
    """The file is not JSON."""

    def _message(self) -> str:
        return f"{self.path} is not JSON: {self.reason}"


class CaseFileNotEvalsJson(ImportRefusal):
    """The file is JSON, but a case (named by its id) or the file's shape does not match."""

    def _message(self) -> str:
        return f"{self.path} is not an evals-json file: {self.reason}"


class CaseFileEmpty(ImportRefusal):
    """``evals`` is empty, so there is nothing to import."""

    def _message(self) -> str:
        return f"{self.path} declares no cases, so there is nothing to import"


class CaseFileNotPromptfoo(ImportRefusal):
    """The file is YAML or JSON but not a promptfoo config, named by the field (or a folder
    holds no promptfooconfig.yaml)."""

    def _message(self) -> str:
        return f"{self.path} is not a promptfoo config: {self.reason}"


class CaseFileNotOpenAIEvals(ImportRefusal):
    """The file is not an OpenAI evals registry spec or samples file, named by the field or
    the sample's line."""

    def _message(self) -> str:
        return f"{self.path} is not an OpenAI evals file: {self.reason}"


class CaseFileNotDataset(ImportRefusal):
    """The file is not a JSONL or CSV dataset with input and expected columns."""

    def _message(self) -> str:
        return f"{self.path} is not a dataset: {self.reason}"


class CaseFileIsLfsPointer(ImportRefusal):
    """The file is a Git LFS pointer: the cases themselves were never fetched."""

    def _message(self) -> str:
        return (
            f"{self.path} is a Git LFS pointer, not the file it stands for; "
            "run `git lfs pull` in its repository, then import again"
        )


class CaseDirectoryUnreadable(ImportRefusal):
    """The directory exists but cannot be listed."""

    def _message(self) -> str:
        return _with_reason(f"Could not list {self.path}", self.reason)


class CaseFileNotYaml(ImportRefusal):
    """A file is not YAML."""

    def _message(self) -> str:
        return f"{self.path} is not YAML: {self.reason}"


class CaseFileNotYamlCase(ImportRefusal):
    """A file is YAML but not a case, named by the field."""

    def _message(self) -> str:
        return f"{self.path} is not a yaml case: {self.reason}"


class CaseDirectoryEmpty(ImportRefusal):
    """The directory holds no ``.yaml`` or ``.yml`` files."""

    def _message(self) -> str:
        return f"{self.path} holds no .yaml or .yml files, so there is nothing to import"


class SuiteFileExists(ImportRefusal):
    """``--out`` names a file that exists and ``--force`` was not given."""

    def _message(self) -> str:
        return f"{self.path} already exists; pass --force to overwrite it"


class SuiteFolderMissing(ImportRefusal):
    """``--out`` names a file in a folder that does not exist."""

    def _message(self) -> str:
        return f"Could not write {self.path}: the folder {self.reason} does not exist"


class SuiteFileUnwritable(ImportRefusal):
    """``--out`` cannot be written (a directory, no permission, disk full)."""

    def _message(self) -> str:
        return _with_reason(f"Could not write {self.path}", self.reason)
