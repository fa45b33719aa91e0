"""The audit report as text: the case × saboteur table, the catch rate, then what let each
hollow or weak case through and which saboteurs could not stand in."""

from __future__ import annotations

from typing import TextIO

from ._report import LET_THROUGH, AuditReport

__all__ = ["render"]

_CELL = {"caught": "caught", "passed": "PASSED", "scored": "SCORED", "void": "void",
         "skipped": "skipped", "not run": "-"}


def render(report: AuditReport, out: TextIO) -> None:
    for note in report.notes:
        out.write(f"note: {note}\n")
    if not report.cases:
        out.write("nothing was audited\n")
        return
    several = len({c.variant for c in report.cases}) > 1
    sabs = report.saboteurs
    rows = [["case", *sabs, "status"]]
    for c in report.cases:
        name = f"{c.case_id} [{c.variant}]" if several else c.case_id
        status = c.status.upper() if c.status == "hollow" else c.status
        rows.append([name, *(_CELL.get(c.outcomes[s].outcome, c.outcomes[s].outcome) if s in c.outcomes else ""
                             for s in sabs), status])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")
    out.write("\n")
    stood = sorted({(c.variant, c.stood_in) for c in report.cases})
    for variant, what in stood:
        out.write(f"the saboteurs stood in for {what} (variant {variant}), behind the same sandbox, "
                  "workspace and checks\n")
    caught, through = report.count("caught"), report.count(*LET_THROUGH)
    rate = report.catch_rate
    shown = "n/a (nothing was measured)" if rate is None else f"{rate:.0%} ({caught} of {caught + through} caught)"
    out.write(f"catch rate: {shown}\n")
    for status in ("hollow", "weak"):
        cases = report.with_status(status)
        if not cases:
            continue
        what = ("any saboteur but mutate passes it" if status == "hollow"
                else "only mutate passes it: a damaged answer may still be right")
        out.write(f"\n{status}: {len(cases)} case{'s' if len(cases) != 1 else ''} ({what})\n")
        for c in cases:
            name = f"{c.case_id} [{c.variant}]" if several else c.case_id
            # Saboteurs let through by the same checks share a line.
            groups: dict[tuple[str, ...], list[str]] = {}
            for sab, o in c.outcomes.items():
                if o.outcome in LET_THROUGH:
                    groups.setdefault(tuple(o.checks), []).append(sab if o.outcome == "passed" else f"{sab} (scored)")
            for checks, sabs in groups.items():
                out.write(f"  {name}: passed by {', '.join(sabs)}; let through by: "
                          f"{', '.join(checks) or 'no check recorded a pass'}\n")
    voids = [(c, s, o) for c in report.cases for s, o in c.outcomes.items() if o.outcome in ("void", "not run")]
    if voids:
        out.write("\nnot audited:\n")
        for c, sab, o in voids:
            name = f"{c.case_id} [{c.variant}]" if several else c.case_id
            why = "could not stand in" if o.outcome == "void" else "not run"
            out.write(f"  {name}: {sab} {why}: {o.reason or 'no reason given'}\n")
    out.write(f"\naudit run {report.run_id}: {len(report.with_status('hollow'))} hollow, "
              f"{len(report.with_status('weak'))} weak, {len(report.with_status('sound'))} sound"
              + (f", {n} unaudited" if (n := len(report.with_status('unaudited'))) else "") + "\n")
