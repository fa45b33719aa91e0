"""A recorded trial cut into what a replay needs: its sessions, in the order they opened, and
each session's turns, in order — what the eval sent, what the agent streamed back, how the turn
settled.

The drive API emits a turn's boundaries itself (``turn.started``, the user's
``message.completed``, ``turn.completed`` …, ``session.waiting``); everything between them came
from the agent (or arrived while it ran: trace spans, mock calls) and is what a replay streams
back. A turn the recording ends inside (the trial timed out, the run was killed) has no status.

Trace spans that arrived outside any turn (between turns, while several sessions ran, after a
Python agent's turn from a task it left running) are the trial's own events, not a session's:
each is kept with the turn that started last before it (the first turn, for one before any) and
replayed into the trial's events when that turn is, so the checks that read them see them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import (
    INPUT_RESOLVED,
    MESSAGE_COMPLETED,
    SESSION_COMPLETED,
    SESSION_FAILED,
    SESSION_STARTED,
    SESSION_WAITING,
    TURN_CANCELLED,
    TURN_COMPLETED,
    TURN_FAILED,
    TURN_STARTED,
    Event,
)

__all__ = ["RecordedTurn", "RecordedTrial", "recorded_trial"]

_ENDS = {TURN_COMPLETED: "completed", TURN_FAILED: "failed", TURN_CANCELLED: "cancelled"}
# Events about the session as a whole: the replaying session emits its own.
_SESSION_EVENTS = frozenset({SESSION_STARTED, SESSION_COMPLETED, SESSION_FAILED, SESSION_WAITING})


@dataclass
class RecordedTurn:
    index: int  # 1-based, within its session
    input: str | None = None  # the message the eval sent (None: it answered input requests)
    events: list[Event] = field(default_factory=list)  # what the agent streamed, in order
    status: str | None = None  # completed, waiting, failed, cancelled; None: the recording stops inside it
    error: str | None = None
    data: Any = None  # the structured output
    # Trace events recorded outside any turn after this one started: the trial's, not the turn's.
    outside: list[Event] = field(default_factory=list)

    @property
    def responses(self) -> list[dict[str, Any]]:
        """The input-request answers this turn carried, as the harness recorded them."""
        return [_plain(e.data) for e in self.events if e.type == INPUT_RESOLVED]

    @property
    def message(self) -> str | None:
        """The agent's last message of the turn."""
        for e in reversed(self.events):
            if e.type == MESSAGE_COMPLETED and e.data.get("role", "assistant") == "assistant":
                return str(e.data.get("text") or "")
        return None


@dataclass
class RecordedTrial:
    verdict: str
    reason: str | None
    sessions: list[list[RecordedTurn]] = field(default_factory=list)


def _plain(data: Any) -> dict[str, Any]:
    """Event data without the session id: the replaying session stamps its own."""
    return {k: v for k, v in dict(data).items() if k != "session_id"}


def recorded_trial(verdict: str, reason: str | None, events: Sequence[Event | dict[str, Any]]) -> RecordedTrial:
    """``events`` as ``Event``s, or as their records (``events.ndjson`` lines decoded: ``type``,
    ``ts`` and the data fields), which a regrade reads a thousand at a time."""
    out = RecordedTrial(verdict, reason)
    order: dict[str, list[RecordedTurn]] = {}
    current: dict[str, RecordedTurn] = {}  # session id → its open turn
    last: RecordedTurn | None = None  # the turn that started last, in any session
    early: list[Event] = []  # trace events outside any turn, before the first turn started
    for item in events:
        ts: Any
        if isinstance(item, Event):
            kind, data, ts = item.type, item.data, item.ts
        else:
            kind, ts = str(item.get("type")), item.get("ts")
            data = item
        sid = str(data.get("session_id") or "")
        event = _Seen(kind, data)
        if event.type == TURN_STARTED and sid:
            turns = order.setdefault(sid, [])
            if not turns:
                out.sessions.append(turns)
            started = RecordedTurn(index=len(turns) + 1)
            turns.append(started)
            current[sid] = started
            if last is None:
                started.outside += early
            last = started
            continue
        turn = current.get(sid)
        if turn is None:
            if not sid and data.get("source") == "trace":  # a span the trial's own events held
                (last.outside if last is not None else early).append(_event(kind, data, ts))
            continue  # else outside any turn: a judge's, or the session's own bookkeeping
        if event.type in _ENDS:
            turn.status = _ENDS[event.type]
            turn.error = event.data.get("error")
            turn.data = event.data.get("data")
            del current[sid]
        elif event.type == SESSION_WAITING:
            turn.status = "waiting"  # parked on an input request: no turn.completed
            del current[sid]
        elif event.type == MESSAGE_COMPLETED and event.data.get("role") == "user" and turn.input is None \
                and not turn.events:
            turn.input = str(event.data.get("text") or "")
        elif event.type not in _SESSION_EVENTS:
            turn.events.append(_event(kind, data, ts))
    return out


def _event(kind: str, data: Any, ts: Any) -> Event:
    plain = {k: v for k, v in data.items() if k not in _NOT_DATA}
    return Event(kind, plain, float(ts) if isinstance(ts, (int, float)) else 0.0)


class _Seen:
    __slots__ = ("type", "data")

    def __init__(self, type: str, data: Any):
        self.type, self.data = type, data


# A record's keys that are not its data, or are the session's (the replaying session stamps its own).
_NOT_DATA = frozenset({"type", "ts", "session_id"})
