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
from typing import Any, Iterable, Sequence

from .._fs import write_atomic
from ..events import Event, _json_default
from ._model import TrialResult

__all__ = ["Redactor", "RunWriter", "new_run_id", "safe_segment"]

_UNSAFE = re.compile(r"[^\w.@+=-]+")  # \w keeps Unicode letters: 東京 stays readable
# Key-shaped strings: common provider prefixes followed by a long token.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})"
)


def _has_key_prefix(text: str) -> bool:
    # The exact prefixes of _KEY_SHAPES: a bare "gh" would be in almost any text.
    return (
        "sk-" in text
        or "ghp_" in text
        or "gho_" in text
        or "ghu_" in text
        or "ghs_" in text
        or "ghr_" in text
        or "github_pat_" in text
        or "AKIA" in text
        or "xox" in text
        or "AIza" in text
    )


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


def _spellings(value: str) -> set[str]:
    """How a secret can appear in an artifact: as itself, and inside a JSON string (escaped,
    with or without ``\\uXXXX`` for non-ASCII), since artifacts are redacted as JSON text."""
    return {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}


class Redactor:
    """Replaces declared secret values and key-shaped strings with ``[REDACTED]`` in text."""

    def __init__(self, secret_values: Iterable[str] = ()):
        spelled = {s for v in secret_values if v and len(v) >= 4 for s in _spellings(v)}
        values = sorted(spelled, key=len, reverse=True)  # longest first: no partial leftovers
        self._secrets = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def __call__(self, text: str) -> str:
        if self._secrets is not None:
            text = self._secrets.sub("[REDACTED]", text)
        # Literal prefix checks are far cheaper than running the pattern over every artifact.
        if _has_key_prefix(text):
            text = _KEY_SHAPES.sub("[REDACTED]", text)
        return text


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
