"""Golden tests on the project's fixtures: what the generated module holds and how its checks
behave against answers that are right and answers that are wrong."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from importers_support import WILD, load, verdict

from anpord.authoring import Eval, Suite
from anpord.importers import DEFAULT_HARNESS, Tally, import_cases, summary_of


def suite_of(source: str) -> Suite:
    namespace = load(source)
    public = {
        name: value
        for name, value in namespace.items()
        if not name.startswith("_") and isinstance(value, (Eval, Suite))
    }
    # An eval file binds exactly one public Eval or Suite; everything else stays private.
    assert list(public) == ["suite"]
    return public["suite"]


def comments(source: str) -> str:
    """Every comment's text, one per line, without the leading ``# ``."""
    return "\n".join(
        line.strip()[2:] for line in source.splitlines() if line.strip().startswith("#")
    )


def calls(source: str, name: str) -> list[list[Any]]:
    """The literal arguments of every call of ``name`` in the module's code."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            found.append([ast.literal_eval(arg) for arg in node.args])
    return found


# -- evals-json: both dialects ----------------------------------------------------------------------


@pytest.fixture
def dialects(own: Path) -> Any:
    return import_cases("evals-json", "both-dialects.json")


def test_both_dialects_tally_and_summary(dialects: Any) -> None:
    assert dialects.tally == Tally(cases=3, converted=4, needs_author=3)
    assert summary_of(dialects.tally) == (
        "Read 3 cases, converted 4 assertions. 3 assertions could not be converted and need a "
        "human: each is written as prose, and the suite fails until you write the check it "
        "describes."
    )
    assert dialects.notes == ()


def test_both_dialects_module_holds_the_file_exactly(dialects: Any) -> None:
    suite = suite_of(dialects.source)
    assert [case.id for case in suite.cases] == ["1", "2", "3"]
    assert [case.name for case in suite.cases] == ["Lists the breaking change", None, "Only prose"]
    assert suite.cases[0].prompt == (
        "Read `CHANGELOG.md` and write ${count} release notes.\nMind the $ sign."
    )
    assert [case.prompt for case in suite.cases[1:]] == [
        "Summarise the diff.",
        "Explain the change to a new reader.",
    ]
    assert suite.trials == 3
    assert len(suite.variants) == 1
    variant = suite.variants[0]
    assert (variant.harness, variant.model, variant.sandbox) == (DEFAULT_HARNESS, None, None)
    assert all(case.source is not None and case.source.contents == {} for case in suite.cases)

    assert calls(dialects.source, "_contains_all") == [
        ["names the removed flag", ["--legacy", "removed"]],
        ["names the file", ["parser.ts"]],
    ]
    assert calls(dialects.source, "_contains_any") == [
        ["mentions a migration", ["migrate", "migration"]]
    ]
    assert calls(dialects.source, "_contains_none") == [["does not invent a version", ["v9.0.0"]]]
    assert calls(dialects.source, "_unwritten")[-3:] == [
        ["The summary reads as though a maintainer wrote it, not a machine."],
        ["It avoids jargon a first-week reader would not know."],
        ["It says why the change was made, not only what changed."],
    ]


def test_both_dialects_comments_keep_the_authors_words(dialects: Any) -> None:
    source = dialects.source
    assert source.startswith("# Imported by `anpord eval import`.")
    text = comments(source)
    for line in (
        "Format: evals-json",
        "Source: both-dialects.json",
        "Skill: release notes",
        "Case 1: Lists the breaking change",
        "The file's expected output: A short note naming the breaking change.",
        "names the removed flag",
        "Write this check, then delete the line under it:",
        "It avoids jargon a first-week reader would not know.",
        "This case named no fixture directory. Add the files it starts from.",
    ):
        assert line in text.splitlines()
    assert (
        "This case named fixtures/changelog. The JSON carries the directory names, not their "
        "contents, so add the files here."
    ) in " ".join(text.splitlines())
    # Each text stays right above its call.
    lines = source.splitlines()
    at = lines.index("            # names the removed flag")
    assert lines[at + 1].strip().startswith('_contains_all("names the removed flag"')
    at = lines.index("            # It avoids jargon a first-week reader would not know.")
    assert lines[at - 1].strip() == "# Write this check, then delete the line under it:"
    assert lines[at + 1].strip().startswith('_unwritten("It avoids jargon')
    assert source.endswith(")\n")


def said(message: str, answer: str) -> str:
    """A failure message: the checks that did not hold, then what the agent answered."""
    return f"{message} — the answer was {answer!r}"


def test_a_long_answer_is_cut_in_the_message(dialects: Any) -> None:
    first = suite_of(dialects.source).cases[0]
    ok, message = verdict(first, "x" * 500)
    assert not ok and message.endswith(repr("x" * 199 + "…"))


def test_converted_checks_pass_a_right_answer_case_insensitively(dialects: Any) -> None:
    first = suite_of(dialects.source).cases[0]
    assert verdict(first, "The --legacy flag was removed; migrate to --modern.") == (
        True,
        "3 of 3 checks held",
    )
    assert verdict(first, "THE --LEGACY FLAG WAS REMOVED. SEE THE MIGRATION GUIDE.")[0] is True


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            "The --legacy flag is gone; migrate now.",
            '"names the removed flag": the answer must include all of "--legacy", "removed"',
        ),
        (
            "The --legacy flag was removed.",
            '"mentions a migration": the answer must include at least one of "migrate", "migration"',
        ),
        (
            "The --legacy flag was removed in V9.0.0; migrate.",
            '"does not invent a version": the answer must include none of "v9.0.0"',
        ),
        (
            "",
            (
                '"names the removed flag": the answer must include all of "--legacy", "removed"; '
                '"mentions a migration": the answer must include at least one of "migrate", "migration"'
            ),
        ),
    ],
)
def test_converted_checks_fail_a_wrong_answer_saying_which(
    dialects: Any, answer: str, message: str
) -> None:
    first = suite_of(dialects.source).cases[0]
    assert verdict(first, answer) == (False, said(message, answer))


def test_prose_fails_whatever_the_answer_quoting_the_unwritten_check(dialects: Any) -> None:
    cases = suite_of(dialects.source).cases
    perfect = "A maintainer wrote this: parser.ts changed because the old parser was slow."
    assert verdict(cases[1], perfect) == (
        False,
        said('unwritten check: "The summary reads as though a maintainer wrote it, not a machine."', perfect),
    )
    assert verdict(cases[1], "nothing useful") == (
        False,
        said(
            'unwritten check: "The summary reads as though a maintainer wrote it, not a machine."; '
            '"names the file": the answer must include all of "parser.ts"',
            "nothing useful",
        ),
    )
    assert verdict(cases[2], perfect) == (
        False,
        said(
            'unwritten check: "It avoids jargon a first-week reader would not know."; '
            'unwritten check: "It says why the change was made, not only what changed."',
            perfect,
        ),
    )


def test_replacing_a_placeholder_with_a_real_check_turns_the_case_green(dialects: Any) -> None:
    source = dialects.source.replace(
        '_unwritten("The summary reads as though a maintainer wrote it, not a machine."),',
        '_check("sounds like a maintainer", lambda answer: "maintainer" in answer),',
    )
    second = suite_of(source).cases[1]
    assert verdict(second, "A maintainer's note: parser.ts changed.") == (
        True,
        "2 of 2 checks held",
    )
    assert verdict(second, "parser.ts changed.") == (
        False, said("sounds like a maintainer", "parser.ts changed.")
    )


# -- evals-json: cases without checks, ids ----------------------------------------------------------


def test_a_case_with_no_assertions_gets_one_placeholder(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        json.dumps(
            {
                "skill_name": "s",
                "evals": [
                    {"id": 1, "prompt": "a", "assertions": []},
                    {"id": 2, "prompt": "b"},
                    {"id": 3, "prompt": "c", "assertions": ["Prose."]},
                ],
            }
        )
    )
    imported = import_cases("evals-json", str(path))
    assert imported.tally == Tally(cases=3, converted=0, needs_author=3)
    assert imported.notes == (
        (
            "Cases 1, 2 have no assertions: each gets one placeholder check, so each fails until "
            "you write one."
        ),
    )
    cases = suite_of(imported.source).cases
    for case in cases[:2]:
        assert verdict(case, "anything") == (
            False,
            said('unwritten check: "This case named no assertion. Write what a good answer is."', "anything"),
        )


def test_ids_are_stable_when_the_file_is_reordered(tmp_path: Path) -> None:
    evals = [
        {"id": ident, "prompt": f"prompt {ident}", "assertions": ["p"]}
        for ident in (3, 1, "explicit", "Two Words", 47)
    ]
    one, two = tmp_path / "a.json", tmp_path / "b.json"
    one.write_text(json.dumps({"evals": evals}))
    two.write_text(json.dumps({"evals": evals[::-1]}))
    first = {c.id: c.prompt for c in suite_of(import_cases("evals-json", str(one)).source).cases}
    second = {c.id: c.prompt for c in suite_of(import_cases("evals-json", str(two)).source).cases}
    assert first == second
    assert set(first) == {"3", "1", "explicit", "two-words", "47"}


def test_repeated_ids_are_made_unique_without_moving_given_ones(tmp_path: Path) -> None:
    evals = [
        {"id": 1, "prompt": "first", "assertions": ["p"]},
        {"id": "1", "prompt": "second", "assertions": ["p"]},
        {"id": "1-2", "prompt": "third", "assertions": ["p"]},
        {"id": "中文", "prompt": "fourth", "assertions": ["p"]},
        {"id": "¿?", "prompt": "fifth", "assertions": ["p"]},
        {"id": "!", "prompt": "sixth", "assertions": ["p"]},
    ]
    path = tmp_path / "evals.json"
    path.write_text(json.dumps({"evals": evals}))
    imported = import_cases("evals-json", str(path))
    ids = [c.id for c in suite_of(imported.source).cases]
    assert ids == ["1", "1-3", "1-2", "中文", "case", "case-2"]
    assert imported.notes == (
        '2 cases have the id "1"; the repeats are imported as 1-3.',
        '2 cases have the id "case"; the repeats are imported as case-2.',
    )


def test_unknown_fields_are_reported_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        json.dumps(
            {
                "skill_name": "s",
                "version": 2,
                "evals": [
                    {"id": 1, "prompt": "a", "assertions": ["p"], "tags": ["x"]},
                    {
                        "id": 2,
                        "prompt": "b",
                        "assertions": [
                            {
                                "text": "t",
                                "kind": "content_contains_any",
                                "needles": ["n"],
                                "weight": 2,
                            }
                        ],
                        "tags": [],
                    },
                ],
            }
        )
    )
    imported = import_cases("evals-json", str(path))
    assert imported.notes == (
        'Not imported: "version" (top level) is not an evals-json field.',
        'Not imported: "tags" (cases 1, 2) is not an evals-json field.',
        'Not imported: "assertions[].weight" (case 2) is not an evals-json field.',
    )
    assert imported.tally == Tally(cases=2, converted=1, needs_author=1)
    # The case's own unknown fields stay beside it as comments, for whoever writes its checks.
    assert "Not imported, from the file: tags = []" in comments(imported.source).splitlines()


def test_unknown_case_fields_become_inert_comments(tmp_path: Path) -> None:
    nasty = {"pattern": "a\\b\n\"c\"", "nested": {"x": [1, "\u2028# not code"]}}
    path = tmp_path / "evals.json"
    path.write_text(json.dumps({"evals": [{"id": 1, "prompt": "p", "must_have": nasty,
                                           "blob": "x" * 2000}]}))
    source = import_cases("evals-json", str(path)).source
    (case,) = suite_of(source).cases  # it compiles and holds one case
    lines = comments(source).splitlines()
    kept = [line for line in lines if line.startswith("Not imported, from the file: must_have = ")]
    assert len(kept) == 1 and "pattern" in kept[0]
    blob = next(line for line in lines if line.startswith("Not imported, from the file: blob = "))
    assert blob.endswith("…") and len(blob) < 600
    assert case.prompt == "p"


# -- yaml ---------------------------------------------------------------------------------------------


def test_yaml_unknown_fields_become_comments(tmp_path: Path) -> None:
    path = tmp_path / "case.yaml"
    path.write_text("name: Totals\ntask: Add them up\nexpected_substrings: ['3', '4']\n")
    source = import_cases("yaml", str(path)).source
    assert 'Not imported, from the file: expected_substrings = ["3", "4"]' in comments(source).splitlines()
    (case,) = suite_of(source).cases
    assert case.prompt == "Add them up"


def test_yaml_directory_in_sorted_order(own: Path) -> None:
    imported = import_cases("yaml", "yaml-cases")
    assert imported.tally == Tally(cases=3, converted=0, needs_author=5)
    assert summary_of(imported.tally) == (
        "Read 3 cases, converted 0 assertions. 5 assertions could not be converted and need a "
        "human: each is written as prose, and the suite fails until you write the check it "
        "describes."
    )
    suite = suite_of(imported.source)
    assert [c.id for c in suite.cases] == ["archive-search", "build-check", "checkout-flow"]
    assert [c.name for c in suite.cases] == ["Archive Search", "Build Check", "Checkout Flow"]
    assert suite.cases[0].prompt == (
        "Search the local archive for 'quarterly report' and return the newest match"
    )
    assert suite.cases[2].prompt == (
        "Open the demo storefront, add the sample widget to the basket\n"
        "and complete checkout with the test card.\n"
    )
    assert verdict(suite.cases[2], "Paid with the test card; total $12.") == (
        False,
        said(
            'unwritten check: "The agent must reach the basket page before paying"; '
            'unwritten check: "The agent must use the test card, never a real one"; '
            'unwritten check: "The receipt it reports must quote the order total"',
            "Paid with the test card; total $12.",
        ),
    )
    text = comments(imported.source).splitlines()
    assert (
        "The file allowed 8 steps. Anpord does not cap steps, so this is a note, not a limit."
        in text
    )
    assert (
        "The file allowed 12 steps. Anpord does not cap steps, so this is a note, not a limit."
        in text
    )
    assert "The file names no max_steps, so it allowed the default of 15 steps." in text
    assert "Anpord does not cap steps, so this is a note, not a limit." in text
    assert "Imported from yaml-cases/checkout-flow.yaml." in text
    assert "The YAML names no starting files, so add the ones this case works on." in text
    assert "Format: yaml" in text and "Source: yaml-cases" in text


def test_yaml_single_file_without_judge_context(own: Path) -> None:
    imported = import_cases("yaml", "yaml-unjudged.yaml")
    assert imported.tally == Tally(cases=1, converted=0, needs_author=1)
    assert summary_of(imported.tally) == (
        "Read 1 case, converted 0 assertions. 1 assertion could not be converted and needs a "
        "human: it is written as prose, and the suite fails until you write the check it "
        "describes."
    )
    assert imported.notes == (
        (
            "yaml-unjudged.yaml names no judge_context: it gets one placeholder check, so it fails "
            "until you write one."
        ),
    )
    (case,) = suite_of(imported.source).cases
    assert case.id == "unjudged-case"
    assert verdict(case, "The theme is dark.") == (
        False,
        said('unwritten check: "This case named no judge context. Write what a good answer is."', "The theme is dark."),
    )
    assert "default of 15 steps" in imported.source


def test_yaml_substitution_characters_stay_literal(own: Path) -> None:
    (case,) = suite_of(import_cases("yaml", "yaml-substitution.yaml").source).cases
    assert case.prompt == "Run `bun test` and report ${count} failures, cost $9"


def test_yaml_repeated_names_and_unknown_fields(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    shutil.copy(WILD / "yaml/browser-use__browser-use/amazon_laptop.yaml", folder / "a.yaml")
    shutil.copy(WILD / "yaml/zzxwill__browser-use/amazon_laptop.yaml", folder / "b.yaml")
    shutil.copy(WILD / "yaml/browser-use__browser-use/search_count.yaml", folder / "c.yml")
    (folder / "中文.yaml").write_text("name: 中文名字\ntask: 做点什么\n", encoding="utf-8")
    imported = import_cases("yaml", str(folder))
    cases = suite_of(imported.source).cases
    base = cases[0].id
    assert [c.id for c in cases] == [base, f"{base}-2", cases[2].id, "中文名字"]
    assert cases[3].name == "中文名字" and cases[3].prompt == "做点什么"
    assert (
        imported.notes[0] == 'Not imported: "expected_substrings" (c.yml) is not a yaml case field.'
    )


def test_yaml_judge_lines_are_kept_as_the_yaml_reads_them() -> None:
    # A plain scalar's trailing space is not part of its value in YAML, so none is kept.
    imported = import_cases("yaml", str(WILD / "yaml/browser-use__browser-use/amazon_laptop.yaml"))
    assert calls(imported.source, "_unwritten") == [
        ["The agent must navigate to amazon.com"],
        ["The agent must search for 'laptop'"],
        ["The agent must return name of the first laptop"],
    ]
    assert all(line == line.rstrip() for line in imported.source.splitlines())
