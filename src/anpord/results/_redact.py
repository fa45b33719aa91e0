"""Keeping secrets out of every output: declared secret values and key-shaped strings become
``[REDACTED]`` in artifacts, reports and the console."""

from __future__ import annotations

import json
import re
from typing import Iterable

__all__ = ["Redactor"]

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
