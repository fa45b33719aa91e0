"""How values are shown in failure messages and records: short previews, and expected values
rendered as a reader would write them (``{"city": includes("York"), "n": 3}``).

Used by the matchers (``anpord.expect``) and by the assertions that report what they saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import asdict, is_dataclass
from typing import Any

__all__ = [
    "PREVIEW_LIMIT",
    "clip",
    "describe",
    "describe_leaf",
    "json_fallback",
    "json_text",
    "looks_like_matcher",
    "preview",
    "render",
    "render_full",
]

PREVIEW_LIMIT = 300

# The running trial's redactor (set by the runner while its test runs). A long value is redacted
# before it is cut: a cut made first could leave most of a secret, which no redactor would know.
CURRENT_REDACT: ContextVar[Callable[[str], str] | None] = ContextVar("anpord_redact", default=None)


def redact_before_cut(text: str) -> str:
    redact = CURRENT_REDACT.get()
    return redact(text) if redact is not None else text

SCALARS = (str, int, float, bool, type(None))


def looks_like_matcher(value: Any) -> bool:
    """Structural: anything with ``evaluate`` and ``default_kind`` is a matcher."""
    if isinstance(value, (type, *SCALARS, Mapping, list, tuple, re.Pattern)):
        return False
    return callable(getattr(value, "evaluate", None)) and hasattr(value, "default_kind")




def json_text(value: Any) -> str:
    """The JSON text of a value (what regexes and ``includes`` test on non-strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=json_fallback)
    except (TypeError, ValueError):  # circular structures and the like
        return repr(value)


def json_fallback(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


def clip(text: str, limit: int = PREVIEW_LIMIT) -> str:
    if len(text) <= limit:
        return text
    text = redact_before_cut(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def preview(value: Any, limit: int = PREVIEW_LIMIT) -> str:
    """A short, quoted rendering of a value for messages: strings quoted, the rest as JSON."""
    if isinstance(value, str):
        if len(value) > limit:
            value = redact_before_cut(value)
        if len(value) > limit:  # quote only what is shown: a huge reply is not re-encoded whole
            return f"{json.dumps(value[:limit], ensure_ascii=False)}… (+{len(value) - limit} chars)"
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool):
        return repr(value)  # Python spelling at the top level; nested values read as JSON
    if isinstance(value, re.Pattern) or looks_like_matcher(value) or (callable(value) and not _is_data(value)):
        return clip(describe_leaf(value), limit)
    return clip(json_text(value), limit)


def _is_data(value: Any) -> bool:
    return isinstance(value, (*SCALARS, Mapping, list, tuple))


def describe_leaf(value: Any) -> str:
    if isinstance(value, re.Pattern):
        return f"/{value.pattern}/"
    if looks_like_matcher(value):
        return str(value.description)
    if isinstance(value, type):
        return f"<instance of {value.__name__}>"
    if callable(value):
        return f"<predicate {getattr(value, '__name__', type(value).__name__)}>"
    return repr(value)


def render(expected: Any, limit: int = PREVIEW_LIMIT) -> str:
    """Expected values as a reader would write them: ``{"city": includes("York"), "n": 3}``."""
    return clip(render_full(expected), limit)


def render_full(expected: Any) -> str:
    if isinstance(expected, Mapping):
        inner = ", ".join(
            f"{json.dumps(str(k), ensure_ascii=False)}: {render_full(v)}"
            for k, v in expected.items()
        )
        return "{" + inner + "}"
    if isinstance(expected, (list, tuple)):
        return "[" + ", ".join(render_full(v) for v in expected) + "]"
    if isinstance(expected, SCALARS):
        return json.dumps(expected, ensure_ascii=False)
    return describe_leaf(expected)


def describe(expected: Any) -> Any:
    """A JSON-able form of an expected value: matchers, regexes and predicates become text."""
    if isinstance(expected, Mapping):
        return {str(k): describe(v) for k, v in expected.items()}
    if isinstance(expected, (list, tuple)):
        return [describe(v) for v in expected]
    if isinstance(expected, SCALARS):
        return expected
    return describe_leaf(expected)
