"""Who owns a run (or a sandbox folder): a process id plus that process's start time, so a pid
reused by a later process is never mistaken for the owner still being alive."""

from __future__ import annotations

import os
import socket
from typing import Any

__all__ = ["current_owner", "owner_alive", "process_start"]


def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks after boot (``/proc/<pid>/stat`` field 22), or
    ``None`` when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        if fields[0] == b"Z":
            return None  # exited, waiting to be reaped
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def current_owner() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "started": process_start(pid), "host": socket.gethostname()}


def owner_alive(owner: dict[str, Any]) -> bool | None:
    """Whether the owner process still runs: ``None`` when it cannot be told (another host)."""
    pid, started = owner.get("pid"), owner.get("started")
    if not isinstance(pid, int):
        return None
    if owner.get("host") not in (None, socket.gethostname()):
        return None
    now = process_start(pid)
    return now is not None and (started is None or now == started)
