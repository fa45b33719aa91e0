"""The executor seam: a trial described as plain data runs in another process and gives the same
verdict; an executor other than the local pool plugs into ``execute`` without touching discovery,
verdicts or reporters."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from project_support import END, eval_file

from anpord.runner import (
    RunOptions,
    TrialSink,
    TrialSpec,
    build_plan,
    execute,
    find_project,
    load_cases,
    select_files,
)
from anpord.results import ReporterBase
from anpord.runner._remote import run_spec, trial_from_wire
from anpord.runner._run import _specs

CASES = {
    "evals/mixed.eval.py": eval_file(f"""
        @define_eval(each=["Sunny", "Rain"], id=lambda row: row.lower())
        async def test(t, row):
            await t.send("weather Brooklyn")
            t.called_tool("get_weather")
            await t.send(row)
            t.check(t.reply, includes("Sunny"))
            {END}
    """),
    "evals/decl.eval.py": eval_file("""
        case = define_eval(prompt="echo hi", source=files({"a.txt": "x"}),
                           validate=lambda c: (c.exists("a.txt"), "a.txt is there"))
    """),
}


def plan_in(folder: Path, opts: RunOptions | None = None) -> Any:
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        project = find_project([])
        return build_plan(project, load_cases(select_files(project, [])), opts or RunOptions())
    finally:
        os.chdir(cwd)


def _in_child(spec: TrialSpec) -> tuple[Any, Any, int]:
    record, events = run_spec(spec)
    return record, events, os.getpid()


def test_a_trial_spec_pickles_and_runs_in_another_process(make_project: Any) -> None:
    project = make_project(CASES)
    plan = plan_in(project.folder, RunOptions(trials=2))
    specs = list(_specs(plan, "run-x", None, set()))
    assert len(specs) == 6
    assert pickle.loads(pickle.dumps(specs[0])) == specs[0]
    # A fresh interpreter (spawn): it knows nothing of this process's imported eval files.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.map(_in_child, specs)
    assert {pid for _, _, pid in got} != {os.getpid()}
    verdicts = {}
    for record, events, _ in got:
        trial, evs = trial_from_wire(record, events)
        verdicts[(trial.case_id, trial.trial)] = trial.verdict
        assert evs[0].type == "session.started"
        assert trial.seed is not None and trial.host
    assert verdicts == {
        ("mixed/sunny", 0): "passed", ("mixed/sunny", 1): "passed",
        ("mixed/rain", 0): "failed", ("mixed/rain", 1): "failed",
        ("decl", 0): "passed", ("decl", 1): "passed",
    }


class ReversedExecutor:
    """Runs every trial one at a time, in reverse order, each in a worker process: nothing else
    about the run knows."""

    name = "reversed"

    async def run(self, specs: Iterator[TrialSpec], sink: TrialSink, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        todo = list(specs)[::-1]
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            for spec in todo:
                if stop.is_set():
                    return
                sink.trial_started(spec)
                record, events = await loop.run_in_executor(None, pool.apply, run_spec, (spec,))
                sink.trial_finished(spec, *trial_from_wire(record, events))


class Recorder(ReporterBase):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_run_start(self, info: Any) -> None:
        self.calls.append("start")

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None:
        self.calls.append(f"trial {case_id} {trial}")

    def on_trial_end(self, result: Any) -> None:
        self.calls.append(f"end {result.case_id} {result.trial} {result.verdict}")

    def on_run_end(self, summary: Any, results: Any) -> None:
        self.calls.append("done")


def test_another_executor_plugs_into_execute(make_project: Any) -> None:
    project = make_project(CASES)
    opts = RunOptions()
    plan = plan_in(project.folder, opts)
    local = execute(plan, opts, [])
    reporter = Recorder()
    other = execute(plan_in(project.folder, opts), opts, [reporter], executor=ReversedExecutor())
    key = lambda r: (r.case_id, r.variant, r.trial)  # noqa: E731
    assert sorted((key(r), r.verdict) for r in other.trials) == sorted((key(r), r.verdict) for r in local.trials)
    assert other.summary.totals == local.summary.totals and other.exit_code == local.exit_code == 1
    assert reporter.calls[0] == "start" and reporter.calls[-1] == "done"
    assert [c for c in reporter.calls if c.startswith("end")] == [
        "end mixed/rain 0 failed", "end mixed/sunny 0 passed", "end decl 0 passed"
    ]  # the reverse of the plan order: the executor decided, the driver followed
    from anpord.results import read_run

    reading = read_run(other.summary.run_dir)
    assert reading.status == "finished" and len(reading.trials) == 3
    assert [e.type for e in reading.events(reading.trial("decl"))][0] == "session.started"


def test_a_spec_whose_case_is_gone_is_void_not_lost(make_project: Any, tmp_path: Path) -> None:
    project = make_project(CASES)
    plan = plan_in(project.folder)
    spec = next(s for s in _specs(plan, "run-x", None, set()) if s.case_id == "mixed/rain")
    from dataclasses import replace

    gone = replace(spec, case_id="mixed/snow")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        record, _ = pool.apply(run_spec, (gone,))
    trial, _ = trial_from_wire(record, [])
    assert trial.verdict == "void" and "defines no case mixed/snow" in trial.reason


@pytest.mark.parametrize("concurrency", [1, 100_000_000])
def test_workers_start_as_trials_are_taken(make_project: Any, concurrency: int) -> None:
    project = make_project({"evals/one.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("hi")
            {END}
    """)})
    # Before workers started lazily, 10^8 of them were created for one trial: the run never
    # finished (the subprocess timeout fails the test).
    run = project.run("--max-concurrency", str(concurrency), timeout=30)
    assert run.code == 0, run.output


