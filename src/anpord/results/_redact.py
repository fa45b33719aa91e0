"""Keeping secrets out of every output: declared secret values and key-shaped strings become
``[REDACTED]`` in artifacts, reports and the console.

A secret rarely reaches an output as itself. On its way it may be stripped by the agent, put in
a JSON string (a tool output that is JSON text, inside a trial record that is JSON again), shown
with ``repr`` (the console's ``actual:`` lines, an exception message), or URL-encoded. The
``Redactor`` knows those spellings up front and finds them all in one pass of one pattern. It
also knows each line of a multi-line secret (stored line by line as log lines) and finds what a
cut left of a long one (a prefix or suffix of ``PARTIAL_LENGTH`` characters or more).

Records are redacted in their decoded strings (``Redactor.value``), never in their encoded text:
``1796`` or ``true`` is JSON syntax too, and a record must stay JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MIN_SECRET_LENGTH", "PARTIAL_LENGTH", "Redactor", "redact_value", "secret_parts", "spellings"]

REDACTED = "[REDACTED]"

# Shorter secrets (after stripping) are not redacted: "abc" would hit ordinary words everywhere.
MIN_SECRET_LENGTH = 4

# Key-shaped strings: common provider prefixes followed by a long token.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})"
)

# The same, without the word boundary: in a record's encoded text an escape (\\n) may stand
# right before a key that starts a line of the decoded string.
_KEY_SHAPES_LOOSE = re.compile(_KEY_SHAPES.pattern.removeprefix(r"\b"))

# Characters every spelling keeps as they are (JSON, repr and URL encoding leave them alone).
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_.~-]+")


# The exact prefixes of _KEY_SHAPES.
_KEY_PREFIXES = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "xox", "AIza")


def _has_key_prefix(text: str) -> bool:
    # The exact prefixes of _KEY_SHAPES (a bare "gh" would be in almost any text), each looked
    # for only where a character it holds is there (see _has_key_prefix_bytes).
    if ("-" in text and "sk-" in text) or ("x" in text and "xox" in text):
        return True
    if "A" in text and ("AKIA" in text or "AIza" in text):
        return True
    return "_" in text and _GITHUB_TEXT.search(text) is not None


def _has_key_prefix_bytes(data: bytes) -> bool:
    """``_has_key_prefix`` on UTF-8 bytes, for what a key shape can match: this runs on every
    trial's record. A search for one byte is a ``memchr``, twenty times faster than one for
    several: each prefix is looked for only where a character of it is there — ``-`` for ``sk-``,
    ``x`` for ``xox``, ``A`` for ``AKIA`` and ``AIza``, ``_`` for the GitHub tokens — and most
    records lack all but the last, or hold it a few times (``_at``). The six GitHub token
    prefixes are one pattern, which the regex engine scans for by its first letter."""
    if _at(data, b"sk-", 2) or _at(data, b"xox", 0):
        return True
    if b"A" in data and (b"AKIA" in data or b"AIza" in data):
        return True
    return b"_" in data and _GITHUB_PREFIXES.search(data) is not None


def _at(data: bytes, needle: bytes, anchor: int, tries: int = 32) -> bool:
    """Whether ``needle`` is in ``data``, looked for where its byte at ``anchor`` is (``-`` of
    ``sk-``): one ``memchr`` a place, where a search for the whole needle reads every byte
    (a trial's record of 10 kB: 1 µs against 5). Past ``tries`` places, the plain search."""
    byte = needle[anchor:anchor + 1]
    i = data.find(byte)
    for _ in range(tries):
        if i < 0:
            return False
        if i >= anchor and data.startswith(needle, i - anchor):
            return True
        i = data.find(byte, i + 1)
    return i >= 0 and needle in data


_GITHUB_PREFIXES = re.compile(rb"g(?:h[pousr]_|ithub_pat_)")
_GITHUB_TEXT = re.compile(_GITHUB_PREFIXES.pattern.decode())


# Escaping layers undone: a value in a JSON string (1), JSON text in a JSON string (2), a check
# message quoting that (3), inside a trial record (4), and one to spare. Each layer doubles the
# backslashes before an escape, so a layer more costs nothing but a wider count.
_LAYERS = 5
# Besides quotes, backslashes, control and non-ASCII characters, which Python escapes: "/"
# (some JSON encoders write "\/") and the characters HTML-safe encoders (Go, Gson) write as \u00XX.
_HTML_SAFE = frozenset("/<>&='")

# A token is the pattern of one character of a secret in all its spellings: a tuple of
# alternatives, each starting with a literal character, so that a pattern starting with any of
# them still gets the regex engine's first-character scan rather than a try at every position.
Token = tuple[str, ...]

# The backslashes before an escaped character: one, then up to 2^_LAYERS - 2 more.
_RUN = rf"\\\\{{0,{2**_LAYERS - 2}}}"
# A backslash in the value is 2^n backslashes after n layers. Exact counts, largest first: a
# greedy run would also take the backslash escaping a quote that follows the secret.
_BACKSLASH: Token = tuple(rf"\\\\{{{2**n - 1}}}" for n in range(_LAYERS, 0, -1)) + (r"\\",)


def _escapes(ch: str) -> set[str]:
    """How ``ch`` is escaped by one layer: JSON with and without \\uXXXX, repr quoting with ' or "."""
    forms = {
        json.dumps(ch)[1:-1],
        json.dumps(ch, ensure_ascii=False)[1:-1],
        repr(ch)[1:-1],
        repr('"' + ch)[2:-1],
    }
    if ch in _HTML_SAFE:
        forms.add(f"\\u{ord(ch):04x}")
    if ch == "/":
        forms.add("\\/")
    forms.discard(ch)
    return forms


def _token(ch: str) -> Token:
    """One character of a secret, as it is and escaped up to ``_LAYERS`` deep in any order."""
    if ch == "\\":
        return _BACKSLASH
    # Every escape starts with a backslash (a surrogate pair has two): after more layers, each
    # is a run of them.
    escaped = sorted(
        _RUN.join(re.escape(part) for part in form.split("\\")) for form in _escapes(ch)
    )
    return (re.escape(ch), *escaped)


def _alternation(token: Token) -> str:
    return token[0] if len(token) == 1 else f"(?:{'|'.join(token)})"


def spellings(value: str) -> list[list[Token]]:
    """The spellings of a secret that are redacted, as sequences of tokens (one per character).

    The value is taken stripped: an agent may strip a value read with its trailing newline, and
    the stripped form is inside every other, so whitespace around a secret is left in place (a
    redacted log line keeps its line break). Its spellings: as it is, with JSON (with and without
    ``\\uXXXX``) and ``repr`` escaping applied up to ``_LAYERS`` times in any order, and
    URL-encoded (``quote`` with and without ``/`` kept, ``quote_plus``).

    Empty when the stripped value is shorter than ``MIN_SECRET_LENGTH``: a short or blank value
    would redact ordinary text.
    """
    core = value.strip()
    if len(core) < MIN_SECRET_LENGTH:
        return []
    encoded = dict.fromkeys([quote(core), quote(core, safe=""), quote_plus(core)])
    encoded.pop(core, None)
    literal: list[list[Token]] = [[(re.escape(ch),) for ch in e] for e in encoded]
    return [[_token(ch) for ch in core], *literal]


def _anchor(value: str) -> str | None:
    """The longest run of the stripped value that every spelling holds unchanged, if any."""
    runs = _PLAIN_RUN.findall(value.strip())
    return max(runs, key=len) if runs else None


def _trie_pattern(words: Iterable[Sequence[Token]]) -> str:
    """One alternation of ``words`` with shared prefixes factored out, so a position is tried
    against one path of the trie rather than every word in turn. A word that is a prefix of another
    is an optional end (``abc(?:def)?``): the greedy group tries the longer word first, so a match
    is always the longest spelling there."""
    root: dict[Token, dict] = {}  # type: ignore[type-arg]
    for word in words:
        node = root
        for token in word:
            node = node.setdefault(token, {})
        node[()] = {}  # a word ends here
    # At the top, each alternative of a first token gets its own branch: every branch then starts
    # with a literal character, which the engine scans for.
    branches = []
    for token, node in root.items():
        rest = _node_pattern(node)
        branches += [alt + rest for alt in token]
    return "|".join(branches)


def _node_pattern(node: dict) -> str:  # type: ignore[type-arg]
    out: list[str] = []
    # A chain of single children is a plain sequence: walk it in a loop, so a long secret (a PEM
    # key) costs no recursion; recursion happens only where spellings part ways.
    while True:
        ends = () in node
        tokens = [t for t in node if t]
        if len(tokens) == 1 and not ends:
            out.append(_alternation(tokens[0]))
            node = node[tokens[0]]
            continue
        if tokens:
            branches = "|".join(_alternation(t) + _node_pattern(node[t]) for t in tokens)
            out.append(f"(?:{branches})" + ("?" if ends else ""))
        return "".join(out)


# A secret longer than this also has its cut-off ends redacted: a prefix or suffix of at least this
# many characters, which a cut somewhere (a preview, a clipped value) may have left behind.
PARTIAL_LENGTH = 16


def secret_parts(value: str) -> list[str]:
    """The values redacted for one declared secret: the value, and each line of a multi-line one
    (a program printing it in one call has it stored line by line, in its log lines)."""
    core = value.strip()
    parts = [value]
    if "\n" in core or "\r" in core:
        parts += [line.strip() for line in core.splitlines() if len(line.strip()) >= MIN_SECRET_LENGTH]
    return parts


def _partial_forms(core: str) -> list[str]:
    """The spellings whose cut-off ends are looked for: as it is, escaped once for JSON (with
    and without \\uXXXX) or by ``repr`` (a preview quotes the part it keeps), and escaped for JSON
    twice (that preview, in a record's encoded text)."""
    once = json.dumps(core, ensure_ascii=False)[1:-1]
    forms = dict.fromkeys([
        core,
        json.dumps(core)[1:-1],
        once,
        repr(core)[1:-1],
        json.dumps(once, ensure_ascii=False)[1:-1],
    ])
    return [f for f in forms if len(f) > PARTIAL_LENGTH]


class _Partials:
    """Redacts a prefix or a suffix of at least ``PARTIAL_LENGTH`` characters of a secret: what a
    cut leaves of it. Found by the first (last) ``PARTIAL_LENGTH`` characters, then extended as
    far as the text goes on matching the secret."""

    def __init__(self, forms: list[str]):
        self._heads: dict[str, list[str]] = {}
        self._tails: dict[str, list[str]] = {}
        for form in forms:
            self._heads.setdefault(form[:PARTIAL_LENGTH], []).append(form)
            self._tails.setdefault(form[-PARTIAL_LENGTH:], []).append(form)
        # A trie of the ends (shared beginnings factored out), each branch starting with a literal
        # character: an awkward secret's ends may have no plain run to test for first.
        ends = sorted(set(self._heads) | set(self._tails))
        self._pattern = re.compile(_trie_pattern([[(re.escape(c),) for c in e] for e in ends]))

    def search(self, text: str) -> bool:
        return self._pattern.search(text) is not None

    def __call__(self, text: str) -> str:
        spans: list[tuple[int, int]] = []
        for m in self._pattern.finditer(text):
            spans.append(self._span(text, m.start(), m.group()))
        if not spans:
            return text
        out, at = [], 0
        for start, end in sorted(spans):
            if end <= at:
                continue  # inside the span before
            out.append(text[at : max(start, at)])
            out.append(REDACTED)
            at = end
        out.append(text[at:])
        return "".join(out)

    def _span(self, text: str, at: int, end: str) -> tuple[int, int]:
        start, stop = at, at + PARTIAL_LENGTH
        for form in self._heads.get(end, ()):
            k = PARTIAL_LENGTH
            while k < len(form) and at + k < len(text) and text[at + k] == form[k]:
                k += 1
            stop = max(stop, at + k)
        for form in self._tails.get(end, ()):
            i, k = at, len(form) - PARTIAL_LENGTH
            while k > 0 and i > 0 and text[i - 1] == form[k - 1]:
                i, k = i - 1, k - 1
            start = min(start, i)
        return start, stop


def _anchors(pieces: Iterable[str], shortest: int) -> tuple[str, ...] | None:
    """Each piece's longest plain run; ``None`` (no cheap test) when one has none ``shortest``
    characters long."""
    found = []
    for piece in pieces:
        anchor = _anchor(piece)
        if anchor is None or len(anchor) < shortest:
            return None
        found.append(anchor)
    return tuple(dict.fromkeys(found))


def _fewest(anchors: tuple[str, ...]) -> tuple[str, ...]:
    """The anchors that hold no other one: text holding an anchor holds every anchor inside it,
    so testing the inner one alone tells as much (a key-like value holds its own ends)."""
    unique = sorted(set(anchors), key=len)
    kept: list[str] = []
    for anchor in unique:
        if not any(inner in anchor for inner in kept):
            kept.append(anchor)
    return tuple(kept)


def _holds(text: str, anchors: tuple[str, ...] | None) -> bool:
    return anchors is None or any(anchor in text for anchor in anchors)


class Redactor:
    """Replaces declared secret values (in every spelling of ``spellings``) and key-shaped strings
    with ``[REDACTED]`` in text. Text that holds none of them costs a few substring searches.

    ``value`` redacts a decoded JSON value (its strings and keys): records are redacted that way,
    before they are encoded, so a secret that looks like JSON syntax (``1796``, ``true``) never
    turns a record into something that does not parse."""

    def __init__(self, secret_values: Iterable[str] = ()):
        words: list[list[Token]] = []
        partial: list[str] = []
        kept: list[str] = []  # the values redacted (not too short)
        values = [part for value in secret_values for part in secret_parts(value)]
        for value in dict.fromkeys(values):
            spelled = spellings(value)
            if spelled:
                kept.append(value)
                words += spelled
                partial += _partial_forms(value.strip())
        partial = list(dict.fromkeys(partial))
        self._secrets = re.compile(_trie_pattern(words)) if words else None
        self._partials = _Partials(partial) if partial else None
        # Text holding none of the anchors holds no secret (every spelling holds its value's
        # anchor), nor a cut-off end of one (each holds its end's). An end with no plain run of
        # 4 characters has no anchor worth testing: then the ends are always looked for.
        self._anchors = _anchors(kept, 1)
        ends = [f[:PARTIAL_LENGTH] for f in partial] + [f[-PARTIAL_LENGTH:] for f in partial]
        self._end_anchors = _anchors(ends, MIN_SECRET_LENGTH)
        both = None if self._anchors is None or self._end_anchors is None else _fewest(self._anchors + self._end_anchors)
        if both is not None:  # one test for both passes: fewer substring searches per text
            self._anchors = self._end_anchors = both
        self._anchor_bytes = None if both is None else tuple(a.encode() for a in dict.fromkeys(both))
        # One search telling whether a string may change (an anchor or a key prefix in it): a
        # record's strings are mostly field names and short values, which this rules out in C.
        self._gate = None if both is None else re.compile(
            "|".join(re.escape(a) for a in sorted(set(both) | set(_KEY_PREFIXES), key=len, reverse=True))
        )

    def may_change(self, data: bytes) -> bool:
        """Whether redacting this UTF-8 text could change it: it holds a declared secret's
        anchor, or a key prefix. Lets a writer skip decoding bytes it would write unchanged."""
        if self._secrets is not None and (
            self._anchor_bytes is None or any(a in data for a in self._anchor_bytes)
        ):
            return True
        return _has_key_prefix_bytes(data)

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds anything redacted: a secret, a cut-off end of one, something
        key-shaped. On a record's encoded text, whether its decoded strings need redacting (each
        spelling in a string is one more escaping layer in the text, which the patterns allow;
        key shapes are looked for without their word boundary, which an escape can hide)."""
        if self._secrets is not None:
            if _holds(text, self._anchors) and self._secrets.search(text):
                return True
            if self._partials is not None and _holds(text, self._end_anchors) and self._partials.search(text):
                return True
        return _has_key_prefix(text) and _KEY_SHAPES_LOOSE.search(text) is not None

    def __call__(self, text: str) -> str:
        if self._secrets is not None:
            if _holds(text, self._anchors):
                text = self._secrets.sub(REDACTED, text)
            if self._partials is not None and _holds(text, self._end_anchors):
                text = self._partials(text)
        # Literal prefix checks are far cheaper than running the pattern over every artifact.
        if _has_key_prefix(text):
            text = _KEY_SHAPES.sub(REDACTED, text)
        return text

    def value(self, value: Any) -> Any:
        """A decoded JSON value with every string in it redacted (see ``redact_value``)."""
        return redact_value(value, self, None if self._gate is None else self._gate.search)


def redact_value(
    value: Any, redact: Callable[[str], str], needs: Callable[[str], object] | None = None
) -> Any:
    """A decoded JSON value with ``redact`` applied to every string in it, keys too; numbers,
    booleans and nulls as they are. Containers are changed in place. ``needs``, when given,
    tells the strings ``redact`` could change: the others are left without a call."""
    always: Callable[[str], object] = lambda _text: True  # noqa: E731
    check = needs or always
    if isinstance(value, str):
        return redact(value) if check(value) else value
    stack = [value]
    while stack:  # a loop, not recursion: an agent's data may nest deeply
        node = stack.pop()
        if isinstance(node, dict):
            renamed = False
            for key, item in node.items():
                if isinstance(item, str):
                    if check(item):
                        node[key] = redact(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
                if isinstance(key, str) and check(key) and redact(key) != key:
                    renamed = True
            if renamed:
                items = list(node.items())
                node.clear()
                node.update((redact(k) if isinstance(k, str) else k, v) for k, v in items)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    if check(item):
                        node[i] = redact(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
    return value
