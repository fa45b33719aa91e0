"""The drive API: ``t``, sessions, live turns and immutable turn records."""

from ._session import DriveError, EventNotSeen, LiveTurn, Session, TrialState
from ._t import Skipped, T
from ._turn import InputRequest, Turn, TurnFailedError

__all__ = [
    "DriveError",
    "EventNotSeen",
    "InputRequest",
    "LiveTurn",
    "Session",
    "Skipped",
    "T",
    "TrialState",
    "Turn",
    "TurnFailedError",
]
