"""The compare page: two runs' cells side by side, paired by case, with the statuses of
``anpord.stats.compare_paired``; and a cell's trials from both runs side by side.

As ``_pages``: each function asks the ``ViewData`` and returns template data, or None when a run
(or the cell) does not exist (the app answers 404).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ._conversation import conversation
from ._data import CellRow, RunView, ViewData
from ._stats import variant_estimates
from ._values import shown

__all__ = ["STATUSES", "CompareRow", "compare_cell_page", "compare_page"]

STATUSES = ("regressed", "improved", "inconclusive", "incomparable", "unchanged")
PAGE_ROWS = 100  # rows drawn, most telling status first; the counts and filters cover every cell
_MEMO: dict[tuple[int, int, float], tuple[Any, Any, Any]] = {}  # the last few pairings
_MEMO_LOCK = threading.Lock()
DIFF_LIMIT = 20_000  # characters of each answer diffed


@dataclass(frozen=True)
class CompareRow:
    case_id: str
    variant: str
    base: CellRow | None
    cand: CellRow | None
    status: str
    why: str
    change: Any = None  # anpord.stats.CellChange, for paired cells


def _hashes(view: RunView) -> dict[tuple[str, str], str | None]:
    return {(c.case_id, c.variant): c.case_hash for c in view.record.cells}


def _setups(view: RunView) -> dict[str, dict[str, Any]]:
    return {str(v.get("label")): v for v in view.record.variants if isinstance(v, dict)}


def _changed(base: dict[str, Any] | None, cand: dict[str, Any] | None) -> str | None:
    """``harness A → B; model C → D`` when a variant ran on something else, else None."""
    if base is None or cand is None:
        return None
    out = [f"{k} {base.get(k) or 'none'} → {cand.get(k) or 'none'}" for k in ("harness", "model")
           if (base.get(k) or None) != (cand.get(k) or None)]
    return "; ".join(out) or None


def _banner(view: RunView) -> str | None:
    status = view.row.status
    if status in ("crashed", "interrupted", "running", "unreadable"):
        more = f": {view.row.error}" if view.row.error else ""
        return f"run {view.run_id} is {status}{more}; only the trials it finished are compared"
    return None


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _signed(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def _why(change: Any, margin: float) -> str:
    move = f"Δ {_signed(change.delta)} [{_signed(change.ci_low)}, {_signed(change.ci_high)}]"
    if change.status == "unchanged":
        return f"{move} lies within ±{margin:g}"
    if change.status in ("regressed", "improved"):
        return f"{move}, p = {change.p_adjusted:.2g} (Fisher, Holm-corrected)"
    n = change.trials_to_decide
    return f"{move}: " + (f"about {n} trials a side would decide it" if n else "more than 1000 trials a side")


def _rows(base: RunView, cand: RunView, margin: float) -> tuple[list[CompareRow], list[Any]]:
    from ..stats import Counts, Pair, compare_paired

    b_cells = {c.key: c for c in base.cells}
    c_cells = {c.key: c for c in cand.cells}
    b_hash, c_hash = _hashes(base), _hashes(cand)
    b_setup, c_setup = _setups(base), _setups(cand)
    keys = list(c_cells) + [k for k in b_cells if k not in c_cells]
    slots: list[tuple[tuple[str, str], str | None]] = []
    pairs: list[Pair] = []
    dropped: dict[str, int] = {}
    for key in keys:
        b, c = b_cells.get(key), c_cells.get(key)
        why = None
        if b is None:
            why = f"not in base run {base.run_id}"
        elif c is None:
            why = f"not in candidate run {cand.run_id}"
        elif b.summary.measured == 0 or c.summary.measured == 0:
            why = "nothing measured in the " + ("base" if b.summary.measured == 0 else "candidate")
        elif b_hash.get(key) and c_hash.get(key) and b_hash[key] != c_hash[key]:
            why = f"the case changed (content {b_hash[key][:8]} → {c_hash[key][:8]})"  # type: ignore[index]
        elif changed := _changed(b_setup.get(key[1]), c_setup.get(key[1])):
            why = changed
        slots.append((key, why))
        if why is None:
            assert b is not None and c is not None
            pairs.append(Pair(key[0], key[1], Counts(b.summary.passed, b.summary.measured),
                              Counts(c.summary.passed, c.summary.measured)))
        else:
            dropped[key[1]] = dropped.get(key[1], 0) + 1
    variants = list(dict.fromkeys(k[1] for k in keys))
    paired = compare_paired(pairs, margin=margin, dropped=dropped, variants=variants)
    changes = iter(paired.cells)
    rows = []
    for key, why in slots:
        b, c = b_cells.get(key), c_cells.get(key)
        if why is not None:
            rows.append(CompareRow(key[0], key[1], b, c, "incomparable", why))
        else:
            ch = next(changes)
            rows.append(CompareRow(key[0], key[1], b, c, ch.status, _why(ch, margin), ch))
    return rows, [v for v in paired.variants if v.cases or v.dropped]


def _paired(base: RunView, cand: RunView, margin: float) -> tuple[list[CompareRow], list[Any]]:
    """``_rows`` remembered for the runs' cells (a ``ViewData`` hands the same cell list until
    the run changes on disk), so filtering or coming back does not pair again."""
    key = (id(base.cells), id(cand.cells), margin)
    with _MEMO_LOCK:  # a request and the server's warm-up asking at once pair the runs once
        hit = _MEMO.get(key)
        if hit is not None and hit[0] is base.cells and hit[1] is cand.cells:
            return hit[2]  # type: ignore[no-any-return]
        out = _rows(base, cand, margin)
        if len(_MEMO) >= 4:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = (base.cells, cand.cells, out)
        return out


def compare_page(data: ViewData, base_id: str, cand_id: str, statuses: Collection[str] = (),
                 margin: float = 0.2, limit: int | None = PAGE_ROWS) -> dict[str, Any] | None:
    """``limit``: rows drawn (None: all); the counts and the variants' changes cover every cell.
    Each run's cells are its summaries (``run_summary``, when the data has it): the page shows
    no trial, so a finished run's trials are not read."""
    summed = getattr(data, "run_summary", data.run)
    base, cand = summed(base_id), summed(cand_id)
    if base is None or cand is None:
        return None
    rows, variants = _paired(base, cand, margin)
    counts = {s: sum(1 for r in rows if r.status == s) for s in STATUSES}
    wanted = [s for s in STATUSES if s in statuses]
    rank = {s: i for i, s in enumerate(STATUSES)}
    shown_rows = sorted((r for r in rows if not wanted or r.status in wanted), key=lambda r: rank[r.status])
    shared = {c.summary.case_id for c in base.cells} & {c.summary.case_id for c in cand.cells}
    return {
        "base": base,
        "cand": cand,
        "rows": shown_rows if limit is None else shown_rows[:limit],
        "matched": len(shown_rows),
        "page_rows": limit if limit is not None else len(shown_rows),
        "counts": counts,
        "statuses": STATUSES,
        "wanted": wanted,
        "variants": variants,
        "shared": len(shared),
        "banners": [b for b in (_banner(base), _banner(cand)) if b],
        "estimates": {"base": variant_estimates(c.summary for c in base.cells),
                      "cand": variant_estimates(c.summary for c in cand.cells)},
        "margin": margin,
    }


