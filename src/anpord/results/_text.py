"""Text shared by the console and JUnit reports: marks, trial names, failure details."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from ._model import CellSummary, TrialResult

Segment = tuple[str, str]  # (text, SGR colour code, "" for none)

MARKS = {"passed": "✓", "failed": "✗", "timed_out": "✗", "void": "○", "skipped": "–", "scored": "~"}
ASCII_MARKS = {
    "passed": "+",
    "failed": "x",
    "timed_out": "x",
    "void": "o",
    "skipped": "-",
    "scored": "~",
}
SGR = {
    "passed": "32",
    "failed": "31",
    "timed_out": "31",
    "void": "35",
    "skipped": "2",
    "scored": "33",
}
DIM, BOLD = "2", "1"
VALUE_WIDTH = 300  # expected/actual values longer than this are cut; the artifact has them whole

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def trial_label(trial: int) -> str:
    """How a trial is named to people: ``#0`` for the first, as in ``results.jsonl`` and its
    artifact ``trials/<case-id>/<variant>/0.json``, so the number read is the file to open."""
    return f"#{trial}"


def escape_controls(text: str) -> str:
    """Control characters shown escaped (``\\x1b``): trial text must not drive the terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def columns(ch: str) -> int:
    """Terminal columns one character takes."""
    if ch.isascii():
        return 1
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def fit(text: str, room: int) -> tuple[str, int]:
    """``text`` cut to ``room`` columns (ending in "…" when cut), and the columns it takes."""
    if room <= 0:
        return "", 0
    if text.isascii() and len(text) <= room:
        return text, len(text)
    used = 0
    for i, ch in enumerate(text):
        w = columns(ch)
        if used + w > room:
            while i > 0 and used + 1 > room:  # back off until the ellipsis fits too
                i -= 1
                used -= columns(text[i])
            return text[:i] + "…", used + 1
        used += w
    return text, used


