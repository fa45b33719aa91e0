"""evals-json: one JSON file holding every case (the skill-creator ``evals.json`` shape).

Accepted beyond the strict shape, because real files use them: ``expectations`` as another name
for prose assertions, string ids, ``eval_name`` for ``name``, and assertion objects that carry
only prose (``{"text"}`` or ``{"name", "description"}``). Other fields are reported, not read.
"""

from __future__ import annotations

import json
from typing import Any

from ._errors import CaseFileEmpty, CaseFileNotEvalsJson, CaseFileNotJson
from ._files import read_text
from ._model import CaseFile, Check, Converted, ImportedCase, Rule, Unwritten
from ._text import describe_actual, kept_fields, listing
from ._values import LongNumber, digit_limit, parse_int

__all__ = ["NO_ASSERTION", "read_evals_json"]

_RULES: dict[str, Rule] = {
    "content_contains_any": "any",
    "content_contains_all": "all",
    "content_contains_none": "none",
}
_KNOWN_TOP = {"skill_name", "evals"}
_KNOWN_CASE = {
    "id",
    "name",
    "eval_name",
    "prompt",
    "expected_output",
    "files",
    "assertions",
    "expectations",
}
_ASSERTION_LISTS = ("assertions", "expectations")
_KNOWN_STRUCTURED = {"kind", "needles", "text", "id", "name"}
_KNOWN_PROSE = {"text", "description", "id", "name"}
_SHAPE = (
    'expected an object like {"skill_name": "...", "evals": [{"id": 1, "prompt": "...", '
    '"assertions": [...]}]}'
)
_MAX_ISSUES = 3

NO_ASSERTION = "This case named no assertion. Write what a good answer is."


class _Findings:
    """What reading found: mismatches (which refuse the file) and fields it does not read."""

    def __init__(self) -> None:
        self.issues: list[str] = []
        self.unknown: dict[str, dict[str, None]] = {}  # field -> the cases holding it, in order
        self.bare: list[str] = []  # cases with no assertion at all

    def add(self, where: str, problem: str) -> None:
        self.issues.append(f"{where}: {problem}")

    def expected(self, where: str, what: str, actual: Any) -> None:
        self.add(where, f"Expected {what}, actual {describe_actual(actual)}")

    def ignored(self, raw: dict[str, Any], known: set[str], prefix: str, case: str) -> None:
        for key in raw:
            if key not in known:
                self.unknown.setdefault(f"{prefix}{key}", {})[case] = None

    def reason(self) -> str:
        shown = "; ".join(self.issues[:_MAX_ISSUES])
        more = len(self.issues) - _MAX_ISSUES
        return shown + (f"; and {more} more" if more > 0 else "")


def _shape_problem(data: Any) -> str | None:
    """What is wrong with the file as a whole, with a hint at the shape evals-json has."""
    if isinstance(data, list):
        return f"the top level is an array; {_SHAPE}"
    if not isinstance(data, dict):
        return f"the top level is {describe_actual(data)}; {_SHAPE}"
    if "evals" not in data:
        lists = [key for key, value in data.items() if isinstance(value, list)]
        named = ", ".join(json.dumps(key, ensure_ascii=False) for key in lists)
        found = f" (found {named} instead)" if lists else ""
        return f"evals: is missing{found}; {_SHAPE}"
    if not isinstance(data["evals"], list):
        return f"evals: Expected an array of cases, actual {describe_actual(data['evals'])}"
    return None


def _own_id(raw: Any) -> str | None:
    ident = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(ident, int) and not isinstance(ident, bool):
        return str(ident)
    return ident if isinstance(ident, str) else None


def _optional_str(raw: dict[str, Any], key: str, case: str, found: _Findings) -> str | None:
    value = raw.get(key)
    if value is None or isinstance(value, str):
        return value
    found.expected(f"case {case}, {key}" if case else key, "string", value)
    return None


def _needles(value: Any, where: str, found: _Findings) -> None:
    if not isinstance(value, list):
        found.expected(where, "an array of strings", value)
        return
    if not value:
        # A check with no needle holds (or fails) whatever the answer says: it measures nothing.
        found.expected(where, "at least one needle", value)
    for n, needle in enumerate(value):
        if not isinstance(needle, str) or needle == "":
            found.expected(f"{where}.{n}", "a non-empty string", needle)


def _structured(raw: dict[str, Any], where: str, found: _Findings) -> Check | None:
    kind, text, needles = raw["kind"], raw.get("text"), raw.get("needles")
    if (
        type(kind) is str
        and kind in _RULES
        and type(text) is str
        and type(needles) is list
        and needles
        and all(type(needle) is str and needle for needle in needles)
    ):
        return Converted(_RULES[kind], text, tuple(needles))  # the well-formed case, fast
    if not isinstance(kind, str) or kind not in _RULES:
        found.expected(f"{where}.kind", " | ".join(json.dumps(name) for name in _RULES), kind)
    if "text" not in raw:
        found.add(f"{where}.text", "is missing")
    elif not isinstance(text, str):
        found.expected(f"{where}.text", "string", text)
    if "needles" not in raw:
        found.add(f"{where}.needles", "is missing")
    else:
        _needles(needles, f"{where}.needles", found)
    return None


