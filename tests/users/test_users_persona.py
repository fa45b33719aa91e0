"""``user=persona(goal=..., brief=..., model=...)``: a model plays the user. The scripted server
checks what the persona model is told (its goal, its private brief, to answer only what it is
asked, how to end) and sees the conversation from the user's side; the persona ends the
conversation with the done sentinel, or ``max_turns`` does; a persona model that fails voids the
trial. Real ``anpord eval`` runs; the agent is a refund desk that asks one question at a time."""

from __future__ import annotations

from typing import Any

from judge_support import JUDGE_MODEL, events_of, judge_config, prompt_of
from project_support import eval_file

from anpord.testing.model_server import rule, server_error, text
from anpord.users import DONE

DESK = '''
async def agent(turn):
    said = turn.input
    if "@" in said:
        return "Refund issued for order 4417. Anything else?"
    if any(c.isdigit() for c in said):
        return "Thanks. What email is on the order?"
    return "I can help with a refund. What is your order number?"
'''

BRIEF = "Order number 4417. Email ann@example.com. Bought a blue kettle that leaks."
GOAL = "Get a refund for the leaking kettle."
PERSONA_RULES = [
    rule("Refund issued", text(DONE)),
    rule("What email", text("ann@example.com")),
    rule("order number", text("It is 4417.")),
]


def _case(user: str, **extra: str) -> str:
    settings = "".join(f", {k}={v}" for k, v in extra.items())
    return eval_file(f"""
        case = define_eval(prompt="My kettle leaks, I want my money back.", user={user},
                           validate=lambda ctx: len(ctx.turns()) > 0{settings})
    """, "from anpord import persona, script\n")


def _said(run: Any, case_id: str, role: str) -> list[str]:
    return [e["text"] for e in events_of(run, case_id, "message.completed") if e["role"] == role]


def _persona_requests(server: Any) -> list[dict[str, Any]]:
    return [r for r in server.requests if "You are playing a person" in r["messages"][0]["content"]]


def test_a_persona_answers_what_it_is_asked_and_ends_when_done(make_project: Any, model_server: Any) -> None:
    server = model_server(PERSONA_RULES)
    project = make_project(
        {
            "agents/desk.py": DESK,
            "evals/refund.eval.py": _case(f"persona(goal={GOAL!r}, brief={BRIEF!r}, model='persona-model')"),
        },
        config=judge_config(server.url, harness="python:agents.desk:agent"),
    )
    run = project.run()
    line = run.result("refund")
    assert line["verdict"] == "passed", run.output
    assert _said(run, "refund", "user") == [
        "My kettle leaks, I want my money back.", "It is 4417.", "ann@example.com",
    ]
    assert "the simulated user is done" in run.trial("refund")["logs"]

    sent = _persona_requests(server)
    assert len(sent) == 3  # after each agent turn; the third answer was the done sentinel
    assert {r["model"] for r in sent} == {"persona-model"}  # model= wins over the judge config
    system = sent[0]["messages"][0]["content"]
    for told in (GOAL, BRIEF, "My kettle leaks, I want my money back.", DONE,
                 "Answer only what the assistant asks", "Never volunteer anything else"):
        assert told in system, told
    # The persona sees the conversation from the user's side: the agent speaks as "user".
    assert sent[2]["messages"][1:] == [
        {"role": "user", "content": "I can help with a refund. What is your order number?"},
        {"role": "assistant", "content": "It is 4417."},
        {"role": "user", "content": "Thanks. What email is on the order?"},
        {"role": "assistant", "content": "ann@example.com"},
        {"role": "user", "content": "Refund issued for order 4417. Anything else?"},
    ]
    assert prompt_of(sent[0]) == "I can help with a refund. What is your order number?"
    # The persona's calls count in the trial's usage.
    persona_usage = [e for e in events_of(run, "refund", "usage") if e.get("source") == "user"]
    assert len(persona_usage) == 3
    assert line["usage"]["input_tokens"] == sum(e["input_tokens"] for e in persona_usage)


def test_max_turns_ends_a_persona_that_is_never_done(make_project: Any, model_server: Any) -> None:
    server = model_server([rule(None, text("Sorry, could you say that again?"))])
    project = make_project(
        {"evals/chatty.eval.py": _case(f"persona(goal={GOAL!r}, brief={BRIEF!r})", max_turns="3")},
        config=judge_config(server.url),
    )
    run = project.run()
    assert run.result("chatty")["verdict"] == "passed", run.output
    assert len(_said(run, "chatty", "user")) == 3
    sent = _persona_requests(server)
    assert len(sent) == 2 and {r["model"] for r in sent} == {JUDGE_MODEL}  # the judge config's model
    assert "the conversation stopped at max_turns=3" in run.trial("chatty")["logs"]


def test_a_persona_model_that_fails_voids_the_trial(make_project: Any, model_server: Any) -> None:
    server = model_server([rule(None, text("unused"), fault=server_error(503, times=None))])
    project = make_project(
        {"evals/down.eval.py": _case(f"persona(goal={GOAL!r}, brief={BRIEF!r})")},
        config=judge_config(server.url),
    )
    run = project.run()
    line = run.result("down")
    assert line["verdict"] == "void", run.output
    assert line["reason"].startswith("the simulated user could not answer: judge-model at 127.0.0.1:")
    assert "HTTP 503" in line["reason"]
    # The checks did not run on a conversation cut short.
    assert line["assertions"] == []


def test_a_persona_with_no_model_fails_naming_how_to_configure_one(make_project: Any) -> None:
    project = make_project(
        {"evals/nomodel.eval.py": _case(f"persona(goal={GOAL!r}, brief={BRIEF!r})")},
        config=judge_config(None),
    )
    run = project.run()
    line = run.result("nomodel")
    assert line["verdict"] == "failed", run.output
    assert line["reason"].startswith(
        "JudgeSetupError: no simulated user model is configured: pass model= to persona(...), "
    )
