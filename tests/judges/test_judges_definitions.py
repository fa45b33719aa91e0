"""Mistakes in ``judge=``, ``judges=`` and ``judge(...)`` are one-line errors naming the file when
it loads (exit 2), before anything runs."""

from __future__ import annotations

from typing import Any

import pytest
from judge_support import judge_config
from project_support import eval_file

from anpord import JudgeConfig, define_eval, judge
from anpord.authoring import DefinitionError


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("define_eval(prompt='hi', judges=['polite'])", "judges[0] must be judge(name, rubric, ...), got str"),
        ("define_eval(prompt='hi', judges='polite')", "judges= must be a list of judge(...) values, got str"),
        ("define_eval(prompt='hi', judge=5)", "judge= must be a model id string or JudgeConfig(...), got 5"),
        ("define_eval(prompt='hi', judges=[judge('a', 'x'), judge('a', 'y')])", "judges= has two judges named 'a'"),
        ("define_eval(prompt='hi', judges=[judge('tone', 'x', threshold=2)])",
         "judge 'tone' threshold must be a number from 0 to 1, got 2"),
        ("define_eval(prompt='hi', judges=[judge('tone', 'x', choices={'yes': 0.5, 'no': 0})])",
         "judge 'tone' threshold 1 is above every choice's score: it could never pass"),
        ("define_eval(prompt='hi', judges=[judge('tone', 'x', choices={'only': 1})])",
         "judge 'tone' needs at least two choices, got ['only']"),
        ("define_eval(prompt='hi', judges=[judge('tone', '')])", "judge 'tone' rubric must be a non-empty string, got ''"),
    ],
)
def test_a_bad_judge_definition_is_one_line_naming_the_file(
    make_project: Any, definition: str, message: str
) -> None:
    project = make_project(
        {"evals/bad.eval.py": eval_file(f"case = {definition}\n", "from anpord import judge\n")},
        config=judge_config("http://127.0.0.1:9/v1"),
    )
    run = project.run()
    assert (run.code, run.stdout) == (2, ""), run.output
    assert run.stderr == f"anpord eval: evals/bad.eval.py: {message}\n"


def test_judges_belong_to_declarative_cases() -> None:
    async def body(t: Any) -> None: ...

    with pytest.raises(DefinitionError, match=r"^judges= belongs to declarative cases \(prompt=\), not to "
                                              r"test functions \(in a test function, use t.judge\)$"):
        define_eval(body, judges=[judge("tone", "polite")])


def test_judge_takes_one_spec_a_model_id_or_a_config() -> None:
    one = define_eval(prompt="hi", judges=judge("tone", "polite"), judge="small-judge")
    assert [j.name for j in one.judges] == ["tone"] and one.judge == "small-judge"
    spec = judge("tone", "polite", model=JudgeConfig(model="m", base_url="http://127.0.0.1:1/v1"), threshold=0.5)
    assert (spec.threshold, dict(spec.choices)) == (0.5, {"correct": 1.0, "partial": 0.5, "incorrect": 0.0})
    with pytest.raises(DefinitionError, match="model must be a model id string or JudgeConfig"):
        judge("tone", "polite", model=3)  # type: ignore[arg-type]


def test_a_bad_judge_call_fails_its_trial_with_the_reason(make_project: Any) -> None:
    project = make_project(
        {
            "evals/choices.eval.py": eval_file("""
                @define_eval
                async def test(t):
                    await t.send("hi")
                    t.judge.rubric("clear", choices={"clear": 2, "muddled": 0})
            """),
            "evals/early.eval.py": eval_file("""
                @define_eval
                async def test(t):
                    t.judge.closed_qa("polite")
            """),
        },
        config=judge_config("http://127.0.0.1:9/v1"),
    )
    run = project.run()
    assert run.verdicts() == {"choices": "failed", "early": "failed"}, run.output
    assert run.result("choices")["reason"] == "ValueError: rubric choice 'clear' must score a number from 0 to 1, got 2"
    assert run.result("early")["reason"] == (
        'ValueError: closed_qa("polite"): there is no reply to judge yet: send a turn first, or pass on='
    )
