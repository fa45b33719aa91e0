"""The command as a user runs it: the installed ``anpord`` script in a subprocess."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from importers_support import OWN, WILD, run_anpord

from anpord.importers import import_cases

SUMMARY_3 = (
    "Read 3 cases, converted 4 assertions. 3 assertions could not be converted and need a human: "
    "each is written as prose, and the suite fails until you write the check it describes."
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: an evals root with a config, and the fixtures beside it."""
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\n\nconfig = define_eval_config()\n"
    )
    shutil.copytree(OWN, tmp_path / "cases")
    return tmp_path


def test_suite_to_stdout_summary_to_stderr(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = run_anpord(
        "eval", "import", "--format", "evals-json", "cases/both-dialects.json", cwd=project
    )
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(project)
    assert done.stdout == import_cases("evals-json", "cases/both-dialects.json").source
    assert done.stderr == SUMMARY_3 + "\n"


def test_out_is_written_and_reported(project: Path) -> None:
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "evals-json",
        "cases/both-dialects.json",
        "--out",
        "evals/release.eval.py",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == f"Wrote evals/release.eval.py\n{SUMMARY_3}\n"
    written = (project / "evals/release.eval.py").read_text(encoding="utf-8")
    assert "# Source: cases/both-dialects.json" in written
    assert [p.name for p in (project / "evals").iterdir() if p.name.startswith(".")] == []


def test_existing_out_needs_force(project: Path) -> None:
    target = project / "evals" / "release.eval.py"
    target.write_text("# mine\n")
    args = (
        "eval",
        "import",
        "--format",
        "yaml",
        "cases/yaml-cases",
        "--out",
        "evals/release.eval.py",
    )
    done = run_anpord(*args, cwd=project)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "SuiteFileExists: evals/release.eval.py already exists; pass --force to overwrite it\n"
    )
    assert target.read_text() == "# mine\n"

    done = run_anpord(*args, "--force", cwd=project)
    assert done.returncode == 0, done.stderr
    assert target.read_text(encoding="utf-8").startswith("# Imported by `anpord eval import`.")


def test_missing_folder_and_directory_targets_are_clear_errors(project: Path) -> None:
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "yaml",
        "cases/yaml-unjudged.yaml",
        "--out",
        "nowhere/x.eval.py",
        cwd=project,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "SuiteFolderMissing: Could not write nowhere/x.eval.py: the folder nowhere does not exist\n"
    )
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "yaml",
        "cases/yaml-unjudged.yaml",
        "--out",
        "evals",
        "--force",
        cwd=project,
    )
    assert done.returncode == 2
    assert done.stderr == "SuiteFileUnwritable: Could not write evals: it is a directory\n"


def test_a_name_the_runner_would_not_find_is_pointed_out(project: Path) -> None:
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "yaml",
        "cases/yaml-unjudged.yaml",
        "--out",
        "evals/unjudged.py",
        cwd=project,
    )
    assert done.returncode == 0
    assert (
        "evals/unjudged.py does not end in .eval.py, so `anpord eval` will not find it."
        in done.stderr
    )


def test_refusal_is_one_line_and_exit_2(project: Path) -> None:
    done = run_anpord(
        "eval", "import", "--format", "evals-json", "cases/wrong-shape.json", cwd=project
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "CaseFileNotEvalsJson: cases/wrong-shape.json is not an evals-json file: "
        "case 47, prompt: Expected string, actual 12\n"
    )


def test_notes_one_line_each_then_the_summary(tmp_path: Path) -> None:
    shutil.copy(WILD / "evals-json/0xdeafcafe__tslsp-cli__evals.json", tmp_path / "evals.json")
    done = run_anpord("eval", "import", "--format", "evals-json", "evals.json", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        'Not imported: "description" (top level) is not an evals-json field.',
        'Not imported: "scorers" (cases 0, 1, 2, 3) is not an evals-json field.',
        (
            "Cases 0, 1, 2, 3 have no assertions: each gets one placeholder check, so each fails "
            "until you write one."
        ),
        (
            "Read 4 cases, converted 0 assertions. 4 assertions could not be converted and need a "
            "human: each is written as prose, and the suite fails until you write the check it describes."
        ),
    ]


def test_usage_errors_and_help(project: Path) -> None:
    done = run_anpord("eval", "import", "cases/both-dialects.json", cwd=project)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "anpord eval import: error: the following arguments are required: --format (see --help)\n"
    )
    done = run_anpord("eval", "import", "--format", "csv", "x.csv", cwd=project)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "invalid choice: 'csv'" in done.stderr
    done = run_anpord("eval", "import", "--help", cwd=project)
    assert done.returncode == 0
    assert "usage: anpord eval import" in done.stdout


# -- import, run, red; write the check, run, green ------------------------------------------------

AGENT = """\
def agent(turn):
    return "The --legacy flag was removed; see the migration notes for parser.ts."
"""

WRONG_AGENT = """\
def agent(turn):
    return "Version v9.0.0 is out."
"""


