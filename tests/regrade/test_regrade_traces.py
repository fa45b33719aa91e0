"""A traced trial (a command agent exporting real OpenTelemetry spans) regrades from its recorded
span events: the checks that read them pass again with the agent gone and no receiver running."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from project_support import anpord_command, eval_file, run_env
from traces_support import SCRIPTED_EVAL, variant, write_agents

DECLARED = eval_file('''
    def validate(context):
        calls = {c.name: c for c in context.tool_calls()}
        return calls["get_weather"].input == {"city": "Rome"} and calls["get_alerts"].status == "failed"

    declared = define_eval(prompt="weather in Rome?", validate=validate)
''')


def test_a_traced_run_regrades_from_its_recorded_spans(make_project: Any, tmp_path: Path) -> None:
    agents = write_agents(tmp_path / "otel_agents")
    config = ("from anpord import Variant, define_eval_config\n"
              f"config = define_eval_config(timeout=60, variants=[{variant('local', agents, 'otel_protobuf.py')}])\n")
    project = make_project({"evals/scripted.eval.py": SCRIPTED_EVAL, "evals/declared.eval.py": DECLARED},
                           config=config)
    run = project.run("--json", timeout=180)
    assert run.code == 0, run.output
    shutil.rmtree(agents)  # the agent cannot run again
    proc = subprocess.run([*anpord_command(), "regrade", run.json()["run_id"], "--json"], cwd=project.folder,
                          env=run_env(), capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    got = {c["case_id"]: c["results"][0]["verdict"] for c in doc["cells"]}
    assert got == {"scripted": "passed", "declared": "passed"}, proc.stderr
    from anpord.results import read_run

    reading = read_run(doc["run_id"], project=project.folder)
    events = reading.events(reading.trial("scripted"))
    assert sorted(e.type for e in events if e.data.get("source") == "trace") == [
        "model.called", "span", "tool.called", "tool.called", "tool.result", "tool.result"]


# A command agent exporting one tool span named after its prompt's first word, mid-run.
ONE_TOOL_AGENT = '''
import os, time
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
name = os.environ["ANPORD_PROMPT"].split()[0]
time.sleep(0.3)
with provider.get_tracer("t").start_as_current_span("execute_tool " + name, attributes={"gen_ai.operation.name": "execute_tool"}):
    pass
time.sleep(0.3)
provider.shutdown()
print("did " + name)
'''

# A Python agent whose tool span ends after its turn did, from a task it left running.
LATE_AGENT = '''
import asyncio
from opentelemetry import trace
tracer = trace.get_tracer("late-agent")

async def _later():
    await asyncio.sleep(0.3)
    with tracer.start_as_current_span("execute_tool after_turn", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": '{"a": 1}'}):
        pass

async def agent(turn):
    asyncio.get_running_loop().create_task(_later())
    return "ok"
'''

OUTSIDE_TURNS = eval_file('''
    @define_eval
    async def together(t):
        other = t.new_session()
        await asyncio.gather(t.send("alpha"), other.send("beta"))  # spans of two turns at once
        t.called_tool("alpha")
        t.called_tool("beta")
''')

AFTER_TURN = eval_file('''
    @define_eval
    async def after(t):
        turn = await t.send("hi")
        await asyncio.sleep(1)
        turn.not_called_tool("after_turn")
        t.called_tool("after_turn", input={"a": 1})
''')


def _regrade(project: Any, run_id: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run([*anpord_command(), "regrade", run_id, "--json", *args], cwd=project.folder,
                          env=run_env(), capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_spans_recorded_outside_any_turn_regrade_as_the_trials_own_events(make_project: Any, tmp_path: Path) -> None:
    """Spans the run recorded with no session (two turns running at once; a Python agent's task
    ending one after its turn) are in the regraded trial's events where the checks read them,
    and still in no turn."""
    agent = tmp_path / "one_tool.py"
    agent.write_text(ONE_TOOL_AGENT)
    config = ("import sys\nfrom anpord import Variant, define_eval_config\n"
              "config = define_eval_config(timeout=60, variants=[\n"
              f"    Variant(name='cmd', traces='otlp', harness='command:' + sys.executable + ' {agent}'),\n"
              "    Variant(name='py', traces='otlp', harness='python:agents.late:agent')])\n")
    project = make_project({"evals/together.eval.py": OUTSIDE_TURNS, "evals/after.eval.py": AFTER_TURN,
                            "agents/late.py": LATE_AGENT}, config=config)
    run = project.run("--json", "together", "--variant", "cmd", timeout=180)
    assert run.code == 0, run.output
    late = project.run("--json", "after", "--variant", "py", timeout=180)
    assert late.code == 0, late.output
    recorded = [e for e in late.events("after") if e.get("source") == "trace"]
    assert recorded and all(e.get("session_id") is None for e in recorded)  # the case this is about
    agent.unlink()  # the agent cannot run again
    for run_id in (run.json()["run_id"], late.json()["run_id"]):
        doc = _regrade(project, run_id)
        assert [c["results"][0]["verdict"] for c in doc["cells"]] == ["passed"], doc
