"""The simulated-user seam: what plays the user in a declarative multi-turn case. On the
definitions' floor: a case declares its user; ``anpord.users`` has the ones anpord ships."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..events import Event
    from ._judge_spec import JudgeEnv

__all__ = ["SimulatedUser", "UserContext", "UserSession", "UserSimulationError"]


class UserSimulationError(Exception):
    """The simulated user could not give its next message (its model failed): the conversation
    is not what the case describes, so the trial is ``void``."""


@dataclass
class UserContext:
    """What a simulated user gets from its trial: the opening message (the case's ``prompt=``),
    the judge settings and cache (a persona's model comes from there when it names none), a way
    to add events (its model calls' usage) and to log."""

    prompt: str
    env: JudgeEnv
    record_event: Callable[[Event], None]
    log: Callable[[str], None]


@runtime_checkable
class UserSession(Protocol):
    async def next_message(self, reply: str) -> str | None:
        """The user's next message after the agent's ``reply``, or None when the user is done."""
        ...


@runtime_checkable
class SimulatedUser(Protocol):
    @property
    def default_max_turns(self) -> int:
        """Messages to the agent (the prompt included) when the case sets no ``max_turns``."""
        ...

    def open(self, context: UserContext) -> UserSession:
        """A fresh conversation: a user is plain data, shared by every trial of its case."""
        ...
