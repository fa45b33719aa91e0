"""Each judge kind's choices map to the scores autoevals defines, and the handle decides how the
score counts: soft by default (threshold 1, so a lesser grade is ``scored``), ``.gate()`` fails the
trial, ``.at_least()`` lowers the bar. Real ``anpord eval`` runs against a scripted judge model."""

from __future__ import annotations

from typing import Any

import pytest
from judge_support import grade, judge_config, judge_requests, judgments
from project_support import END, eval_file

from anpord.testing.model_server import rule

FACTUALITY = {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}


@pytest.fixture(scope="module")
def scored_run(make_module_project: Any) -> Any:
    from anpord.testing.model_server import ModelServer

    rules = [
        rule("crit-yes", grade("Y", "it meets the criterion")),
        rule("crit-no", grade("N", "it does not")),
        *(rule(f"reference-{letter}", grade(letter, f"case {letter}")) for letter in FACTUALITY),
        rule("rubric-partial", grade("partial", "half of it")),
        rule("rubric-custom", grade("ok", "fine")),
    ]
    server = ModelServer(rules).start()
    try:
        project = make_module_project(
            {
                "evals/closed_qa.eval.py": eval_file(f"""
                    @define_eval(each=["yes", "no"], id=lambda row: row)
                    async def test(t, row):
                        await t.send("Write a greeting")
                        t.judge.closed_qa(f"crit-{{row}}: the reply greets the user")
                        {END}
                """),
                "evals/factuality.eval.py": eval_file(f"""
                    @define_eval(each=list("ABCDE"), id=lambda row: row)
                    async def test(t, row):
                        await t.send("What is the capital of France?")
                        t.judge.factuality(f"reference-{{row}}: Paris")
                        {END}
                """),
                "evals/rubric.eval.py": eval_file(f"""
                    @define_eval
                    async def test(t):
                        await t.send("Explain recursion")
                        t.judge.rubric("rubric-partial: a correct, complete explanation")
                        {END}
                """),
                "evals/custom.eval.py": eval_file(f"""
                    @define_eval
                    async def test(t):
                        await t.send("Explain recursion")
                        t.judge.rubric("rubric-custom: clarity",
                                       choices={{"great": 1, "ok": 0.7, "bad": 0}}).at_least(0.6)
                        {END}
                """),
                "evals/gated.eval.py": eval_file(f"""
                    @define_eval
                    async def test(t):
                        await t.send("Write a greeting")
                        t.judge.closed_qa("crit-no: the reply is in French").gate().label("in French")
                        {END}
                """),
                "evals/gate_half.eval.py": eval_file(f"""
                    @define_eval
                    async def test(t):
                        await t.send("Explain recursion")
                        t.judge.rubric("rubric-partial: half marks are enough").gate(0.5)
                        {END}
                """),
            },
            config=judge_config(server.url),
        )
        run = project.run("--max-concurrency", "4")
        run.server = server  # type: ignore[attr-defined]
    finally:
        server.stop()
    return run


def test_closed_qa_scores_y_as_1_and_n_as_0(scored_run: Any) -> None:
    yes, no = scored_run.result("closed_qa/yes"), scored_run.result("closed_qa/no")
    assert (yes["verdict"], yes["score"]) == ("passed", 1.0), scored_run.output
    # Soft by default, with threshold 1: a judge saying N scores the trial, it does not fail it.
    assert (no["verdict"], no["score"]) == ("scored", 0.0)
    assert no["reason"].startswith('closed_qa("crit-no: the reply greets the user") scored 0.00 < 1')
    (j,) = judgments(scored_run, "closed_qa/no").values()
    assert (j.choice, j.score, j.threshold, j.status, j.reason) == ("N", 0.0, 1.0, "failed", "it does not")
    (check,) = [a for a in no["assertions"] if a["name"].startswith("closed_qa")]
    assert (check["kind"], check["status"], check["actual"]) == ("soft", "failed", "echo: Write a greeting")


@pytest.mark.parametrize(("letter", "score"), FACTUALITY.items())
def test_factuality_scores_each_choice_as_autoevals_does(scored_run: Any, letter: str, score: float) -> None:
    line = scored_run.result(f"factuality/{letter.lower()}")  # ids are slugged
    assert line["score"] == score
    assert line["verdict"] == ("passed" if score == 1 else "scored"), line["reason"]
    (j,) = judgments(scored_run, f"factuality/{letter.lower()}").values()
    assert (j.choice, j.score, j.reason) == (letter, score, f"case {letter}")


def test_rubric_defaults_to_correct_partial_incorrect(scored_run: Any) -> None:
    line = scored_run.result("rubric")
    assert (line["verdict"], line["score"]) == ("scored", 0.5)
    (sent,) = judge_requests(scored_run.server, "rubric-partial: a correct")
    enum = sent["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]
    assert enum == ["correct", "partial", "incorrect"]


def test_rubric_takes_its_own_choices_and_at_least_lowers_the_bar(scored_run: Any) -> None:
    line = scored_run.result("custom")
    assert (line["verdict"], line["score"]) == ("passed", 0.7), line["reason"]
    (j,) = judgments(scored_run, "custom").values()
    assert (j.choice, j.threshold, j.status) == ("ok", 0.6, "passed")
    (sent,) = judge_requests(scored_run.server, "rubric-custom")
    assert sent["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"] == ["great", "ok", "bad"]


def test_a_gated_judge_fails_the_trial_and_carries_its_label(scored_run: Any) -> None:
    line = scored_run.result("gated")
    assert line["verdict"] == "failed"
    assert line["reason"] == "in French: the judge chose N (score 0): it does not"
    (j,) = judgments(scored_run, "gated").values()
    assert (j.name, j.status, j.threshold) == ("in French", "failed", 1.0)


def test_a_gate_with_a_lower_threshold_passes_on_a_partial_grade(scored_run: Any) -> None:
    line = scored_run.result("gate_half")
    assert (line["verdict"], line["score"]) == ("passed", None), line["reason"]
    (check,) = [a for a in line["assertions"] if a["name"].startswith("rubric")]
    assert (check["kind"], check["score"], check["threshold"], check["status"]) == ("gate", 0.5, 0.5, "passed")


def test_every_kind_asks_with_its_own_choices_at_temperature_0_and_a_fixed_seed(scored_run: Any) -> None:
    sent = judge_requests(scored_run.server)
    assert len(sent) == 2 + 5 + 1 + 1 + 1 + 1
    assert {(r["temperature"], r["seed"]) for r in sent} == {(0, sent[0]["seed"])}
    enums = {
        tuple(r["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]) for r in sent
    }
    assert enums == {("Y", "N"), ("A", "B", "C", "D", "E"), ("correct", "partial", "incorrect"),
                     ("great", "ok", "bad")}
    for r in sent:
        assert r["tool_choice"] == {"type": "function", "function": {"name": "grade"}}
        assert r["model"] == "judge-model"
