"""Every judgment is in the trial's record (``anpord.results.read_run``): model, choice, score,
threshold, reason, usage; its tokens and cost count in the trial's usage, and the trial's events
hold a ``usage`` and a ``judge.completed`` event for it."""

from __future__ import annotations

from typing import Any

import pytest
from judge_support import events_of, grade, judge_config, judgments
from project_support import END, eval_file

from anpord.testing.model_server import rule

PRICED = 'import anpord.models\nanpord.models.register_price("judge-model", input=1.0, output=2.0)\n'


@pytest.fixture(scope="module")
def recorded(make_module_project: Any) -> Any:
    from anpord.testing.model_server import ModelServer

    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    with ModelServer([
        rule("rec-tone", grade("Y", "courteous throughout", usage=usage)),
        rule("rec-facts", grade("A", "only part of it", usage=usage)),
    ]) as server:
        project = make_module_project(
            {"evals/recorded.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    await t.send("usage")  # the agent reports 10 + 5 tokens, $0.01
                    t.judge.closed_qa("rec-tone: courteous").label("tone")
                    late = t.judge.factuality("rec-facts: used, then answered", on=t.turns[0])
                    while late.status == "void":  # until the judge has answered
                        await asyncio.sleep(0.01)
                    late.at_least(0.4).label("facts")
                    {END}
            """)},
            config=judge_config(server.url) + PRICED,
        )
        return project.run()


def test_judgments_read_back_with_every_field(recorded: Any) -> None:
    assert recorded.result("recorded")["verdict"] == "passed", recorded.output
    found = judgments(recorded, "recorded")
    assert sorted(found) == ["facts", "tone"]
    tone = found["tone"]
    assert (tone.model, tone.status, tone.choice, tone.score, tone.threshold, tone.reason, tone.error,
            tone.cached) == ("judge-model", "passed", "Y", 1.0, 1.0, "courteous throughout", None, False)
    assert tone.usage == {"input_tokens": 1000, "output_tokens": 100, "cost": pytest.approx(0.0012)}


def test_a_threshold_and_label_set_after_the_answer_reach_the_judgment(recorded: Any) -> None:
    facts = judgments(recorded, "recorded")["facts"]
    # 0.4 (A) passes at_least(0.4) although it had settled "failed" against the default threshold 1.
    assert (facts.choice, facts.score, facts.threshold, facts.status) == ("A", 0.4, 0.4, "passed")
    check = recorded.assertions("recorded")["facts"]
    assert (check["kind"], check["threshold"], check["status"]) == ("soft", 0.4, "passed")
    assert check["actual"] == "used"  # on=t.turns[0]: the turn's message


def test_judge_usage_counts_in_the_trial_and_its_events(recorded: Any) -> None:
    usage = recorded.result("recorded")["usage"]
    assert usage["input_tokens"] == 10 + 2 * 1000 and usage["output_tokens"] == 5 + 2 * 100
    assert usage["cost"] == pytest.approx(0.01 + 2 * 0.0012)
    judged = [e for e in events_of(recorded, "recorded", "usage") if e.get("source") == "judge"]
    # An event is what was known when the judge answered: "facts" was labelled only later.
    assert sorted(e["name"] for e in judged) == ['factuality("rec-facts: used, then answered")', "tone"]
    assert {(e["model"], e["input_tokens"], e["cached"]) for e in judged} == {("judge-model", 1000, False)}
    completed = {e["name"]: e for e in events_of(recorded, "recorded", "judge.completed")}
    assert len(completed) == 2
    assert completed["tone"]["choice"] == "Y" and completed["tone"]["reason"] == "courteous throughout"
    assert recorded.run_json()["usage"]["input_tokens"] == 2010  # and in the run's totals
