"""A judge that cannot give a declared choice — an answer off the list, a hang, malformed output,
5xx errors, a refusal — makes its check and the trial ``void`` with the reason, never ``passed``;
its judgment says why. Real ``anpord eval`` runs against a scripted judge model."""

from __future__ import annotations

from typing import Any

import pytest
from judge_support import JUDGE_MODEL, grade, judge_config, judgments
from project_support import END, eval_file

from anpord.testing.model_server import (
    ModelServer,
    hang,
    malformed,
    refusal,
    rule,
    server_error,
    tool_call,
)

FAULTS = {
    "off_choice": grade("maybe", "unsure"),
    "bad_json": tool_call("grade", '{"choice": "Y", "reason": '),
    "refusal": refusal("I can't grade this conversation."),
}

EXPECTED = {
    "off_choice": "the judge chose 'maybe', which is not one of: Y, N",
    "bad_json": "the judge's grade call has arguments that are not a JSON object",
    "refusal": "the judge refused: \"I can't grade this conversation.\"",
    "server_error": "HTTP 500: The server had an error (scripted) (after 3 attempts)",
    "not_json": "the response is not JSON",
    "judge_timeout": "no answer within 0.3s (after 3 attempts)",
    "deadline": "not measured before the trial's deadline",
}


def _case(marker: str, settings: str = "") -> str:
    return eval_file(f"""
        @define_eval{settings}
        async def test(t):
            await t.send("Summarise the meeting")
            t.judge.closed_qa("{marker}: the summary names the decision")
            {END}
    """)


@pytest.fixture(scope="module")
def failing_run(make_module_project: Any) -> Any:
    rules = [rule(f"fault-{name}", reply) for name, reply in FAULTS.items()]
    rules += [
        rule("fault-server_error", grade("Y"), fault=server_error(500, times=None)),
        rule("fault-not_json", grade("Y"), fault=malformed()),
        rule("fault-judge_timeout", grade("Y"), fault=hang()),
        rule("fault-deadline", grade("Y"), fault=hang()),
        rule("fault-gated", grade("Y"), fault=hang()),
    ]
    with ModelServer(rules) as server:
        quick = f"(judge=JudgeConfig(model={JUDGE_MODEL!r}, base_url={server.url!r}, timeout=0.3))"
        files = {f"evals/{name}.eval.py": _case(f"fault-{name}") for name in FAULTS}
        files |= {
            "evals/server_error.eval.py": _case("fault-server_error"),
            "evals/not_json.eval.py": _case("fault-not_json"),
            "evals/judge_timeout.eval.py": _case("fault-judge_timeout", quick).replace(
                "from anpord import", "from anpord import JudgeConfig,"),
            "evals/deadline.eval.py": _case("fault-deadline", "(timeout=2)"),
            # A failed gate still fails the trial: void never hides a failure.
            "evals/gated.eval.py": eval_file("""
                @define_eval(timeout=2)
                async def test(t):
                    await t.send("Summarise the meeting")
                    t.judge.closed_qa("fault-gated: the summary names the decision")
                    t.check(t.reply, includes("decision")).label("mentions the decision")
            """),
        }
        run = make_module_project(files, config=judge_config(server.url)).run(timeout=120)
    return run


@pytest.mark.parametrize("case_id", sorted(EXPECTED))
def test_a_judge_that_cannot_answer_is_void_with_the_reason(failing_run: Any, case_id: str) -> None:
    line = failing_run.result(case_id)
    assert line["verdict"] == "void", failing_run.output
    assert EXPECTED[case_id] in line["reason"], line["reason"]
    assert line["reason"].startswith('closed_qa("fault-')
    (check,) = [a for a in line["assertions"] if a["name"].startswith("closed_qa")]
    assert (check["status"], check["score"]) == ("void", 0.0)
    assert EXPECTED[case_id] in check["message"]
    (j,) = judgments(failing_run, case_id).values()
    assert (j.status, j.choice, j.score, j.model) == ("void", None, None, JUDGE_MODEL)
    assert EXPECTED[case_id] in (j.error or "")
    # The rest of the test ran: the judge runs beside it, it does not stop it.
    assert any(a["label"] == "reached the end" and a["status"] == "passed" for a in line["assertions"])


def test_an_answer_that_could_not_be_used_still_counts_its_tokens(failing_run: Any) -> None:
    (j,) = judgments(failing_run, "off_choice").values()
    assert j.usage["output_tokens"] > 0
    assert failing_run.result("off_choice")["usage"]["output_tokens"] == j.usage["output_tokens"]
    (timed_out,) = judgments(failing_run, "judge_timeout").values()
    assert timed_out.usage == {}  # no answer, no usage


def test_a_failed_gate_is_not_hidden_by_a_void_judge(failing_run: Any) -> None:
    line = failing_run.result("gated")
    assert line["verdict"] == "failed"
    assert line["reason"].startswith("mentions the decision")


def test_void_judges_make_the_run_exit_1(failing_run: Any) -> None:
    assert failing_run.code == 1
    assert failing_run.stdout.rstrip().splitlines()[-1] == "0 passed, 1 failed, 7 void"
