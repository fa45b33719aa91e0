"""promptfoo assertions as anpord checks.

Mechanical types convert exactly to the generated module's helpers; the model-graded ones the
author gave a grader (``llm-rubric``, ``model-graded-closedqa``, ``factuality``, ``g-eval``)
become judges with the author's text verbatim; code (``javascript``, ``python``) and every other
type becomes an always-false placeholder quoting the assertion. ``threshold``, ``weight``,
``metric`` and ``transform`` are each kept, as a value or as a comment, never dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from ._model import Check, Coded, Judged, Unwritten
from ._promptfoo_providers import grader_model
from ._templates import RenderFailed, render_template
from ._text import describe_actual
from ._values import render

__all__ = ["Assertions", "assertion_from_csv", "convert_assertions"]

_SHOWN = 2000  # characters of an assertion (or its code) quoted in a placeholder
CodeReader = Callable[[str], "str | None"]

# type -> (every, ignore_case) for the contains family.
_CONTAINS = {
    "contains": (False, False),
    "icontains": (False, True),
    "contains-any": (False, False),
    "contains-all": (True, False),
    "icontains-any": (False, True),
    "icontains-all": (True, True),
}
_JUDGES = {"llm-rubric", "model-graded-closedqa", "factuality", "g-eval"}
_FACTUALITY = "The answer must be consistent with this statement of fact: "
_DEFAULT_LEVENSHTEIN = 5
_DEFAULT_SIMILAR = 0.75


class Assertions(NamedTuple):
    checks: tuple[Check, ...]
    judges: tuple[Judged, ...]
    notes: tuple[str, ...]  # about the test as a whole (e.g. a template that did not render)


def _js_string(value: Any) -> str:
    """The text JavaScript's ``String(value)`` gives, for the scalars a file holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return ""
    return str(value)


def _spec_text(raw: Any) -> str:
    return render(raw, _SHOWN)


class _Assertion:
    """One assertion being converted: its fields, and the comments it will carry."""

    def __init__(self, raw: dict[str, Any], variables: dict[str, Any], notes: list[str]):
        self.raw = raw
        self.type = raw.get("type")
        self.variables = variables
        self.test_notes = notes
        self.comments: list[str] = []
        self.threshold = raw.get("threshold")
        self.threshold_used = False
        weight, metric = raw.get("weight"), raw.get("metric")
        if weight is not None:
            self.comments.append(
                f"weight {describe_actual(weight)} in the file; anpord does not weigh checks: "
                "every check must hold"
            )
        if metric is not None:
            self.comments.append(f"metric: {describe_actual(metric, 200)}")

    def value(self) -> Any:
        value = self.raw.get("value")
        if isinstance(value, str):
            return self.rendered(value)
        if isinstance(value, list):
            return [self.rendered(item) if isinstance(item, str) else item for item in value]
        return value

    def rendered(self, text: str) -> str:
        try:
            return render_template(text, self.variables)
        except RenderFailed as error:
            self.test_notes.append(
                f"An assertion's value did not render ({error}), so it is used as written: {text}"
            )
            return text

    def number(self, default: float | None) -> float | None:
        value = self.threshold
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.threshold_used = True
            return float(value)
        return default

    def finish(self) -> tuple[str, ...]:
        if self.threshold is not None and not self.threshold_used:
            self.comments.append(
                f"threshold {describe_actual(self.threshold)} in the file; this check has no score"
            )
        return tuple(self.comments)


def _unwritten(raw: Any, why: str, label: Any = None) -> Unwritten:
    shown = label if isinstance(label, str) else None
    return Unwritten(f"{why}: {_spec_text(raw)}", shown)


def _needles(value: Any, split: bool) -> list[str] | None:
    if isinstance(value, list):
        if value and all(isinstance(item, (str, int, float)) for item in value):
            return [_js_string(item) for item in value]
        return None
    if isinstance(value, str) and split:
        # promptfoo splits a string value of the -any/-all types on commas.
        parts = [part.strip() for part in value.split(",")]
        return [part for part in parts if part] or None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [_js_string(value)]
    return None


def _negated(negate: bool) -> tuple[tuple[str, bool], ...]:
    return (("negate", True),) if negate else ()