def display_path(path: str) -> str:
    """A path relative to the current folder when it lies inside it (shorter to read and click)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def span(low: float | None, high: float | None) -> str:
    """A 95% interval in percent: ``[21–94%]``; empty when there is none."""
    if low is None or high is None:
        return ""
    return f"[{low * 100:.0f}–{high * 100:.0f}%]"


def rate_with_interval(passed: int, n: int) -> str:
    """``67% [21–94%]``: a pass rate over ``n`` measured trials with its Wilson interval."""
    if n <= 0:
        return "–"
    from ..stats import wilson

    ci = wilson(passed, n)
    assert ci is not None
    return f"{passed / n:.0%} {span(ci.low, ci.high)}"


def measured(c: CellSummary) -> int:
    return c.trials - c.void - c.skipped


def cell_state(c: CellSummary) -> str:
    """The verdict a whole cell is shown as."""
    if measured(c) == 0:
        return "skipped" if c.skipped == c.trials else "void"
    if c.passed == measured(c):
        return "passed"
    return "failed" if c.failed or c.timed_out else "scored"


def missed_soft(result: TrialResult) -> list[Any]:
    return [
        a
        for a in result.assertions
        if a.kind == "soft" and a.threshold is not None and a.score < a.threshold
    ]


def score_text(result: TrialResult) -> str:
    """The trial's score — the one the record, ``--json`` and JUnit give: the mean of its soft
    checks' scores — and which soft checks fell below their threshold: ``score 0.62 (tone 0.62 <
    0.80)``."""
    missed = missed_soft(result)
    text = "scored" if result.score is None else f"score {result.score:.2f}"
    if len(missed) == 1:
        m = missed[0]
        return f"{text} ({m.display_name} {m.score:.2f} < {m.threshold:.2f})"
    return text + (f" ({len(missed)} soft checks below threshold)" if missed else "")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def failure_lines(result: TrialResult, run_dir: str | None = None) -> list[str]:
    """Lines explaining why a trial did not pass: the checks that failed and what they saw.

    Empty for passed and skipped trials. An execution error gets its one line and the path of the
    artifact that holds the full traceback.
    """
    lines: list[str] = []
    v = result.verdict
    if v in ("passed", "skipped"):
        return lines
    if v == "scored":
        for a in missed_soft(result):
            lines.append(f"{a.display_name}: score {a.score:.2f} < {a.threshold:.2f}")
            lines.extend("  " + m for m in (a.message or "").splitlines())
        return lines
    wanted = ("void", "error") if v == "void" else ("failed", "error")
    for a in result.assertions:
        # A soft check below its threshold does not fail a trial: not a reason to show here.
        if a.status not in wanted or (v != "void" and a.kind == "soft" and a.status == "failed"):
            continue
        lines.append(f"{a.display_name}  [{a.kind}, {a.status}]")
        if a.expected is not None or a.actual is not None:
            lines.append(f"  expected: {_show(a.expected)}")
            lines.append(f"  actual:   {_show(a.actual)}")
        lines.extend("  " + m for m in (a.message or "").splitlines())
    if result.error is not None:
        lines.append(f"error: {result.error.message}")
        if result.error.where:
            lines.extend(_source_lines(result.error.where))
    if result.files.get("traceback"):
        rel = result.files["traceback"]
        lines.append(f"traceback: {display_path(os.path.join(run_dir, rel) if run_dir else rel)}")
    return lines


def _source_lines(where: str) -> list[str]:
    """``at evals/x.eval.py:12`` and that line of the eval file, as pytest shows where a test
    raised."""
    import linecache

    path, _, line = where.rpartition(":")
    out = [f"at {display_path(path)}:{line}"]
    if line.isdigit():
        text = linecache.getline(path, int(line)).strip()
        if text:
            out.append(f"  > {text}")
    return out


def group_reasons(results: Iterable[TrialResult]) -> list[tuple[str, str]]:
    """``[(reason, "#0, #2"), ...]``: trials grouped by their one-line reason, first seen first."""
    groups: dict[str, list[int]] = {}
    for r in results:
        error = r.error.message if r.error is not None else None
        groups.setdefault(r.reason or error or "no reason given", []).append(r.trial)
    return [
        (reason, ", ".join(trial_label(t) for t in sorted(ts))) for reason, ts in groups.items()
    ]


def usd(amount: float) -> str:
    """``$2.50``; under a dollar, up to four decimals (``$0.0123``), so a small spend is not $0.00."""
    if amount >= 1 or amount == 0:
        return f"${amount:,.2f}"
    text = f"{amount:.4f}" if amount >= 0.0001 else f"{amount:.8f}"
    whole, _, frac = text.rstrip("0").partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def usage_text(usage: dict[str, Any], results: Iterable[TrialResult] = ()) -> str:
    """``5,120 input tokens, 812 output tokens, $0.0031``. When a price is unknown the total is
    too, so the known part is shown with what it leaves out: ``$0.0123 + unknown for 1 variant
    (codex/gpt-5)``; ``cost unknown`` when nothing had a price."""
    parts = [f"{int(usage.get('input_tokens') or 0):,} input tokens",
             f"{int(usage.get('output_tokens') or 0):,} output tokens"]
    cost = usage.get("cost")
    parts.append(f"${cost:.4f}" if cost is not None else _partial_cost(results))
    return ", ".join(parts)


def _partial_cost(results: Iterable[TrialResult]) -> str:
    known, priced, unpriced = 0.0, False, []
    for r in results:
        if not r.usage:
            continue
        c = r.usage.get("cost")
        if isinstance(c, (int, float)) and not isinstance(c, bool):
            known, priced = known + c, True
        elif r.variant not in unpriced:
            unpriced.append(r.variant)
    if not priced or not unpriced:
        return "cost unknown"
    n = len(unpriced)
    named = f" ({', '.join(unpriced)})" if n <= 2 else ""
    return f"${known:.4f} + unknown for {n} variant{'s' if n != 1 else ''}{named}"
