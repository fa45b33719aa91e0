"""Which model judges: the call's ``model=``, then the case's ``judge=``, then the config's
``JudgeConfig``; none at all is an error at the call that says how to configure one."""

from __future__ import annotations

from typing import Any

from judge_support import grade, judge_config, judge_requests, judgments
from project_support import END, eval_file

from anpord.testing.model_server import rule


def _case(marker: str, settings: str = "", call: str = "") -> str:
    return eval_file(f"""
        @define_eval{settings}
        async def test(t):
            await t.send("Hello")
            t.judge.closed_qa("{marker}: polite"{call})
            {END}
    """, imports="from anpord import JudgeConfig\n")


def test_the_call_then_the_case_then_the_config_chooses_the_judge_model(
    make_project: Any, model_server: Any
) -> None:
    server = model_server([rule(None, grade("Y"))])
    other = model_server([rule(None, grade("Y"))])
    project = make_project(
        {
            "evals/from_config.eval.py": _case("m-config"),
            "evals/from_case.eval.py": _case("m-case", "(judge='case-model')"),
            "evals/from_call.eval.py": _case("m-call", "(judge='case-model')", ", model='call-model'"),
            # A whole JudgeConfig on the case: another endpoint, another key variable.
            "evals/other_endpoint.eval.py": _case(
                "m-endpoint", f"(judge=JudgeConfig(model='far-model', base_url={other.url!r}, "
                              "api_key_env='FAR_JUDGE_KEY'))"),
        },
        config=judge_config(server.url, model="config-model"),
    )
    run = project.run(env={"FAR_JUDGE_KEY": "sk-far-judge-key-0123456789"})
    assert set(run.verdicts().values()) == {"passed"}, run.output
    models = {
        marker: [r["model"] for r in judge_requests(server, marker)]
        for marker in ("m-config", "m-case", "m-call", "m-endpoint")
    }
    assert models == {"m-config": ["config-model"], "m-case": ["case-model"], "m-call": ["call-model"],
                      "m-endpoint": []}
    (far,) = judge_requests(other, "m-endpoint")
    assert far["model"] == "far-model"
    assert far["_headers"] == {"Authorization": "Bearer sk-far-judge-key-0123456789"}
    for case_id, model in (("from_config", "config-model"), ("from_call", "call-model")):
        (j,) = judgments(run, case_id).values()
        assert j.model == model


def test_no_judge_model_is_an_error_at_the_call_naming_how_to_configure_one(make_project: Any) -> None:
    run = make_project({"evals/unset.eval.py": _case("m-unset")}, config=judge_config(None)).run()
    line = run.result("unset")
    assert line["verdict"] == "failed"
    (check,) = [a for a in line["assertions"] if a["name"].startswith("closed_qa")]
    assert check["status"] == "error"
    assert check["message"] == (
        "no judge model is configured: pass model= to the call, judge='model-id' to define_eval, "
        "or define_eval_config(judge=JudgeConfig(model=..., base_url=...)) in evals.config.py"
    )
    assert line["reason"] == f'closed_qa("m-unset: polite") raised: {check["message"]}'
    (j,) = judgments(run, "unset").values()
    assert (j.status, j.model) == ("void", None)
