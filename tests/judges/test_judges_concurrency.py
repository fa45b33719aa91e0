"""Judge calls start at the call and run beside the rest of the trial: three judges in one trial
are in flight together (one model latency, not three), and a declarative case's judge is in
flight while its ``validate`` runs. Told by the server's request timing records (its monotonic
clock), never by wall time."""

from __future__ import annotations

import json
from typing import Any

from judge_support import grade, judge_config, judge_requests
from project_support import END, eval_file

from anpord.testing.model_server import rule


def test_three_judges_in_one_trial_are_in_flight_together(make_project: Any, model_server: Any) -> None:
    server = model_server(
        [rule("together-1", grade("Y")), rule("together-2", grade("C")), rule("together-3", grade("correct"))],
        latency=0.8,
    )
    project = make_project(
        {"evals/three.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("Write a haiku")
                t.judge.closed_qa("together-1: has three lines")
                t.judge.factuality("together-2: a haiku about autumn")
                t.judge.rubric("together-3: evocative")
                {END}
        """)},
        config=judge_config(server.url),
    )
    run = project.run()
    assert run.result("three")["verdict"] == "passed", run.output
    sent = judge_requests(server, "together")
    assert len(sent) == 3
    # Every request arrived before the first was answered: none waited for another.
    assert max(r["_received"] for r in sent) < min(r["_answered"] for r in sent)


def test_a_declared_judge_runs_while_validate_does(make_project: Any, model_server: Any) -> None:
    server = model_server([rule("beside", grade("correct"))], latency=0.2)
    requests_url = server.url.removesuffix("/v1") + "/_anpord/requests"
    # validate waits until the judge's request has reached the server: it can only get there
    # while validate runs if the judge runs beside it (run after it, validate gives up and says
    # so). No margin: it waits on the request itself.
    project = make_project(
        {"evals/beside.eval.py": eval_file(f"""
            import urllib.request
            from anpord import judge

            def judge_request_arrived():
                with urllib.request.urlopen({requests_url!r}, timeout=30) as reply:
                    return any("beside:" in json.dumps(r.get("messages")) for r in json.load(reply))

            async def validate(ctx):
                started = time.monotonic()
                seen = False
                while not seen and time.monotonic() < started + 30:
                    seen = await asyncio.to_thread(judge_request_arrived)
                    await asyncio.sleep(0.02)
                Path(__file__).with_name("validate.json").write_text(
                    json.dumps({{"started": started, "ended": time.monotonic(), "seen": seen}}))
                return True

            case = define_eval(prompt="Explain TCP", validate=validate,
                               judges=[judge("accurate", "beside: accurate")])
        """)},
        config=judge_config(server.url, timeout=50),
    )
    run = project.run()
    assert run.result("beside")["verdict"] == "passed", run.output
    (sent,) = judge_requests(server, "beside")
    validate = json.loads(project.path("evals/validate.json").read_text())
    assert validate["seen"], "the judge's request never came while validate ran"
    # time.monotonic is one clock for every process on the machine.
    assert sent["_received"] < validate["ended"] and sent["_answered"] > validate["started"]
