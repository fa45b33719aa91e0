"""What each page shows, as template data: the runs list, a run's grid, a cell, a trial.

Each function asks the ``ViewData`` for what it needs and returns the template's context, or None
when the thing asked for does not exist (the app answers 404). Nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._chart import chart
from ._conversation import TIMELINE_PAGE, conversation, timeline
from ._data import CellDelta, CellRow, RunView, ViewData
from ._trace import trace_rows
from ._stats import variant_estimates
from ._values import shown

__all__ = ["FILTERS", "GridQuery", "cell_page", "grid_page", "runs_page", "trial_page"]

PAGE_ROWS = 50  # grid rows (cases) per page: a page stays light whatever the run's size
MAX_DOTS = 24  # trial dots drawn in one grid cell; the cell's page has them all
CELL_PAGE_TRIALS = 500

# filter name → (label, test on a cell and its delta)
FILTERS: dict[str, str] = {
    "failing": "failing",
    "regressed": "regressed",
    "void": "void",
    "flaky": "flaky",
}


@dataclass(frozen=True)
class GridQuery:
    filters: frozenset[str] = frozenset()
    q: str = ""
    page: int = 1

    @classmethod
    def parse(cls, query: Mapping[str, str], filters: Sequence[str]) -> GridQuery:
        page = query.get("page", "1")
        return cls(
            frozenset(f for f in filters if f in FILTERS),
            query.get("q", "").strip()[:200],
            int(page) if page.isdigit() and 0 < int(page) < 10**6 else 1,
        )


def _matches(name: str, cell: CellRow, delta: CellDelta | None, flaky: frozenset[Any] = frozenset()) -> bool:
    if name == "failing":
        return cell.failing
    if name == "regressed":
        return delta is not None and delta.regressed
    if name == "void":
        return cell.has_void
    if name == "flaky":  # its trials disagree in this run, or its history across runs does
        return cell.flaky or cell.key in flaky
    return False


def runs_page(data: ViewData) -> dict[str, Any]:
    return {"runs": data.runs()}


def grid_page(data: ViewData, run_id: str, query: GridQuery) -> dict[str, Any] | None:
    view = data.run(run_id)
    if view is None:
        return None
    deltas = data.baseline_deltas(run_id) if view.cells else {}
    history_flaky = getattr(data, "flaky_history", None)
    flaky: frozenset[Any] = history_flaky() if history_flaky is not None and view.cells else frozenset()
    by_case: dict[str, dict[str, CellRow]] = {}
    for cell in view.cells:
        by_case.setdefault(cell.summary.case_id, {})[cell.summary.variant] = cell
    counts = dict.fromkeys(FILTERS, 0)
    rows = []
    needle = query.q.lower()
    for case_id, cells in by_case.items():
        hits = {name for name in FILTERS if any(_matches(name, c, deltas.get(c.key), flaky) for c in cells.values())}
        for name in hits:
            counts[name] += 1
        if query.filters and not hits & query.filters:
            continue
        if needle and needle not in case_id.lower():
            continue
        rows.append((case_id, cells))
    pages = max(1, -(-len(rows) // PAGE_ROWS))
    page = min(query.page, pages)
    shown_rows = rows[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]
    baselines = sorted({d.baseline_run_id for d in deltas.values()})
    chosen = sorted({d.baseline_run_id for d in deltas.values() if d.chosen})
    first = sorted({d.baseline_run_id for d in deltas.values() if not d.chosen})
    return {
        "view": view,
        "run": view.row,
        "record": view.record,
        "variants": view.variants,
        "rows": shown_rows,
        "deltas": deltas,
        "matched": len(rows),
        "cases": len(by_case),
        "counts": counts,
        "query": query,
        "page": page,
        "pages": pages,
        "max_dots": MAX_DOTS,
        "page_rows": PAGE_ROWS,
        "baselines": baselines,
        "chosen_baselines": chosen,  # set with `anpord baseline set`
        "first_baselines": first,  # cells' first readings
        "variant_rates": _variant_rates(view),
        "estimates": variant_estimates(c.summary for c in view.cells),
        "flaky_history": flaky,
    }


def _variant_rates(view: RunView) -> dict[str, tuple[int, int]]:
    """variant → (passed, measured) over its cells."""
    out: dict[str, tuple[int, int]] = {}
    for cell in view.cells:
        p, m = out.get(cell.summary.variant, (0, 0))
        out[cell.summary.variant] = (p + cell.summary.passed, m + cell.summary.measured)
    return out


def cell_page(data: ViewData, run_id: str, case_id: str, variant: str, page: int = 1) -> dict[str, Any] | None:
    view = data.run(run_id)
    if view is None:
        return None
    cell = view.cell_map.get((case_id, variant))
    if cell is None:
        return None
    history = data.cell_history(case_id, variant)
    pages = max(1, -(-len(cell.verdicts) // CELL_PAGE_TRIALS))
    page = min(max(page, 1), pages)
    first = (page - 1) * CELL_PAGE_TRIALS
    return {
        "run": view.row,
        "cell": cell,
        "delta": data.baseline_deltas(run_id).get(cell.key),
        "history": history,
        "chart": chart(history, run_id),
        "trials": list(enumerate(cell.verdicts))[first : first + CELL_PAGE_TRIALS],
        "page": page,
        "pages": pages,
        "other_variants": [v for v in view.variants if v != variant and (case_id, v) in view.cell_map],
        "stop_reason": view.stop_reasons.get((case_id, variant)),
    }


def default_variant(data: ViewData, run_id: str, case_id: str) -> str | None:
    """The first variant the case ran on, for a trial link that names none."""
    view = data.run(run_id)
    if view is None:
        return None
    return next((c.summary.variant for c in view.cells if c.summary.case_id == case_id), None)


def trial_page(data: ViewData, run_id: str, case_id: str, variant: str, index: int, events_from: int = 0,
               *, with_timeline: bool = True) -> dict[str, Any] | None:
    trial = data.trial(run_id, case_id, variant, index)
    if trial is None:
        return None
    r = trial.result
    items, more_items = conversation(trial)
    events_from = max(0, min(events_from, max(0, len(trial.events) - 1)))
    return {
        "run": trial.run,
        "trial": trial,
        "result": r,
        "items": items,
        "more_items": more_items,
        "timeline": timeline(trial, events_from) if with_timeline else [],
        "trace": trace_rows(trial),
        "events_from": events_from,
        "events_page": TIMELINE_PAGE,
        "assertions": [
            (a, shown(trial, f"assertion/{i}/expected"), shown(trial, f"assertion/{i}/actual"),
             shown(trial, f"assertion/{i}/message"))
            for i, a in enumerate(r.assertions)
        ],
        "judgments": [(j, shown(trial, f"judgment/{i}/reason")) for i, j in enumerate(r.judgments)],
        "traceback": shown(trial, "traceback", 20_000) if trial.traceback else None,
        "logs": shown(trial, "logs") if trial.logs else None,
        "error_message": shown(trial, "error/message") if r.error is not None else None,
    }