def test_import_run_red_write_the_checks_green(project: Path) -> None:
    (project / "release_agent.py").write_text(AGENT)
    (project / "wrong_agent.py").write_text(WRONG_AGENT)
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "evals-json",
        "cases/both-dialects.json",
        "--out",
        "evals/release.eval.py",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr

    listed = run_anpord("eval", "--list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert [line for line in listed.stdout.splitlines() if line.startswith("release/")] == [
        "release/1",
        "release/2",
        "release/3",
    ]

    run = (
        "eval",
        "evals/release.eval.py",
        "--harness",
        "python:release_agent:agent",
        "--trials",
        "1",
    )
    red = run_anpord(*run, cwd=project)
    assert red.returncode == 1, red.stdout + red.stderr
    assert "1 passed, 2 failed" in red.stdout
    assert (
        'unwritten check: "The summary reads as though a maintainer wrote it, not a machine."'
        in red.stdout
    )
    assert 'unwritten check: "It avoids jargon a first-week reader would not know."' in red.stdout

    wrong = run_anpord(
        "eval",
        "evals/release.eval.py",
        "--harness",
        "python:wrong_agent:agent",
        "--trials",
        "1",
        cwd=project,
    )
    assert wrong.returncode == 1
    assert "0 passed, 3 failed" in wrong.stdout
    assert (
        '"names the removed flag": the answer must include all of "--legacy", "removed"'
        in wrong.stdout
    )
    assert '"does not invent a version": the answer must include none of "v9.0.0"' in wrong.stdout

    suite = project / "evals" / "release.eval.py"
    text = suite.read_text(encoding="utf-8")
    for placeholder, check in [
        (
            '_unwritten("The summary reads as though a maintainer wrote it, not a machine."),',
            '_check("mentions the migration", lambda answer: "migration" in answer),',
        ),
        (
            '_unwritten("It avoids jargon a first-week reader would not know."),',
            '_check("short", lambda answer: len(answer) < 200),',
        ),
        (
            '_unwritten("It says why the change was made, not only what changed."),',
            '_contains_any("names what changed", ["removed"]),',
        ),
    ]:
        assert placeholder in text
        text = text.replace(placeholder, check)
    suite.write_text(text, encoding="utf-8")

    green = run_anpord(*run, cwd=project)
    assert green.returncode == 0, green.stdout + green.stderr
    assert "3 passed, 0 failed" in green.stdout


def test_yaml_directory_imports_and_runs_red(project: Path) -> None:
    (project / "release_agent.py").write_text(AGENT)
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "yaml",
        "cases/yaml-cases",
        "--out",
        "evals/browsing.eval.py",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    red = run_anpord(
        "eval",
        "evals/browsing.eval.py",
        "--harness",
        "python:release_agent:agent",
        "--trials",
        "1",
        cwd=project,
    )
    assert red.returncode == 1
    assert "0 passed, 3 failed" in red.stdout
    assert 'unwritten check: "The agent must use the test card, never a real one"' in red.stdout


def test_the_default_harness_is_never_a_pass(project: Path) -> None:
    # The shipped harness names a CLI the machine may not have: then the trials are void.
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "evals-json",
        "cases/both-dialects.json",
        "--out",
        "evals/release.eval.py",
        cwd=project,
    )
    assert done.returncode == 0
    env_path = os.environ.get("PATH", "")
    if any((Path(folder) / "claude").exists() for folder in env_path.split(os.pathsep) if folder):
        pytest.skip("claude is installed here; running it would call a real model")
    run = run_anpord("eval", "evals/release.eval.py", "--trials", "1", cwd=project)
    assert run.returncode == 1
    assert "0 passed" in run.stdout and "3 void" in run.stdout


@pytest.mark.slow
def test_every_wild_import_loads_in_the_runner(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\n\nconfig = define_eval_config()\n"
    )
    expected = 0
    sources = [("evals-json", p) for p in sorted((WILD / "evals-json").glob("*.json"))]
    sources += [("yaml", p) for p in sorted((WILD / "yaml").iterdir())]
    for n, (fmt, path) in enumerate(sources):
        done = run_anpord(
            "eval",
            "import",
            "--format",
            fmt,
            str(path),
            "--out",
            f"evals/wild_{n}.eval.py",
            cwd=tmp_path,
        )
        if done.returncode == 2:  # the refusals listed in test_import_wild.py
            assert done.stderr.startswith("CaseFileNotEvalsJson: "), done.stderr
            continue
        assert done.returncode == 0, done.stderr
        expected += int(done.stderr.splitlines()[-1].split()[1])  # "Read N cases, ..."
    listed = run_anpord("eval", "--list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sum(line.startswith("wild_") for line in listed.stdout.splitlines()) == expected == 311


def test_importing_the_package_stays_light() -> None:
    import subprocess
    import sys

    probe = "import sys, anpord.importers; print(sorted(m for m in ('yaml', 'anpord.runner') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
