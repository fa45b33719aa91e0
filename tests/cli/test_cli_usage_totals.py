"""Token usage and cost add up over a run, in the console's closing lines, ``--json`` and
run.json; a run with one unknown price has an unknown cost, never a made-up total."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from project_support import END, anpord_command, eval_file, run_env

PRICED = """
async def agent(turn):
    if turn.input == "unpriced":
        turn.usage(input_tokens=7, output_tokens=3, cost=None)
    else:
        turn.usage(input_tokens=1000, output_tokens=250, cost=0.0125)
    return "ok"
"""


def test_usage_and_cost_totals_reach_every_output(make_project: Any) -> None:
    project = make_project({
        "agents/priced.py": PRICED,
        "evals/use.eval.py": eval_file(f"""
            @define_eval(each=["a", "b"])
            async def test(t, row):
                await t.send(row)
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.priced:agent")
    assert run.code == 0, run.output
    lines = run.stdout.splitlines()
    assert "Usage: 2,000 input tokens, 500 output tokens, $0.0250" in lines
    assert lines[-1] == "2 passed, 0 failed"
    assert run.run_json()["usage"] == {"input_tokens": 2000, "output_tokens": 500, "cost": 0.025}
    doc = json.loads(project.run("--harness", "python:agents.priced:agent", "--json").stdout)
    assert doc["usage"] == {"input_tokens": 2000, "output_tokens": 500, "cost": 0.025}


def test_one_unknown_price_makes_the_total_cost_unknown(make_project: Any) -> None:
    project = make_project({
        "agents/priced.py": PRICED,
        "evals/use.eval.py": eval_file(f"""
            @define_eval(each=["priced", "unpriced"])
            async def test(t, row):
                await t.send(row)
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.priced:agent")
    assert run.code == 0, run.output
    # The total is unknown; the console shows the known part and what it leaves out.
    assert ("Usage: 1,007 input tokens, 253 output tokens, $0.0125 + unknown for 1 variant "
            "(python:agents.priced:agent/default)") in run.stdout.splitlines()
    assert run.run_json()["usage"]["cost"] is None
    assert run.result("use/0001")["usage"] == {"input_tokens": 7, "output_tokens": 3, "cost": None}


BY_MODEL = """
async def agent(turn):
    cost = None if turn.model == "unpriced" else 0.0123
    turn.usage(input_tokens=10, output_tokens=5, cost=cost)
    return "ok"
"""


HOSTILE = """
async def agent(turn):
    if turn.input == "infinite":
        turn.usage(input_tokens=10, output_tokens=1, cost=float("inf"))
    elif turn.input == "huge":
        turn.usage(input_tokens=1e30, output_tokens=5, cost=1e308)
        turn.usage(input_tokens=20, output_tokens=5, cost=1e308)
    else:
        turn.usage(input_tokens=10**30, output_tokens=-5, cost=float("nan"))
    return "ok"
"""


def test_a_variant_without_a_price_leaves_the_others_cost_shown(make_project: Any) -> None:
    config = (
        "from anpord import Variant, define_eval_config\n"
        "config = define_eval_config(harness='python:agents.bymodel:agent', variants=[\n"
        "    Variant(model='priced'), Variant(model='unpriced', name='local-model')])\n"
    )
    project = make_project({
        "agents/bymodel.py": BY_MODEL,
        "evals/use.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hi")
                {END}
        """),
    }, config=config)
    run = project.run()
    assert run.code == 0, run.output
    assert ("Usage: 20 input tokens, 10 output tokens, $0.0123 + unknown for 1 variant (local-model)"
            in run.stdout.splitlines()), run.stdout
    assert run.run_json()["usage"]["cost"] is None  # the recorded total stays unknown
    run = project.run("--variant", "local-model")
    assert "Usage: 10 input tokens, 5 output tokens, cost unknown" in run.stdout.splitlines()


def _history(project: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), *args], cwd=project.folder, env=run_env(),
                          capture_output=True, text=True, timeout=60, check=False)


def test_implausible_numbers_from_an_agent_are_left_out_with_a_note(make_project: Any) -> None:
    project = make_project({
        "agents/hostile.py": HOSTILE,
        "evals/use.eval.py": eval_file(f"""
            @define_eval(each=["infinite", "huge", "wrong"], id=str)
            async def test(t, row):
                await t.send(row)
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.hostile:agent", "--json")
    assert run.code == 0, run.output
    doc = json.loads(run.stdout)
    assert doc["usage"] == {"input_tokens": 30, "output_tokens": 11, "cost": None}
    huge = run.result("use/huge")
    assert huge["usage"] == {"input_tokens": 20, "output_tokens": 10, "cost": None}
    assert "usage: input_tokens 1e+30 is not a plausible count (0 to 1e+12): not counted" in huge["logs"]
    assert "usage: cost 1e+308 is not a plausible price (0 to 1e+06): the cost is unknown" in huge["logs"]
    wrong = run.result("use/wrong")["logs"]
    assert any("output_tokens -5" in line for line in wrong) and any("cost nan" in line for line in wrong)
    for args in (["runs"], ["show", "latest"], ["compare"], ["baseline", "set", "latest"], ["db", "rebuild"]):
        done = _history(project, *args)
        assert done.returncode == 0, (args, done.stderr)


def test_history_reads_a_run_folder_holding_implausible_numbers(make_project: Any) -> None:
    """A run folder written by anything (an older anpord, a hand edit): history commands read it."""
    project = make_project({
        "evals/use.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("weather")
                {END}
        """),
    })
    run = project.run()
    assert run.code == 0 and run.run_dir is not None, run.output
    results = run.run_dir / "results.jsonl"
    line = json.loads(results.read_text())
    line["usage"] = {"input_tokens": 10**30, "output_tokens": 1e300, "cost": 1e308}
    results.write_text(json.dumps(line).replace("1e+308", "Infinity") + "\n")
    record = json.loads((run.run_dir / "run.json").read_text())
    record["usage"] = {"input_tokens": 10**30, "output_tokens": 1, "cost": None}
    (run.run_dir / "run.json").write_text(json.dumps(record))
    for args in (["db", "rebuild"], ["runs"], ["show", "latest"], ["compare"], ["baseline", "set", "latest"]):
        done = _history(project, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "view"))
    from view_support import view_server

    with view_server(project.folder) as server:
        for target in ("/", f"/runs/{run.run_dir.name}"):
            status, _, body = server.get(target)
            assert status == 200, (target, body[:300])
            assert "inf" not in body.replace("info", "") and "000,000,000,000" not in body, target
