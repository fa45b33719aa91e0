"""Run-level harness setup and teardown: called once per run around every trial, and a harness
whose setup fails makes each of its trials void with the reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from project_support import END, Project, assert_passed, eval_file

CASES = {
    f"evals/case{i}.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("hi")
            assert t.reply == "ready=True"
            {END}
    """)
    for i in (1, 2)
}


def test_setup_runs_once_before_the_first_trial_and_teardown_once_after_the_last(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    project = make_project(CASES)
    log = tmp_path / "hooks.log"
    run = project.run("--harness", "python:agents.hooked:hooked", "--trials", "3",
                      env={"HOOKS_LOG": str(log)})
    assert run.code == 0, run.output
    for case in ("case1", "case2"):
        for trial in range(3):
            assert_passed(run, case, trial)
    assert log.read_text().splitlines() == ["setup", "teardown"]


def test_a_failing_setup_voids_every_trial_of_that_harness_only(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    log = tmp_path / "hooks.log"
    project = make_project(CASES, config="""
from anpord import Variant, define_eval_config
config = define_eval_config(variants=[
    Variant(name="broken", harness="python:agents.hooked:broken_setup"),
    Variant(name="fine", harness="python:agents.hooked:hooked"),
])
""")
    run = project.run(env={"HOOKS_LOG": str(log)})
    assert run.code == 1
    by_variant: dict[str, set[tuple[str, str]]] = {}
    for line in run.results():
        by_variant.setdefault(line["variant"], set()).add((line["verdict"], line["reason"]))
    assert by_variant["broken"] == {
        ("void", "harness python:agents.hooked:broken_setup could not be set up: RuntimeError: no database")
    }
    assert {verdict for verdict, _ in by_variant["fine"]} == {"passed"}
    # Only the harness that was set up is torn down.
    assert log.read_text().splitlines() == ["setup", "teardown"]
