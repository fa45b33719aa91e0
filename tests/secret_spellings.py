"""Finding a secret in output, whatever its spelling: for tests that prove none is left.

``spellings(value)`` lists, independently of the code under test, every form a value can take on
its way to an output: as it is and stripped; escaped for JSON (with and without ``\\uXXXX``) and
by ``repr`` (quoting with ' or "), composed up to four layers in any order; URL-encoded; and each
of those XML-escaped, as in a JUnit file (``xml=False`` leaves these out). ``find_leaks`` looks for all of them, and for a
``marker``: a fragment of letters and digits that only the secret holds, which no escaping
changes, so a spelling missing from the list still shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus
from xml.sax.saxutils import escape

__all__ = ["Secret", "find_leaks", "spellings"]


def _layers() -> list:  # type: ignore[type-arg]
    return [
        lambda s: json.dumps(s)[1:-1],
        lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
        lambda s: repr(s)[1:-1],
        lambda s: repr('"' + s)[2:-1],  # a string holding both quotes: ' escaped as \\'
    ]


def spellings(value: str, depth: int = 4, xml: bool = True) -> set[str]:
    bases = {value, value.strip()}
    found = set(bases)
    layer = set(bases)
    for _ in range(depth):
        layer = {f(s) for s in layer for f in _layers()}
        found |= layer
    for base in bases:
        found |= {quote(base), quote(base, safe=""), quote_plus(base)}
    if xml:
        plain = list(found)
        found |= {escape(s, {'"': "&quot;", "'": "&apos;"}) for s in plain}
        found |= {escape(s, {'"': "&quot;", "'": "&#x27;"}) for s in plain}
    return {s for s in found if s}


class Secret:
    """A declared secret: the environment variable, its value and its marker."""

    def __init__(self, name: str, value: str, marker: str, xml: bool = True):
        assert marker in value, (marker, value)
        self.name, self.value, self.marker = name, value, marker
        self.spellings = spellings(value, xml=xml)


def find_leaks(texts: Mapping[str, str], secrets: Iterable[Secret]) -> list[str]:
    """``where: what`` for every spelling or marker of a secret found in ``texts``."""
    leaks = []
    for secret in secrets:
        for where, text in texts.items():
            for spelled in sorted(secret.spellings, key=len, reverse=True):
                if spelled in text:
                    leaks.append(f"{where}: {secret.name} as {spelled!r}")
                    break
            else:
                if secret.marker in text:
                    at = text.index(secret.marker)
                    leaks.append(
                        f"{where}: {secret.name} marker in {text[max(at - 40, 0) : at + 40]!r}"
                    )
    return leaks
