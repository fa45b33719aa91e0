"""yaml: one case per file (``name``, ``task``, ``judge_context``, ``max_steps``), or a
directory of them read in sorted order. Only ``task`` and ``name`` convert; every judge line is
prose for a model judge, so each becomes a placeholder the author must replace."""

from __future__ import annotations

import json
import os
import stat
from typing import Any, NamedTuple

from ._errors import (
    CaseDirectoryEmpty,
    CaseDirectoryUnreadable,
    CaseFileNotYaml,
    CaseFileNotYamlCase,
    CaseFileUnreadable,
)
from ._files import read_text
from ._model import CaseFile, ImportedCase, Unwritten
from ._text import describe_actual, kept_fields, listing
from ._values import LongNumber, digit_limit, field_name
from ._yaml_load import YamlUnreadable, load_yaml

__all__ = ["DEFAULT_MAX_STEPS", "UNJUDGED", "read_yaml_cases"]

_SUFFIXES = (".yaml", ".yml")
_KNOWN = ("name", "task", "judge_context", "max_steps")
_MAX_ISSUES = 3
# The source runner's own default, so an imported case records the budget it actually ran under.
DEFAULT_MAX_STEPS = 15
UNJUDGED = "This case named no judge context. Write what a good answer is."
_NOT_A_LIMIT = "Anpord does not cap steps, so this is a note, not a limit."


def _parse(path: str) -> Any:
    text = read_text(path, CaseFileNotYaml)
    try:
        return load_yaml(text)
    except YamlUnreadable as error:
        raise CaseFileNotYaml(path, error.reason) from None


class _Seen:
    def __init__(self) -> None:
        self.unknown: dict[str, list[str]] = {}
        self.unjudged: list[str] = []


def _case(path: str, data: Any, seen: _Seen, shown: str) -> ImportedCase:
    if not isinstance(data, dict):
        raise CaseFileNotYamlCase(
            path, f"Expected a mapping with name and task, actual {describe_actual(data)}"
        )
    issues: list[str] = []

    def expected(field: str, what: str, actual: Any) -> None:
        issues.append(f"{field}: Expected {what}, actual {describe_actual(actual)}")

    for field in ("name", "task"):
        if field not in data:
            issues.append(f"{field}: is missing")
        elif not isinstance(data[field], str):
            expected(field, "string", data[field])
    judged = data.get("judge_context")
    lines: list[str] = []
    if judged is not None and not isinstance(judged, list):
        expected("judge_context", "an array of strings", judged)
    for n, line in enumerate(judged if isinstance(judged, list) else []):
        if isinstance(line, str):
            lines.append(line)
        else:
            expected(f"judge_context.{n}", "string", line)
    steps = data.get("max_steps")
    if isinstance(steps, LongNumber):
        expected("max_steps", f"an integer of at most {digit_limit():,} digits", steps)
    elif steps is not None and (not isinstance(steps, int) or isinstance(steps, bool)):
        expected("max_steps", "integer", steps)
    if issues:
        more = len(issues) - _MAX_ISSUES
        reason = "; ".join(issues[:_MAX_ISSUES]) + (f"; and {more} more" if more > 0 else "")
        if "evals" in data:  # JSON is YAML too: an evals-json file read with the wrong --format
            reason += " (it holds an evals list: is it --format evals-json?)"
        raise CaseFileNotYamlCase(path, reason)

    for key in data:
        if key not in _KNOWN:
            seen.unknown.setdefault(field_name(key), []).append(shown)
    if not lines:
        seen.unjudged.append(shown)
    budget: tuple[str, ...]
    if steps is None:
        budget = (
            f"The file names no max_steps, so it allowed the default of {DEFAULT_MAX_STEPS} steps.",
            _NOT_A_LIMIT,
        )
    else:
        budget = (f"The file allowed {steps} steps. {_NOT_A_LIMIT}",)
    name = data["name"]
    return ImportedCase(
        own_id=name,
        name=name,
        prompt=data["task"],
        checks=tuple(Unwritten(line) for line in lines) or (Unwritten(UNJUDGED),),
        notes=(f"Case: {name}", f"Imported from {path}.", *budget, *kept_fields(data, _KNOWN)),
        source_note="The YAML names no starting files, so add the ones this case works on.",
        fallback_key=os.path.splitext(os.path.basename(path))[0],
    )


class _Listing(NamedTuple):
    """A directory's case files, and what else it holds (said on stderr, never read)."""

    paths: list[str]
    other_files: list[str]
    folders: list[str]
    special: list[str]

    def notes(self, directory: str) -> list[str]:
        groups = (
            (self.other_files, "file", "files", "not named *.yaml or *.yml"),
            (self.folders, "folder", "folders", "folders in it are not searched"),
            (self.special, "entry", "entries", "not a regular file"),
        )
        return [
            f"Skipped {len(names)} {one if len(names) == 1 else many} in {directory} "
            f"({why}): {listing(names)}."
            for names, one, many, why in groups
            if names
        ]


def _case_files(directory: str) -> _Listing:
    """The directory's ``*.yaml`` and ``*.yml`` files (in any case: ``CASE.YML`` too), sorted
    so the same directory always makes the same suite; and the names of everything else in it,
    which is left alone but reported."""
    names: list[str] = []
    other_files: list[str] = []
    folders: list[str] = []
    special: list[str] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir():
                    folders.append(entry.name)
                elif not entry.name.lower().endswith(_SUFFIXES):
                    other_files.append(entry.name)
                elif entry.is_file() or _leads_nowhere(entry):
                    names.append(entry.name)
                else:
                    special.append(entry.name)
    except OSError as error:
        raise CaseDirectoryUnreadable(directory, error.strerror or type(error).__name__) from None
    if not names:
        raise CaseDirectoryEmpty(directory)
    return _Listing(
        paths=[os.path.join(directory, name) for name in sorted(names)],
        other_files=sorted(other_files),
        folders=sorted(folders),
        special=sorted(special),
    )


def _leads_nowhere(entry: os.DirEntry[str]) -> bool:
    """A link to nothing is read (and stops the import by name); a pipe, socket or device is
    not: opening a pipe would wait for a writer forever."""
    try:
        entry.stat()
    except OSError:
        return True
    return False


def _notes(seen: _Seen) -> list[str]:
    notes = []
    for field, paths in seen.unknown.items():
        notes.append(
            f"Not imported: {json.dumps(field, ensure_ascii=False)} ({listing(paths)}) "
            "is not a yaml case field."
        )
    if len(seen.unjudged) == 1:
        notes.append(
            f"{seen.unjudged[0]} names no judge_context: it gets one placeholder check, "
            "so it fails until you write one."
        )
    elif seen.unjudged:
        notes.append(
            f"{listing(seen.unjudged)} name no judge_context: each gets one placeholder check, "
            "so each fails until you write one."
        )
    return notes


def read_yaml_cases(path: str) -> CaseFile:
    """Read one yaml case file, or every case file in a directory. A bad file stops the import
    by name, so a directory that half-imported is never mistaken for one that imported."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise CaseFileUnreadable(path, error.strerror or type(error).__name__) from None
    directory = stat.S_ISDIR(mode)
    listed = _case_files(path) if directory else None
    paths = listed.paths if listed is not None else [path]
    seen = _Seen()
    # Notes name a directory's files by their own names: the directory is in the command line.
    cases = tuple(
        _case(one, _parse(one), seen, os.path.basename(one) if directory else one) for one in paths
    )
    skipped = listed.notes(path) if listed is not None else []
    return CaseFile(format="yaml", path=path, cases=cases, notes=(*skipped, *_notes(seen)))