def _mechanical(kind: str, negate: bool, a: _Assertion) -> Check | None:
    """The exact check for a mechanical type, or None when its value cannot be read."""
    value = a.value()
    shown = f"{'not-' if negate else ''}{kind}"
    if kind in _CONTAINS:
        every, ignore_case = _CONTAINS[kind]
        needles = _needles(value, split=kind.endswith(("-any", "-all")))
        if needles is None or (not needles[0] and len(needles) == 1):
            return None
        return Coded(
            "_text_has",
            f"{shown}: {render(needles if len(needles) > 1 else needles[0], 300)}",
            (tuple(needles),),
            (("every", every), ("ignore_case", ignore_case), *_negated(negate)),
        )
    if kind == "equals":
        if isinstance(value, (dict, list)):
            text = json.dumps(value, ensure_ascii=False)
            return Coded(
                "_equals_json", f"{shown}: {render(value, 300)}", (text,), _negated(negate)
            )
        if value is None:
            return None
        return Coded(
            "_equals",
            f"{shown}: {render(_js_string(value), 300)}",
            (_js_string(value),),
            _negated(negate),
        )
    if kind == "starts-with":
        needles = _needles(value, split=False)
        if needles is None:
            return None
        return Coded(
            "_starts_with",
            f"{shown}: {render(needles[0], 300)}",
            (tuple(needles),),
            _negated(negate),
        )
    if kind == "regex":
        if not isinstance(value, str):
            return None
        try:
            re.compile(value)
        except (re.error, RecursionError, OverflowError) as error:
            a.comments.append(f"Python's re cannot compile this pattern ({error})")
            return None
        return Coded("_regex", f"{shown}: {render(value, 300)}", (value,), _negated(negate))
    if kind in ("is-json", "contains-json"):
        if value is not None:
            return None  # a JSON schema: said below as a placeholder
        helper = "_is_json" if kind == "is-json" else "_contains_json"
        return Coded(helper, shown, (), _negated(negate))
    if kind == "levenshtein" and not negate:
        if not isinstance(value, str):
            return None
        most = a.number(_DEFAULT_LEVENSHTEIN)
        return Coded("_levenshtein", f"{shown}: {render(value, 300)}", (value, int(most or 0)))
    if kind == "similar":
        needles = _needles(value, split=False)
        if needles is None:
            return None
        least = a.number(_DEFAULT_SIMILAR)
        a.comments.append(
            "promptfoo scored this with embeddings; anpord's similarity is a local edit-distance "
            "ratio, so the threshold may need tuning"
        )
        return Coded(
            "_similar",
            f"{shown} (at least {least:g}): {render(needles[0], 300)}",
            (tuple(needles), least),
            _negated(negate),
        )
    if kind in ("latency", "cost") and not negate:
        most = a.number(None)
        if most is None:
            return None
        unit = " ms" if kind == "latency" else " (dollars)"
        return Coded(f"_{kind}", f"{kind} at most {most:g}{unit}", (most,))
    return None


_MECHANICAL = {*_CONTAINS, "equals", "starts-with", "regex", "is-json", "contains-json"}
_MECHANICAL |= {"levenshtein", "similar", "latency", "cost"}


def _judge(a: _Assertion, grader: Any) -> Judged | None:
    value = a.value()
    if a.type == "g-eval" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "\n".join(value)
    if not isinstance(value, str) or not value.strip():
        return None
    rubric = _FACTUALITY + value if a.type == "factuality" else value
    model, note = grader_model(a.raw.get("provider", grader))
    notes = [f"{a.type}, from the file"]
    if note is not None:
        notes.append(note)
    threshold = 1.0
    given = a.number(None)
    if given is not None:
        if 0 <= given <= 1:
            threshold = given
        else:
            notes.append(f"threshold {given:g} in the file is outside 0 to 1; the judge asks for 1")
    metric = a.raw.get("metric")
    name = metric if isinstance(metric, str) and metric.strip() else a.type
    return Judged(name=name, rubric=rubric, model=model, threshold=threshold, notes=tuple(notes))  # type: ignore[arg-type]


def _code(raw: dict[str, Any], kind: str, label: Any, read_code: CodeReader | None) -> Unwritten:
    """A javascript or python assertion, quoted; one kept in a file that is there is quoted
    with the file's code, so whoever rewrites it has it to hand."""
    if kind.endswith("python"):
        why = f"Port this {kind} assertion to a _check (it is Python already; its output is the answer)"
    else:
        why = f"Rewrite this {kind} assertion in Python, as the file wrote it"
    value = raw.get("value")
    code = None
    if read_code is not None and isinstance(value, str) and value.startswith("file://"):
        code = read_code(value)
    if code is None:
        return _unwritten(raw, why, label)
    shown = code if len(code) <= _SHOWN else code[: _SHOWN - 1] + "…"
    return Unwritten(
        f"{why}: {_spec_text(raw)}\n{value} holds:\n{shown}",
        label if isinstance(label, str) else None,
    )


