"""The one JSON encoder every record goes through (artifacts, ``--json``, the store).

orjson when installed (about ten times faster than the standard library: at thousands of trials a
second, encoding is a large share of the runner's work), else ``json``; both give the same JSON
for the same data. Values JSON cannot hold take the artifact fallbacks (a pydantic model's
fields, a dataclass's fields, a set as a list, bytes as text, anything else as its repr), so an
odd value never loses a whole trial record.
"""

from __future__ import annotations

import json
from typing import Any

from ..events import _json_default

__all__ = ["CUT_NOTE", "MAX_DEPTH", "encode", "encode_event", "encode_text", "decode"]

# How deep a JSON document may nest when read back: as deep as orjson encodes, so whatever is
# read can be written again.
MAX_DEPTH = 255
_TOO_DEEP = f"JSON nested more than {MAX_DEPTH} levels deep"
# Written data is cut this deep, leaving room for the record around it.
_KEPT_DEPTH = MAX_DEPTH - 5
CUT_NOTE = f"[nested more than {_KEPT_DEPTH} levels deep: cut here]"

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; kept working without it
    _orjson = None  # type: ignore[assignment]

_STDLIB = json.JSONEncoder(
    ensure_ascii=False, default=_json_default, allow_nan=False, separators=(",", ":")
).encode


def _stdlib(value: Any) -> bytes:
    try:
        text = _STDLIB(value)
    except RecursionError:  # an agent's data nested thousands deep: cut, then written
        return _stdlib(_clipped(value, _KEPT_DEPTH))
    except ValueError:  # NaN or infinity: JSON has neither, orjson writes null
        text = json.dumps(_finite(value), ensure_ascii=False, default=_json_default, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (half an emoji cut off, bytes that were not UTF-8, a JSON escape of
        # one): written as its \u escape, so the file stays UTF-8 and reads back the same string.
        return json.dumps(json.loads(text), separators=(",", ":")).encode("ascii")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def encode(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes. Containers nested deeper than ``decode`` reads back are cut
    (replaced by a note), so whatever is written can be read."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, default=_json_default)
        except TypeError as exc:
            # An integer past 64 bits, a non-string key, a lone surrogate: the slow path. Nesting
            # past orjson's limit: cut to what decode reads back, first.
            if "ecursion" in str(exc):
                value = _clipped(value, _KEPT_DEPTH)
                try:
                    return _orjson.dumps(value, default=_json_default)
                except TypeError:
                    pass
    return _stdlib(value)


def encode_event(kind: str, ts: Any, data: Any) -> bytes:
    """An event as ``events.ndjson`` holds it, ``{"type": kind, "ts": ts, **data}``, without
    building that dict: orjson writes a dict's keys in order with no spaces, so the line is the
    same bytes, encoded from the event's own data (a trial's events are most of what a run
    writes). Anything else (no orjson, data naming ``type`` or ``ts``, a value orjson refuses)
    takes ``encode`` of the merged dict, as before."""
    if _orjson is not None and type(data) is dict and data and "type" not in data and "ts" not in data:
        try:
            return b'{"type":%b,"ts":%b,%b' % (
                _orjson.dumps(kind), _orjson.dumps(ts), _orjson.dumps(data, default=_json_default)[1:])
        except TypeError:
            pass
    return encode({"type": kind, "ts": ts, **data})


def _clipped(value: Any, limit: int) -> Any:
    """A copy of ``value`` with containers below ``limit`` levels replaced by ``CUT_NOTE``;
    dataclasses become dicts of their fields (as orjson writes them). A loop, not recursion."""
    from dataclasses import fields, is_dataclass

    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 1)]
    while stack:
        node, parent, key, depth = stack.pop()
        if is_dataclass(node) and not isinstance(node, type):
            node = {f.name: getattr(node, f.name) for f in fields(node)}
        if isinstance(node, (dict, list, tuple)) and depth > limit:
            parent[key] = CUT_NOTE
        elif isinstance(node, dict):
            parent[key] = copy = dict.fromkeys(node)
            stack.extend((v, copy, k, depth + 1) for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            parent[key] = copy = [None] * len(node)  # type: ignore[assignment]
            stack.extend((v, copy, i, depth + 1) for i, v in enumerate(node))
        else:
            parent[key] = node
    return holder[0]


def encode_text(value: Any) -> str:
    return encode(value).decode("utf-8", "surrogatepass")


def decode(data: bytes | str) -> Any:
    """The value of a JSON document. ``ValueError`` for one that does not parse, or that nests
    deeper than ``MAX_DEPTH`` levels: a record anpord writes never does, and a hostile one would
    exhaust the stack of whatever walks it next (a ``repr``, a page's template)."""
    if _orjson is not None:
        try:
            value = _orjson.loads(data)
        except _orjson.JSONDecodeError as exc:
            if "depth" in str(exc) or "recursion" in str(exc):
                raise ValueError(_TOO_DEEP) from None
            value = _stdlib_loads(data)  # let json say what is wrong, with its usual error
    else:
        value = _stdlib_loads(data)
    # Nesting needs an opening bracket per level: counting them is far cheaper than walking.
    if isinstance(data, str):
        brackets = data.count("[") + data.count("{")
    else:
        brackets = data.count(b"[") + data.count(b"{")
    if brackets > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise ValueError(_TOO_DEEP)
    return value


def _stdlib_loads(data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


def _deeper_than(value: Any, limit: int) -> bool:
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:  # a loop, not recursion: the point is not to need the stack
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False
