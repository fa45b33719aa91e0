"""``user=script([...])``: after the prompt, each completed agent turn is followed by the next fixed
reply, in order, in one session; ``max_turns`` stops the conversation early; then validate and
judges grade the whole conversation. Real ``anpord eval`` runs of the core tests' echo agent."""

from __future__ import annotations

from typing import Any

from judge_support import events_of, grade, judge_config, judge_requests, prompt_of
from project_support import eval_file

from anpord.testing.model_server import rule

IMPORTS = "from anpord import judge, script\n"


def _said(run: Any, case_id: str, role: str) -> list[str]:
    return [e["text"] for e in events_of(run, case_id, "message.completed") if e["role"] == role]


def test_a_script_replies_in_order_then_validate_and_judges_see_it_all(
    make_project: Any, model_server: Any
) -> None:
    server = model_server([rule("whole-talk", grade("correct", "all three answered"))])
    project = make_project(
        {"evals/talk.eval.py": eval_file("""
            async def validate(ctx):
                turns = ctx.turns()
                same_session = len({turn.session_id for turn in turns}) == 1
                return len(turns) == 3 and same_session, await ctx.transcript()

            case = define_eval(
                prompt="first", user=script(["second", "history"]), validate=validate,
                judges=[judge("whole", "whole-talk: answers every message")],
            )
        """, IMPORTS)},
        config=judge_config(server.url),
    )
    run = project.run()
    assert run.result("talk")["verdict"] == "passed", run.output
    assert _said(run, "talk", "user") == ["first", "second", "history"]
    assert _said(run, "talk", "assistant")[:2] == ["echo: first", "echo: second"]
    # The agent's third turn saw the whole session ("history" answers with it).
    assert '"content": "echo: second"' in _said(run, "talk", "assistant")[2]
    # The judge graded the last reply, with the conversation before it.
    (sent,) = judge_requests(server, "whole-talk")
    question = prompt_of(sent)
    assert "[Task]\nfirst" in question
    assert "[Conversation]\nUser: first\n\nAssistant: echo: first\n\nUser: second" in question


def test_max_turns_stops_a_script_early(make_project: Any) -> None:
    project = make_project({"evals/short.eval.py": eval_file("""
        case = define_eval(prompt="alpha", user=script(["beta", "gamma", "delta"]), max_turns=2,
                           validate=lambda ctx: len(ctx.turns()) == 2)
    """, IMPORTS)})
    run = project.run()
    assert run.result("short")["verdict"] == "passed", run.output
    assert _said(run, "short", "user") == ["alpha", "beta"]
    assert "the conversation stopped at max_turns=2" in run.trial("short")["logs"]


def test_a_failed_agent_turn_ends_the_conversation(make_project: Any) -> None:
    project = make_project({"evals/broken.eval.py": eval_file("""
        case = define_eval(prompt="hello", user=script(["raise", "never sent"]), validate=lambda ctx: True)
    """, IMPORTS)})
    run = project.run()
    line = run.result("broken")
    assert line["verdict"] == "failed", run.output
    assert "agent exploded" in line["reason"]
    assert _said(run, "broken", "user") == ["hello", "raise"]
