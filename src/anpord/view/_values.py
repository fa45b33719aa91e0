"""A trial's values as text a page can show: pretty JSON or plain text, cut when long.

Every value on a trial page has an address (``assertion/2/actual``, ``event/7/output``,
``traceback``, ...). The page shows the first ``limit`` characters of it; its "show all" control
fetches the whole text from the same address, so the cut text and the full one are made by the
same code and always agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..events import _json_default, message_text
from ._data import TrialView

__all__ = ["BLOCK_LIMIT", "LINE_LIMIT", "Shown", "full_text", "shown"]

BLOCK_LIMIT = 4_000  # a value shown as a block: an assertion's actual, a tool's output, a log
LINE_LIMIT = 300  # a value shown on one line of the timeline


@dataclass(frozen=True)
class Shown:
    """What a page shows of one value: ``text`` (cut to the limit) and the full length."""

    text: str
    total: int
    at: str

    @property
    def cut(self) -> bool:
        return len(self.text) < self.total

    @property
    def hidden(self) -> int:
        return self.total - len(self.text)


try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; kept working without it
    _orjson = None  # type: ignore[assignment]


def as_json(value: Any) -> str:
    """Pretty JSON (two-space indent). orjson writes the same text as ``json.dumps(indent=2)``
    at a tenth of the cost (an export pretty-prints every value of thousands of trials); what it
    refuses (an integer past 64 bits, a non-string key, a float JSON has not) takes the slow path."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, default=_json_default, option=_orjson.OPT_INDENT_2).decode()
        except TypeError:
            pass
    return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)


def as_text(value: Any) -> str:
    """A string as itself; anything else as pretty JSON."""
    return value if isinstance(value, str) else as_json(value)


def as_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_json_default, separators=(", ", ": "))


def _event_field(trial: TrialView, index: int, name: str | None) -> tuple[Any, str] | None:
    if not 0 <= index < len(trial.events):
        return None
    event = trial.events[index]
    if name is None:
        return dict(event.data), "line"
    if name not in event.data:
        return None
    value = event.data[name]
    if name == "text" and event.type == "message.completed" and not isinstance(value, str):
        value = message_text(value)  # a structured message reads as its text, as in the runner
    return value, "text"


def _resolve(trial: TrialView, at: str) -> tuple[Any, str] | None:
    """The value at an address and how it is shown (``json``, ``text`` or ``line``)."""
    parts = at.split("/")
    result = trial.result
    try:
        match parts:
            case ["traceback"]:
                return trial.traceback or "", "text"
            case ["logs"]:
                return "\n".join(trial.logs), "text"
            case ["error", "message"] if result.error is not None:
                return result.error.message, "text"
            case ["assertion", i, ("expected" | "actual") as name]:
                return getattr(result.assertions[int(i)], name), "text"
            case ["assertion", i, "message"]:
                return result.assertions[int(i)].message, "text"
            case ["judgment", i, "reason"]:
                return result.judgments[int(i)].reason, "text"
            case ["event", i]:
                return _event_field(trial, int(i), None)
            case ["event", i, name]:
                return _event_field(trial, int(i), name)
    except (IndexError, ValueError):
        return None
    return None


def _render(value: Any, mode: str) -> str:
    if mode == "json":
        return as_json(value)
    if mode == "line":
        return as_line(value)
    return as_text(value)


def full_text(trial: TrialView, at: str) -> str | None:
    """The whole text at ``at``, or None for an address that names nothing."""
    found = _resolve(trial, at)
    return None if found is None else _render(*found)


def shown(trial: TrialView, at: str, limit: int = BLOCK_LIMIT) -> Shown:
    """The value at ``at`` cut to ``limit`` characters (an address that names nothing: empty)."""
    text = full_text(trial, at) or ""
    return Shown(text[:limit], len(text), at)
