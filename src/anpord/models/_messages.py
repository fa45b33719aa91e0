"""anpord messages → chat-completions messages.

A turn's input is a string, or a structured message whose ``content`` is a list of parts
(``t.send_file`` sends ``{"type": "text"}`` and ``{"type": "file", "name", "media_type",
"data_url"}`` parts). Images become ``image_url`` parts, other files ``file`` parts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..events import message_text

__all__ = ["user_message"]


def _part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": str(part.get("text", ""))}
    if kind == "file" and isinstance(part.get("data_url"), str):
        media = str(part.get("media_type") or "")
        if media.startswith("image/"):
            return {"type": "image_url", "image_url": {"url": part["data_url"]}}
        return {
            "type": "file",
            "file": {"filename": str(part.get("name") or "file"), "file_data": part["data_url"]},
        }
    if kind in ("image_url", "input_audio", "file"):
        return dict(part)  # already in the chat-completions shape
    return None


def user_message(value: Any) -> dict[str, Any]:
    """The chat-completions user message for a turn's input."""
    if isinstance(value, Mapping) and isinstance(value.get("content"), list):
        parts = [p for p in map(_part, value["content"]) if p is not None]
        if parts and any(p["type"] != "text" for p in parts):
            return {"role": "user", "content": parts}
    return {"role": "user", "content": message_text(value)}
