"""``--max-run-cost``: once the run's finished trials have spent it, no more trials start; those
left are ``void`` ("not run: the run's cost limit was reached"), so the exit code is 1. Shown in
the closing lines and in ``--json``."""

from __future__ import annotations

from project_support import eval_file

AGENT = '''
async def agent(turn):
    turn.usage(input_tokens=100, output_tokens=100, cost=0.40)
    return "done"
'''

CASE = eval_file('''
    @define_eval
    async def spend(t):
        turn = await t.send("go")
        t.check(turn.message, "done")
''')

CONFIG = '''
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.spender:agent", timeout=30, trials=6, max_concurrency=1)
'''


def test_trials_not_started_once_the_run_spent_its_limit_are_void(make_project) -> None:
    project = make_project({"agents/spender.py": AGENT, "evals/spend.eval.py": CASE}, config=CONFIG)
    run = project.run("--json", "--max-run-cost", "1.00")
    assert run.code == 1, run.output
    results = sorted(run.results(), key=lambda r: r["trial"])
    # One at a time: $0.40, $0.80, $1.20 — then the limit is reached and three are not run.
    assert [r["verdict"] for r in results] == ["passed"] * 3 + ["void"] * 3, results
    assert {r["reason"] for r in results[3:]} == {"not run: the run's cost limit was reached"}
    doc = run.json()
    assert doc["run_cost"] == {"limit": 1.0, "spent": 1.2, "reached": True, "not_run": 3}, doc
    assert doc["totals"]["void"] == 3

    console = project.run("--max-run-cost", "1.00")
    assert "Run cost: $1.20 spent, limit $1.00 reached: 3 trials not run" in console.stdout, console.output


def test_a_run_under_its_cost_limit_says_what_it_spent(make_project) -> None:
    project = make_project({"agents/spender.py": AGENT, "evals/spend.eval.py": CASE}, config=CONFIG)
    run = project.run("--json", "--max-run-cost", "$5", "--trials", "2")
    assert run.code == 0, run.output
    assert run.json()["run_cost"] == {"limit": 5.0, "spent": 0.8, "reached": False, "not_run": 0}
    console = project.run("--max-run-cost", "5", "--trials", "2")
    assert "Run cost: $0.80 of the $5.00 limit" in console.stdout, console.output
