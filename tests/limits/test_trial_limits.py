"""Token and cost limits per trial: the agent is stopped the moment its running total passes the
limit (a Python agent's turn cancelled, a command's process tree killed), and the trial fails
naming the limit. Real runs of ``anpord eval``."""

from __future__ import annotations

import os
from pathlib import Path

from project_support import eval_file

# Reports usage, then waits far past the limit's moment; says whether it was cancelled.
PY_AGENT = '''
import asyncio, os
from pathlib import Path

async def agent(turn):
    marks = Path(os.environ["LIMIT_MARKS"])
    turn.usage(input_tokens=6000, output_tokens=6480)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        (marks / "cancelled").write_text("yes")
        raise
    (marks / "finished").write_text("yes")
    return "done"

async def priced(turn):
    turn.emit("usage", input_tokens=1_000_000, output_tokens=0, model="gpt-4o")
    await asyncio.sleep(30)
    return "done"

async def unpriced(turn):
    turn.emit("usage", input_tokens=10, output_tokens=10, model="house-model-7")
    return "done"

async def proxied(turn):
    # The proxy's record of an unpriced call, then the agent's own report with its cost.
    turn.emit("model.called", provider="anthropic", input_tokens=10, output_tokens=10, model="house-model-7")
    turn.usage(input_tokens=10, output_tokens=10, cost=float(os.environ.get("OWN_COST", "0.2")))
    return "done"

async def small(turn):
    turn.usage(input_tokens=100, output_tokens=50, cost=0.001)
    return "done"
'''

OVER = eval_file('''
    @define_eval(token_limit=10_000, timeout=60)
    async def over_tokens(t):
        turn = await t.send("go")
        t.check(turn.message, "done")
''')

WITHIN = eval_file('''
    @define_eval(timeout=60)
    async def within(t):
        turn = await t.send("go")
        t.check(turn.message, "done")
''')


def _project(make_project, tmp_path: Path, config: str):  # type: ignore[no-untyped-def]
    marks = tmp_path / "marks"
    marks.mkdir()
    project = make_project({"agents/limited.py": PY_AGENT, "evals/limits/over_tokens.eval.py": OVER,
                            "evals/limits/within.eval.py": WITHIN}, config=config)
    return project, {"LIMIT_MARKS": str(marks)}, marks


def test_a_python_agent_past_its_token_limit_is_cancelled_and_fails(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.limited:agent", timeout=60)
'''
    project, env, marks = _project(make_project, tmp_path, config)
    run = project.run("--json", "limits/over_tokens", env=env)
    assert run.code == 1, run.output
    result = run.result("limits/over_tokens")
    assert result["verdict"] == "failed", result
    assert result["reason"] == "token limit reached: 12,480 tokens of 10,000", result
    assert result["error"]["kind"] == "limit"
    # Stopped, not judged after: its turn was cancelled mid-wait and never finished.
    assert (marks / "cancelled").exists() and not (marks / "finished").exists()


def test_the_command_line_wins_over_the_case_and_the_config_fills_in(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import Variant, define_eval_config
config = define_eval_config(harness="python:agents.limited:small", timeout=60, token_limit=100)
'''
    project, env, _ = _project(make_project, tmp_path, config)
    # The config's 100 tokens: the 150 the agent reports are over it.
    run = project.run("--json", "limits/within", env=env)
    assert run.result("limits/within")["reason"] == "token limit reached: 150 tokens of 100", run.output
    # The case's own 10,000 wins over the config: within it.
    run = project.run("--json", "limits/over_tokens", env=env)
    assert run.result("limits/over_tokens")["verdict"] == "passed", run.output
    # The command line wins over both.
    run = project.run("--json", "--token-limit", "120", "limits/over_tokens", env=env)
    assert run.result("limits/over_tokens")["reason"] == "token limit reached: 150 tokens of 120", run.output
    run = project.run("--json", "--cost-limit", "0.0005", "limits/within", "--token-limit", "1000", env=env)
    assert run.result("limits/within")["reason"] == "cost limit reached: $0.001 of $0.0005", run.output


def test_cost_from_the_price_table_when_none_is_reported(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import Variant, define_eval_config
config = define_eval_config(timeout=60, variants=[
    Variant(name="priced", harness="python:agents.limited:priced", cost_limit=1.0)])
'''
    project, env, _ = _project(make_project, tmp_path, config)
    run = project.run("--json", "limits/within", env=env)
    result = run.result("limits/within")
    # 1M input tokens of gpt-4o at $2.50 per million.
    assert (result["verdict"], result["reason"]) == ("failed", "cost limit reached: $2.50 of $1.00"), run.output


def test_a_cost_limit_that_cannot_be_checked_voids_the_trial_and_warns(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import Variant, define_eval_config
config = define_eval_config(timeout=60, variants=[
    Variant(name="house", harness="python:agents.limited:unpriced", model="house-model-7", cost_limit=1.0)])
'''
    project, env, _ = _project(make_project, tmp_path, config)
    run = project.run("--json", "limits/within", env=env)
    assert run.code == 1, run.output
    result = run.result("limits/within")
    assert result["verdict"] == "void", result
    assert result["reason"].startswith("cost limit $1.00 cannot be checked: a call to house-model-7"), result
    warning = [line for line in run.stderr.splitlines() if "house-model-7" in line]
    assert warning and "no price" in warning[0], run.stderr


def test_the_agents_own_cost_report_settles_what_the_proxy_could_not_price(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import Variant, define_eval_config
config = define_eval_config(timeout=60, variants=[
    Variant(name="house", harness="python:agents.limited:proxied", model="house-model-7", cost_limit=1.0)])
'''
    project, env, _ = _project(make_project, tmp_path, config)
    run = project.run("--json", "limits/within", env=env)
    assert run.result("limits/within")["verdict"] == "passed", run.output
    run = project.run("--json", "limits/within", env={**env, "OWN_COST": "1.5"})
    result = run.result("limits/within")
    assert (result["verdict"], result["reason"]) == ("failed", "cost limit reached: $1.50 of $1.00"), run.output


def test_bad_limits_are_exit_2_naming_the_field(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import Variant, define_eval_config
config = define_eval_config(harness="python:agents.limited:small", token_limit=-5)
'''
    project, env, _ = _project(make_project, tmp_path, config)
    run = project.run("limits/within", env=env)
    assert run.code == 2 and "token_limit must be a positive whole number of tokens" in run.stderr, run.output
    assert "Traceback" not in run.stderr
    run = project.run("--cost-limit", "free", "limits/within", env=env)
    assert run.code == 2 and "--cost-limit" in run.stderr and "US dollars" in run.stderr, run.output
    assert "Traceback" not in run.stderr


SUITE = eval_file('''
    async def check(context):
        return (await context.answer()) == "done", "answered"

    suite = define_suite([
        define_eval(id="suite-limit", prompt="go", validate=check),
        define_eval(id="own-limit", prompt="go", validate=check, token_limit=1000),
    ], token_limit=120)
''')


def test_a_suites_limit_is_under_its_cases_own(make_project, tmp_path: Path) -> None:
    config = '''
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.limited:small", timeout=60)
'''
    project, env, _ = _project(make_project, tmp_path, config)
    project.write({"evals/suited.eval.py": SUITE})
    run = project.run("--json", "suited", env=env)
    by_id = {r["case_id"]: r for r in run.results()}
    assert by_id["suited/suite-limit"]["reason"] == "token limit reached: 150 tokens of 120", run.output
    assert by_id["suited/own-limit"]["verdict"] == "passed", run.output
