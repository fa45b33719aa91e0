"""Typed events shared by every harness.

An event is a ``type`` plus flat data fields. Harnesses produce them, the drive API buffers them
per turn and per session, assertions read them, and artifacts write them as NDJSON lines.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "Event",
    "SESSION_STARTED",
    "SESSION_WAITING",
    "SESSION_COMPLETED",
    "SESSION_FAILED",
    "TURN_STARTED",
    "TURN_COMPLETED",
    "TURN_FAILED",
    "TURN_CANCELLED",
    "MESSAGE_COMPLETED",
    "TOOL_CALLED",
    "TOOL_RESULT",
    "INPUT_REQUESTED",
    "INPUT_RESOLVED",
    "COMMAND_COMPLETED",
    "FILES_CHANGED",
    "USAGE",
    "LOG",
    "MODEL_CALLED",
    "SPAN",
    "PROCESS_EXITED",
    "KNOWN_TYPES",
    "TURN_BOUNDARY_TYPES",
    "message_text",
    "usage_events",
]

SESSION_STARTED = "session.started"
SESSION_WAITING = "session.waiting"
SESSION_COMPLETED = "session.completed"
SESSION_FAILED = "session.failed"
TURN_STARTED = "turn.started"
TURN_COMPLETED = "turn.completed"
TURN_FAILED = "turn.failed"
TURN_CANCELLED = "turn.cancelled"
MESSAGE_COMPLETED = "message.completed"
TOOL_CALLED = "tool.called"
TOOL_RESULT = "tool.result"
INPUT_REQUESTED = "input.requested"
INPUT_RESOLVED = "input.resolved"
COMMAND_COMPLETED = "command.completed"
FILES_CHANGED = "files.changed"
USAGE = "usage"
LOG = "log"
# One model call (provider, model, input_tokens, output_tokens, latency, status), from a trace
# span (``source: "trace"``) or a model proxy.
MODEL_CALLED = "model.called"
# A trace span that is neither a tool nor a model call: name, attributes, start, end, parent.
SPAN = "span"
# How a command agent's or coding CLI's process ended ({command, exit_code, duration}, with the
# tail of its stderr when it failed with no answer): the harnesses' own event, outside the core
# vocabulary above.
PROCESS_EXITED = "process.exited"

KNOWN_TYPES = frozenset(
    {
        SESSION_STARTED,
        SESSION_WAITING,
        SESSION_COMPLETED,
        SESSION_FAILED,
        TURN_STARTED,
        TURN_COMPLETED,
        TURN_FAILED,
        TURN_CANCELLED,
        MESSAGE_COMPLETED,
        TOOL_CALLED,
        TOOL_RESULT,
        INPUT_REQUESTED,
        INPUT_RESOLVED,
        COMMAND_COMPLETED,
        FILES_CHANGED,
        USAGE,
        LOG,
        MODEL_CALLED,
        SPAN,
    }
)

# A turn has settled once one of these arrives.
TURN_BOUNDARY_TYPES = frozenset({TURN_COMPLETED, TURN_FAILED, TURN_CANCELLED, SESSION_WAITING})


@dataclass(slots=True)
class Event:
    """One thing that happened. ``data`` holds the type's fields (see DESIGN §5). Treat an event as
    immutable once emitted (it is not frozen only because frozen dataclasses cost a microsecond
    more to build, and a trial builds many)."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "ts": self.ts}
        out.update(self.data)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=_json_default)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "Event":
        data = {k: v for k, v in raw.items() if k not in ("type", "ts")}
        ts = raw.get("ts")
        return cls(str(raw["type"]), data, float(ts) if isinstance(ts, (int, float)) else time.time())


def _json_default(value: Any) -> Any:
    """Best-effort JSON for artifacts: never let an odd value lose a whole trial record."""
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


def message_text(value: Any) -> str:
    """The text of a message, the same for every harness and for the events recording it: a string
    is itself; a dict's string ``content`` (or ``text``); the ``type == "text"`` parts of a list
    ``content``, one per line; anything else, compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        content = value.get("content", value.get("text"))
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
            )
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def to_jsonable(value: Any) -> Any:
    """Round-trip a value through JSON with the artifact fallbacks."""
    return json.loads(json.dumps(value, default=_json_default))


def usage_events(events: list[Event]) -> list[Event]:
    """The events a trial's token and cost totals add up, one source for each call: the
    harness's own ``usage`` reports, else the model proxy's ``model.called``; and each model call
    a trace span reported (``model.called``, ``source: "trace"``) that neither of them reported
    (``_unreported``; docs/traces.md). anpord's own calls (a judge's, a simulated user's) always
    count."""
    harness: list[Event] = []
    proxy: list[Event] = []
    traced: list[Event] = []
    for e in events:
        if e.type == USAGE:
            harness.append(e)
        elif e.type == MODEL_CALLED:
            (traced if e.data.get("source") == "trace" else proxy).append(e)
    chosen = harness or proxy
    if not traced or not chosen:
        return chosen or traced
    return chosen + _unreported(traced, [e for e in harness if e.data.get("source") not in _OWN_CALLS], proxy)


_OWN_CALLS = ("judge", "user")  # usage of anpord's own model calls: never the agent's
_SLACK = 0.5  # seconds a proxy's record of a call may lie outside the span's time


def _same_model(a: Any, b: Any) -> bool:
    """Unnamed matches anything; else equal, or one a dated form of the other (``gpt-4o`` and
    ``gpt-4o-2024-08-06``: a request names the one, a response the other)."""
    if not a or not b:
        return True
    a, b = str(a), str(b)
    return a.startswith(b) or b.startswith(a)


def _float(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _unreported(traced: list[Event], harness: list[Event], proxy: list[Event]) -> list[Event]:
    """The traced model calls no harness report and no proxy record stands for: the same
    ``response_id``; else a proxy call of the same model whose time overlaps the span's (each
    proxy call stands for one span); else a harness ``usage`` report, of the same model or none,
    made after the call started, in its session (so one total for several calls covers them
    all)."""
    ids = {e.data.get("response_id") for e in harness} | {e.data.get("response_id") for e in proxy}
    ids.discard(None)
    taken: set[int] = set()  # proxy calls already standing for a span
    out: list[Event] = []
    for call in traced:
        data = call.data
        if data.get("response_id") is not None and data.get("response_id") in ids:
            continue
        end = _float(data.get("end"), call.ts)
        start = _float(data.get("start"), end)
        model, session = data.get("model"), data.get("session_id")
        match = next((i for i, p in enumerate(proxy) if i not in taken and _same_model(model, p.data.get("model"))
                      and _float(p.data.get("start"), p.ts - _float(p.data.get("latency"), 0.0)) <= end + _SLACK
                      and _float(p.data.get("end"), p.ts) >= start - _SLACK), None)
        if match is not None:
            taken.add(match)
            continue
        if any(r.ts >= start and (session is None or r.data.get("session_id") in (None, session))
               and _same_model(model, r.data.get("model")) for r in harness):
            continue
        out.append(call)
    return out
