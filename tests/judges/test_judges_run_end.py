"""A run's judge clients are closed at its end, before the agent's own teardown; a run that asks
no judge does not load the judges at all."""

from __future__ import annotations

import json
from typing import Any

from judge_support import grade, judge_config
from project_support import END, eval_file

from anpord.testing.model_server import rule

# A Python agent whose run-level teardown (after the run's shared clients are closed) writes
# down what of the judges this process has: loaded or not, and the clients still open.
WATCHING_AGENT = '''
import json, sys
from pathlib import Path


class Agent:
    async def setup(self):
        pass

    async def teardown(self):
        endpoint = sys.modules.get("anpord.judges._endpoint")
        pool = getattr(endpoint, "_clients", None)
        Path("judges.json").write_text(json.dumps({
            "loaded": endpoint is not None,
            "open": None if pool is None else len(pool.clients),
        }))

    async def __call__(self, turn):
        return "an answer"


agent = Agent()
'''


def _judges_seen(make_project: Any, check: str, url: str | None) -> Any:
    """Run one case whose last check is ``check`` (a judge at ``url``, or none); what of the
    judges the agent's teardown saw."""
    project = make_project(
        {"watching.py": WATCHING_AGENT,
         "evals/seen.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("a question")
                {check}
                {END}
        """)},
        config=judge_config(url, harness="python:watching:agent"),
    )
    run = project.run()
    assert run.result("seen")["verdict"] == "passed", run.output
    return json.loads((project.folder / "judges.json").read_text())


def test_the_judge_clients_a_run_opened_are_closed_at_its_end(make_project: Any, model_server: Any) -> None:
    server = model_server([rule("closing", grade("Y"))])
    seen = _judges_seen(make_project, 't.judge.closed_qa("closing: it answers").gate()', server.url)
    assert seen == {"loaded": True, "open": 0}


def test_a_run_that_asks_no_judge_never_loads_them(make_project: Any) -> None:
    assert _judges_seen(make_project, 't.check(t.reply, includes("answer"))', None) == {"loaded": False, "open": None}
