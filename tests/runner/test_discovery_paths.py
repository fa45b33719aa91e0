"""Pointing ``anpord eval`` at a project folder, and hints for common definition slips."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, assert_passed, eval_file


def test_a_project_folder_argument_runs_its_evals(make_project: Any) -> None:
    project = make_project({"evals/smoke.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("hello")
            {END}
    """)})
    # From the parent folder, naming the project folder itself.
    run = project.run(project.folder.name, cwd=project.folder.parent)
    assert run.code == 0, run.output
    assert_passed(run, "smoke")


def test_define_eval_keyword_slips_get_a_hint(make_project: Any) -> None:
    project = make_project({
        "evals/variants.eval.py": eval_file("""
            from anpord import Variant

            @define_eval(variants=[Variant(model="x")])
            async def test(t):
                pass
        """),
        "evals/tag.eval.py": eval_file("""
            @define_eval(tag="smoke")
            async def test(t):
                pass
        """),
    })
    run = project.run("variants")
    assert run.code == 2
    assert run.stderr.count("\n") == 1, run.stderr
    assert "variants belong to define_suite(...) or define_eval_config(...)" in run.stderr
    run = project.run("tag")
    assert run.code == 2 and "did you mean tags=?" in run.stderr, run.stderr


def test_json_gets_an_error_document_when_nothing_can_run(make_project: Any) -> None:
    project = make_project({"evals/broken.eval.py": "this is not python\n"})
    for args in (("--json",), ("--list", "--json")):
        run = project.run(*args)
        assert run.code == 2
        document = json.loads(run.stdout)
        assert document["exit_code"] == 2 and "broken.eval.py" in document["error"], document
        assert run.stderr.count("\n") == 1, run.stderr


def test_nothing_to_run_says_why(make_project: Any) -> None:
    empty = make_project({})
    run = empty.run()
    assert run.code == 2
    assert "no *.eval.py file under evals (write one, or run `anpord init`)" in run.stderr, run.stderr
    tagged = make_project({"evals/one.eval.py": eval_file("""
        @define_eval(tags=["smoke"])
        async def test(t):
            pass
    """)})
    run = tagged.run("--tag", "slow")
    assert run.code == 2 and "no selected case matches --tag/--exclude-tag" in run.stderr, run.stderr