def _one(
    raw: Any,
    variables: dict[str, Any],
    grader: Any,
    transform: Any,
    notes: list[str],
    read_code: CodeReader | None = None,
) -> Check | Judged:
    if not isinstance(raw, dict):
        if isinstance(raw, str) and raw.strip():
            return Unwritten(raw)  # a sentence where an assertion object belongs: prose
        return _unwritten(raw, "An assertion this importer cannot read")
    a = _Assertion(raw, variables, notes)
    kind = a.type if isinstance(a.type, str) else ""
    label = raw.get("metric")
    own_transform = raw.get("transform", transform)
    if kind in _JUDGES:
        spec = _judge(a, grader)
        if spec is not None:
            extra = a.finish()
            if own_transform is not None:
                extra += (f"The file transformed the output first: {render(own_transform, 500)}",)
            return spec._replace(notes=spec.notes + extra)
        return _unwritten(raw, f"A {kind} assertion with no text to judge by", label)
    negate = kind.startswith("not-")
    base = kind[4:] if negate else kind
    if base in _MECHANICAL:
        if own_transform is not None:
            return _unwritten(
                raw,
                f"Check the output after the file's transform ({render(own_transform, 500)})",
                label,
            )
        check = _mechanical(base, negate, a)
        if check is not None:
            comments = a.finish()
            return check._replace(notes=comments) if comments else check  # type: ignore[call-arg]
        return _unwritten(
            raw, f"Write this {kind} check (its value is not one it can convert)", label
        )
    if base in ("javascript", "python"):
        return _code(raw, kind, label, read_code)
    if not kind:
        return _unwritten(raw, "An assertion with no type", label)
    return _unwritten(raw, f"Write this {kind} assertion (anpord has no {kind})", label)


def convert_assertions(
    raws: list[Any],
    variables: dict[str, Any],
    grader: Any,
    transform: Any,
    read_code: CodeReader | None = None,
) -> Assertions:
    """The checks and judges for a test's assertions; ``grader`` and ``transform`` are the
    test's ``options.provider`` and ``options.transform``; ``read_code`` gives the text of a
    ``file://`` assertion's code (None when it is not there)."""
    checks: list[Check] = []
    judges: list[Judged] = []
    notes: list[str] = []
    names: set[str] = set()
    for raw in raws:
        result = _one(raw, variables, grader, transform, notes, read_code)
        if isinstance(result, Judged):
            name, n = result.name, 2
            while name in names:
                name = f"{result.name}-{n}"
                n += 1
            names.add(name)
            judges.append(result._replace(name=name))
        else:
            checks.append(result)
    return Assertions(tuple(checks), tuple(judges), tuple(notes))


_CSV_TYPES = (
    "not-icontains-any|not-icontains-all|icontains-any|icontains-all|not-contains-any|"
    "not-contains-all|contains-any|contains-all|not-icontains|icontains|not-contains|contains|"
    "not-starts-with|starts-with|not-equals|equals|not-regex|regex|levenshtein|not-similar|"
    "similar|llm-rubric|grade|model-graded-closedqa|factuality|javascript|fn|eval|python|"
    "is-json|contains-json|not-is-json|not-contains-json|latency|cost"
)
_CSV_ASSERTION = re.compile(rf"^({_CSV_TYPES})(?:\(([\d.]+)\))?(?::\s?(.*))?$", re.DOTALL)
_CSV_ALIASES = {"grade": "llm-rubric", "fn": "javascript", "eval": "javascript"}


def assertion_from_csv(text: str) -> dict[str, Any]:
    """An ``__expected`` cell as the assertion promptfoo reads from it: ``type: value`` (with
    ``type(threshold):``), or plain text, which promptfoo compares with ``equals``."""
    match = _CSV_ASSERTION.match(text)
    if match is None:
        return {"type": "equals", "value": text}
    kind, threshold, value = match.groups()
    kind = _CSV_ALIASES.get(kind, kind)
    out: dict[str, Any] = {"type": kind}
    if value is not None and value != "":
        out["value"] = value
    if threshold is not None:
        try:
            out["threshold"] = float(threshold)
        except ValueError:
            pass
    return out
