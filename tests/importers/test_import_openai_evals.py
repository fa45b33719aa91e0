"""--format openai-evals: a registry spec and its samples (or samples alone), the basic classes
converted as their code compares, model-graded specs as judges, other classes quoted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from importers_support import load, verdict

from anpord.importers import (
    CaseFileEmpty,
    CaseFileIsLfsPointer,
    CaseFileNotOpenAIEvals,
    CaseFileNotYaml,
    CaseFileUnreadable,
    ImportRefusal,
    import_cases,
)

SAMPLES = [
    {
        "input": [{"role": "system", "content": "Answer."}, {"role": "user", "content": "2+2?"}],
        "ideal": "4",
    },
    {"input": "Capital of France?", "ideal": ["Paris", "paris, france"]},
]


def _registry(tmp_path: Path, spec: str, samples: list[Any] | str = SAMPLES) -> Path:
    (tmp_path / "registry" / "evals").mkdir(parents=True)
    data = tmp_path / "registry" / "data" / "demo"
    data.mkdir(parents=True)
    body = samples if isinstance(samples, str) else "".join(json.dumps(s) + "\n" for s in samples)
    (data / "samples.jsonl").write_text(body, encoding="utf-8")
    path = tmp_path / "registry" / "evals" / "demo.yaml"
    path.write_text(spec, encoding="utf-8")
    return path


def _spec(cls: str, extra: str = "") -> str:
    return (
        "demo:\n  id: demo.dev.v0\n  metrics: [accuracy]\n"
        f"demo.dev.v0:\n  class: {cls}\n  args:\n    samples_jsonl: demo/samples.jsonl\n{extra}"
    )


def _imported(path: Path) -> tuple[Any, list[Any]]:
    suite = import_cases("openai-evals", str(path))
    return suite, load(suite.source)["_cases"]


def test_match_is_starts_with_an_ideal(tmp_path: Path) -> None:
    suite, (chat, capital) = _imported(
        _registry(tmp_path, _spec("evals.elsuite.basic.match:Match"))
    )
    assert suite.tally.converted == 2 and suite.tally.needs_author == 0
    assert chat.prompt == "system: Answer.\n\nuser: 2+2?"
    assert verdict(chat, "4, of course")[0] and not verdict(chat, "It is 4")[0]
    assert verdict(capital, "paris, france it is")[0] and not verdict(capital, "PARIS")[0]


def test_includes_and_its_ignore_case(tmp_path: Path) -> None:
    _, (_, capital) = _imported(_registry(tmp_path, _spec("evals.elsuite.basic.includes:Includes")))
    assert verdict(capital, "It is Paris.")[0] and not verdict(capital, "PARIS")[0]


def test_includes_ignore_case(tmp_path: Path) -> None:
    spec = _spec("evals.elsuite.basic.includes:Includes", "    ignore_case: true\n")
    _, (_, capital) = _imported(_registry(tmp_path, spec))
    assert verdict(capital, "PARIS")[0]


def test_fuzzy_match_normalises_both_ways(tmp_path: Path) -> None:
    _, (chat, capital) = _imported(
        _registry(tmp_path, _spec("evals.elsuite.basic.fuzzy_match:FuzzyMatch"))
    )
    assert verdict(capital, "The answer: PARIS!")[0]  # the ideal is inside the answer
    assert verdict(chat, "4")[0] and verdict(chat, "the 4.")[0]
    assert not verdict(capital, "Lyon")[0]


def test_model_graded_becomes_a_judge_with_its_prompt(tmp_path: Path) -> None:
    path = _registry(
        tmp_path,
        _spec(
            "evals.elsuite.modelgraded.classify:ModelBasedClassify", "    modelgraded_spec: fact\n"
        ),
    )
    (tmp_path / "registry" / "modelgraded").mkdir()
    (tmp_path / "registry" / "modelgraded" / "fact.yaml").write_text(
        "fact:\n  prompt: |-\n    Question: {input}\n    Expert: {ideal}\n    Submission: {completion}\n"
        "  choice_strings: ABCDE\n",
        encoding="utf-8",
    )
    suite, (_, capital) = _imported(path)
    (spec,) = capital.judges
    assert spec.name == "fact"
    assert spec.rubric == (
        "Question: Capital of France?\nExpert: Paris\nparis, france\nSubmission: {completion}"
    )
    assert suite.tally.needs_author == 0


def test_other_classes_are_placeholders_naming_them(tmp_path: Path) -> None:
    suite, (case, _) = _imported(_registry(tmp_path, _spec("evals.elsuite.custom:Thing")))
    assert suite.tally.needs_author == 2
    assert "evals.elsuite.custom:Thing" in suite.source
    assert verdict(case, "4")[0] is False


def test_samples_jsonl_directly(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in SAMPLES))
    suite, cases = _imported(path)
    assert len(cases) == 2 and suite.tally.needs_author == 2
    assert "the ideal answer" in suite.source and '"4"' in suite.source


def test_samples_missing_for_one_eval_is_skipped_by_name(tmp_path: Path) -> None:
    spec = _spec("evals.elsuite.basic.match:Match") + (
        "other:\n  id: other.v0\nother.v0:\n  class: evals.elsuite.basic.match:Match\n"
        "  args: {samples_jsonl: other/samples.jsonl}\n"
    )
    suite, cases = _imported(_registry(tmp_path, spec))
    assert len(cases) == 2
    assert any("Skipped other" in note for note in suite.notes)


def test_lfs_pointer_samples_are_refused_by_name(tmp_path: Path) -> None:
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:d771e9\nsize 60081\n"
    path = _registry(tmp_path, _spec("evals.elsuite.basic.match:Match"), pointer)
    with pytest.raises(CaseFileIsLfsPointer) as caught:
        import_cases("openai-evals", str(path))
    assert caught.value.line().startswith("CaseFileIsLfsPointer: ")
    assert "samples.jsonl is a Git LFS pointer" in caught.value.line()


REFUSALS: list[tuple[str, str, type[ImportRefusal]]] = [
    ("spec.yaml", "demo: [unclosed\n", CaseFileNotYaml),
    ("spec.yaml", "- a list\n", CaseFileNotOpenAIEvals),
    ("spec.yaml", "demo:\n  id: nothing\n", CaseFileNotOpenAIEvals),
    ("spec.yaml", "demo:\n  class: X\n  args: {samples_jsonl: gone.jsonl}\n", CaseFileUnreadable),
    ("spec.yaml", "", CaseFileEmpty),
    ("s.jsonl", '{"input": "a", "ideal": "b"}\nnot json\n', CaseFileNotOpenAIEvals),
    ("s.jsonl", '{"ideal": "b"}\n', CaseFileNotOpenAIEvals),
    ("s.jsonl", '{"input": 5, "ideal": "b"}\n', CaseFileNotOpenAIEvals),
    ("s.jsonl", "\n\n", CaseFileEmpty),
]


@pytest.mark.parametrize(("name", "text", "refusal"), REFUSALS)
def test_refusals_are_one_line(
    tmp_path: Path, name: str, text: str, refusal: type[ImportRefusal]
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(refusal) as caught:
        import_cases("openai-evals", str(tmp_path / name))
    assert "\n" not in caught.value.line()


def test_ideal_of_the_wrong_type_names_the_line(tmp_path: Path) -> None:
    path = _registry(
        tmp_path, _spec("evals.elsuite.basic.match:Match"), [{"input": "a", "ideal": {"x": 1}}]
    )
    with pytest.raises(CaseFileNotOpenAIEvals, match=r"line 1, ideal: Expected a string or a list"):
        import_cases("openai-evals", str(path))
