"""The cause a coding CLI gave on stderr, for a failed turn's one-line reason.

CLIs name the cause first and then print more: gemini follows ``Unknown arguments: …`` with its
whole ``--help``, node follows an error with a stack and an object dump ending in ``}``. So the
reason is the first meaningful line — not blank, not indented (stack frames, option lists, dumped
objects), not a bracket alone, not a banner every run prints — and, when that line ends in a
colon, the one after it; a line that reads as an error (``Error: …``, ``Unknown arguments``,
``not found``) comes before one that does not (gemini's ``--debug`` notes). The last such line
is the fallback when the first lines hold none.
"""

from __future__ import annotations

import re

__all__ = ["GEMINI_DEBUG_LINE", "stderr_reason"]

# Lines the CLIs print on every run, successful or not: never the cause.
_BANNER = re.compile(
    r"^(?:Warning: 256-color support not detected"
    r"|YOLO mode is enabled"
    r"|Ripgrep is not available"
    r"|Ignore file not found"
    r"|Loaded cached credentials"
    r"|Experiments loaded"
    r"|Current heap size"
    r"|Flushing log events"
    r"|Error flushing log events"  # gemini's telemetry, which has no network in a sandbox
    r"|Reading additional input from stdin"
    r"|Reading prompt from stdin"
    r"|ClearcutLogger:"
    r"|Data collection is disabled)"
)
_PUNCTUATION = re.compile(r"^[\[\]{}(),;]+$")
# What gemini's --debug adds on stderr: ``[PolicyEngine.check] …``, ``[MESSAGE_BUS] …``,
# ``[DEBUG] [MemoryDiscovery] …`` — a trace of every step, kept out of the trial's log.
GEMINI_DEBUG_LINE = re.compile(r"^\[[A-Za-z][\w.]*\] ")
_ERRORISH = re.compile(
    r"(?i)\b(?:error|unknown|invalid|not found|no such|denied|refused|cannot|can't|could not"
    r"|failed|fatal|missing|unexpected|exception|traceback|must|not allowed|unauthori[sz]ed"
    r"|forbidden)\b"
)
_LIMIT = 200


def _meaningful(line: str) -> bool:
    if not line.strip() or line[:1].isspace():
        return False
    text = line.strip()
    return not (_PUNCTUATION.match(text) or _BANNER.match(text) or GEMINI_DEBUG_LINE.match(text))


def stderr_reason(head: str, tail: str = "") -> str:
    """The first meaningful stderr line of ``head`` (with the next when it ends in ``:``), else
    the last meaningful line of ``tail``; "" when there is none."""
    lines = [line.rstrip() for line in head.splitlines() if _meaningful(line)]
    if lines:
        at = next((i for i, line in enumerate(lines) if _ERRORISH.search(line)), 0)
        reason = lines[at].strip()
        if reason.endswith(":") and at + 1 < len(lines):
            reason += " " + lines[at + 1].strip()
    else:
        later = [line.strip() for line in tail.splitlines() if _meaningful(line)]
        reason = later[-1] if later else ""
    return reason if len(reason) <= _LIMIT else reason[: _LIMIT - 1] + "…"
