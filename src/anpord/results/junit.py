"""JUnit XML: one ``<testsuite>`` per variant, one ``<testcase>`` per trial.

Mapping (DESIGN §7): failed and timed_out → ``<failure>``; void → ``<error>``; skipped →
``<skipped>``; scored → ``<failure>`` only with ``strict=True``, otherwise a passing testcase that
carries its score as a property and in ``<system-out>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from .._fs import write_atomic
from ._model import RunSummary, TrialResult
from ._text import failure_lines, trial_label

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

__all__ = ["junit_xml", "write_junit"]

# Characters XML 1.0 cannot carry at all, not even escaped (control characters, lone surrogates,
# U+FFFE/U+FFFF). ElementTree would write them and produce a file no parser reads.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: object) -> str:
    return _FORBIDDEN.sub("\ufffd", str(text))


def _cleaner(redact: Callable[[str], str] | None) -> Callable[[object], str]:
    # Redact before XML escaping: an escaped secret (&quot;, &amp;) would no longer match.
    if redact is None:
        return _clean
    return lambda text: _clean(redact(str(text)))


def _testcase_name(r: TrialResult) -> str:
    return f"{r.case_id} [{r.variant}] {trial_label(r.trial)}"


def _order(summary: RunSummary, results: Sequence[TrialResult]) -> list[TrialResult]:
    """Plan order of cells (as in the summary), then trial number; completion order is noise."""
    rank = {(c.case_id, c.variant): i for i, c in enumerate(summary.cells)}
    return sorted(
        results, key=lambda r: (rank.get(r.cell_key, len(rank)), r.case_id, r.variant, r.trial)
    )


def junit_xml(
    summary: RunSummary,
    results: Sequence[TrialResult],
    *,
    strict: bool = False,
    redact: Callable[[str], str] | None = None,
) -> bytes:
    """The JUnit document as UTF-8 bytes (what ``write_junit`` writes). ``redact`` (a
    ``Redactor``) is applied to every text taken from a trial."""
    import xml.etree.ElementTree as ET  # lazy: the console path never needs it

    clean = _cleaner(redact)
    ordered = _order(summary, results)
    variants = list(dict.fromkeys(r.variant for r in ordered))
    root = ET.Element("testsuites", name="anpord")
    root_counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    root_time = 0.0
    from ..stats import estimate_variant

    cells = {(c.case_id, c.variant): c.estimate() for c in summary.cells}
    for variant in variants:
        mine = [r for r in ordered if r.variant == variant]
        suite = ET.SubElement(root, "testsuite", name=clean(variant))
        # The variant's mean of per-case pass rates with its cluster-robust 95% interval.
        own = [c for c in summary.cells if c.variant == variant]
        e = estimate_variant([(c.passed, c.measured) for c in own],
                             trials=sum(c.trials for c in own), void=sum(c.void for c in own))
        _properties(ET.SubElement(suite, "properties"), {
            "pass_rate": e.mean, "ci_low": e.ci_low, "ci_high": e.ci_high, "se": e.se,
            "cases": e.cases, "void_rate": e.void_rate,
        })
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        suite_time = 0.0
        for r in mine:
            outcome = _testcase(suite, r, summary.run_dir, strict, clean, cells.get(r.cell_key))
            counts["tests"] += 1
            if outcome:
                counts[outcome] += 1
            suite_time += r.duration
        for key, n in counts.items():
            suite.set(key, str(n))
            root_counts[key] += n
        suite.set("time", f"{suite_time:.3f}")
        root_time += suite_time
    for key, n in root_counts.items():
        root.set(key, str(n))
    root.set("time", f"{root_time:.3f}")
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def _properties(props: Element, values: dict[str, object]) -> None:
    """One ``<property>`` per known figure (an unknown one is left out, not written "None")."""
    import xml.etree.ElementTree as ET

    for name, value in values.items():
        if value is None:
            continue
        text = f"{value:.4f}" if isinstance(value, float) else str(value)
        ET.SubElement(props, "property", name=name, value=text)


def _testcase(
    suite: Element,
    r: TrialResult,
    run_dir: str,
    strict: bool,
    clean: Callable[[object], str],
    cell: object = None,
) -> str | None:
    """Append one testcase; return the counter it adds to (``failures``/``errors``/``skipped``)."""
    import xml.etree.ElementTree as ET

    case = ET.SubElement(
        suite,
        "testcase",
        classname=clean(r.case_id),
        name=clean(_testcase_name(r)),
        time=f"{r.duration:.3f}",
    )
    if r.file:
        case.set("file", clean(r.file))
    props = ET.SubElement(case, "properties")
    ET.SubElement(props, "property", name="verdict", value=r.verdict)
    if r.score is not None:
        ET.SubElement(props, "property", name="score", value=f"{r.score:.4f}")
    if r.files.get("traceback"):
        ET.SubElement(props, "property", name="traceback", value=clean(r.files["traceback"]))
    if cell is not None:  # the trial's cell: its pass rate, 95% Wilson interval and n
        _properties(props, {
            "cell_pass_rate": getattr(cell, "pass_rate", None),
            "cell_ci_low": getattr(cell, "ci_low", None),
            "cell_ci_high": getattr(cell, "ci_high", None),
            "cell_n": getattr(cell, "n", None),
        })

    details = clean("\n".join(failure_lines(r, run_dir)))
    error = r.error.message if r.error is not None else None
    message = clean(r.reason or error or r.verdict.replace("_", " "))
    outcome: str | None = None
    if r.verdict in ("failed", "timed_out") or (r.verdict == "scored" and strict):
        el = ET.SubElement(case, "failure", message=message, type=r.verdict)
        el.text = details or None
        outcome = "failures"
    elif r.verdict == "void":
        el = ET.SubElement(case, "error", message=message, type="void")
        el.text = details or None
        outcome = "errors"
    elif r.verdict == "skipped":
        ET.SubElement(case, "skipped", message=message)
        outcome = "skipped"

    out: list[str] = []
    if r.verdict == "scored" and not strict:
        out.append(f"scored (not a failure without --strict): {message}")
        out.extend(details.splitlines())
    out.extend(r.logs)
    if out:
        ET.SubElement(case, "system-out").text = clean("\n".join(out))
    return outcome


def write_junit(
    path: str | os.PathLike[str],
    summary: RunSummary,
    results: Sequence[TrialResult],
    *,
    strict: bool = False,
    redact: Callable[[str], str] | None = None,
) -> None:
    """Write the JUnit report atomically. A missing parent folder is a ``ValueError``."""
    target = Path(path)
    parent = target.parent
    if not parent.is_dir():
        raise ValueError(f"cannot write the JUnit report {target}: folder {parent} does not exist")
    if target.is_dir():
        raise ValueError(f"cannot write the JUnit report {target}: it is a folder")
    write_atomic(target, junit_xml(summary, results, strict=strict, redact=redact))
