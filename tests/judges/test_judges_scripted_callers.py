"""The scripted model server playing both the agent and its judge: a judge's question quotes the
conversation, so an agent's rule matches it too unless rules say whose requests they answer."""

from __future__ import annotations

from typing import Any

from judge_support import grade
from project_support import eval_file

from anpord.testing.model_server import rule, text


def project_for(make_project: Any, url: str) -> Any:
    config = (
        "from anpord import JudgeConfig, Variant, define_eval_config\n"
        "config = define_eval_config(\n"
        f"    variants=[Variant(name='m', harness='openai:scripted', options={{'base_url': {url!r}}})],\n"
        f"    judge=JudgeConfig(model='judge', base_url={url!r}), timeout=20)\n"
    )
    return make_project({"evals/weather.eval.py": eval_file("""
        from anpord import judge

        case = define_eval(prompt="What is the weather in Paris?",
                           judges=[judge("sunny", "Does the reply say it is sunny?")])
    """)}, config=config)


def test_rules_for_the_agent_and_the_judge_answer_each_their_own(make_project: Any, model_server: Any) -> None:
    server = model_server([
        rule("weather", text("Sunny in Paris."), caller="agent"),
        rule(None, grade("correct", "it says sunny"), caller="judge"),
    ])
    run = project_for(make_project, server.url).run()
    assert run.code == 0, run.output
    assert run.result("weather")["verdict"] == "passed"
    assert [r["_caller"] for r in server.requests] == ["agent", "judge"]


def test_without_callers_the_agents_rule_answers_the_judge(make_project: Any, model_server: Any) -> None:
    # What the caller field is for: the judge's question quotes "weather", so the agent's rule
    # answers it with text that is no grade, and the judge cannot measure.
    server = model_server([
        rule("weather", text("Sunny in Paris.")),
        rule(None, grade("correct", "it says sunny")),
    ])
    run = project_for(make_project, server.url).run()
    assert run.result("weather")["verdict"] == "void", run.output
