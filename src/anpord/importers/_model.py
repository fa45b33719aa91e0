"""What an import produces before it becomes code: cases, their checks, the tally, the notes."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from ._text import plural, slug

__all__ = [
    "CaseFile",
    "Check",
    "Coded",
    "Converted",
    "ImportedCase",
    "Judged",
    "ImportedSuite",
    "Tally",
    "Unwritten",
    "VariantSpec",
    "assign_keys",
    "key_of",
    "summary_of",
]

Rule = Literal["any", "all", "none"]

# Ids that are keys already (lowercase ASCII letters, digits and "_", joined by single "-" or
# "."), which ``slug`` returns unchanged: most ids a file gives, so they skip it.
_PLAIN_KEY = re.compile(r"[a-z0-9_]+(?:[-.][a-z0-9_]+)*")


# Named tuples rather than dataclasses: immutable, and cheap enough to build 10,000 of quickly.


class Converted(NamedTuple):
    """A structured assertion: a needle list and a rule over it, which converts exactly."""

    rule: Rule
    text: str
    needles: tuple[str, ...]


class Unwritten(NamedTuple):
    """Prose (or nothing at all): kept verbatim next to a placeholder that always fails."""

    text: str
    label: str | None = None  # the assertion's own id or name, when the file gives one


Arg = str | int | float | bool | None | tuple["Arg", ...]


class Coded(NamedTuple):
    """A mechanical assertion another format spells exactly: one of the generated module's own
    check helpers (``helper`` names it; the code writer knows each), called with ``text`` (what
    the author wrote, quoted in the failure) and ``args`` (values from the file, as literals)."""

    helper: str
    text: str
    args: tuple[Arg, ...] = ()
    keywords: tuple[tuple[str, Arg], ...] = ()
    notes: tuple[str, ...] = ()  # comments above the call: threshold, weight, metric, …


Check = Converted | Unwritten | Coded


class Judged(NamedTuple):
    """A check the author gave a model grader: a ``judge(...)`` gate with their words verbatim."""

    name: str
    rubric: str
    model: str | None = None
    threshold: float = 1.0
    notes: tuple[str, ...] = ()


class VariantSpec(NamedTuple):
    """A provider the file compared: a ``Variant`` when anpord has the same agent (``harness``
    set), else a commented placeholder naming it (``harness`` None). ``options`` are literals."""

    label: str
    harness: str | None
    options: tuple[tuple[str, Arg], ...] = ()
    secrets: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class ImportedCase(NamedTuple):
    """One case, ready to render. ``own_id`` is what the file calls it (its id, or its name)."""

    own_id: str
    name: str | None
    prompt: str
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = ()  # comments above the case: where from, expected output, budget
    source_note: str = ""  # the comment above ``source=files({})``
    fallback_key: str = "case"  # used when ``own_id`` slugs to nothing
    judges: tuple[Judged, ...] = ()


class CaseFile(NamedTuple):
    """Everything read from a path, in the file's order."""

    format: str
    path: str
    cases: tuple[ImportedCase, ...]
    notes: tuple[str, ...] = ()
    about: tuple[str, ...] = ()  # extra header lines, e.g. the skill's name
    variants: tuple[VariantSpec, ...] = ()  # none: the one default variant


class Tally(NamedTuple):
    cases: int
    converted: int
    needs_author: int


class ImportedSuite(NamedTuple):
    """The generated module's text, what it holds, and what the user should be told."""

    source: str
    tally: Tally
    notes: tuple[str, ...] = ()


def tally_of(cases: tuple[ImportedCase, ...]) -> Tally:
    checks = [check for case in cases for check in case.checks]
    unwritten = sum(isinstance(check, Unwritten) for check in checks)
    # A judge is converted: the author gave that check to a model grader, and it still has one.
    judged = sum(len(case.judges) for case in cases)
    return Tally(
        cases=len(cases), converted=len(checks) - unwritten + judged, needs_author=unwritten
    )


def key_of(own_id: str) -> str:
    """A case's own id as a key: slugged, except that a leading minus sign on a number is
    spelled out, since slugging drops it and would make case -5 the same case as case 5."""
    if _PLAIN_KEY.fullmatch(own_id):
        return own_id  # already a key: slugging leaves it as it is
    text = own_id.strip()
    if text[:1] == "-" and text[1:2].isdigit():
        text = "minus-" + text[1:]
    return slug(text)


def assign_keys(cases: tuple[ImportedCase, ...]) -> tuple[list[str], list[str]]:
    """Stable, unique case ids: each case's own id as a key (``key_of``). A repeated key keeps
    its first holder and the others get the lowest free ``-2``, ``-3`` … suffix, so no id a file
    gives shifts because another one is repeated. Returns the keys and notes about the
    repeats."""
    bases = [key_of(case.own_id) or slug(case.fallback_key) or "case" for case in cases]
    taken: set[str] = set()
    first: list[bool] = []
    for base in bases:
        first.append(base not in taken)
        taken.add(base)
    keys: list[str] = []
    renamed: dict[str, list[str]] = {}
    for base, is_first in zip(bases, first):
        if is_first:
            keys.append(base)
            continue
        n = 2
        while f"{base}-{n}" in taken:
            n += 1
        key = f"{base}-{n}"
        taken.add(key)
        keys.append(key)
        renamed.setdefault(base, []).append(key)
    notes = [
        f'{len(extra) + 1} cases have the id "{base}"; the repeats are imported as '
        f"{', '.join(extra)}."
        for base, extra in renamed.items()
    ]
    return keys, notes


def summary_of(tally: Tally) -> str:
    """The closing line. The count of unwritten checks leads its second sentence, because a
    suite that passes on a check nobody wrote is the failure an import must never produce."""
    read = f"Read {plural(tally.cases, 'case')}, converted {plural(tally.converted, 'assertion')}."
    if tally.needs_author == 0:
        return read
    one = tally.needs_author == 1
    return (
        f"{read} {plural(tally.needs_author, 'assertion')} could not be converted and "
        f"{'needs' if one else 'need'} a human: {'it is' if one else 'each is'} written as prose, "
        "and the suite fails until you write the check it describes."
    )
