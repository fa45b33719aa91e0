"""The HTTP agent protocol's fixed names (docs/http-agents.md), shared by the server
(``anpord serve``) and the client (the ``http://`` harness). Nothing here imports aiohttp."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "INFO_PATH",
    "NDJSON",
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "SESSIONS_PATH",
    "TURN_END",
    "TURN_STATUSES",
    "error_body",
]

# What ``GET /v1/info`` answers in its ``protocol`` field: tells an agent server apart from any
# other JSON API that happens to answer on that path.
PROTOCOL = "anpord-agent"
# Bumped only for changes an older peer would misread; additions (new fields, new capabilities,
# new event types) keep the version.
PROTOCOL_VERSION = 1
NDJSON = "application/x-ndjson"
# The last line of a turn's event stream: how the turn settled.
TURN_END = "turn.end"
TURN_STATUSES = ("completed", "waiting", "failed", "cancelled")
INFO_PATH = "/v1/info"
SESSIONS_PATH = "/v1/sessions"


def error_body(code: str, message: str) -> bytes:
    """Every error response: ``{"error": <short code>, "message": <one line>}``."""
    payload: dict[str, Any] = {"error": code, "message": message}
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")