def _assertion(raw: Any, case: str, key: str, n: int, found: _Findings) -> Check | None:
    if isinstance(raw, str):
        return Unwritten(raw)
    if not isinstance(raw, dict):
        found.expected(f"case {case}, {key}.{n}", "a string, or an object with text", raw)
        return None
    if "kind" in raw:
        if not raw.keys() <= _KNOWN_STRUCTURED:
            found.ignored(raw, _KNOWN_STRUCTURED, f"{key}[].", case)
        return _structured(raw, f"case {case}, {key}.{n}", found)
    # No kind: a description of intent, which is prose however it is wrapped.
    if not raw.keys() <= _KNOWN_PROSE:
        found.ignored(raw, _KNOWN_PROSE, f"{key}[].", case)
    label = raw.get("name", raw.get("id"))
    label = str(label) if isinstance(label, (str, int)) and not isinstance(label, bool) else None
    for field in ("text", "description"):
        if isinstance(raw.get(field), str):
            return Unwritten(raw[field], label)
    found.expected(f"case {case}, {key}.{n}", "a string, or an object with text", raw)
    return None


def _source_note(fixtures: list[str]) -> str:
    if not fixtures:
        return "This case named no fixture directory. Add the files it starts from."
    return (
        f"This case named {', '.join(fixtures)}. The JSON carries the directory names, "
        "not their contents, so add the files here."
    )


def _case(index: int, raw: Any, found: _Findings) -> ImportedCase | None:
    if not isinstance(raw, dict):
        found.expected(f"case at index {index}", "an object", raw)
        return None
    own_id = _own_id(raw)
    case = own_id if own_id is not None else f"at index {index}"
    if "id" not in raw:
        found.add(f"case {case}, id", "is missing")
    elif isinstance(raw["id"], LongNumber):
        found.expected(
            f"case {case}, id",
            f"an integer of at most {digit_limit():,} digits, or a string",
            raw["id"],
        )
    elif own_id is None:
        found.expected(f"case {case}, id", "integer or string", raw["id"])
    if not raw.keys() <= _KNOWN_CASE:
        found.ignored(raw, _KNOWN_CASE, "", case)

    prompt = raw.get("prompt")
    if not isinstance(prompt, str):
        if "prompt" not in raw:
            found.add(f"case {case}, prompt", "is missing")
        else:
            found.expected(f"case {case}, prompt", "string", prompt)
    name = _optional_str(raw, "name", case, found)
    if name is None:
        name = _optional_str(raw, "eval_name", case, found)
    expected_output = _optional_str(raw, "expected_output", case, found)

    fixtures = raw.get("files")
    if fixtures is None:
        fixtures = []
    elif not isinstance(fixtures, list):
        found.expected(f"case {case}, files", "an array of strings", fixtures)
        fixtures = []
    for n, entry in enumerate(fixtures):
        if not isinstance(entry, str):
            found.expected(f"case {case}, files.{n}", "string", entry)

    checks: list[Check] = []
    for key in _ASSERTION_LISTS:
        items = raw.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            found.expected(f"case {case}, {key}", "an array", items)
            continue
        for n, item in enumerate(items):
            check = _assertion(item, case, key, n, found)
            if check is not None:
                checks.append(check)
    if not checks and not any(raw.get(key) for key in _ASSERTION_LISTS):
        # Nothing says what a good answer is, so the case owes a check and stays red until then.
        found.bare.append(case)
        checks.append(Unwritten(NO_ASSERTION))

    if own_id is None or not isinstance(prompt, str) or found.issues:
        return None  # refused below; no need to build it
    heading = f"Case {own_id}: {name}" if name is not None else f"Case {own_id}"
    notes = (
        (heading,)
        if expected_output is None
        else (heading, f"The file's expected output: {expected_output}")
    ) + kept_fields(raw, _KNOWN_CASE)
    return ImportedCase(own_id, name, prompt, tuple(checks), notes, _source_note(fixtures))


def _notes(data: dict[str, Any], found: _Findings) -> list[str]:
    def quoted(key: str) -> str:
        return json.dumps(key, ensure_ascii=False)

    notes = [
        f"Not imported: {quoted(key)} (top level) is not an evals-json field."
        for key in data
        if key not in _KNOWN_TOP
    ]
    for field, holders in found.unknown.items():
        cases = list(holders)
        where = f"case {cases[0]}" if len(cases) == 1 else f"cases {listing(cases)}"
        notes.append(f"Not imported: {quoted(field)} ({where}) is not an evals-json field.")
    if len(found.bare) == 1:
        notes.append(
            f"Case {found.bare[0]} has no assertions: it gets one placeholder check, "
            "so it fails until you write one."
        )
    elif found.bare:
        notes.append(
            f"Cases {listing(found.bare)} have no assertions: each gets one placeholder check, "
            "so each fails until you write one."
        )
    return notes


def read_evals_json(path: str) -> CaseFile:
    """Read and check an evals-json file; refuse it (an ``ImportRefusal``) rather than guess."""
    text = read_text(path, CaseFileNotJson)
    try:
        # An integer too long for Python to convert stays a LongNumber, refused where it is read.
        data = json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as error:
        raise CaseFileNotJson(path, str(error)) from None
    except RecursionError:
        raise CaseFileNotJson(path, "nested too deeply to read") from None

    problem = _shape_problem(data)
    if problem is not None:
        raise CaseFileNotEvalsJson(path, problem)
    found = _Findings()
    title = _optional_str(data, "skill_name", "", found)
    cases = [_case(index, raw, found) for index, raw in enumerate(data["evals"])]
    if found.issues:
        raise CaseFileNotEvalsJson(path, found.reason())
    if not cases:
        raise CaseFileEmpty(path)
    return CaseFile(
        format="evals-json",
        path=path,
        about=() if title is None else (f"Skill: {title}",),
        cases=tuple(case for case in cases if case is not None),
        notes=tuple(_notes(data, found)),
    )
