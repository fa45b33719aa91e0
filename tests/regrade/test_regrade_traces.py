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
