"""The check helpers a generated module carries for ``Coded`` checks, as fixed source text.

A module holds only the helpers its cases call, so a suite imported from one kind of file stays
short. Every helper takes ``text`` (the author's assertion, quoted when the check fails) first,
then the values the file gave it as literals; none of this text comes from a case file.

A check on the run rather than the answer (latency, cost) reads the trial's events; such a
helper returns a ``_run_check``, and only ``_run_checks`` (written into the module when one is
used) hands a check the context as well as the answer.
"""

from __future__ import annotations

__all__ = ["HELPERS", "RUN_HELPERS", "helper_source"]

_TEXT_HAS = """\
def _text_has(
    text: str, needles: list[str], *, every: bool, ignore_case: bool, negate: bool = False
) -> _Check:
    # Case-sensitive unless ignore_case, as the file's own assertion type was.
    def found(answer: str, needle: str) -> bool:
        return needle.casefold() in answer.casefold() if ignore_case else needle in answer

    def holds(answer: str) -> bool:
        hits = [found(answer, needle) for needle in needles]
        held = all(hits) if every else any(hits)
        return not held if negate else held

    return _check(text, holds)
"""

_EQUALS = """\
def _equals(text: str, expected: str, *, negate: bool = False, strip: bool = False) -> _Check:
    # strip: leading and trailing white space does not count, on either side.
    if strip:
        expected = expected.strip()
    return _check(text, lambda answer: ((answer.strip() if strip else answer) == expected) != negate)
"""

_ONE_OF = """\
def _one_of(text: str, expected: list[str]) -> _Check:
    # The answer, trimmed, is one of the expected texts, trimmed.
    allowed = {one.strip() for one in expected}
    return _check(text, lambda answer: answer.strip() in allowed)
"""

_EQUALS_JSON = """\
def _equals_json(text: str, expected: str, *, negate: bool = False) -> _Check:
    # The expected value is an object: the answer must parse as JSON and equal it.
    import json

    def holds(answer: str) -> bool:
        try:
            same = json.loads(answer) == json.loads(expected)
        except ValueError:
            same = False
        return same != negate

    return _check(text, holds)
"""

_STARTS_WITH = """\
def _starts_with(text: str, prefixes: list[str], *, negate: bool = False) -> _Check:
    return _check(text, lambda answer: any(answer.startswith(p) for p in prefixes) != negate)
"""

_REGEX = """\
def _regex(text: str, pattern: str, *, negate: bool = False) -> _Check:
    # Python's re, which reads the common JavaScript patterns the same way.
    import re

    compiled = re.compile(pattern)
    return _check(text, lambda answer: (compiled.search(answer) is not None) != negate)
"""

_IS_JSON = """\
def _is_json(text: str, *, negate: bool = False) -> _Check:
    import json

    def holds(answer: str) -> bool:
        try:
            json.loads(answer)
        except ValueError:
            return negate
        return not negate

    return _check(text, holds)
"""

_CONTAINS_JSON = """\
def _contains_json(text: str, *, negate: bool = False) -> _Check:
    # Some object or array in the answer parses as JSON (code fences and prose around it allowed).
    import json

    decoder = json.JSONDecoder()

    def holds(answer: str) -> bool:
        for start, ch in enumerate(answer):
            if ch in "{[":
                try:
                    decoder.raw_decode(answer, start)
                except ValueError:
                    continue
                return not negate
        return negate

    return _check(text, holds)
"""

_LEVENSHTEIN = """\
def _levenshtein(text: str, expected: str, most: int) -> _Check:
    # At most `most` single-character edits from the expected text.
    from anpord.expect import levenshtein

    return _check(text, lambda answer: levenshtein(answer, expected) <= most)
"""

_SIMILAR = """\
def _similar(text: str, expected: list[str], least: float, *, negate: bool = False) -> _Check:
    # anpord's similarity: a normalised Levenshtein ratio (0 to 1), local, not an embedding.
    from anpord.expect import similarity_ratio

    def holds(answer: str) -> bool:
        held = any(similarity_ratio(answer, one) >= least for one in expected)
        return held != negate

    return _check(text, holds)
"""

_FUZZY = """\
def _fuzzy_match(text: str, ideals: list[str]) -> _Check:
    # OpenAI evals' FuzzyMatch: lowercased, punctuation, articles and extra spaces dropped, then
    # either text contains the other.
    import re
    import string

    def normal(value: str) -> str:
        value = "".join(ch for ch in value.lower() if ch not in string.punctuation)
        return " ".join(re.sub(r"\\b(a|an|the)\\b", " ", value).split())

    def close(answer: str, ideal: str) -> bool:
        a, b = normal(answer), normal(ideal)
        return a == b if not a or not b else a in b or b in a

    return _check(text, lambda answer: any(close(answer, ideal) for ideal in ideals))
"""

_RUN_CHECK = """\
# A check on the run rather than the answer: it is handed the validate context too.
_RunCheck = tuple[str, Callable[[str, Any], bool], bool]


def _run_check(description: str, holds: Callable[[str, Any], bool]) -> _RunCheck:
    return description, holds, True


def _run_checks(*checks: _Check | _RunCheck) -> Callable[[Any], Awaitable[tuple[bool, str]]]:
    # _checks, for cases holding a run check: every check must hold.
    async def validate(context: Any) -> tuple[bool, str]:
        answer = await context.answer()
        failed = [
            check[0]
            for check in checks
            if not (check[1](answer, context) if len(check) == 3 else check[1](answer))
        ]
        if failed:
            return False, "; ".join(failed) + f" — the answer was {_excerpt(answer)}"
        return True, f"{len(checks)} of {len(checks)} checks held"

    return validate
"""

_LATENCY = """\
def _latency(text: str, most_ms: float) -> _RunCheck:
    # From the first event of the trial to the last, in milliseconds.
    def holds(answer: str, context: Any) -> bool:
        stamps = [event.ts for event in context.events]
        return bool(stamps) and (max(stamps) - min(stamps)) * 1000 <= most_ms

    return _run_check(text, holds)
"""

_COST = """\
def _cost(text: str, most: float) -> _RunCheck:
    # The cost the harness reported in its usage events; a run that reported none fails.
    def holds(answer: str, context: Any) -> bool:
        costs = [event.data.get("cost") for event in context.events if event.type == "usage"]
        known = [cost for cost in costs if isinstance(cost, (int, float))]
        return bool(known) and sum(known) <= most

    return _run_check(text, holds)
"""

HELPERS: dict[str, str] = {
    "_text_has": _TEXT_HAS,
    "_equals": _EQUALS,
    "_one_of": _ONE_OF,
    "_equals_json": _EQUALS_JSON,
    "_starts_with": _STARTS_WITH,
    "_regex": _REGEX,
    "_is_json": _IS_JSON,
    "_contains_json": _CONTAINS_JSON,
    "_levenshtein": _LEVENSHTEIN,
    "_similar": _SIMILAR,
    "_fuzzy_match": _FUZZY,
    "_latency": _LATENCY,
    "_cost": _COST,
}
# The helpers that return a _RunCheck: a case holding one is validated by _run_checks.
RUN_HELPERS = frozenset({"_latency", "_cost"})


def helper_source(used: set[str]) -> str:
    """The source of the helpers ``used`` (in a fixed order), plus the run-check machinery when
    any of them needs it."""
    parts = [_RUN_CHECK] if used & RUN_HELPERS else []
    parts += [source for name, source in HELPERS.items() if name in used]
    return "\n\n".join(parts)