class _Pausing:
    """Specs that answer "none now" once, like adaptive trials waiting on running ones, and have
    more once a trial has finished."""

    def __init__(self, specs: list[TrialSpec]):
        self.specs, self.finished, self.paused = list(specs), 0, False

    def __iter__(self) -> Iterator[TrialSpec]:
        return self

    def __next__(self) -> TrialSpec:
        if len(self.specs) == 4 and not self.paused:
            self.paused = True
            self.mark = self.finished
            raise StopIteration
        if self.paused and self.finished == self.mark:
            raise StopIteration  # still waiting: no trial has finished since the pause
        if not self.specs:
            raise StopIteration
        return self.specs.pop(0)


def test_slots_freed_while_specs_wait_are_filled_again(make_project: Any) -> None:
    from anpord.runner._local import LocalExecutor

    project = make_project({"evals/one.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("hi")
            {END}
    """)})
    plan = plan_in(project.folder, RunOptions(trials=8))
    specs = _Pausing(list(_specs(plan, "run-x", None, set())))
    running, most_after_pause, done = [0], [0], []

    class Sink:
        def trial_started(self, spec: TrialSpec) -> None:
            running[0] += 1
            if specs.paused:
                most_after_pause[0] = max(most_after_pause[0], running[0])

        def trial_log(self, spec: TrialSpec, message: str) -> None:
            pass

        def trial_finished(self, spec: TrialSpec, result: Any, events: Any) -> None:
            running[0] -= 1
            specs.finished += 1
            done.append(result.verdict)

    executor = LocalExecutor({c.case.id: c.case for c in plan.cells}, plan.harnesses,
                             max_concurrency=2, max_sandboxes=plan.max_sandboxes, host=None)
    cwd = os.getcwd()
    os.chdir(project.folder)
    try:
        asyncio.run(executor.run(specs, Sink(), asyncio.Event()))
    finally:
        os.chdir(cwd)
    assert done == ["passed"] * 8
    assert most_after_pause[0] == 2  # the slot given up at the pause was filled again
