"""``judges=[judge(name, rubric, choices=..., threshold=1, model=None)]`` on a declarative case: a
rubric graded on the last reply, as a gate, beside ``validate`` and verifiers."""

from __future__ import annotations

from typing import Any

from judge_support import grade, judge_config, judge_requests, judgments, prompt_of
from project_support import eval_file

from anpord.testing.model_server import rule

IMPORTS = "from anpord import judge, command\n"


def test_declared_judges_are_gates_at_their_thresholds(make_project: Any, model_server: Any) -> None:
    server = model_server([
        rule("decl-partial", grade("partial", "it covers half")),
        rule("decl-scale", grade("good", "clear enough")),
    ])
    project = make_project(
        {
            "evals/strict.eval.py": eval_file("""
                case = define_eval(prompt="Explain DNS", judges=[judge("complete", "decl-partial: covers resolution")])
            """, IMPORTS),
            "evals/lenient.eval.py": eval_file("""
                case = define_eval(prompt="Explain DNS",
                                   judges=[judge("complete", "decl-partial: covers resolution", threshold=0.5)])
            """, IMPORTS),
            "evals/scale.eval.py": eval_file("""
                case = define_eval(
                    prompt="Explain DNS",
                    validate=lambda ctx: (True, "validated"),
                    judges=[judge("clarity", "decl-scale: is it clear?",
                                  choices={"good": 1, "poor": 0}, model="rubric-model")],
                )
            """, IMPORTS),
            "evals/suite.eval.py": eval_file("""
                suite = define_suite(cases=[
                    define_eval(id="one", prompt="First", judges=[judge("a", "decl-partial: one", threshold=0.5)]),
                    define_eval(id="two", prompt="Second", judges=[judge("b", "decl-partial: two")]),
                ])
            """, IMPORTS),
        },
        config=judge_config(server.url),
    )
    run = project.run()
    assert run.verdicts() == {
        "strict": "failed", "lenient": "passed", "scale": "passed",
        "suite/one": "passed", "suite/two": "failed",
    }, run.output
    assert run.result("strict")["reason"] == "complete: the judge chose partial (score 0.5): it covers half"
    (check,) = run.result("lenient")["assertions"]
    assert (check["name"], check["kind"], check["threshold"], check["score"]) == ("complete", "gate", 0.5, 0.5)
    scale = run.assertions("scale")
    assert (scale["clarity"]["kind"], scale["clarity"]["status"]) == ("gate", "passed")
    assert (scale["validate"]["status"], scale["validate"]["message"]) == ("passed", "validated")
    (j,) = judgments(run, "scale").values()
    assert (j.name, j.model, j.choice, j.score) == ("clarity", "rubric-model", "good", 1.0)
    # The judge read the task and the agent's answer.
    (sent,) = judge_requests(server, "decl-scale")
    question = prompt_of(sent)
    assert "[Task]\nExplain DNS" in question and "[Answer]\necho: Explain DNS" in question
    assert sent["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"] == ["good", "poor"]
