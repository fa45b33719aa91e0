"""Mistakes in definitions are one line naming the file (exit 2); single strings are one value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from project_support import END, Project, eval_file

from anpord import Variant, define_eval, define_eval_config, define_suite, files
from anpord.authoring import DefinitionError

CASE = eval_file(f"""
    @define_eval
    async def test(t):
        {END}
""")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("max_sandboxes=-1", "ValueError: max_sandboxes must be a positive integer, got -1"),
        ("max_sandboxes=0", "ValueError: max_sandboxes must be a positive integer, got 0"),
        ("max_sandboxes='2'", "ValueError: max_sandboxes must be a positive integer, got '2'"),
        ("trials=True", "ValueError: trials must be a positive integer, got True"),
        ("sandbox=None", "TypeError: sandbox must be a sandbox name such as 'local', got None"),
        (
            "variants=[Variant(secrets=5)]",
            "TypeError: Variant secrets= must be a list of strings, got int",
        ),
        (
            "variants=[Variant(mounts=['/opt', 7])]",
            "TypeError: Variant mounts= must be a list of non-empty strings, got 7",
        ),
    ],
)
def test_config_mistakes_are_one_line_naming_the_file(
    make_project: Any, config: str, message: str
) -> None:
    project: Project = make_project(
        {"evals/case.eval.py": CASE},
        config=(
            "from anpord import Variant, define_eval_config\n"
            f"config = define_eval_config(harness='python:agents.kit:agent', {config})\n"
        ),
    )
    run = project.run()
    assert (run.code, run.stdout) == (2, ""), run.output
    assert run.stderr == f"anpord eval: evals/evals.config.py:2: {message}\n"
    assert run.run_dir is None  # refused before a run folder (and a run.json stuck at running)


@pytest.mark.parametrize(
    ("suite", "message"),
    [
        ("timeout=-5", "timeout must be a positive number of seconds, got -5"),
        ("source='x'", "source must be files(...), directory(...) or repo(...), got str"),
        ("tags=[1]", "define_suite tags must be non-empty strings, got 1"),
    ],
)
def test_suite_mistakes_are_one_line_naming_the_file(
    make_project: Any, suite: str, message: str
) -> None:
    body = (
        "suite = define_suite(cases=[define_eval(prompt='hi', validate=lambda c: True)], "
        f"{suite})\n"
    )
    project: Project = make_project({"evals/s.eval.py": eval_file(body)})
    run = project.run()
    assert (run.code, run.stderr) == (2, f"anpord eval: evals/s.eval.py: {message}\n"), run.output


def test_a_single_string_is_one_tag_one_secret_one_mount() -> None:
    case = define_eval(prompt="hi", validate=lambda c: True)
    assert define_suite([case], tags="smoke").tags == ("smoke",)
    assert define_eval(prompt="hi", tags="smoke").tags == ("smoke",)
    v = Variant(secrets="API_KEY", mounts=Path("/opt/a"))
    assert (v.secrets, v.mounts) == (("API_KEY",), ("/opt/a",))
    assert Variant(secrets=["A", "B"], mounts=("/x",)).secrets == ("A", "B")
    assert define_eval_config(max_sandboxes=2, variants=[v]).max_sandboxes == 2
    with pytest.raises(DefinitionError, match="cases must be a list"):
        define_suite(case)
    with pytest.raises(DefinitionError, match="source must be"):
        define_suite([case], source=files)  # the function, not files({...})


def test_a_suite_tag_given_as_a_string_selects_its_cases(make_project: Any) -> None:
    body = (
        "suite = define_suite(cases=[define_eval(prompt='hi', validate=lambda c: True)], "
        "source=files({}), tags='smoke')\n"
    )
    project: Project = make_project({"evals/s.eval.py": eval_file(body)})
    assert project.run("--list", "--tag", "smoke").stdout == "s/0000  [smoke]\n1 case\n"
    assert project.run("--list", "--tag", "s").stdout == "0 cases\n"  # not one tag per letter
