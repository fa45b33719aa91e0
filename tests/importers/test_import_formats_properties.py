"""Property tests for promptfoo, openai-evals and dataset: whatever text a file holds (in a
prompt, a var, an assertion, a sample, a cell) reaches the generated module as an exact literal
or an inert comment: the module compiles, and what it holds is what the file said."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from importers_support import load, verdict
from hypothesis import HealthCheck, settings
from test_import_properties import nonempty, text

from anpord.importers import ImportRefusal, import_cases

# Fewer examples than the text-helper properties: each one imports and compiles a whole suite.
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ASSERT_TYPES = [
    "contains", "icontains", "equals", "starts-with", "regex", "llm-rubric", "javascript",
    "python", "not-contains", "contains-any", "similar", "levenshtein", "factuality", "no-such",
]  # fmt: skip


def _write(name: str, body: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="anpord-prop-"))
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


@SETTINGS
@given(
    var=text,
    description=text,
    kind=st.sampled_from(ASSERT_TYPES),
    value=text,
    template=text,
)
def test_promptfoo_text_is_literal(
    var: str, description: str, kind: str, value: str, template: str
) -> None:
    config = {
        "prompts": ["{{ v }}", template],
        "tests": [
            {
                "description": description,
                "vars": {"v": var},
                "assert": [{"type": kind, "value": value}],
            }
        ],
    }
    path = _write("promptfooconfig.json", json.dumps(config))
    try:
        suite = import_cases("promptfoo", str(path))
    except ImportRefusal as refusal:
        assert "\n" not in refusal.line()
        return
    namespace = load(suite.source)
    first = namespace["_cases"][0]
    assert first.prompt == var  # rendered exactly: the var is the whole prompt
    if description.strip():
        assert first.name == description
    if kind in ("contains", "icontains") and value and "{" not in value:
        assert verdict(first, f"x{value}y")[0] is True


@SETTINGS
@given(
    st.lists(st.tuples(text, nonempty), min_size=1, max_size=4),
    st.sampled_from(["equals", "includes", None]),
)
def test_dataset_cells_are_literal(rows: list[tuple[str, str]], match: str | None) -> None:
    body = "".join(json.dumps({"input": i, "target": t}) + "\n" for i, t in rows)
    path = _write("d.jsonl", body)
    options = {"match": match} if match else {}
    suite = import_cases("dataset", str(path), **options)
    cases = load(suite.source)["_cases"]
    # What the file says, as JSON reads it: an escaped high and low surrogate side by side are
    # one character (RFC 8259 §7), so the expectation is the decoded text, not the generated one.
    rows = [tuple(json.loads(json.dumps(v)) for v in row) for row in rows]  # type: ignore[misc]
    assert [case.prompt for case in cases] == [i for i, _ in rows]
    for case, (_, target) in zip(cases, rows):
        assert verdict(case, target)[0] is (match is not None)


@SETTINGS
@given(st.lists(st.tuples(text, nonempty), min_size=1, max_size=4))
def test_openai_evals_samples_are_literal(samples: list[tuple[str, str]]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="anpord-prop-"))
    (folder / "evals").mkdir()
    (folder / "data").mkdir()
    body = "".join(json.dumps({"input": i, "ideal": [t]}) + "\n" for i, t in samples)
    (folder / "data" / "s.jsonl").write_text(body, encoding="utf-8")
    spec = folder / "evals" / "x.yaml"
    spec.write_text(
        "x:\n  id: x.v0\nx.v0:\n  class: evals.elsuite.basic.match:Match\n  args: {samples_jsonl: s.jsonl}\n"
    )
    suite = import_cases("openai-evals", str(spec))
    cases = load(suite.source)["_cases"]
    samples = [tuple(json.loads(json.dumps(v)) for v in sample) for sample in samples]  # type: ignore[misc]
    assert [case.prompt for case in cases] == [i for i, _ in samples]
    for case, (_, ideal) in zip(cases, samples):
        assert verdict(case, ideal + " and more")[0] is True
        assert verdict(case, "~" + ideal)[0] is (
            ideal.startswith("~") and ("~" + ideal).startswith(ideal)
        )
