"""A chat (a list of ``{role, content}`` messages) as the one prompt text a case sends."""

from __future__ import annotations

from typing import Any

__all__ = ["chat_text", "is_chat"]


def is_chat(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in value)
    )


def chat_text(messages: list[dict[str, Any]]) -> tuple[str, str | None]:
    """The lone message's content; or every message as ``role: content`` and a note saying the
    chat was joined, since a case sends one prompt."""
    if len(messages) == 1:
        return messages[0]["content"], None
    joined = "\n\n".join(f"{m.get('role', 'user')}: {m['content']}" for m in messages)
    return joined, (
        f"The prompt is a chat of {len(messages)} messages; anpord sends one prompt, so they are "
        "joined here. Move a system message into the variant's options={'system': ...}."
    )
