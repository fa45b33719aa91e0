"""Writing a run folder (DESIGN §8; format in docs/results.md).

    .anpord/runs/<run-id>/
      run.json         the run record, written at the start and rewritten at the end
      results.jsonl    one line per finished trial, appended as each trial ends
      events.ndjson    every trial's events, each trial's block contiguous, appended before its line
      trials/          only what does not fit a line: tracebacks, logs over LOG_INLINE_LIMIT

A trial costs two appends (its events block, then its line, each one ``write`` on a file opened
``O_APPEND``): nothing is buffered in the process, so a ``kill -9`` loses at most the trials still
in flight, and a line only ever points at events already written. Declared secrets and key-shaped
strings are redacted from everything written.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from .._fs import write_atomic
from ..events import Event
from ._encode import decode, encode, encode_event
from ._model import FORMAT_VERSION, EventsRef, TrialResult
from ._redact import Redactor
from ._run_record import RunRecord

__all__ = ["LOG_INLINE_LIMIT", "Redactor", "RunWriter", "new_run_id", "safe_segment"]

# A trial's log lines beyond this many bytes go to a file under trials/ instead of its line.
LOG_INLINE_LIMIT = 64 << 10
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


# Every line starts with its format version: `{"v":1,` then the record's fields.
_VERSION_PREFIX = b'{"v":%d,' % FORMAT_VERSION


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # a write may be partial
        view = view[os.write(fd, view) :]


def _cut_torn_tail(path: Path) -> None:
    """A line half-written when its run was killed: cut it, so appending goes on after the last
    whole line (the trial it belonged to counts as not run)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(max(0, size - (1 << 20)))
        tail = f.read()
        if tail.endswith(b"\n"):
            return
        cut = tail.rfind(b"\n")
        f.truncate(size - len(tail) + cut + 1 if cut >= 0 else 0)


class RunWriter:
    """Writes one run's folder. ``resume=True`` appends to an existing run's files."""

    def __init__(self, run_dir: Path, redactor: Redactor | None = None, *, resume: bool = False):
        self.run_dir = run_dir
        self.redact = redactor or Redactor()
        run_dir.mkdir(parents=True, exist_ok=resume)
        results, events = run_dir / "results.jsonl", run_dir / "events.ndjson"
        if resume:
            _cut_torn_tail(results)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        self._results = os.open(results, flags, 0o666)
        self._events = os.open(events, flags, 0o666)
        self._offset = os.fstat(self._events).st_size  # where the next events block starts
        self._trials_dir: Path | None = None

    def write_run(self, record: RunRecord) -> None:
        # Pretty for people; compact when a huge grid would make indenting the slow part.
        import json

        data = record.to_dict()
        text = json.dumps(data, ensure_ascii=False, indent=2) if len(record.cells) <= 500 else None
        text = text if text is not None else encode(data).decode("utf-8", "surrogatepass")
        if self.redact.may_change(text.encode("utf-8", "surrogatepass")) and self.redact.finds(text):
            # In its strings only, so the record stays JSON: redacted decoded, written again.
            redacted = self.redact.value(decode(text))
            text = json.dumps(redacted, ensure_ascii=False, indent=2) if len(record.cells) <= 500 else None
            text = text if text is not None else encode(redacted).decode("utf-8", "surrogatepass")
        write_atomic(self.run_dir / "run.json", text + "\n")

    def _spill(self, result: TrialResult, what: str, text: str) -> str:
        if self._trials_dir is None:
            self._trials_dir = self.run_dir / "trials"
            self._trials_dir.mkdir(exist_ok=True)
        name = safe_segment(f"{result.case_id} {result.variant} {result.trial}")
        if result.attempt:
            name += f".attempt{result.attempt}"
        rel = f"trials/{name}.{what}.txt"
        write_atomic(self.run_dir / rel, self.redact(text))
        return rel

    def write_trial(self, result: TrialResult, events: Sequence[Event]) -> None:
        """Append the trial's events, then its line (which points at them). Sets
        ``result.events`` and ``result.files``."""
        block = b"".join([encode_event(e.type, e.ts, e.data) + b"\n" for e in events])
        # What the line keeps inline: a traceback and a long log go to files under trials/.
        inline = result
        if result.error is not None and result.error.traceback:
            result.files["traceback"] = self._spill(result, "traceback", result.error.traceback)
            inline = replace(inline, error=replace(result.error, traceback=None))
        if result.logs and sum(len(x) for x in result.logs) > LOG_INLINE_LIMIT:
            result.files["logs"] = self._spill(result, "log", "\n".join(result.logs) + "\n")
            inline = replace(inline, logs=[])
        # The events' place is known before they are written: a line is only ever appended
        # after the block it points at.
        ref = EventsRef(self._offset, len(block), len(events))
        inline.events = result.events = ref
        # The record's fields are the line's keys (TrialResult.to_dict), encoded straight from
        # the dataclass: no intermediate dicts on the runner's hottest path.
        line = _VERSION_PREFIX + encode(inline)[1:]
        if self.redact.may_change(block + line):
            block = b"".join([self._redact_json(x) + b"\n" for x in block.splitlines()])
            ref = EventsRef(self._offset, len(block), len(events))
            if ref != result.events:  # redaction changed the block's length: point at what is written
                inline.events = result.events = ref
                line = _VERSION_PREFIX + encode(inline)[1:]
            line = self._redact_json(line)  # its numbers, the events' place among them, stay
        _write_all(self._events, block)
        self._offset += len(block)
        _write_all(self._results, line + b"\n")

    def _redact_json(self, data: bytes) -> bytes:
        """One JSON document redacted in its decoded strings, never in its encoded text: a
        secret such as ``1796`` or ``true`` is also JSON syntax, and the document must stay JSON."""
        if not self.redact.may_change(data):
            return data  # the usual case: no secret declared, nothing key-shaped
        text = data.decode("utf-8", "surrogatepass")
        if not self.redact.finds(text):
            return data  # the next most usual: no secret in this record, whatever it may hold
        return encode(self.redact.value(decode(data)))

    def close(self) -> None:
        for fd in (self._results, self._events):
            try:
                os.close(fd)
            except OSError:
                pass
        self._results = self._events = -1
