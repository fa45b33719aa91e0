"""A declarative case's conversation: the prompt, then the simulated user's replies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import message_text
from ._protocol import SimulatedUser, UserContext

if TYPE_CHECKING:
    from ..drive import T

__all__ = ["converse"]


async def converse(t: T, prompt: Any, user: SimulatedUser | None, max_turns: int | None) -> None:
    """Send ``prompt``; with a ``user``, after each completed agent turn send the user's next
    message, until the user is done, a turn does not complete (it failed, or waits for input
    the user cannot give), or ``max_turns`` messages were sent."""
    turn = await t.send(prompt)
    if user is None:
        return
    limit = max_turns if max_turns is not None else user.default_max_turns
    session = user.open(
        UserContext(
            prompt=message_text(prompt),
            env=t._judge_settings(),
            record_event=t._state.record_event,
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
