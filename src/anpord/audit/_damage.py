"""Damaging a right answer the way a wrong one differs from it: a sentence dropped, a number
changed, a yes turned into a no, cut in half. Which damage is done depends on the seed only, so
an audit repeated on the same recording damages it the same way."""

from __future__ import annotations

import re
import zlib
from typing import Callable

__all__ = ["damage", "damage_data", "DAMAGES"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_YES_NO = re.compile(r"\b(yes|no|true|false|correct|incorrect)\b", re.IGNORECASE)
_FLIP = {"yes": "no", "no": "yes", "true": "false", "false": "true", "correct": "incorrect", "incorrect": "correct"}


def _drop_sentence(text: str, seed: int) -> str | None:
    parts = [p for p in _SENTENCE.split(text.strip()) if p]
    if len(parts) < 2:
        return None
    del parts[seed % len(parts)]
    return " ".join(parts)


def _change_number(text: str, seed: int) -> str | None:
    hits = list(_NUMBER.finditer(text))
    if not hits:
        return None
    m = hits[seed % len(hits)]
    value = m.group()
    changed = str(int(value) + 1 + seed % 7) if value.isdigit() else f"{float(value) * 2 + 1:g}"
    return text[: m.start()] + changed + text[m.end():]


def _flip_yes_no(text: str, seed: int) -> str | None:
    hits = list(_YES_NO.finditer(text))
    if not hits:
        return None
    m = hits[seed % len(hits)]
    word = _FLIP[m.group().lower()]
    if m.group()[0].isupper():
        word = word.capitalize()
    return text[: m.start()] + word + text[m.end():]


def _cut_in_half(text: str, seed: int) -> str | None:
    if len(text) < 2:
        return None
    return text[: len(text) // 2]


DAMAGES: tuple[tuple[str, Callable[[str, int], str | None]], ...] = (
    ("a sentence dropped", _drop_sentence),
    ("a number changed", _change_number),
    ("a yes turned into a no", _flip_yes_no),
    ("cut in half", _cut_in_half),
)


def damage(text: str, seed: int | None) -> tuple[str, str]:
    """``text`` damaged one way (chosen by ``seed`` among those that change it), and how."""
    s = zlib.crc32(str(seed or 0).encode())
    usable = [(how, out) for how, fn in DAMAGES if (out := fn(text, s)) is not None and out != text]
    if not usable:
        return "", "emptied (too short to damage otherwise)"
    how, out = usable[s % len(usable)]
    return out, how


def _leaves(value: object, path: tuple[object, ...] = ()) -> list[tuple[tuple[object, ...], object]]:
    """Every scalar in a JSON value, with the keys and indices leading to it."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    return [(path, value)]


def _replaced(value: object, path: tuple[object, ...], new: object) -> object:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    assert isinstance(value, list)
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def damage_data(value: object, seed: int | None) -> tuple[object, str]:
    """A structured output damaged in one of its values (chosen by ``seed``): a number changed, a
    boolean flipped, a text damaged as ``damage`` does; and how, naming the value's path."""
    s = zlib.crc32(str(seed or 0).encode())
    leaves = [(p, v) for p, v in _leaves(value) if v is not None and p]
    if not leaves:
        return None, "emptied (no value to damage)"
    path, leaf = leaves[s % len(leaves)]
    where = "".join(f"[{k!r}]" for k in path)
    if isinstance(leaf, bool):
        return _replaced(value, path, not leaf), f"{where} flipped"
    if isinstance(leaf, (int, float)):
        return _replaced(value, path, leaf + 1 + s % 7), f"{where}: a number changed"
    text, how = damage(str(leaf), seed)
    return _replaced(value, path, text), f"{where}: {how}"