def _side(data: ViewData, view: RunView, case_id: str, variant: str, index: int) -> dict[str, Any] | None:
    cell = next((c for c in view.cells if c.key == (case_id, variant)), None)
    if cell is None:
        return None
    index = min(max(index, 0), max(0, len(cell.verdicts) - 1))
    trial = data.trial(view.run_id, case_id, variant, index)
    if trial is None:
        return {"cell": cell, "trial": None, "index": index}
    items, _ = conversation(trial)
    answers = [i.fields["text"] for i in items if i.kind == "message" and i.fields.get("role") == "assistant"]
    r = trial.result
    return {
        "cell": cell,
        "index": index,
        "trial": trial,
        "result": r,
        "answer": answers[-1].text if answers else "",
        "tools": [i.fields for i in items if i.kind == "tool"],
        "assertions": [
            (a, shown(trial, f"assertion/{i}/expected"), shown(trial, f"assertion/{i}/actual"))
            for i, a in enumerate(r.assertions)
        ],
    }


def _diff(a: str, b: str) -> list[tuple[str, str]]:
    """The two answers line by line: ``same``, ``del`` (base only) or ``add`` (candidate only)."""
    out = []
    for line in difflib.ndiff(a[:DIFF_LIMIT].splitlines(), b[:DIFF_LIMIT].splitlines()):
        op = {" ": "same", "-": "del", "+": "add"}.get(line[:1])
        if op:
            out.append((op, line[2:]))
    return out


def compare_cell_page(data: ViewData, base_id: str, cand_id: str, case_id: str, variant: str,
                      base_trial: int = 0, cand_trial: int = 0) -> dict[str, Any] | None:
    base, cand = data.run(base_id), data.run(cand_id)
    if base is None or cand is None:
        return None
    b = _side(data, base, case_id, variant, base_trial)
    c = _side(data, cand, case_id, variant, cand_trial)
    if b is None and c is None:
        return None
    diff = _diff(b["answer"] if b and b.get("trial") else "", c["answer"] if c and c.get("trial") else "")
    return {"base": base, "cand": cand, "case_id": case_id, "variant": variant,
            "sides": [("base", base, b), ("candidate", cand, c)], "diff": diff}
