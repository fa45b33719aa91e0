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

__all__ = ["encode", "encode_text", "decode"]

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; kept working without it
    _orjson = None  # type: ignore[assignment]

_STDLIB = json.JSONEncoder(
    ensure_ascii=False, default=_json_default, allow_nan=False, separators=(",", ":")
).encode


def _stdlib(value: Any) -> bytes:
    try:
        return _STDLIB(value).encode("utf-8", "surrogatepass")
    except ValueError:  # NaN or infinity: JSON has neither, orjson writes null
        return json.dumps(
            _finite(value), ensure_ascii=False, default=_json_default, separators=(",", ":")
        ).encode(
            "utf-8", "surrogatepass"
        )


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def encode(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, default=_json_default)
        except TypeError:
            pass  # an integer past 64 bits, a non-string key, a lone surrogate: the slow path
    return _stdlib(value)


def encode_text(value: Any) -> str:
    return encode(value).decode("utf-8", "surrogatepass")


def decode(data: bytes | str) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # let json say what is wrong, with its usual error
    return json.loads(data)
