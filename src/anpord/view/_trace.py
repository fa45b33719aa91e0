"""A traced trial's spans as a timeline: one row per span, nested under its parent, with a bar
placing it in time. Built from the ``source: "trace"`` events alone (``span``, ``model.called``,
``tool.called`` + ``tool.result``), so a recorded run shows the same trace it was judged on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._data import TrialView

__all__ = ["SpanRow", "TRACE_LIMIT", "trace_rows"]

TRACE_LIMIT = 2000  # spans drawn; the rest are in the events table


@dataclass
class SpanRow:
    span_id: str
    parent: str | None
    kind: str  # tool | model | span
    name: str
    start: float  # seconds since the epoch
    end: float
    status: str
    summary: str = ""
    depth: int = 0
    left: float = 0.0  # the bar: percent of the trace's width
    width: float = 0.0
    offset: float = 0.0  # seconds since the trace began
    children: list[SpanRow] = field(default_factory=list)

    @property
    def duration(self) -> float:
        return max(self.end - self.start, 0.0)

    @property
    def took_text(self) -> str:
        return _seconds(self.duration)

    @property
    def at_text(self) -> str:
        return "+" + _seconds(self.offset)

    @property
    def color(self) -> str:
        if self.status in ("error", "failed"):
            return "#d0605e"
        return _COLORS.get(self.kind, "#8aa4c8")


_COLORS = {"tool": "#3f9a62", "model": "#c0902f", "span": "#6f8fbf"}


def _seconds(value: float) -> str:
    """Spans are often micro- to milliseconds long: say so, not ``0.00s``."""
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s" if value < 60 else f"{value / 60:.1f} min"


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _collect(events: Sequence[Any]) -> dict[str, SpanRow]:
    spans: dict[str, SpanRow] = {}
    for e in events:
        d = e.data
        if d.get("source") != "trace" or not d.get("span_id"):
            continue
        sid = str(d["span_id"])
        parent = d.get("parent_span_id")
        if e.type == "span":
            spans[sid] = SpanRow(sid, parent, "span", str(d.get("name", "")), _number(d.get("start")),
                                 _number(d.get("end")), str(d.get("status") or "unset"),
                                 str(d.get("error") or ""))
        elif e.type == "model.called":
            tokens = f"{d.get('input_tokens') or 0} in / {d.get('output_tokens') or 0} out tokens"
            who = " ".join(str(p) for p in (d.get("provider"), d.get("model")) if p)
            spans[sid] = SpanRow(sid, parent, "model", str(d.get("name") or "model call"), _number(d.get("start")),
                                 _number(d.get("end")), str(d.get("status") or "completed"),
                                 " · ".join(p for p in (who, tokens) if p))
        elif e.type == "tool.called":
            start = _number(d.get("start"))
            spans[sid] = SpanRow(sid, parent, "tool", str(d.get("name", "")), start, start, "pending",
                                 _short(d.get("input")) if d.get("input") is not None else "")
        elif e.type == "tool.result":
            row = spans.get(sid)
            if row is None:
                row = spans[sid] = SpanRow(sid, parent, "tool", str(d.get("name", "")), _number(d.get("end")),
                                           _number(d.get("end")), "pending")
            row.end = _number(d.get("end")) or row.end
            row.status = str(d.get("status") or "completed")
            out = d.get("error") if row.status == "failed" else d.get("output")
            if out is not None:
                row.summary = f"{row.summary} → {_short(out)}" if row.summary else f"→ {_short(out)}"
    return spans


def trace_rows(trial: TrialView) -> list[SpanRow]:
    """The spans in display order (each after its parent, siblings by start time)."""
    spans = _collect(trial.events)
    if not spans:
        return []
    roots: list[SpanRow] = []
    for row in spans.values():
        parent = spans.get(row.parent) if row.parent else None
        (parent.children if parent is not None and parent is not row else roots).append(row)
    t0 = min(r.start for r in spans.values() if r.start) if any(r.start for r in spans.values()) else 0.0
    t1 = max(r.end for r in spans.values())
    width = max(t1 - t0, 1e-9)
    out: list[SpanRow] = []
    stack = [(r, 0) for r in sorted(roots, key=lambda r: r.start, reverse=True)]
    seen: set[str] = set()
    while stack and len(out) < TRACE_LIMIT:
        row, depth = stack.pop()
        if row.span_id in seen:  # a cycle in bad data
            continue
        seen.add(row.span_id)
        row.depth = depth
        row.offset = max(row.start - t0, 0.0)
        row.left = round(100 * row.offset / width, 2)
        row.width = round(max(100 * row.duration / width, 0.3), 2)
        out.append(row)
        stack.extend((c, depth + 1) for c in sorted(row.children, key=lambda r: r.start, reverse=True))
    return out
