"""``shuffle`` and ``mutate`` replay a recorded structured output, not only its text: a schema
check lets the replayed output through, an exact check catches the damaged one."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from project_support import anpord_command, eval_file, run_env

SCHEMA = {"type": "object", "required": ["city", "temp"],
          "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}}}

CASES = {
    "evals/exact.eval.py": eval_file('''
        @define_eval
        async def test(t):
            await t.send("json")
            t.output_equals({"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]})
    '''),
    "evals/shape.eval.py": eval_file(f'''
        @define_eval
        async def test(t):
            await t.send("json")
            t.output_matches({SCHEMA!r})
    '''),
}


def test_recorded_structured_outputs_are_replayed_and_damaged(make_project: Any) -> None:
    project = make_project(CASES)
    recorded = project.run("--json")
    assert recorded.code == 0, recorded.output
    proc = subprocess.run([*anpord_command(), "audit", "--saboteurs", "shuffle,mutate", "--json"],
                          cwd=project.folder, env=run_env(), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)
    doc = json.loads(proc.stdout)
    got = {c["case_id"]: {s: o["outcome"] for s, o in c["saboteurs"].items()} for c in doc["cases"]}
    # The other case's recorded output is an object of the right shape: the schema lets it through.
    assert got["shape"] == {"shuffle": "passed", "mutate": "passed"}, doc
    # One value of the recorded output changed: the exact check catches it.
    assert got["exact"]["mutate"] == "caught", doc
    # The saboteurs' turns settled with a structured output, not only its text.
    from anpord.results import read_run

    reading = read_run(doc["run_id"], project=project.folder)
    outputs = {}
    for trial in reading.trials:
        done = [e for e in reading.events(trial) if e.type == "turn.completed"]
        outputs[(trial.case_id, trial.variant.split(":")[0])] = (done[-1].data.get("data"), reading.logs(trial))
    recorded = {"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]}
    assert outputs[("shape", "shuffle")][0] == recorded
    damaged, logs = outputs[("exact", "mutate")]
    assert isinstance(damaged, dict) and damaged != recorded and set(damaged) == set(recorded), damaged
    assert any(line.startswith("mutate: the structured output, [") for line in logs), logs
