"""A regrade asks today's judges (a scripted model server on 127.0.0.1) about the recorded
answers, and with ``--cache`` reuses what it asked before."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from judge_support import grade, judge_config, judge_requests, prompt_of
from project_support import anpord_command, eval_file, run_env

from anpord.testing.model_server import rule


def case(criterion: str) -> str:
    return eval_file(f'''
        @define_eval
        async def test(t):
            await t.send("weather Paris")
            t.judge.closed_qa({criterion!r}).gate()
    ''')


def regrade(project: Any, *args: str) -> dict[str, Any]:
    proc = subprocess.run([*anpord_command(), "regrade", *args, "--json"], cwd=project.folder, env=run_env(),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_todays_rubric_judges_the_recorded_answer_and_cache_reuses_it(make_project: Any, model_server: Any) -> None:
    server = model_server([rule("says sunny", grade("Y")), rule("says rainy", grade("N"))])
    project = make_project({"evals/judged.eval.py": case("says sunny")}, config=judge_config(server.url))
    run = project.run("--json")
    assert run.result("judged")["verdict"] == "passed", run.output
    agent_calls = len(server.requests) - len(judge_requests(server))
    run_id = run.json()["run_id"]

    project.write({"evals/judged.eval.py": case("says rainy")})
    doc = regrade(project, run_id, "--cache")
    (cell,) = doc["cells"]
    assert cell["results"][0]["verdict"] == "failed", cell
    asked = judge_requests(server, "says rainy")
    assert len(asked) == 1
    # The judge saw the recorded answer; the agent's model was never called again.
    assert "It is Sunny in Paris." in json.dumps(asked[0])
    assert len(server.requests) - len(judge_requests(server)) == agent_calls

    again = regrade(project, run_id, "--cache")
    assert again["cells"][0]["results"][0]["verdict"] == "failed"
    assert len(judge_requests(server, "says rainy")) == 1  # answered from the cache
    assert all("says rainy" in prompt_of(r) or "says sunny" in prompt_of(r) for r in judge_requests(server))
