"""Run artifacts: ``run.json``, ``results.jsonl`` and one JSON + events NDJSON per trial.

``results.jsonl`` is appended and flushed as each trial finishes, so a killed run loses at most
its in-flight trials. Secrets declared by variants and key-shaped strings are redacted.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..events import Event, _json_default
from ._model import TrialResult

__all__ = ["RunWriter", "new_run_id", "safe_segment", "Redactor", "write_json_atomic"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]+")
# Key-shaped strings: common provider prefixes followed by a long token.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})"
)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def safe_segment(text: str) -> str:
    """A path segment that cannot escape or collide with dot-entries."""
    s = _UNSAFE.sub("_", text).strip("._") or "_"
    return s[:120]


def write_json_atomic(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=2, default=_json_default)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Redactor:
    def __init__(self, secret_values: Iterable[str] = ()):
        values = sorted({v for v in secret_values if v and len(v) >= 4}, key=len, reverse=True)
        self._secrets = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def __call__(self, text: str) -> str:
        if self._secrets is not None:
            text = self._secrets.sub("[REDACTED]", text)
        if "sk-" in text or "_" in text or "AKIA" in text or "xox" in text or "AIza" in text:
            text = _KEY_SHAPES.sub("[REDACTED]", text)
        return text


class RunWriter:
    """Writes one run's folder. Per-trial files are written before the results.jsonl line."""

    def __init__(self, run_dir: Path, redactor: Redactor | None = None):
        self.run_dir = run_dir
        self.trials_dir = run_dir / "trials"
        self.redact = redactor or Redactor()
        run_dir.mkdir(parents=True, exist_ok=True)
        self._results = open(run_dir / "results.jsonl", "a", encoding="utf-8")
        self._made: set[Path] = set()

    def write_run(self, info: dict[str, Any]) -> None:
        text = self.redact(json.dumps(info, ensure_ascii=False, default=_json_default))
        write_json_atomic(self.run_dir / "run.json", json.loads(text))

    def trial_base(self, result: TrialResult) -> Path:
        folder = self.trials_dir.joinpath(
            *(safe_segment(p) for p in result.case_id.split("/")), safe_segment(result.variant)
        )
        if folder not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(folder)
        return folder / str(result.trial)

    def write_trial(self, result: TrialResult, events: Sequence[Event], extra: dict[str, Any] | None = None) -> None:
        base = self.trial_base(result)
        result.artifact = str(base.relative_to(self.run_dir)) + ".json"
        record = result.to_line()
        record["traceback"] = result.traceback
        record["logs"] = result.logs
        record["started_at"] = result.started_at
        record["events"] = str(base.relative_to(self.run_dir)) + ".events.ndjson"
        if extra:
            record.update(extra)
        dumps = json.dumps
        with open(f"{base}.events.ndjson", "w", encoding="utf-8") as f:
            f.write(self.redact("".join(dumps(e.to_dict(), ensure_ascii=False, default=_json_default) + "\n"
                                        for e in events)))
        with open(f"{base}.json", "w", encoding="utf-8") as f:
            f.write(self.redact(dumps(record, ensure_ascii=False, indent=2, default=_json_default)))
        self._results.write(self.redact(dumps(result.to_line(), ensure_ascii=False, default=_json_default)) + "\n")
        self._results.flush()

    def close(self) -> None:
        self._results.close()
