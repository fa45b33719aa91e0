"""Write an imported case file out as one self-contained ``*.eval.py`` module.

Every piece of text from the case file reaches the module through ``py_str`` (an exact literal)
or ``comment_lines`` (an inert comment), never pasted raw, so no case file can change the code.

Cases are written as data (``_checks(...)`` of check values) rather than one ``async def`` per
case: a function per case costs the compiler two to three times as much, which a 10,000-case
suite pays on every load.
"""

from __future__ import annotations

import math

from ._helpers import HELPERS, RUN_HELPERS, helper_source
from ._model import (
    Arg,
    CaseFile,
    Check,
    Coded,
    Converted,
    ImportedCase,
    Judged,
    VariantSpec,
    assign_keys,
)
from ._text import comment_lines, py_str, py_str_list

__all__ = ["DEFAULT_HARNESS", "render_module"]

# A coding-agent CLI the author is likely to have; a program that is not installed makes the
# trials void (could not be measured), never passed.
DEFAULT_HARNESS = 'command:claude -p "$ANPORD_PROMPT"'

_HELPER = {"any": "_contains_any", "all": "_contains_all", "none": "_contains_none"}
_INDENT = " " * 12

# The first two lines hold no case-file text: Python reads an encoding declaration there.
_HEADER = """\
# Imported by `anpord eval import`. Read it before you trust it: every check the case file
# wrote as prose is an `_unwritten(...)` placeholder below, and a placeholder always fails.
#"""

_HEADER_TAIL = """\
#
# Each case fails, quoting the check it still owes, until every placeholder in it is replaced by
# a real check. Each `files({})` source is empty: fill it with the files the case starts from,
# or use directory("fixtures/...") or repo("owner/name@ref") instead."""

_PRELUDE = f"""\
from __future__ import annotations

from typing import Any, Awaitable, Callable

from anpord import Variant, define_eval, define_suite, directory, files, repo

# The agent under test. Point it at yours: "python:package.module:attr" for a Python agent, or
# "command:<shell command>" for any program (the prompt is in $ANPORD_PROMPT; it runs in the
# trial's workspace, so name the program by an absolute path). Or leave it and run
# `anpord eval THIS_FILE --harness SPEC`.
_HARNESS = {py_str(DEFAULT_HARNESS)}

# A check is what a failure says, and a test of the agent's final answer. Write your own as
# _check("what it means", lambda answer: ...). A case that needs more than the answer (files,
# tool calls, commands) can take its own `async def validate(context)` instead of _checks(...).
_Check = tuple[str, Callable[[str], bool]]


def _check(description: str, holds: Callable[[str], bool]) -> _Check:
    return description, holds


def _has(answer: str, needle: str) -> bool:
    # Case-insensitive, which is what somebody writing "mentions the dashboard" means.
    return needle.casefold() in answer.casefold()


def _quoted(texts: list[str]) -> str:
    return ", ".join(f'"{{text}}"' for text in texts)


def _contains_any(text: str, needles: list[str]) -> _Check:
    return _check(
        f'"{{text}}": the answer must include at least one of {{_quoted(needles)}}',
        lambda answer: any(_has(answer, needle) for needle in needles),
    )


def _contains_all(text: str, needles: list[str]) -> _Check:
    return _check(
        f'"{{text}}": the answer must include all of {{_quoted(needles)}}',
        lambda answer: all(_has(answer, needle) for needle in needles),
    )


def _contains_none(text: str, needles: list[str]) -> _Check:
    return _check(
        f'"{{text}}": the answer must include none of {{_quoted(needles)}}',
        lambda answer: not any(_has(answer, needle) for needle in needles),
    )


def _unwritten(specification: str) -> _Check:
    # A check nobody has written yet. It is always false, so its case stays red until the
    # sentence it quotes becomes a real check.
    return _check(f'unwritten check: "{{specification}}"', lambda answer: False)


def _excerpt(answer: str) -> str:
    # What the agent said, so a failure can be read without opening the artifacts.
    return repr(answer if len(answer) <= 200 else answer[:199] + "…")


def _checks(*checks: _Check) -> Callable[[Any], Awaitable[tuple[bool, str]]]:
    # Every check must hold; a failure quotes each one that did not.
    async def validate(context: Any) -> tuple[bool, str]:
        answer = await context.answer()
        failed = [description for description, holds in checks if not holds(answer)]
        if failed:
            return False, "; ".join(failed) + f" — the answer was {{_excerpt(answer)}}"
        return True, f"{{len(checks)}} of {{len(checks)}} checks held"

    return validate


_cases: list[Any] = []
"""

