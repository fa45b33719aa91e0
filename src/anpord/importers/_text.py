"""Text helpers: exact Python literals, inert comments, one-line messages, slugs."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from .._ids import slug as slug_once
from ._values import LongNumber, field_name, render, render_leaf

__all__ = [
    "comment_lines",
    "describe_actual",
    "escape_unprintable",
    "kept_fields",
    "listing",
    "one_line",
    "plural",
    "py_str",
    "py_str_list",
    "slug",
]


def py_str(text: str) -> str:
    """An exact Python string literal for ``text``, on one line, printable characters only.

    ``repr`` escapes every character ``str.isprintable`` rejects (line breaks of every kind,
    control and format characters, lone surrogates), so the literal can never end a line or hide
    code. Double quotes are used when the text holds none, for readability.
    """
    if '"' not in text and "\\" not in text and text.isprintable():
        return f'"{text}"'  # nothing in it needs escaping: the common case, made fast
    literal = repr(text)
    # repr picks single quotes unless the text holds ' and no ". With no " in the text there is
    # no ' either, so swapping the outer quotes changes nothing inside.
    if literal[0] == "'" and '"' not in text:
        literal = '"' + literal[1:-1] + '"'
    return literal


def py_str_list(items: Iterable[str]) -> str:
    if type(items) is tuple and len(items) == 1:
        return f"[{py_str(items[0])}]"  # one expected answer: the common case
    return "[" + ", ".join(py_str(item) for item in items) + "]"


def escape_unprintable(text: str) -> str:
    """Replace every character that is not printable (or is a line break) with its escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def comment_lines(text: str, indent: str = "", *, wrap: bool = False) -> list[str]:
    """``text`` as ``#`` comment lines: split on every line break ``str.splitlines`` knows (a
    superset of the tokenizer's), with anything unprintable escaped, so a comment can never end
    early and let the rest of the text run as code. ``wrap`` folds long lines at spaces (for the
    importer's own sentences; an author's words are kept line for line)."""
    if text.isprintable() and (not wrap or len(text) <= 98 - len(indent)):
        # Printable text holds no line break of any kind: it is one line already.
        return [f"{indent}# {text}".rstrip()]
    lines = [escape_unprintable(line) for line in text.splitlines() or [""]]
    if wrap:
        width = max(40, 98 - len(indent))
        lines = [part for line in lines for part in _fold(line, width)]
    return [f"{indent}# {line}".rstrip() for line in lines]


def _fold(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    parts: list[str] = []
    current = ""
    for word in line.split(" "):
        if current and len(current) + 1 + len(word) > width:
            parts.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    parts.append(current)
    return parts


def one_line(text: str) -> str:
    """A message that stays on one line whatever the case file holds."""
    return escape_unprintable(text)


_JSON_TYPES = (dict, list, tuple, set, frozenset, str, int, float, bool, type(None))


def describe_actual(value: Any, limit: int = 80) -> str:
    """A value as an error message shows it: JSON-like, short, one line, whatever it holds."""
    if isinstance(value, LongNumber):
        return value.describe()
    if isinstance(value, _JSON_TYPES):
        return render(value, limit)
    # YAML can hold dates, binary and other values JSON cannot: name the type beside them.
    suffix = f" (a {type(value).__name__})"
    return render_leaf(value, max(limit - len(suffix), 1)) + suffix


def slug(value: str) -> str:
    """A case key: Unicode letters, digits, ``_`` and ``.`` kept, lowercased, runs of anything
    else one hyphen; may be empty. It is the runner's rule for case ids, applied until nothing
    changes, so the runner keeps an imported key exactly as written."""
    current = value
    while True:
        # One pass can leave work for the next (lowercasing may yield a combining mark).
        following = slug_once(current)
        if following == current:
            return current
        current = following


def plural(count: int, one: str) -> str:
    return f"{count} {one if count == 1 else one + 's'}"


def listing(names: list[str], limit: int = 10) -> str:
    """``a, b, c`` — cut short with a count when long, so a note stays readable."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" and {len(names) - limit} more"


_KEPT_FIELD_CHARS = 500


def kept_fields(raw: dict[Any, Any], known: Collection[str]) -> tuple[str, ...]:
    """A case's fields its format does not define (``must_have`` regexes, ``scorers``, …), as
    notes for the comments above it: whoever writes its checks still sees what the file said."""
    kept = []
    for key, value in raw.items():
        if key in known:
            continue
        text = render(value, _KEPT_FIELD_CHARS)
        kept.append(f"Not imported, from the file: {field_name(key)} = {text}")
    return tuple(kept)
