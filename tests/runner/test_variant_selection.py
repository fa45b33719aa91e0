"""``--variant`` by name or model, ambiguity, and ``--harness`` keeping the variant's machine."""

from __future__ import annotations

from typing import Any

from project_support import END, eval_file

CONFIG = """\
from anpord import Variant, define_eval_config
config = define_eval_config(
    harness="python:agents.kit:agent",
    timeout=10,
    variants=[
        Variant(model="small", env={"GREETING": "hello from the variant"}),
        Variant(model="large"),
        Variant(model="large", name="large-b"),
    ],
)
"""

CASE = eval_file(f"""
    @define_eval
    async def test(t):
        await t.send("hello")
        {END}
""")


def test_variant_selection_by_model_name_or_label(make_project: Any) -> None:
    project = make_project({"evals/one.eval.py": CASE}, config=CONFIG)
    run = project.run("--variant", "small", "--json")
    assert run.code == 0, run.output
    assert {line["variant"] for line in run.results()} == {"python:agents.kit:agent/small"}
    run = project.run("--variant", "large-b", "--json")
    assert run.code == 0 and {line["variant"] for line in run.results()} == {"large-b"}
    run = project.run("--variant", "python:agents.kit:agent/large", "--json")
    assert run.code == 0 and {line["variant"] for line in run.results()} == {"python:agents.kit:agent/large"}
    # "large" names two variants (by model): refused, listing them.
    run = project.run("--variant", "large")
    assert run.code == 2, run.output
    assert "ambiguous variant large" in run.stderr and "large-b" in run.stderr
    run = project.run("--variant", "medium")
    assert run.code == 2 and "unknown variant medium; the variants are:" in run.stderr


def test_harness_override_keeps_the_variants_environment(make_project: Any) -> None:
    project = make_project({"evals/one.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            turn = await t.send("hi")
            t.check(turn.message, equals("hello from the variant"))
            {END}
    """)}, config=CONFIG)
    run = project.run("--harness", 'command:printf "%s" "$GREETING"', "--json")
    assert run.code == 0, run.output
    (line,) = run.results()
    assert line["variant"] == 'command:printf "%s" "$GREETING"/default'
    assert line["verdict"] == "passed", line


def test_a_variant_is_selected_by_its_declared_label_after_a_flag_changed_it(make_project: Any) -> None:
    project = make_project({"evals/one.eval.py": CASE, "evals/profiles/p/system.md": "Be brief.\n"},
                           config=CONFIG)
    # --profile relabels the variants; the declared label still selects, as does the new one.
    for label in ("python:agents.kit:agent/small", "python:agents.kit:agent/small@p"):
        run = project.run("--variant", label, "--profile", "p", "--json")
        assert run.code == 0, run.output
        assert {line["variant"] for line in run.results()} == {"python:agents.kit:agent/small@p"}
    run = project.run("--variant", "medium", "--profile", "p")
    assert run.code == 2 and "unknown variant medium; the variants are: python:agents.kit:agent/small@p" in run.stderr
