"""A run's Markdown summary, sized for a pull-request comment or a CI job page: totals, each
variant's pass rate with its 95% interval, the variants' and cells' changes against the baseline
with their evidence, and the top failures with their reasons.

Fed by ``anpord.stats`` (the intervals) and a store ``Comparison`` (the paired changes); both
``anpord eval --summary md`` and ``anpord compare --format md`` render through ``markdown_summary``.
Every string that may come from an agent, a case or a check is escaped with ``md_text``: a pipe
cannot split a table, a backtick cannot open code, and ``<script>`` stays text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ._model import VERDICTS, CellSummary, TrialResult

__all__ = ["MAX_CHARS", "md_text", "markdown_summary"]

MAX_CHARS = 60_000  # a GitHub comment holds 65,536 characters; leave room for a heading around it
MAX_ROWS = 20  # regressed/improved/inconclusive cells listed
MAX_FAILURES = 10
MAX_TEXT = 200  # characters of one agent string in a table cell

_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_BAD = ("failed", "timed_out", "void")


def md_text(value: object, limit: int = MAX_TEXT) -> str:
    """``value`` as inline Markdown text that renders as itself on one line, inside a table cell
    or out: HTML characters become entities, Markdown punctuation (pipes and backticks
    included) is backslash-escaped, line breaks become spaces; longer than ``limit``: cut, with …"""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", text)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.0%}, {high:.0%}]"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}".replace("-", "−")


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _variant_rows(cells: Sequence[CellSummary]) -> list[str]:
    from ..stats import estimate_variant

    order: list[str] = []
    for c in cells:
        if c.variant not in order:
            order.append(c.variant)
    if not order:
        return []
    out = ["### Pass rate by variant", "",
           _row("Variant", "Pass rate [95% interval]", "Cases", "Trials", "Void"),
           _row("---", "---:", "---:", "---:", "---:")]
    for variant in order:
        mine = [c for c in cells if c.variant == variant]
        est = estimate_variant([(c.passed, c.measured) for c in mine],
                               trials=sum(c.trials for c in mine), void=sum(c.void for c in mine))
        rate = (_pct(est.mean) + _interval(est.ci_low, est.ci_high)) if est.mean is not None else (
            md_text(est.why or "nothing measured"))
        out.append(_row(f"`{_code(variant)}`" if _code(variant) else md_text(variant), rate,
                        str(est.cases), str(est.trials), _pct(est.void_rate)))
    return out + [""]


def _code(text: str) -> str:
    """A variant label or case id inside a code span, when it holds nothing that could escape
    one; else ``""`` (the caller escapes it as text)."""
    return text if re.fullmatch(r"[A-Za-z0-9_./:@=+\-]{1,120}", text) else ""


def _name(text: str) -> str:
    code = _code(text)
    return f"`{code}`" if code else md_text(text)


def _comparison_rows(comparison: Any) -> list[str]:
    from ._compare_text import variant_detail

    against = f"run `{comparison.base_run}`" if comparison.base_run else "each cell's baseline"
    out = [f"### Against {against}", ""]
    n = comparison.counts()
    out.append(", ".join(f"**{n[s]}** {s}" for s in n) + (
        f"; {comparison.only_in_base} cells of the base are not in this run"
        if comparison.only_in_base else ""))
    out.append("")
    if comparison.variants:
        out += [_row("Variant", "Change", "Evidence"), _row("---", "---", "---")]
        for v in comparison.variants:
            out.append(_row(_name(v.variant), _status(v.status), md_text(variant_detail(v), 400)))
        out.append("")
    for status in ("regressed", "improved", "inconclusive"):
        rows = comparison.of(status)
        if not rows:
            continue
        out += [f"**{status.capitalize()} cells** ({len(rows)})", "",
                _row("Case", "Variant", "Pass rate", "Δ [95% interval]", "Evidence"),
                _row("---", "---", "---", "---", "---")]
        for c in rows[:MAX_ROWS]:
            ch = c.change
            move = delta = "–"
            if ch is not None:
                move = f"{_pct(ch.base.rate)} → {_pct(ch.candidate.rate)}"
                delta = f"{_signed(ch.delta)} [{_signed(ch.ci_low)}, {_signed(ch.ci_high)}]"
            out.append(_row(_name(c.case_id), _name(c.variant), move, delta, md_text(c.reason, 400)))
        if len(rows) > MAX_ROWS:
            out.append(f"\n… and {len(rows) - MAX_ROWS} more {status} cells (`anpord compare`)")
        out.append("")
    return out


def _status(status: str) -> str:
    mark = {"regressed": "🔴", "improved": "🟢", "unchanged": "⚪", "inconclusive": "🟡"}.get(status, "⚫")
    return f"{mark} {status}"


def _failure_rows(trials: Sequence[TrialResult], redact: Callable[[str], str]) -> list[str]:
    groups: dict[tuple[str, str], list[TrialResult]] = {}
    totals: dict[tuple[str, str], int] = {}
    for t in trials:
        totals[t.cell_key] = totals.get(t.cell_key, 0) + 1
        if t.verdict in _BAD:
            groups.setdefault(t.cell_key, []).append(t)
    if not groups:
        return []
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    out = [f"### Top failures ({len(ranked)} cell{'s' if len(ranked) != 1 else ''} with a failed, "
           "timed-out or void trial)", "",
           _row("Case", "Variant", "Not passed", "Reason"), _row("---", "---", "---:", "---")]
    for (case, variant), bad in ranked[:MAX_FAILURES]:
        first = sorted(bad, key=lambda t: t.trial)[0]
        verdicts = sorted({t.verdict.replace("_", "-") for t in bad})
        reason = redact(first.reason or first.verdict)
        out.append(_row(_name(case), _name(variant),
                        f"{len(bad)}/{totals[(case, variant)]} ({', '.join(verdicts)})", md_text(reason)))
    if len(ranked) > MAX_FAILURES:
        out.append(f"\n… and {len(ranked) - MAX_FAILURES} more cells (`anpord show`)")
    return out + [""]


def markdown_summary(
    run_id: str,
    totals: dict[str, int],
    cells: Sequence[CellSummary],
    trials: Sequence[TrialResult] = (),
    comparison: Any = None,
    *,
    status: str | None = None,
    redact: Callable[[str], str] | None = None,
) -> str:
    """The Markdown summary of run ``run_id``. ``comparison`` (a store ``Comparison``), when
    given, adds the changes against the baseline; ``status`` (``crashed``, ``interrupted``) is
    said in the heading; ``redact`` is applied to every trial's reason."""
    clean = redact or (lambda s: s)
    failed = totals.get("failed", 0) + totals.get("timed_out", 0)
    parts = [f"{totals.get('passed', 0)} passed", f"{failed} failed"]
    for key in ("scored", "void", "skipped"):
        if totals.get(key):
            parts.append(f"{totals[key]} {key}")
    regressed = comparison is not None and comparison.fails
    mark = "🔴" if regressed or failed or totals.get("void") else "🟢"
    head = f"## {mark} anpord run `{run_id}`" + (f" ({md_text(status)})" if status else "")
    n = totals.get("trials") or sum(totals.get(v, 0) for v in VERDICTS)
    out = [head, "", f"**{n} trials**: " + ", ".join(parts), ""]
    out += _variant_rows(cells)
    if comparison is not None:
        out += _comparison_rows(comparison)
    out += _failure_rows(trials, clean)
    text = "\n".join(out).rstrip() + "\n"
    if len(text) > MAX_CHARS:
        cut = text.rfind("\n", 0, MAX_CHARS - 200)
        text = text[:cut] + "\n\n… summary cut to fit a comment; the full results: `anpord show`\n"
    return text
