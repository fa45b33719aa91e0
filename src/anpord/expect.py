"""Value matchers for ``t.check(value, matcher)`` and the matching rules every assertion shares.

```python
from anpord.expect import includes, equals, matches, satisfies, similarity

t.check(t.reply, includes("Sunny"))
t.check(turn.data, matches({"city": "Brooklyn", "days": [{"high": lambda h: h > 50}]}))
t.check(t.reply, similarity("It is sunny in Brooklyn.", threshold=0.8))
```

Matching (``match_value``), used by the matchers, by ``called_tool(input=...)``, ``event(data=...)``,
``wait_for_event(data=...)`` and input-request filters:

- a dict matches partially and deeply: every expected key must be present and match; extra keys
  are fine (``exact=True``, used by ``equals``, also forbids extra keys);
- a list (or tuple) matches element by element: same length, each element matched recursively;
- a compiled regex searches a string, or the JSON text of any other value;
- a ``Matcher`` (``includes(...)`` and friends) decides for itself;
- a class tests ``isinstance``; any other callable is a predicate (truthy result: match; an
  exception: no match, and the assertion that used it reports an error);
- anything else compares with ``==`` (``True`` never equals ``1``, as in JSON).

Every matcher is a gate by default, except ``similarity``, which is soft.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ._render import SCALARS as _SCALARS
from ._render import describe as _describe
from ._render import describe_leaf as _describe_leaf
from ._render import json_text as _json_text
from ._render import preview as _preview
from ._render import render as _render

__all__ = [
    "BaseMatcher",
    "MatchResult",
    "Matcher",
    "equals",
    "includes",
    "is_matcher",
    "levenshtein",
    "match_value",
    "matches",
    "satisfies",
    "similarity",
    "similarity_ratio",
]

Kind = Literal["gate", "soft"]


@dataclass(frozen=True, slots=True)
class MatchResult:
    """What a matcher decided about one value.

    ``ok``: whether it matched. ``score``: 0–1 (a gate passes when the score reaches its
    threshold, 1 by default; a soft check records it). ``expected``: what was expected, in a
    JSON-able form, shown in reports. ``actual``: the value seen. ``message``: why it did not match
    (empty when it did), shown under the failed check. ``error``: set when user code raised while
    matching; the check is then an error, never a pass.
    """

    ok: bool
    score: float
    expected: Any
    actual: Any
    message: str
    error: str | None = None


@runtime_checkable
class Matcher(Protocol):
    """Anything with these attributes can be passed to ``t.check`` or nested in an expected value."""

    name: str
    default_kind: Kind
    default_threshold: float | None

    @property
    def description(self) -> str: ...

    def evaluate(self, actual: Any) -> MatchResult: ...


def is_matcher(value: Any) -> bool:
    """Is ``value`` a matcher? A fast structural test (``isinstance`` on the Protocol is slow)."""
    if isinstance(value, BaseMatcher):
        return True
    if isinstance(value, (type, *_SCALARS, Mapping, list, tuple, re.Pattern)):
        return False
    return callable(getattr(value, "evaluate", None)) and hasattr(value, "default_kind")


class BaseMatcher:
    """Shared plumbing for the built-in matchers (and a convenient base for custom ones)."""

    name: str = "matcher"
    default_kind: Kind = "gate"
    default_threshold: float | None = 1.0
    _description: str | None = None

    @property
    def description(self) -> str:
        """How the matcher is named in reports (``includes("Sunny")``). A subclass may set it in
        its ``__init__`` (``self.description = ...``) or override ``_describe_self``."""
        # Cached: a check reads it several times (record name, expected, messages).
        if self._description is None:
            self._description = self._describe_self()
        return self._description

    @description.setter
    def description(self, value: str) -> None:
        self._description = str(value)

    def _describe_self(self) -> str:
        return self.name

    def evaluate(self, actual: Any) -> MatchResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.description

    def _result(self, ok: bool, actual: Any, message: str, error: str | None = None) -> MatchResult:
        return MatchResult(ok, 1.0 if ok else 0.0, _describe(self), actual, message, error)


# ---------------------------------------------------------------------------------------------
# match_value: the one set of matching rules.


@dataclass(frozen=True, slots=True)
class Match:
    """The detailed outcome of ``match_detail``: ``why`` explains a mismatch, ``error`` a raise."""

    ok: bool
    why: str = ""
    error: str | None = None


_OK = Match(True)


def match_value(expected: Any, actual: Any, *, exact: bool = False) -> tuple[bool, str]:
    """Does ``actual`` match ``expected``? Returns ``(ok, why)``; ``why`` is empty on a match."""
    m = match_detail(expected, actual, exact=exact)
    return m.ok, m.why


def match_detail(expected: Any, actual: Any, *, exact: bool = False) -> Match:
    """Like ``match_value`` but also says whether a user function raised (``Match.error``)."""
    return _match(expected, actual, "$", exact)


def _at(path: str) -> str:
    return "" if path == "$" else f"at {path}: "


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key) if isinstance(key, str) else key!r}]"


def _as_mapping(value: Any) -> Any:
    # A pydantic model or dataclass returned by an agent is matched by its fields.
    if hasattr(value, "model_dump") and not isinstance(value, type):
        try:
            return value.model_dump()
        except Exception:  # noqa: BLE001 - fall back to the object itself
            return value
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return value


def _match(expected: Any, actual: Any, path: str, exact: bool) -> Match:
    if isinstance(expected, _SCALARS):  # the common case first: plain values compare with ==
        return _equal(expected, actual, path)

    if is_matcher(expected):
        try:
            res = expected.evaluate(actual)
        except Exception as exc:  # noqa: BLE001 - a broken matcher never passes
            err = f"{_at(path)}{expected.description} raised {type(exc).__name__}: {exc}"
            return Match(False, err, err)
        if res.error:
            return Match(False, f"{_at(path)}{res.message}", res.error)
        if not res.ok:
            return Match(False, f"{_at(path)}{res.message}")
        return _OK

    if isinstance(expected, re.Pattern):
        if expected.search(_json_text(actual)):
            return _OK
        return Match(
            False, f"{_at(path)}expected a match for /{expected.pattern}/, saw {_preview(actual)}"
        )

    if isinstance(expected, Mapping):
        actual = _as_mapping(actual)
        if not isinstance(actual, Mapping):
            return Match(False, f"{_at(path)}expected an object, saw {_preview(actual)}")
        for key, sub in expected.items():
            if key not in actual:
                seen = ", ".join(map(str, list(actual)[:20])) or "none"
                return Match(False, f"{_at(path)}missing key {key!r} (keys seen: {seen})")
            m = _match(sub, actual[key], _key_path(path, key), exact)
            if not m.ok:
                return m
        if exact:
            extra = [k for k in actual if k not in expected]
            if extra:
                names = ", ".join(map(repr, extra[:20]))
                return Match(False, f"{_at(path)}unexpected key(s) {names} in {_preview(actual)}")
        return _OK

    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)):
            return Match(False, f"{_at(path)}expected a list, saw {_preview(actual)}")
        if len(actual) != len(expected):
            return Match(
                False,
                f"{_at(path)}expected {len(expected)} items, saw {len(actual)}: {_preview(actual)}",
            )
        for i, (sub, item) in enumerate(zip(expected, actual)):
            m = _match(sub, item, f"{path}[{i}]", exact)
            if not m.ok:
                return m
        return _OK

    if isinstance(expected, type):
        if isinstance(actual, expected):
            return _OK
        return Match(
            False, f"{_at(path)}expected an instance of {expected.__name__}, saw {_preview(actual)}"
        )

    if callable(expected):
        name = getattr(expected, "__name__", type(expected).__name__)
        try:
            verdict = expected(actual)
        except Exception as exc:  # noqa: BLE001 - reported, never passes
            err = f"{_at(path)}predicate {name} raised {type(exc).__name__}: {exc} (on {_preview(actual)})"
            return Match(False, err, err)
        ok, note = _predicate_verdict(verdict)
        if ok:
            return _OK
        detail = f": {note}" if note else ""
        return Match(False, f"{_at(path)}predicate {name} rejected {_preview(actual)}{detail}")

    return _equal(expected, actual, path)


def _predicate_verdict(verdict: Any) -> tuple[bool, str]:
    # (bool, message) is accepted like validate(); a bare tuple must not pass just for being truthy.
    if isinstance(verdict, tuple) and len(verdict) == 2 and isinstance(verdict[0], bool):
        return verdict[0], str(verdict[1] or "")
    return bool(verdict), ""


def _equal(expected: Any, actual: Any, path: str) -> Match:
    try:
        same = bool(expected == actual) and isinstance(expected, bool) == isinstance(actual, bool)
    except Exception as exc:  # noqa: BLE001 - e.g. ambiguous array truth values
        err = f"{_at(path)}comparing raised {type(exc).__name__}: {exc}"
        return Match(False, err, err)
    if same:
        return _OK
    want, got = _preview(expected), _preview(actual)
    if want == got or _kind(expected) != _kind(actual):
        want = f"{want} ({type(expected).__name__})"
        got = f"{got} ({type(actual).__name__})"
    where = ""
    if (
        isinstance(expected, str)
        and isinstance(actual, str)
        and min(len(expected), len(actual)) > 40
    ):
        # For long texts, say where they part; short ones are readable at a glance.
        where = f" (first difference at index {_first_difference(expected, actual)})"
    return Match(False, f"{_at(path)}expected {want}, saw {got}{where}")


def _kind(value: Any) -> str:
    # Numbers compare across int/float; any other type difference is worth naming in the message.
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


# ---------------------------------------------------------------------------------------------
# The matchers.


class _Includes(BaseMatcher):
    name = "includes"

    def __init__(self, needle: str | re.Pattern[str], ignore_case: bool) -> None:
        if not isinstance(needle, (str, re.Pattern)):
            raise TypeError(
                f"includes() takes a string or a compiled regex, not {type(needle).__name__}"
            )
        self.needle = needle
        self.ignore_case = ignore_case
        self._pattern: re.Pattern[str] | None = None
        if isinstance(needle, re.Pattern):
            self._pattern = (
                re.compile(needle.pattern, needle.flags | re.IGNORECASE) if ignore_case else needle
            )

    def _describe_self(self) -> str:
        shown = (
            _describe_leaf(self.needle)
            if isinstance(self.needle, re.Pattern)
            else _preview(self.needle, 120)
        )
        return f"includes({shown}{', ignore_case=True' if self.ignore_case else ''})"

    def evaluate(self, actual: Any) -> MatchResult:
        text = _json_text(actual)
        if self._pattern is not None:
            ok = self._pattern.search(text) is not None
        elif self.ignore_case:
            ok = str(self.needle).casefold() in text.casefold()
        else:
            ok = str(self.needle) in text
        if ok:
            return self._result(True, actual, "")
        what = "no value" if actual is None else _preview(actual)
        return self._result(
            False, actual, f"expected text including {_preview_needle(self.needle)}, saw {what}"
        )


def _preview_needle(needle: str | re.Pattern[str]) -> str:
    return (
        f"a match for /{needle.pattern}/"
        if isinstance(needle, re.Pattern)
        else _preview(needle, 120)
    )


class _Structural(BaseMatcher):
    """``equals`` (exact) and ``matches`` (partial): both run ``match_value``."""

    def __init__(self, name: str, expected: Any, exact: bool) -> None:
        self.name = name
        self.expected = expected
        self.exact = exact

    def _describe_self(self) -> str:
        return f"{self.name}({_render(self.expected, 120)})"

    def evaluate(self, actual: Any) -> MatchResult:
        m = _match(self.expected, actual, "$", self.exact)
        return self._result(m.ok, actual, m.why, m.error)


class _Satisfies(BaseMatcher):
    name = "satisfies"

    def __init__(self, fn: Callable[[Any], Any], label: str | None) -> None:
        if not callable(fn):
            raise TypeError(f"satisfies() takes a function, not {type(fn).__name__}")
        self.fn = fn
        self.label = label or getattr(fn, "__name__", "predicate")

    def _describe_self(self) -> str:
        return f"satisfies({self.label})"

    def evaluate(self, actual: Any) -> MatchResult:
        try:
            verdict = self.fn(actual)
        except Exception as exc:  # noqa: BLE001 - the check reports an error, never a pass
            err = f"{self.label} raised {type(exc).__name__}: {exc} (on {_preview(actual)})"
            return self._result(False, actual, err, err)
        ok, note = _predicate_verdict(verdict)
        if ok:
            return self._result(True, actual, "")
        detail = f": {note}" if note else ""
        return self._result(
            False, actual, f"{self.label} was not satisfied by {_preview(actual)}{detail}"
        )


class _Similarity(BaseMatcher):
    name = "similarity"
    default_kind: Kind = "soft"

    def __init__(self, expected: Any, threshold: float | None) -> None:
        if threshold is not None and not 0 <= threshold <= 1:
            raise ValueError(f"similarity threshold must be between 0 and 1, not {threshold!r}")
        self.expected = expected
        self.default_threshold = threshold

    def _describe_self(self) -> str:
        extra = (
            f", threshold={self.default_threshold}" if self.default_threshold is not None else ""
        )
        return f"similarity({_preview(self.expected, 120)}{extra})"

    def evaluate(self, actual: Any) -> MatchResult:
        score = (
            0.0
            if actual is None
            else similarity_ratio(_json_text(self.expected), _json_text(actual))
        )
        ok = self.default_threshold is None or score >= self.default_threshold
        bar = f" (threshold {self.default_threshold})" if self.default_threshold is not None else ""
        # Always said, even on a pass: a threshold set later on the handle may turn it into a miss.
        message = (
            f"similarity {score:.3f}{bar} to {_preview(self.expected)}, saw {_preview(actual)}"
        )
        return MatchResult(ok, score, _describe(self), actual, message)


def includes(needle: str | re.Pattern[str], *, ignore_case: bool = False) -> BaseMatcher:
    """Text containing ``needle`` (a substring), or a match for a compiled regex (``re.search``).

    A non-string value is tested on its JSON text.
    """
    return _Includes(needle, ignore_case)


def equals(value: Any) -> BaseMatcher:
    """Equal to ``value``. Dicts must have exactly the expected keys; nested matchers, regexes and
    predicates inside ``value`` still apply."""
    return _Structural("equals", value, exact=True)


def matches(pattern_or_structure: Any) -> BaseMatcher:
    """A regex (a string is compiled; ``re.search`` semantics, anchor it yourself) or a structure
    matched partially and deeply by ``match_value``."""
    expected = (
        re.compile(pattern_or_structure)
        if isinstance(pattern_or_structure, str)
        else pattern_or_structure
    )
    return _Structural("matches", expected, exact=False)


def satisfies(fn: Callable[[Any], Any], label: str | None = None) -> BaseMatcher:
    """Passes when ``fn(value)`` is truthy (or returns ``(True, message)``). If ``fn`` raises, the
    check is an error, never a pass. ``label`` names it in reports (default: the function name)."""
    return _Satisfies(fn, label)


def similarity(expected: Any, threshold: float | None = None) -> BaseMatcher:
    """A soft check scored by the normalised Levenshtein ratio (0–1) between the texts.

    ``1 - distance / max(len)``; non-strings are compared by their JSON text. With no threshold
    the score is recorded and never misses; ``.gate(t)`` / ``.at_least(t)`` on the handle set one.
    """
    return _Similarity(expected, threshold)


# ---------------------------------------------------------------------------------------------
# Levenshtein distance: Myers/Hyyrö bit-parallel algorithm on Python's big ints, so two 10,000
# character texts take milliseconds rather than the quadratic table's tens of seconds.


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions) between two strings."""
    if a == b:
        return 0
    # Common prefix and suffix never change the distance; dropping them shrinks the work.
    start = 0
    limit = min(len(a), len(b))
    while start < limit and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    a, b = a[start:end_a], b[start:end_b]
    if not a or not b:
        return len(a) + len(b)
    # The longer string becomes the bit vector; the Python loop runs over the shorter one.
    if len(a) < len(b):
        a, b = b, a
    m = len(a)
    peq: dict[str, int] = {}
    for i, ch in enumerate(a):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    mask = (1 << m) - 1
    high = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for ch in b:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = (ph << 1) | 1
        mh <<= 1
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv & mask
    return score


def similarity_ratio(a: str, b: str) -> float:
    """``1 - levenshtein(a, b) / max(len(a), len(b))``; two empty strings are identical (1.0)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - levenshtein(a, b) / longest