_SUITE = """\
suite = define_suite(
    cases=_cases,
    # One harness, model and sandbox for you to edit; add Variant(...) entries to compare several.
    # None takes the value from evals.config.py (a config's sandbox="bwrap" still applies).
    variants=[Variant(harness=_HARNESS, model=None, sandbox=None)],
    trials=3,
)
"""


def _comment(out: list[str], text: str, indent: str) -> None:
    if text.isprintable():  # no line break of any kind: one line, the common case
        out.append(f"{indent}# {text}".rstrip())
    else:
        out.extend(comment_lines(text, indent))


def py_value(value: Arg) -> str:
    """An exact literal for a value a reader passed to a helper (text, numbers, flags, lists)."""
    if type(value) is str:  # the common case first
        return py_str(value)
    if isinstance(value, str):
        return py_str(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, tuple):
        return "[" + ", ".join(py_value(item) for item in value) + "]"
    raise TypeError(f"no literal for {type(value).__name__}")  # a reader's bug, never a file's


def _coded_lines(check: Coded) -> list[str]:
    if check.helper not in HELPERS:
        raise ValueError(f"unknown check helper {check.helper!r}")  # a reader's bug
    out: list[str] = []
    for note in check.notes:
        _comment(out, note, _INDENT)
    text = py_str(check.text)
    if not text.isprintable() or "\\" in text:
        # The literal escapes what it holds: the comment shows it as written.
        _comment(out, check.text, _INDENT)
    args = [text, *(py_value(arg) for arg in check.args)]
    args += [f"{key}={py_value(value)}" for key, value in check.keywords]
    out.append(f"{_INDENT}{check.helper}({', '.join(args)}),")
    return out


def _judge_lines(spec: Judged) -> list[str]:
    out: list[str] = []
    indent = " " * 12
    for note in spec.notes:
        _comment(out, note, indent)
    args = [py_str(spec.name), py_str(spec.rubric)]
    if spec.model is not None:
        args.append(f"model={py_str(spec.model)}")
    if spec.threshold != 1:
        args.append(f"threshold={py_value(float(spec.threshold))}")
    out.append(f"{indent}judge({', '.join(args)}),")
    return out


def _check_lines(check: Check) -> list[str]:
    if isinstance(check, Coded):
        return _coded_lines(check)
    out: list[str] = []
    if isinstance(check, Converted):
        _comment(out, check.text, _INDENT)
        needles = py_str_list(check.needles)
        out.append(f"{_INDENT}{_HELPER[check.rule]}({py_str(check.text)}, {needles}),")
        return out
    out.append(f"{_INDENT}# Write this check, then delete the line under it:")
    if check.label is not None:
        _comment(out, f"({check.label})", _INDENT)
    _comment(out, check.text, _INDENT)
    out.append(f"{_INDENT}_unwritten({py_str(check.text)}),")
    return out


