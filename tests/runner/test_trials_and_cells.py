"""Variants × trials: every case on every variant for N trials, each trial isolated; a cell's
distribution; config precedence and command-line overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from project_support import END, Run, eval_file

CONFIG = """
from anpord import Variant, define_eval_config

config = define_eval_config(
    harness="python:agents.kit:agent",
    timeout=10,
    variants=[Variant(name="alpha"), Variant(name="beta", model="m-beta")],
)
"""

# Counters live beside evals/; one per cell (the model tells the variants apart).
COUNTER = 'Path(__file__).resolve().parent.parent / ("counter-" + NAME + "-" + (await t.send("model")).message)'

CASES = {
    "flip": f"""
        NAME = "flip"

        @define_eval(trials=4)
        async def test(t):
            counter = {COUNTER}
            await t.send(f"flip {{counter}}")
            t.check(t.reply, equals("pass"))
    """,
    "steady": f"""
        @define_eval(trials=3)
        async def test(t):
            await t.send("echo steady")
            {END}
    """,
    "half_skipped": f"""
        NAME = "half"

        @define_eval(trials=4)
        async def test(t):
            counter = {COUNTER}
            if (await t.send(f"flip {{counter}}")).message == "fail":
                t.skip("odd trial")
            {END}
    """,
    "isolated": f"""
        @define_eval(trials=3, source=files({{"seed.txt": "seed"}}))
        async def test(t):
            turn = await t.send("workspace marker.txt")
            t.check(turn.message, includes("fresh "))
            assert (t.workspace / "seed.txt").read_text() == "seed"
            history = json.loads((await t.send("history")).message)
            assert len(history) == 3, history
            t.log(turn.message.split(" ", 1)[1])
            t.log(t.session_id)
            {END}
    """,
}


@pytest.fixture(scope="module")
def run(make_module_project: Any) -> Run:
    project = make_module_project(
        {f"evals/{name}.eval.py": eval_file(body) for name, body in CASES.items()}, config=CONFIG
    )
    result = project.run("--json", "--max-concurrency", "4")
    assert result.code == 1, result.output  # flip fails on odd trials
    return result


def cell(run: Run, case_id: str, variant: str) -> dict[str, Any]:
    return next(c for c in run.json()["cells"] if c["case_id"] == case_id and c["variant"] == variant)


def test_every_case_runs_on_every_variant_for_n_trials(run: Run) -> None:
    got: dict[tuple[str, str], list[int]] = {}
    for line in run.results():
        got.setdefault((line["case_id"], line["variant"]), []).append(line["trial"])
    expected = {"flip": 4, "steady": 3, "half_skipped": 4, "isolated": 3}
    assert {k: sorted(v) for k, v in got.items()} == {
        (case, variant): list(range(n)) for case, n in expected.items() for variant in ("alpha", "beta")
    }
    assert run.json()["totals"]["trials"] == 28
    # A handful of files per run, never some per trial; each trial's events read back.
    assert run.run_dir is not None
    assert sorted(p.name for p in run.run_dir.iterdir()) == ["events.ndjson", "results.jsonl", "run.json",
                                                             "workspaces"]
    # The trials' workspace snapshots: two files, however many trials kept one.
    assert sorted(p.name for p in (run.run_dir / "workspaces").iterdir()) == ["blobs.pack", "index.jsonl"]
    reading = run.reading()
    for n in range(4):
        events = reading.events(reading.trial("flip", "beta", n))
        assert events[0].type == "session.started" and events[-1].type == "session.completed"


@pytest.mark.parametrize("variant", ["alpha", "beta"])
def test_cell_distribution(run: Run, variant: str) -> None:
    flip = cell(run, "flip", variant)
    assert (flip["trials"], flip["passed"], flip["failed"]) == (4, 2, 2)
    assert flip["pass_rate"] == 0.5
    assert flip["pass_at_k"] == 1.0 and flip["pass_hat_k"] == 0.0
    assert flip["deterministic"] is False
    assert [r["trial"] for r in flip["results"]] == [0, 1, 2, 3]

    steady = cell(run, "steady", variant)
    assert (steady["trials"], steady["passed"], steady["pass_rate"]) == (3, 3, 1.0)
    assert steady["pass_at_k"] == 1.0 and steady["pass_hat_k"] == 1.0
    assert steady["deterministic"] is True

    half = cell(run, "half_skipped", variant)
    assert (half["trials"], half["passed"], half["skipped"]) == (4, 2, 2)
    assert half["pass_rate"] == 1.0  # over measured trials: skipped ones do not count
    assert half["deterministic"] is True


def test_each_trial_is_isolated(run: Run) -> None:
    workspaces, sessions = set(), set()
    for variant in ("alpha", "beta"):
        for n in range(3):
            line = next(r for r in run.results()
                        if r["case_id"] == "isolated" and r["variant"] == variant and r["trial"] == n)
            assert line["verdict"] == "passed", line["reason"]
            workspace, session = line["logs"]
            workspaces.add(workspace)
            sessions.add(session)
    assert len(workspaces) == 6 and len(sessions) == 6
    assert not any(Path(w).exists() for w in workspaces)  # no trial leaves its workspace behind


def test_variant_selection(make_module_project: Any, run: Run) -> None:
    from project_support import Project

    assert run.run_dir is not None
    project = Project(run.run_dir.parents[2])
    only = project.run("steady", "--variant", "beta", "--trials", "2", "--json")
    assert only.code == 0, only.output
    assert {(r["variant"], r["trial"]) for r in only.results()} == {("beta", 0), ("beta", 1)}
    assert [v["label"] for v in only.run_json()["variants"]] == ["beta"]


PRECEDENCE_CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.kit:agent", trials=1, timeout=30, model="cfg-model")
"""

