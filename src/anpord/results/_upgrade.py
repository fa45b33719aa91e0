"""Reading records of an older format: one explicit upgrade hook per format version.

A record carries its format version (``"v"`` on a ``results.jsonl`` line, ``"format"`` in
``run.json``). Reading one written in format N < ``FORMAT_VERSION`` runs the hook registered for
N (it turns a format-N record into a format-N+1 one), then the hook for N+1, and so on up to the
current format, so every ``from_dict`` reads only the current shape. A version with no hook, or
newer than this anpord's, is refused with ``RecordError`` — never misread.

Changing the format means: bump ``FORMAT_VERSION``, and add the hook for the version before it
to ``TRIAL_UPGRADES`` and ``RUN_UPGRADES`` (a hook may return the record unchanged when the
change concerns the other kind). Format 1 is the first: no hook is needed yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FORMAT_VERSION", "RUN_UPGRADES", "TRIAL_UPGRADES", "RecordError", "Upgrader"]

FORMAT_VERSION = 1

Record = Mapping[str, Any]
Hook = Callable[[dict[str, Any]], dict[str, Any]]


class RecordError(ValueError):
    """A record that cannot be read: a newer format, or a field of the wrong shape."""


class Upgrader:
    """Brings a record of one kind up to ``current``: ``hooks[n]`` turns format n into n+1."""

    def __init__(self, key: str, hooks: Mapping[int, Hook], current: int = FORMAT_VERSION):
        self.key, self.hooks, self.current = key, hooks, current

    def version(self, raw: Record, what: str) -> int:
        v = raw.get(self.key, self.current)
        if not isinstance(v, int) or isinstance(v, bool):
            raise RecordError(f"{what}: format version {v!r} is not a number")
        return v

    def __call__(self, raw: Record, what: str) -> Record:
        v = self.version(raw, what)
        if v > self.current:
            raise RecordError(
                f"{what} was written in format {v} by a newer anpord; this anpord reads format "
                f"{self.current} (upgrade anpord to read it)"
            )
        if v == self.current:
            return raw
        record = dict(raw)
        while v < self.current:
            hook = self.hooks.get(v)
            if hook is None:
                raise RecordError(f"{what} was written in format {v}, which this anpord cannot upgrade "
                                  f"to format {self.current}")
            record = hook(record)
            v += 1
            record[self.key] = v
        return record


# format N -> the hook that makes a format-N record a format-N+1 one.
TRIAL_UPGRADES: dict[int, Hook] = {}
RUN_UPGRADES: dict[int, Hook] = {}

upgrade_trial = Upgrader("v", TRIAL_UPGRADES)
upgrade_run = Upgrader("format", RUN_UPGRADES)
