"""An opt-in cache of model answers on disk (``anpord eval --cache``).

The key is the whole request — endpoint path, model, messages, tools and every parameter — plus a
scope (the trial index) and the occurrence of that same request within the scope. Repeated trials
of a case therefore stay independent draws, and a replayed trial gets back the same sequence of
answers it had. The API key and headers are never part of the key nor stored."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CacheScope", "RequestCache", "request_key"]

FORMAT = 1


def request_key(path: str, body: Mapping[str, Any], scope: Any = None, occurrence: int = 0) -> str:
    material = json.dumps(
        {"path": path, "body": body, "scope": scope, "occurrence": occurrence},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=repr,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class CacheScope:
    """Where repeated identical requests are told apart: one per trial, named by its index."""

    def __init__(self, name: Any):
        self.name = name
        self._seen: dict[str, int] = {}

    def key(self, path: str, body: Mapping[str, Any]) -> str:
        """The key of this request's next occurrence in the scope."""
        base = request_key(path, body, self.name)
        occurrence = self._seen.get(base, 0)
        self._seen[base] = occurrence + 1
        return base if occurrence == 0 else request_key(path, body, self.name, occurrence)


class RequestCache:
    """Answers stored as one JSON file per key under ``folder`` (two-level fan-out)."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response body, or None. A missing, unreadable or corrupt entry is a miss."""
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        if (
            not isinstance(entry, dict)
            or entry.get("format") != FORMAT
            or not isinstance(entry.get("response"), dict)
        ):
            self.misses += 1
            return None
        self.hits += 1
        return entry["response"]

    def put(self, key: str, response: Mapping[str, Any]) -> None:
        """Store atomically (temp file + rename): a reader never sees half an entry. A cache that
        cannot be written is skipped, never an error for the call."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": FORMAT, "response": response}, fh, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass
