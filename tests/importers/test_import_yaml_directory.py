"""A directory of YAML case files: which entries are read (``*.yaml`` and ``*.yml`` in any
case), and that everything else in it is named on stderr rather than passed over in silence."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from importers_support import load, run_anpord

from anpord.importers import CaseDirectoryEmpty, CaseFileUnreadable, ImportRefusal, import_cases


def case_text(name: str) -> str:
    return f"name: {name}\ntask: Do {name}\n"


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    return folder


def test_suffixes_are_matched_in_any_case(cases: Path) -> None:
    for name in ("a.yaml", "b.YAML", "c.yml", "d.YML", "e.Yaml"):
        (cases / name).write_text(case_text(name.split(".")[0]))
    suite = load(import_cases("yaml", str(cases)).source)["suite"]
    assert [built.name for built in suite.cases] == ["a", "b", "c", "d", "e"]


def test_everything_else_is_named_in_a_note(cases: Path) -> None:
    (cases / "a.yaml").write_text(case_text("a"))
    (cases / "README.md").write_text("# cases\n")
    (cases / "notes.txt").write_text("name: not a case\n")
    (cases / "b.yaml.bak").write_text(case_text("b"))
    (cases / ".hidden").write_text("")
    (cases / "drafts").mkdir()
    (cases / "drafts" / "c.yaml").write_text(case_text("c"))
    (cases / "nested.yaml").mkdir()

    imported = import_cases("yaml", str(cases))
    assert imported.tally.cases == 1
    assert imported.notes[:2] == (
        (
            f"Skipped 4 files in {cases} (not named *.yaml or *.yml): "
            ".hidden, README.md, b.yaml.bak, notes.txt."
        ),
        f"Skipped 2 folders in {cases} (folders in it are not searched): drafts, nested.yaml.",
    )


def test_a_directory_of_only_yaml_files_says_nothing_about_skipping(cases: Path) -> None:
    (cases / "a.yaml").write_text(case_text("a"))
    assert not [note for note in import_cases("yaml", str(cases)).notes if "Skipped" in note]


def test_the_notes_reach_stderr_before_the_summary(cases: Path) -> None:
    (cases / "a.YML").write_text(case_text("a") + "judge_context: [It is done]\n")
    (cases / "todo.txt").write_text("write more cases\n")
    done = run_anpord("eval", "import", "--format", "yaml", "cases", cwd=cases.parent)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "Skipped 1 file in cases (not named *.yaml or *.yml): todo.txt.",
        (
            "Read 1 case, converted 0 assertions. 1 assertion could not be converted and needs "
            "a human: it is written as prose, and the suite fails until you write the check it "
            "describes."
        ),
    ]


def test_a_pipe_named_like_a_case_is_skipped_not_waited_on(cases: Path) -> None:
    (cases / "a.yaml").write_text(case_text("a"))
    os.mkfifo(cases / "b.yaml")  # opening it would wait for a writer forever
    done = run_anpord("eval", "import", "--format", "yaml", "cases", cwd=cases.parent, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Skipped 1 entry in cases (not a regular file): b.yaml." in done.stderr.splitlines()


def test_a_case_file_link_that_leads_nowhere_stops_the_import_by_name(cases: Path) -> None:
    (cases / "a.yaml").write_text(case_text("a"))
    (cases / "b.yaml").symlink_to(cases / "gone.yaml")
    with pytest.raises(ImportRefusal) as caught:
        import_cases("yaml", str(cases))
    assert type(caught.value) is CaseFileUnreadable
    assert caught.value.message == f"Could not read {cases / 'b.yaml'}: No such file or directory"


def test_no_case_file_in_any_case_is_still_an_empty_directory(cases: Path) -> None:
    (cases / "README.md").write_text("# cases\n")
    (cases / "case.yaml.orig").write_text(case_text("a"))
    with pytest.raises(CaseDirectoryEmpty):
        import_cases("yaml", str(cases))
