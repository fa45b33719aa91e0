"""dataset: a JSONL, JSON or CSV file of rows, each an input and the answer expected for it
(``input``/``target``, ``question``/``answer``, … or columns named by flag).

A dataset does not say how an answer is compared with the expected one, so by default each
case fails with a placeholder naming the expected value; ``match`` chooses a check instead:
``equals`` (the answer, trimmed, is the expected text, trimmed), ``includes`` (it contains it,
ignoring case) or ``judge`` (a judge decides whether the answer agrees with it).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ._chat import chat_text, is_chat
from ._errors import CaseFileEmpty, CaseFileNotDataset, CaseFileUnreadable
from ._files import read_text
from ._model import CaseFile, Check, Coded, Converted, ImportedCase, Judged, Unwritten
from ._tables import csv_rows, jsonl_values, refuse_lfs_pointer
from ._text import describe_actual, listing
from ._values import LongNumber, field_name, parse_int, render

__all__ = ["EXPECTED_COLUMNS", "INPUT_COLUMNS", "MATCHES", "read_dataset"]

# Common names, most specific first; matched ignoring case.
INPUT_COLUMNS = ("input", "question", "prompt", "query", "instruction", "problem", "task", "text")
EXPECTED_COLUMNS = (
    "target", "answer", "expected", "expected_output", "ideal", "output", "label",
    "solution", "reference", "response", "completion",
)  # fmt: skip
MATCHES = ("equals", "includes", "judge")
_ID_COLUMNS = ("id", "sample_id", "uid")
_SOURCE = "A dataset row names no starting files, so the case starts from none."
_KEPT = 300
_JUDGE_LEAD = "The answer must agree with this expected answer: "


def _refuse(path: str, reason: str) -> CaseFileNotDataset:
    return CaseFileNotDataset(path, reason)


def _rows(path: str, text: str) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """The column names (in first-seen order) and each row with its line (JSONL) or row number."""
    lower = path.lower()
    stripped = text.lstrip()
    if lower.endswith((".yaml", ".yml")):
        raise _refuse(path, "a YAML file: a dataset is JSONL, a JSON array or CSV (a promptfoo "
                            "config is --format promptfoo, an OpenAI evals spec --format openai-evals)")
    if (
        lower.endswith(".csv")
        or lower.endswith(".tsv")
        or (not lower.endswith((".jsonl", ".json", ".ndjson")) and stripped[:1] not in ("{", "["))
    ):
        names, rows = csv_rows(path, text, CaseFileNotDataset)
        return names, [(n + 2, row) for n, row in enumerate(rows)]  # line 1 is the header
    if lower.endswith(".json") or stripped[:1] == "[":
        try:
            data = json.loads(text, parse_int=parse_int)
        except json.JSONDecodeError as error:
            raise _refuse(path, f"not JSON: {error}") from None
        except RecursionError:
            raise _refuse(path, "nested too deeply to read") from None
        if isinstance(data, dict):
            lists = [key for key, value in data.items() if isinstance(value, list)]
            if len(lists) != 1:
                raise _refuse(path, f"Expected an array of rows, actual {describe_actual(data)}")
            data = data[lists[0]]
        if not isinstance(data, list):
            raise _refuse(path, f"Expected an array of rows, actual {describe_actual(data)}")
        numbered = list(enumerate(data, 1))
    else:
        numbered = list(jsonl_values(path, text, CaseFileNotDataset))
    seen: dict[str, None] = {}
    out: list[tuple[int, dict[str, Any]]] = []
    for number, row in numbered:
        if not isinstance(row, dict):
            raise _refuse(path, f"row {number}: Expected an object, actual {describe_actual(row)}")
        for key in row:
            seen[field_name(key)] = None
        out.append((number, row))
    return list(seen), out


def _column(
    path: str, names: list[str], given: str | None, common: tuple[str, ...], what: str, flag: str
) -> str:
    if given is not None:
        if given in names:
            return given
        raise _refuse(path, f"{flag} {given}: no such column (columns: {listing(names) or 'none'})")
    folded = {name.casefold(): name for name in reversed(names)}
    for candidate in common:
        if candidate in folded:
            return folded[candidate]
    raise _refuse(
        path,
        f"no {what} column among {listing(names) or 'no columns'}; name it with {flag}",
    )


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, LongNumber):
        return value.text
    return None


def _expected(value: Any) -> list[str] | None:
    one = _text(value)
    if one is not None:
        return [one]
    if isinstance(value, list) and value and all(_text(item) is not None for item in value):
        return [_text(item) or "" for item in value]
    return None


def _shown(expected: list[str]) -> str:
    if len(expected) == 1 and len(expected[0]) <= 300:
        return json.dumps(expected[0], ensure_ascii=False)  # what render gives, sooner
    return render(expected if len(expected) > 1 else expected[0], 300)


def _check(
    match: str | None, expected: list[str], column: str
) -> tuple[tuple[Check, ...], tuple[Judged, ...]]:
    if match == "includes":
        # The module's own _contains_any: case-insensitive, any of the expected texts.
        return (Converted("any", f"includes the {column}", tuple(expected)),), ()
    if match == "judge":
        rubric = _JUDGE_LEAD + ("\n".join(expected) if len(expected) > 1 else expected[0])
        return (), (Judged(name="matches-expected", rubric=rubric),)
    shown = _shown(expected)  # only the checks that quote the value pay for it
    if match == "equals":
        return (
            (
                Coded(
                    "_equals", f"equals the {column}: {shown}", (expected[0],), (("strip", True),)
                )
                if len(expected) == 1
                else Coded("_one_of", f"equals one of the {column}: {shown}", (tuple(expected),))
            ),
        ), ()
    return (
        Unwritten(
            f"The dataset expects {shown} ({column}) and does not say how to compare: write the check, or import again with --match equals|includes|judge."
        ),
    ), ()


def read_dataset(
    path: str,
    *,
    input_column: str | None = None,
    expected_column: str | None = None,
    match: str | None = None,
) -> CaseFile:
    """Read a dataset; refuse it (an ``ImportRefusal``) rather than guess."""
    if match is not None and match not in MATCHES:
        raise ValueError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
    if os.path.isdir(path):
        raise CaseFileUnreadable(path, "it is a folder: name the JSONL or CSV file")
    text = read_text(path, CaseFileNotDataset)
    refuse_lfs_pointer(path, text)
    if not text.strip():
        raise CaseFileEmpty(path)
    names, rows = _rows(path, text)
    if not rows:
        raise CaseFileEmpty(path)
    source = _column(path, names, input_column, INPUT_COLUMNS, "input", "--input-column")
    target = _column(
        path, names, expected_column, EXPECTED_COLUMNS, "expected", "--expected-column"
    )
    if source == target:
        raise _refuse(path, f"the input and the expected column are both {source}")
    ident = next((name for name in names if name.casefold() in _ID_COLUMNS), None)
    known = {source, target, ident}
    cache: dict[tuple[str, ...], tuple[tuple[Check, ...], tuple[Judged, ...]]] = {}
    cases: list[ImportedCase] = []
    name = os.path.basename(path)
    append = cases.append
    for number, row in rows:
        raw = row.get(source)
        chat_note = None
        prompt = raw if type(raw) is str else _text(raw)
        if prompt is None and is_chat(raw):
            prompt, chat_note = chat_text(raw)  # type: ignore[arg-type]
        if prompt is None:
            raise _refuse(
                path, f"row {number}, {source}: Expected a string, actual {describe_actual(raw)}"
            )
        value = row.get(target)
        expected = [value] if type(value) is str else _expected(value)
        if expected is None:
            raise _refuse(
                path,
                f"row {number}, {target}: Expected a string or a list of strings, actual {describe_actual(value)}",
            )
        key = tuple(expected)
        made = cache.get(key)
        if made is None:
            made = cache[key] = _check(match, expected, target)
        own = None
        if ident is not None:
            own = row.get(ident)
            if type(own) is not str:
                own = _text(own)
        # A case named row-N says where it came from; one named by the file's id column says so.
        notes = [f"Row {number} of {name}"] if own else []
        if chat_note is not None:
            notes.append(chat_note)
        for column in row:
            if column not in known:
                notes.append(
                    f"Not imported, from the row: {field_name(column)} = {render(row[column], _KEPT)}"
                )
        append(
            ImportedCase(
                own if own else f"row {number}",
                None,
                prompt,
                made[0],
                tuple(notes),
                _SOURCE,
                f"row-{number}",
                made[1],
            )
        )
    how = {
        None: "a placeholder naming the expected value",
        "equals": "equals",
        "includes": "includes",
        "judge": "a judge",
    }[match]
    return CaseFile(
        format="dataset",
        path=path,
        cases=tuple(cases),
        about=(f"Input column: {source}; expected column: {target}; check: {how}",),
        # Said on stderr beside the summary: the one flag that turns every placeholder into a check.
        notes=(
            "A dataset says what the answer should be, not how to compare it: import again with "
            "--match equals|includes|judge to write the checks.",
        ) if match is None else (),
    )
