"""Run artifacts: ``run.json``, ``results.jsonl`` and one JSON + events NDJSON per trial.

``results.jsonl`` is appended and flushed as each trial finishes, so a killed run loses at most
its in-flight trials. Secrets declared by variants and key-shaped strings are redacted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any, Sequence

from .._fs import write_atomic
from ..events import Event, _json_default
from ._model import TrialResult

from ._redact import Redactor

__all__ = ["Redactor", "RunWriter", "new_run_id", "safe_segment"]

_UNSAFE = re.compile(r"[^\w.@+=-]+")  # \w keeps Unicode letters: 東京 stays readable
def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def safe_segment(text: str) -> str:
    """A path segment that cannot escape or collide with dot-entries. When cleaning changed the
    text, a short hash of the original keeps distinct ids apart (``東京`` and ``大阪`` both clean
    to ``_``)."""
    s = _UNSAFE.sub("_", text).strip("._") or "_"
    if s != text or len(s) > 120:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        s = f"{s[:111]}-{digest}"
    return s


# One encoder for every artifact: json.dumps with keywords builds a new encoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, default=_json_default).encode


def _write(path: str, text: str) -> None:
    """Write a trial file in place, not through a temp file and a rename (DESIGN §9 asks for
    atomic writes): each is a new file, written once, by this run only, and nothing points to
    it until its results.jsonl line is written after it — so a killed run leaves at most an
    unreferenced partial file of an in-flight trial, which it loses anyway. The rename would
    add a syscall per file on the runner's hottest path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(text.encode("utf-8"))
        while view:  # a write may be partial
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class RunWriter:
    """Writes one run's folder. Per-trial files are written before the results.jsonl line."""

    def __init__(self, run_dir: Path, redactor: Redactor | None = None):
        self.run_dir = run_dir
        self.trials_dir = run_dir / "trials"
        self.redact = redactor or Redactor()
        run_dir.mkdir(parents=True, exist_ok=True)
        self._results = open(run_dir / "results.jsonl", "a", encoding="utf-8")
        self._root = str(run_dir)
        self._folders: dict[tuple[str, str], str] = {}
        self._made: set[str] = set()

    def write_run(self, info: dict[str, Any]) -> None:
        # Pretty for people; compact when a huge grid would make indenting the slow part.
        indent = 2 if len(info.get("cells", ())) <= 500 else None
        text = json.dumps(info, ensure_ascii=False, indent=indent, default=_json_default)
        write_atomic(self.run_dir / "run.json", self.redact(text) + "\n")

    def trial_base(self, result: TrialResult) -> str:
        """``trials/<case-id>/<variant>/<n>`` relative to the run folder (no extension)."""
        key = (result.case_id, result.variant)
        rel = self._folders.get(key)
        if rel is None:
            parts = [safe_segment(p) for p in result.case_id.split("/")] + [safe_segment(result.variant)]
            rel = "trials/" + "/".join(parts)
            # mkdir each level once per run (a failed mkdir costs as much as a good one).
            path = self._root
            for part in ["trials", *parts]:
                path = os.path.join(path, part)
                if path not in self._made:
                    try:
                        os.mkdir(path)
                    except FileExistsError:
                        pass
                    self._made.add(path)
            self._folders[key] = rel
        return f"{rel}/{result.trial}"

    def write_trial(self, result: TrialResult, events: Sequence[Event], extra: dict[str, Any] | None = None) -> None:
        rel = self.trial_base(result)
        result.artifact = f"{rel}.json"
        encode = _ENCODE
        # The trial record is the results.jsonl line plus more fields: encode the line once and
        # splice the rest onto it, rather than encoding the shared part twice.
        line = self.redact(encode(result.to_line()))
        more: dict[str, Any] = {
            "traceback": result.traceback,
            "logs": result.logs,
            "started_at": result.started_at,
            "events": f"{rel}.events.ndjson",
        }
        if extra:
            more.update(extra)
        record = line[:-1] + ", " + self.redact(encode(more))[1:]
        base = os.path.join(self._root, rel)
        events_text = "".join([encode(e.to_dict()) + "\n" for e in events])
        _write(f"{base}.events.ndjson", self.redact(events_text))
        _write(f"{base}.json", record + "\n")
        self._results.write(line + "\n")
        self._results.flush()

    def close(self) -> None:
        self._results.close()