PRECEDENCE = {
    "own": f"""
        @define_eval(trials=2, timeout=5)
        async def test(t):
            t.log(f"budget={{t.deadline - time.time():.1f}}")
            t.log((await t.send("model")).message)
            {END}
    """,
    "plain": f"""
        @define_eval
        async def test(t):
            t.log(f"budget={{t.deadline - time.time():.1f}}")
            t.log((await t.send("model")).message)
            {END}
    """,
}


def test_precedence_and_overrides(make_project: Any) -> None:
    project = make_project(
        {f"evals/{name}.eval.py": eval_file(body) for name, body in PRECEDENCE.items()},
        config=PRECEDENCE_CONFIG,
    )
    # The eval's own settings over the config.
    run = project.run()
    assert run.code == 0, run.output
    cells = {c["case_id"]: c for c in run.run_json()["cells"]}
    assert (cells["own"]["trials"], cells["own"]["timeout"]) == (2, 5)
    assert (cells["plain"]["trials"], cells["plain"]["timeout"]) == (1, 30)
    assert len(run.by_case()["own"]) == 2 and len(run.by_case()["plain"]) == 1
    assert run.trial("own")["logs"] == ["budget=5.0", "cfg-model"]
    assert run.trial("plain")["logs"] == ["budget=30.0", "cfg-model"]
    snapshot = run.run_json()
    assert snapshot["config"]["model"] == "cfg-model"
    assert snapshot["variants"][0]["model"] == "cfg-model"

    # The command line over both.
    run = project.run("--trials", "3", "--timeout", "7", "--model", "m-cli", "--sandbox", "local")
    assert run.code == 0, run.output
    cells = {c["case_id"]: c for c in run.run_json()["cells"]}
    assert {(c["trials"], c["timeout"]) for c in cells.values()} == {(3, 7)}
    assert len(run.results()) == 6
    assert run.trial("plain", 2)["logs"] == ["budget=7.0", "m-cli"]
    snapshot = run.run_json()
    assert [(v["model"], v["sandbox"]) for v in snapshot["variants"]] == [("m-cli", "local")]
    assert snapshot["options"]["model"] == "m-cli" and snapshot["options"]["trials"] == 3
    assert all(r["variant"] == "python:agents.kit:agent/m-cli" for r in run.results())

    # An unknown sandbox is a usage error.
    bad = project.run("--sandbox", "moon")
    assert bad.code == 2 and "moon" in bad.stderr and bad.run_dir is None
