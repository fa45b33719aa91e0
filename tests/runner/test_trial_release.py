"""A finished trial's objects (its ``t``, state, sessions, turns, the body's task) are freed by
reference counting as the trial ends: with the cyclic collector off, nothing of it is left, while
its record and events are written as before."""

from __future__ import annotations

import gc
import json
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest

from anpord.runner import RunOptions, build_plan, execute, find_project, load_cases, select_files


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _project(root: Path, options: str = "") -> None:
    (root / "evals").mkdir()
    (root / "trial_sink.py").write_text("REFS = []\n")
    (root / "trial_agent.py").write_text("async def agent(turn):\n    return 'hello ' + turn.input\n")
    (root / "evals" / "evals.config.py").write_text(textwrap.dedent(f"""
        from anpord import Variant, define_eval_config
        config = define_eval_config(max_concurrency=2, timeout=300, variants=[
            Variant(name="v", harness="python:trial_agent:agent"{options})])
    """))
    (root / "evals" / "kept.eval.py").write_text(textwrap.dedent("""
        import weakref
        from anpord import define_eval
        from anpord.expect import includes
        import trial_sink

        @define_eval(each=[0, 1, 2], id=lambda row: f"t{row}")
        async def test(t, row):
            session = t.session
            turn = await t.send(f"hi {row}")
            trial_sink.REFS.extend(weakref.ref(x) for x in (t, session, turn))
            t.check(t.reply, includes("hello"))
    """))


@pytest.mark.parametrize("options", ["", ", traces='otlp'"], ids=["plain", "traced"])
def test_a_finished_trial_is_freed_without_the_cyclic_collector(
        tmp_path: Path, monkeypatch: Any, no_collector: None, options: str) -> None:
    _project(tmp_path, options)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "trial_sink", raising=False)
    proj = find_project([])
    opts = RunOptions(history=False)
    summary = execute(build_plan(proj, load_cases(select_files(proj, [])), opts), opts, reporters=[]).summary
    assert summary.totals["passed"] == 3, summary.totals
    import trial_sink

    assert len(trial_sink.REFS) == 9
    alive = [type(r()).__name__ for r in trial_sink.REFS if r() is not None]
    assert alive == [], f"left for the cyclic collector: {alive}"
    # What is read after the trial is intact: each line and the events it points at.
    run_dir = Path(summary.run_dir)
    lines = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    blob = (run_dir / "events.ndjson").read_bytes()
    for line in lines:
        ref = line["events"]
        events = blob[ref["offset"]:ref["offset"] + ref["length"]].splitlines()
        assert len(events) == ref["count"] > 0
        assert b"hello hi" in b"".join(events)  # the agent's reply, as its turn recorded it


@pytest.mark.parametrize("concurrency, young", [(2, 20_000), (500, 100_000), (10_000, 500_000)])
def test_the_collector_lets_young_objects_pile_up_in_step_with_the_trials_at_once(
        tmp_path: Path, monkeypatch: Any, concurrency: int, young: int) -> None:
    # A young collection rescans every trial in flight, none of it garbage: the run sizes the
    # young generation to its concurrency (capped), and gives the thresholds back after it.
    (tmp_path / "evals").mkdir()
    (tmp_path / "gc_agent.py").write_text(
        "import gc\n\nasync def agent(turn):\n    return 'thresholds %s %s %s' % gc.get_threshold()\n")
    (tmp_path / "evals" / "evals.config.py").write_text(textwrap.dedent(f"""
        from anpord import define_eval_config
        config = define_eval_config(harness="python:gc_agent:agent", max_concurrency={concurrency})
    """))
    (tmp_path / "evals" / "gc.eval.py").write_text(textwrap.dedent(f"""
        from anpord import define_eval
        from anpord.expect import equals

        @define_eval
        async def test(t):
            await t.send("hi")
            t.check(t.reply, equals("thresholds {young} 20 20"))
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = gc.get_threshold()
    proj = find_project([])
    opts = RunOptions(history=False, artifacts=False)
    summary = execute(build_plan(proj, load_cases(select_files(proj, [])), opts), opts, reporters=[]).summary
    assert summary.totals["passed"] == 1, summary.totals
    assert gc.get_threshold() == before


def test_a_finished_run_is_freed_without_the_cyclic_collector(
        tmp_path: Path, monkeypatch: Any, no_collector: None) -> None:
    # Its plan, executor, reporters and loop point back at it: released as the run returns,
    # what it planned is not left for the collector (which would walk it once more at exit).
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "trial_sink", raising=False)
    from anpord.runner._planning import Plan, PlannedCase

    proj = find_project([])
    opts = RunOptions(history=False)
    result = execute(build_plan(proj, load_cases(select_files(proj, [])), opts), opts, reporters=[])
    assert result.summary.totals["passed"] == 3 and len(result.trials) == 3
    assert [c.case_id for c in result.record.cells] == ["kept/t0", "kept/t1", "kept/t2"]
    left = [type(o).__name__ for o in gc.get_objects() if type(o) in (Plan, PlannedCase)]
    assert left == [], f"left for the cyclic collector: {left}"
