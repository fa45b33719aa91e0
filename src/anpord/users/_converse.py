"""A declarative case's conversation: the prompt, then the simulated user's replies."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..events import Event, message_text
from ..authoring._user import SimulatedUser, UserContext

if TYPE_CHECKING:
    from ..judges import JudgeEnv

__all__ = ["Conversing", "converse"]


class Conversing(Protocol):
    """What a conversation needs of its trial: sending a message, and logging (``t`` is one)."""

    async def send(self, input: Any) -> Any: ...

    def log(self, message: Any) -> None: ...


async def converse(t: Conversing, prompt: Any, user: SimulatedUser | None, max_turns: int | None, *,
                   env: JudgeEnv, record_event: Callable[[Event], None]) -> None:
    """Send ``prompt``; with a ``user``, after each completed agent turn send the user's next
    message, until the user is done, a turn does not complete (it failed, or waits for input
    the user cannot give), or ``max_turns`` messages were sent. ``env`` (the trial's judge
    settings) and ``record_event`` (into the trial's log) are what the user is given."""
    turn = await t.send(prompt)
    if user is None:
        return
    limit = max_turns if max_turns is not None else user.default_max_turns
    session = user.open(
        UserContext(
            prompt=message_text(prompt),
            env=env,
            record_event=record_event,
            log=t.log,
        )
    )
    sent = 1
    while turn.status == "completed":
        if sent >= limit:
            t.log(f"the conversation stopped at max_turns={limit}")
            return
        message = await session.next_message(turn.message or "")
        if message is None:
            return
        turn = await t.send(message)
        sent += 1
    t.log(f"the conversation stopped: turn {sent} {turn.status}")
