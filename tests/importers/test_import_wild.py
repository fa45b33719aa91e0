"""Every real-world file under fixtures/import/wild either imports or is refused with a clear
reason. The table says which, and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from importers_support import WILD, load, verdict

from anpord.importers import (
    CaseDirectoryEmpty,
    CaseFileNotEvalsJson,
    ImportRefusal,
    Tally,
    import_cases,
)

EJ = "evals-json"

# (format, path under wild/, (cases, converted, needs an author) or None, why)
IMPORTS = [
    (EJ, "0065paula__skill-inspector__evals.json", (3, 0, 9), "`expectations` read as prose"),
    (EJ, "0x2kNJ__cpo__evals.json", (3, 0, 27), "{id, text} assertions carry only prose"),
    (
        EJ,
        "0xdeafcafe__tslsp-cli__evals.json",
        (4, 0, 4),
        "eval_name; `scorers` reported, one placeholder each",
    ),
    (
        EJ,
        "127-c__vhdl-to-sv-skill__evals.json",
        (11, 0, 11),
        "must_have/must_not_have reported, not guessed",
    ),
    (EJ, "1273984347__mem-wrap-up__evals.json", (4, 0, 16), "Chinese `expectations`"),
    (EJ, "16Miku__Mapping-Skill__evals.json", (3, 0, 9), "Chinese `expectations`"),
    (EJ, "1xmint__orchestrate__evals.json", (27, 0, 27), "expected_output only"),
    (EJ, "240xu__verdict-engine__evals.json", (10, 0, 10), "expected_output only"),
    (
        EJ,
        "777aca__qa-engineer__evals.json",
        (6, 0, 17),
        "Chinese prose assertions, some files missing",
    ),
    (EJ, "88lin__diataxis-docs-skill__evals.json", (31, 0, 31), "`category` reported"),
    (EJ, "AaronLPS__loop-builder__evals.json", (5, 0, 5), "expected_output only"),
    (
        EJ,
        "Adityaraj0421__naksha-studio__evals.json",
        (169, 0, 820),
        "{name, description} assertions are prose",
    ),
    (
        EJ,
        "Adverbial-cobweb86__harness-audit__evals.json",
        (3, 0, 3),
        "compact layout, no assertions",
    ),
    (EJ, "darkrishabh__agent-skills-eval__evals.json", (4, 0, 4), "string ids, empty assertions"),
    ("yaml", "browser-use__browser-use", (8, 0, 20), "extra `expected_substrings` reported"),
    ("yaml", "newunivers-company__nu-browser-use", (17, 0, 35), "`source_id`, `keyless` reported"),
    ("yaml", "zzxwill__browser-use", (3, 0, 6), "byte-identical fork copies"),
]

REFUSALS = [
    (
        EJ,
        "0vulns__ad-takeover-skill__evals.json",
        CaseFileNotEvalsJson,
        "the top level is an array; expected an object like",
    ),
    (
        EJ,
        "13DJTEQ__multi-agent-workflows__evals.json",
        CaseFileNotEvalsJson,
        'evals: is missing (found "test_cases" instead); expected an object like',
    ),
    (
        EJ,
        "A-H-911__tamheed__evals.json",
        CaseFileNotEvalsJson,
        'evals: is missing (found "cases" instead); expected an object like',
    ),
    ("yaml", ".", CaseDirectoryEmpty, "holds no .yaml or .yml files"),  # only subfolders
]


def _wild(fmt: str, name: str) -> Path:
    return WILD / ("evals-json" if fmt == EJ else "yaml") / name


def test_the_table_covers_every_wild_file() -> None:
    listed = {name for fmt, name, *_ in IMPORTS + REFUSALS if fmt == EJ}
    assert listed == {p.name for p in (WILD / "evals-json").iterdir()}
    folders = {name for fmt, name, *_ in IMPORTS if fmt == "yaml"}
    assert folders == {p.name for p in (WILD / "yaml").iterdir()}


@pytest.mark.parametrize(("fmt", "name", "tally", "why"), IMPORTS, ids=[row[1] for row in IMPORTS])
def test_wild_file_imports(fmt: str, name: str, tally: tuple[int, int, int], why: str) -> None:
    imported = import_cases(fmt, str(_wild(fmt, name)))
    assert imported.tally == Tally(*tally)
    suite = load(imported.source)["suite"]
    assert len(suite.cases) == tally[0]
    assert len({case.id for case in suite.cases}) == tally[0]
    # Nothing converted, so every case is red whatever the agent says.
    for case in suite.cases:
        passed, message = verdict(case, "A confident, complete-sounding answer.")
        assert passed is False and message.startswith("unwritten check: ")


@pytest.mark.parametrize(
    ("fmt", "name", "kind", "reason"), REFUSALS, ids=[row[1] for row in REFUSALS]
)
def test_wild_file_is_refused_with_a_reason(fmt: str, name: str, kind: type, reason: str) -> None:
    with pytest.raises(ImportRefusal) as caught:
        import_cases(fmt, str(_wild(fmt, name)))
    assert type(caught.value) is kind
    assert reason in caught.value.message
    assert "\n" not in caught.value.line()


def _evals_json_shaped(path: Path) -> bool:
    data = json.loads(path.read_text(encoding="utf-8"))
    return isinstance(data, dict) and "evals" in data


# Only the files of this format: the others are covered by the refusal table above.
@pytest.mark.parametrize(
    "path",
    [p for p in sorted((WILD / "evals-json").glob("*.json")) if _evals_json_shaped(p)],
    ids=lambda p: p.name,
)
def test_prompts_survive_exactly(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    suite = load(import_cases(EJ, str(path)).source)["suite"]
    assert [case.prompt for case in suite.cases] == [case["prompt"] for case in data["evals"]]


@pytest.mark.parametrize(
    "path", sorted((WILD / "yaml").glob("*/*.y*ml")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_each_yaml_file_imports_alone(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    imported = import_cases("yaml", str(path))
    (case,) = load(imported.source)["suite"].cases
    assert case.prompt == data["task"]
    assert case.name == data["name"]
    assert imported.tally.needs_author == max(1, len(data.get("judge_context") or []))


def test_a_real_comment_terminator_in_prose_stays_a_comment() -> None:
    # naksha-studio has "/* FIX: */" inside an assertion description.
    imported = import_cases(EJ, str(WILD / "evals-json/Adityaraj0421__naksha-studio__evals.json"))
    assert "/* FIX: */" in imported.source
    compile(imported.source, "naksha.eval.py", "exec")
