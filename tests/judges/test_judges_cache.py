"""``--cache`` reuses judge calls, keyed on the whole request and the trial index: a second run
asks the judge model nothing it asked before, and trial 1 never gets trial 0's answer."""

from __future__ import annotations

from typing import Any

from judge_support import events_of, grade, judge_config, judge_requests, judgments
from project_support import END, eval_file

from anpord.testing.model_server import rule


def test_a_second_run_reuses_each_trials_own_judgment(make_project: Any, model_server: Any) -> None:
    server = model_server([rule("cached", grade("Y", "reused", usage={"prompt_tokens": 300, "completion_tokens": 20}))])
    project = make_project(
        {"evals/cached.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("Name a colour")
                t.judge.closed_qa("cached: names a colour")
                {END}
        """)},
        config=judge_config(server.url),
    )
    first = project.run("--cache")
    assert first.result("cached")["verdict"] == "passed", first.output
    assert len(judge_requests(server)) == 1
    assert judgments(first, "cached")["closed_qa(\"cached: names a colour\")"].cached is False

    # Trial 0 is answered from the cache; trial 1 sends the very same request, yet is asked anew.
    second = project.run("--cache", "--trials", "2")
    assert [line["verdict"] for line in second.by_case()["cached"]] == ["passed", "passed"], second.output
    sent = judge_requests(server)
    assert len(sent) == 2
    assert {k: v for k, v in sent[0].items() if not k.startswith("_")} == {
        k: v for k, v in sent[1].items() if not k.startswith("_")
    }
    (replayed,) = judgments(second, "cached", trial=0).values()
    (fresh,) = judgments(second, "cached", trial=1).values()
    assert (replayed.cached, replayed.choice, replayed.reason) == (True, "Y", "reused")
    assert replayed.usage["input_tokens"] == 300  # a replayed call keeps the usage it had
    assert fresh.cached is False
    (usage,) = [e for e in events_of(second, "cached", "usage", trial=0) if e.get("source") == "judge"]
    assert usage["cached"] is True

    # Without --cache the judge is asked again.
    project.run()
    assert len(judge_requests(server)) == 3
