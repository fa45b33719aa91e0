"""Write an imported case file out as one self-contained ``*.eval.py`` module.

Every piece of text from the case file reaches the module through ``py_str`` (an exact literal)
or ``comment_lines`` (an inert comment), never pasted raw, so no case file can change the code.
"""

from __future__ import annotations

from ._model import CaseFile, Converted, ImportedCase, Unwritten, assign_keys
from ._text import comment_lines, py_str, py_str_list

__all__ = ["DEFAULT_HARNESS", "render_module", "validator_name"]

# A coding-agent CLI the author is likely to have; a program that is not installed makes the
# trials void (could not be measured), never passed.
DEFAULT_HARNESS = 'command:claude -p "$ANPORD_PROMPT"'

_HELPER_FUNCTION = {"any": "_contains_any", "all": "_contains_all", "none": "_contains_none"}
_RULE_WORDS = {"any": "at least one of", "all": "all of", "none": "none of"}

# The first two lines hold no case-file text: Python reads an encoding declaration there.
_HEADER = """\
# Imported by `anpord eval import`. Read it before you trust it: every check the case file
# wrote as prose is an `_unwritten(...)` placeholder below, and a placeholder always fails.
#"""

_HEADER_TAIL = """\
#
# Each case fails, quoting the check it still owes, until every placeholder in it is replaced by
# a real check. Each `files({})` source is empty: add the files the case starts from."""

_PRELUDE = f'''\
from __future__ import annotations

from typing import Any

from anpord import Variant, define_eval, define_suite, files

# The agent under test. Point it at yours: "python:package.module:attr" for a Python agent, or
# "command:<shell command>" for any program (the prompt is in $ANPORD_PROMPT). Or leave it and
# run `anpord eval THIS_FILE --harness SPEC`.
_HARNESS = {py_str(DEFAULT_HARNESS)}


def _has(answer: str, needle: str) -> bool:
    # Case-insensitive, which is what somebody writing "mentions the dashboard" means.
    return needle.casefold() in answer.casefold()


def _contains_any(answer: str, needles: list[str]) -> bool:
    return any(_has(answer, needle) for needle in needles)


def _contains_all(answer: str, needles: list[str]) -> bool:
    return all(_has(answer, needle) for needle in needles)


def _contains_none(answer: str, needles: list[str]) -> bool:
    return not any(_has(answer, needle) for needle in needles)


def _unwritten(specification: str) -> bool:
    # A check nobody has written yet. It is false, so its case stays red until the sentence it
    # quotes becomes a real check.
    return False


def _verdict(*checks: tuple[bool, str]) -> tuple[bool, str]:
    # Every check must hold; a failure quotes each one that did not.
    failed = [message for held, message in checks if not held]
    if failed:
        return False, "; ".join(failed)
    return True, f"{{len(checks)}} of {{len(checks)}} checks held"


_cases: list[Any] = []
'''

_SUITE = """\
suite = define_suite(
    cases=_cases,
    # One harness, model and sandbox for you to edit; add Variant(...) entries to compare several.
    variants=[Variant(harness=_HARNESS, model=None, sandbox="local")],
    trials=3,
)
"""


def validator_name(key: str) -> str:
    # Keys are [a-z0-9-] only, so this is an identifier and distinct keys stay distinct.
    return "_validate_" + key.replace("-", "_")


def _quoted(text: str) -> str:
    return f'"{text}"'


def _failure_message(check: Converted) -> str:
    needles = ", ".join(_quoted(needle) for needle in check.needles)
    return f"{_quoted(check.text)}: the answer must include {_RULE_WORDS[check.rule]} {needles}"


def _check_lines(check: Converted | Unwritten) -> list[str]:
    pad = " " * 8
    if isinstance(check, Converted):
        call = f"{_HELPER_FUNCTION[check.rule]}(answer, {py_str_list(check.needles)})"
        return [
            *comment_lines(check.text, pad),
            f"{pad}({call}, {py_str(_failure_message(check))}),",
        ]
    label = [] if check.label is None else comment_lines(f"({check.label})", pad)
    return [
        f"{pad}# Write this check, then delete the line under it:",
        *label,
        *comment_lines(check.text, pad),
        f"{pad}(_unwritten({py_str(check.text)}), {py_str('unwritten check: ' + _quoted(check.text))}),",
    ]


def _case_block(case: ImportedCase, key: str) -> list[str]:
    name = validator_name(key)
    lines: list[str] = []
    for note in case.notes:
        lines += comment_lines(note)
    lines += [
        f"async def {name}(context: Any) -> tuple[bool, str]:",
        "    answer = await context.answer()",
        "    return _verdict(",
    ]
    for check in case.checks:
        lines += _check_lines(check)
    lines += [
        "    )",
        "",
        "",
        "_cases.append(",
        "    define_eval(",
        f"        id={py_str(key)},",
    ]
    if case.name is not None:
        lines.append(f"        name={py_str(case.name)},")
    lines += [
        f"        prompt={py_str(case.prompt)},",
        *comment_lines(case.source_note, " " * 8, wrap=True),
        "        source=files({}),",
        f"        validate={name},",
        "    )",
        ")",
        "",
        "",
    ]
    return lines


def render_module(file: CaseFile) -> tuple[str, list[str]]:
    """The module's text, and notes about ids that had to be made unique."""
    keys, notes = assign_keys(file.cases)
    about = [f"Format: {file.format}", f"Source: {file.path}", *file.about]
    lines = [_HEADER]
    for line in about:
        lines += comment_lines(line)
    lines += [_HEADER_TAIL, "", _PRELUDE, ""]
    for case, key in zip(file.cases, keys):
        lines += _case_block(case, key)
    lines.append(_SUITE)
    return "\n".join(lines), notes
