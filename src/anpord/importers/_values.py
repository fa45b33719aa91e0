"""Values from a case file as messages and comments show them: JSON text, one line, bounded.

A case file can hold values no JSON encoder takes: YAML dates, binary and sets, mapping keys that
are not strings, a value that contains itself (an alias inside its own anchor), and integers too
long for Python to print. Through aliases it can also hold a tree far larger than the file: a
few hundred bytes of nested aliases describe billions of nodes. So values are rendered by a lazy
walk that stops once it has the characters it will print: what a rendering costs is bounded by
what it shows, whatever the value.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DIGITS",
    "LongNumber",
    "digit_limit",
    "field_name",
    "is_long",
    "parse_int",
    "render",
    "render_leaf",
]

# Python's own default limit for converting between int and str (``sys.int_info``): converting
# longer numbers takes time quadratic in their length, so they are kept as written instead.
MAX_DIGITS = 4300


def digit_limit() -> int:
    """The most digits a number may have here: ``MAX_DIGITS``, or the interpreter's own limit
    where it is set lower (``PYTHONINTMAXSTRDIGITS``), since past it ``int`` and ``str`` fail."""
    limit = sys.get_int_max_str_digits()
    return MAX_DIGITS if limit == 0 else min(limit, MAX_DIGITS)


@functools.cache
def _first_too_long(limit: int) -> int:
    return 10**limit


@dataclass(frozen=True, slots=True)
class LongNumber:
    """An integer written with more digits than ``digit_limit()``, kept as its text."""

    text: str

    @property
    def digits(self) -> int:
        body = self.text.lstrip("+-").replace("_", "")
        if body[:2].lower() in ("0x", "0o", "0b"):
            body = body[2:]
        return len(body)

    def describe(self) -> str:
        return f"a number of {self.digits:,} digits"


def parse_int(text: str) -> int | LongNumber:
    """``int(text)``, or a ``LongNumber`` where Python would refuse to convert it."""
    if len(text) - (text[:1] in ("+", "-")) > digit_limit():
        return LongNumber(text)
    return int(text)


def is_long(value: int) -> bool:
    """Whether ``value`` has more digits than ``digit_limit()`` (so ``str`` would fail on it)."""
    return abs(value) >= _first_too_long(digit_limit())


def render(value: Any, limit: int) -> str:
    """``value`` as JSON text (exactly what ``json.dumps(value, ensure_ascii=False)`` prints, for
    a value it can print), cut to ``limit`` characters with "…". Anything JSON has no spelling
    for is shown as the string of its text; a set as a sorted array; a container inside itself
    as ``[...]`` or ``{...}``."""
    pieces: list[str] = []
    size = 0
    for piece in _pieces(value, limit):
        pieces.append(piece)
        size += len(piece)
        if size > limit:
            break
    text = "".join(pieces)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_leaf(value: Any, limit: int) -> str:
    """The plain text of a scalar JSON cannot spell (a date, binary), cut to ``limit``."""
    if isinstance(value, (bytes, bytearray)) and len(value) > limit:
        value = value[:limit]  # str() of a large binary value would copy it all to show a little
    text = _text_of(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_name(key: Any, limit: int = 200) -> str:
    """A mapping key as a note names the field: a string as it is, anything else as its text."""
    return key if isinstance(key, str) else render_leaf(key, limit)


_END: Any = object()
_CONTAINERS = (dict, list, tuple, set, frozenset)


class _Frame:
    """A container being rendered: its children still to come and how to close it."""

    __slots__ = ("children", "closer", "ident", "mapping", "started")

    def __init__(self, container: Any) -> None:
        self.mapping = isinstance(container, dict)
        self.closer = "}" if self.mapping else "]"
        self.ident = id(container)
        self.started = False
        if self.mapping:
            self.children: Iterator[Any] = iter(container.items())
        elif isinstance(container, (set, frozenset)):
            self.children = iter(_sorted(container))
        else:
            self.children = iter(container)


def _pieces(value: Any, limit: int) -> Iterator[str]:
    """The JSON text of ``value`` in pieces, walked with an explicit stack (no recursion limit
    to hit); each string is cut to ``limit`` characters before it is encoded."""
    inside: set[int] = set()  # the containers being rendered: meeting one again is a cycle
    frames: list[_Frame] = []
    item: Any = value
    while True:
        if item is not _END:
            if not isinstance(item, _CONTAINERS):
                yield _scalar(item, limit)
            elif id(item) in inside:
                yield "{...}" if isinstance(item, dict) else "[...]"
            elif not item:
                yield "{}" if isinstance(item, dict) else "[]"
            else:
                frame = _Frame(item)
                yield "{" if frame.mapping else "["
                inside.add(frame.ident)
                frames.append(frame)
            item = _END
        if not frames:
            return
        frame = frames[-1]
        child: Any = next(frame.children, _END)
        if child is _END:
            frames.pop()
            inside.discard(frame.ident)
            yield frame.closer
            continue
        if frame.started:
            yield ", "
        frame.started = True
        if frame.mapping:
            key, item = child
            yield _key(key, limit) + ": "
        else:
            item = child


def _sorted(items: set[Any] | frozenset[Any]) -> list[Any]:
    # A set has no order of its own (and string hashes vary between runs): sort by the text
    # shown, so the same file always renders the same way.
    return sorted(items, key=lambda element: _scalar(element, 200))


def _string(text: str, limit: int) -> str:
    if len(text) > limit:  # encode only what can be shown; the cut falls inside the quotes
        return json.dumps(text[:limit], ensure_ascii=False)[:-1]
    return json.dumps(text, ensure_ascii=False)


def _scalar(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return _string(value, limit)
    if value is None or isinstance(value, (bool, float)):
        return json.dumps(value)
    if isinstance(value, int):
        return _string(_int_text(value), limit) if is_long(value) else str(value)
    if isinstance(value, LongNumber):
        return value.text[: limit + 1]
    return _string(render_leaf(value, limit + 1), limit)


def _key(key: Any, limit: int) -> str:
    """A key as ``json.dumps`` writes it (true, null, NaN, 1.5 in quotes); one it cannot write
    as the string of its text."""
    if isinstance(key, str):
        return _string(key, limit)
    if key is None or isinstance(key, (bool, float)):
        return f'"{json.dumps(key)}"'
    return _string(render_leaf(key, limit + 1), limit)


def _int_text(value: int) -> str:
    # Printing it would take time quadratic in its length (Python refuses by default).
    return f"a number of about {int(value.bit_length() * 0.30103):,} digits"


def _text_of(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and is_long(value):
        return _int_text(value)
    if isinstance(value, LongNumber):
        return value.text
    return str(value)
