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


ORDERED_AGENT = '''
import asyncio, os
from pathlib import Path

async def wait_for(path):
    for _ in range(600):
        if path.exists():
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{path} never appeared")

async def agent(turn):
    marks = Path(os.environ["LIMIT_MARKS"])
    if turn.input == "big":
        turn.usage(input_tokens=100, output_tokens=100, cost=1.20)  # spent at once, still running
        (marks / "big-spent").write_text("")
        await wait_for(marks / "small-done")
    else:
        await wait_for(marks / "big-spent")
        (marks / "small-done").write_text("")
    return "done"
'''

ROWS = eval_file('''
    @define_eval(each=[{"who": "big"}, {"who": "small"}, {"who": "small"}, {"who": "small"}])
    async def rows(t, row):
        turn = await t.send(row["who"])
        t.check(turn.message, "done")
''')


def test_what_running_trials_have_spent_counts_before_they_finish(make_project, tmp_path) -> None:
    # Two at a time: row 0 has spent $1.20 and is still running when row 1 finishes, so no third
    # trial starts, though no finished trial has spent anything yet.
    config = CONFIG.replace("agents.spender:agent", "agents.ordered:agent").replace(
        "max_concurrency=1", "max_concurrency=2").replace("trials=6", "trials=1")
    project = make_project({"agents/ordered.py": ORDERED_AGENT, "evals/rows.eval.py": ROWS}, config=config)
    marks = tmp_path / "marks"
    marks.mkdir()
    run = project.run("--json", "--max-run-cost", "1.00", env={"LIMIT_MARKS": str(marks)})
    verdicts = {r["case_id"].rsplit("/", 1)[-1]: r["verdict"] for r in run.results()}
    assert verdicts == {"0000": "passed", "0001": "passed", "0002": "void", "0003": "void"}, run.output
    assert run.json()["run_cost"] == {"limit": 1.0, "spent": 1.2, "reached": True, "not_run": 2}


def test_a_model_with_no_price_is_named_at_the_start(make_project) -> None:
    config = CONFIG.replace("define_eval_config(", "define_eval_config(model='house-model-7', ")
    project = make_project({"agents/spender.py": AGENT, "evals/spend.eval.py": CASE}, config=config)
    run = project.run("--max-run-cost", "5", "--trials", "1")
    warning = [line for line in run.stderr.splitlines() if "house-model-7" in line]
    assert warning and "no price" in warning[0] and "--max-run-cost" in warning[0], run.output
