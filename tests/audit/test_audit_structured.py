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