class _Writer:
    """Writes cases into one list of lines. Checks and source notes repeat across the cases of a
    file, so each distinct one is rendered once; a converted check's comment and call head
    repeat even where its needles differ, so those are rendered once too."""

    def __init__(self, out: list[str]) -> None:
        self.out = out
        self.checks: dict[Check, list[str]] = {}
        self.heads: dict[tuple[str, str], str] = {}
        self.source_notes: dict[str, str] = {}

    def _converted(self, check: Converted) -> str:
        head = self.heads.get((check.rule, check.text))
        if head is None:
            lines: list[str] = []
            _comment(lines, check.text, _INDENT)
            lines.append(f"{_INDENT}{_HELPER[check.rule]}({py_str(check.text)}, ")
            head = self.heads[(check.rule, check.text)] = "\n".join(lines)
        return f"{head}{py_str_list(check.needles)}),"

    def case(self, case: ImportedCase, key: str) -> None:
        out = self.out
        for note in case.notes:
            _comment(out, note, "")
        folded = self.source_notes.get(case.source_note)
        if folded is None:
            folded = "\n".join(comment_lines(case.source_note, " " * 8, wrap=True))
            self.source_notes[case.source_note] = folded
        name = "" if case.name is None else f"        name={py_str(case.name)},\n"
        runs = False
        for check in case.checks:
            if type(check) is Coded and check.helper in RUN_HELPERS:
                runs = True
                break
        out.append(
            f"_cases.append(\n    define_eval(\n        id={py_str(key)},\n{name}"
            f"        prompt={py_str(case.prompt)},\n{folded}\n        source=files({{}}),"
        )
        if case.judges:
            out.append("        judges=[")
            for spec in case.judges:
                out.extend(_judge_lines(spec))
            out.append("        ],")
        out.append(f"        validate={'_run_checks' if runs else '_checks'}(")
        for check in case.checks:
            if type(check) is Converted:
                out.append(self._converted(check))
                continue
            lines = self.checks.get(check)
            if lines is None:
                lines = self.checks[check] = _check_lines(check)
            out.extend(lines)
        out.append("        ),\n    )\n)\n")


_IMPORTS = "from anpord import Variant, define_eval, define_suite, directory, files, repo"
_CASES = "_cases: list[Any] = []\n"


def _prelude(cases: tuple[ImportedCase, ...]) -> str:
    """The fixed prelude, with ``judge`` imported and the extra helpers written only when a
    case uses them."""
    used = {c.helper for case in cases for c in case.checks if isinstance(c, Coded)}
    prelude = _PRELUDE
    if any(case.judges for case in cases):
        prelude = prelude.replace(_IMPORTS, _IMPORTS.replace("files,", "files, judge,"), 1)
    if used:
        prelude = prelude.replace(_CASES, helper_source(used) + "\n\n" + _CASES, 1)
    return prelude


def _variant_lines(variants: tuple[VariantSpec, ...]) -> list[str]:
    out = [
        "# The providers the file compared, one variant each. A provider anpord has no harness",
        "# for is a commented placeholder naming it: point it at an agent, or delete it.",
        "_VARIANTS: list[Variant] = [",
    ]
    live = 0
    for spec in variants:
        for note in spec.notes:
            _comment(out, note, "    ")
        if spec.harness is None:
            _comment(out, f"anpord has no harness for the provider {spec.label}:", "    ")
            out.append(f"    # Variant(harness=_HARNESS, name={py_str(spec.label)}),")
            continue
        live += 1
        args = [f"harness={py_str(spec.harness)}", f"name={py_str(spec.label)}"]
        if spec.secrets:
            args.append(f"secrets={py_str_list(spec.secrets)}")
        if spec.options:
            pairs = ", ".join(f"{py_str(k)}: {py_value(v)}" for k, v in spec.options)
            args.append(f"options={{{pairs}}}")
        out.append(f"    Variant({', '.join(args)}),")
    out.append("]")
    if not live:
        out.append("# None of them has an anpord harness yet, so the suite runs the one above.")
        out.append("_VARIANTS.append(Variant(harness=_HARNESS, model=None, sandbox=None))")
    return out + [""]


def render_module(file: CaseFile) -> tuple[str, list[str]]:
    """The module's text, and notes about ids that had to be made unique."""
    keys, notes = assign_keys(file.cases)
    lines = [_HEADER]
    for line in (f"Format: {file.format}", f"Source: {file.path}", *file.about):
        lines += comment_lines(line)
    lines += [_HEADER_TAIL, "", _prelude(file.cases)]
    writer = _Writer(lines)
    for case, key in zip(file.cases, keys):
        writer.case(case, key)
    lines.append("")
    if file.variants:
        lines += _variant_lines(file.variants)
        lines.append(_SUITE.replace(_DEFAULT_VARIANTS, "variants=_VARIANTS,", 1))
    else:
        lines.append(_SUITE)
    return "\n".join(lines), notes


_DEFAULT_VARIANTS = "variants=[Variant(harness=_HARNESS, model=None, sandbox=None)],"
