"""``FolderViewData``: what the pages are given, read from run folders written by the real
``RunWriter`` — baselines, history, the cache, a running run, a trial's events."""

from __future__ import annotations

import json
from pathlib import Path

from anpord.events import Event
from anpord.results import AssertionRecord, CellRecord, RunRecord, TrialResult, summarize_cell
from anpord.results.artifacts import RunWriter
from anpord.view import FolderViewData, ViewData
from anpord.view._chart import chart

T0 = 1_700_000_000.0


def write_run(project: Path, run_id: str, started_at: float, cells: dict[tuple[str, str], list[str]], *,
              status: str = "finished", summaries: bool = True) -> Path:
    run_dir = project / ".anpord" / "runs" / run_id
    writer = RunWriter(run_dir)
    record = RunRecord(run_id, status, started_at,  # type: ignore[arg-type]
                       cells=[CellRecord(c, v, len(vs), 30.0) for (c, v), vs in cells.items()])
    for (case_id, variant), verdicts in cells.items():
        results = []
        for i, verdict in enumerate(verdicts):
            r = TrialResult(case_id, variant, i, verdict, started_at=started_at,  # type: ignore[arg-type]
                            assertions=[AssertionRecord("includes", "gate", "passed" if verdict == "passed" else "failed",
                                                        1.0, expected="Sunny", actual=f"reply {i}")])
            writer.write_trial(r, [Event("message.completed", {"role": "assistant", "text": f"reply {i}"}, started_at + i)])
            results.append(r)
        if summaries:
            next(c for c in record.cells if (c.case_id, c.variant) == (case_id, variant)).summary = summarize_cell(results)
    writer.write_run(record)
    writer.close()
    return run_dir


def test_each_cell_is_compared_with_the_earliest_run_that_measured_it(tmp_path: Path) -> None:
    x, y = ("weather/x", "v1"), ("weather/y", "v1")
    # Ids sort the other way round from start times: order must come from when a run started.
    write_run(tmp_path, "20240101-000000-zzzzzz", T0, {x: ["passed", "passed"]})
    write_run(tmp_path, "20240101-000000-mmmmmm", T0 + 10, {x: ["passed", "failed"], y: ["failed", "failed"]})
    write_run(tmp_path, "20240101-000000-aaaaaa", T0 + 20, {x: ["passed", "passed"], y: ["passed", "failed"]})
    data = FolderViewData(tmp_path)
    assert isinstance(data, ViewData)
    assert [r.run_id for r in data.runs()] == ["20240101-000000-aaaaaa", "20240101-000000-mmmmmm", "20240101-000000-zzzzzz"]

    assert data.baseline_deltas("20240101-000000-zzzzzz") == {}  # the first run is everyone's baseline
    second = data.baseline_deltas("20240101-000000-mmmmmm")
    assert set(second) == {x}  # y first ran here
    assert second[x].baseline_run_id == "20240101-000000-zzzzzz"
    assert second[x].delta == -0.5 and not second[x].regressed  # 2/2 → 1/2: noise, not a regression
    third = data.baseline_deltas("20240101-000000-aaaaaa")
    assert third[x].delta == 0.0 and not third[x].regressed
    assert third[y].baseline_run_id == "20240101-000000-mmmmmm"
    assert third[y].delta == 0.5 and not third[y].regressed

    history = data.cell_history(*x)
    assert [(p.run_id, p.pass_rate) for p in history] == [
        ("20240101-000000-zzzzzz", 1.0), ("20240101-000000-mmmmmm", 0.5), ("20240101-000000-aaaaaa", 1.0)]
    assert [p.run_id for p in data.cell_history(*y)] == ["20240101-000000-mmmmmm", "20240101-000000-aaaaaa"]


def test_a_cell_is_regressed_when_its_counts_say_so(tmp_path: Path) -> None:
    cell = ("weather/x", "v1")
    write_run(tmp_path, "20240101-000001-aaaaaa", T0, {cell: ["passed"] * 10})
    write_run(tmp_path, "20240101-000002-aaaaaa", T0 + 1, {cell: ["failed"] * 10})
    deltas = FolderViewData(tmp_path).baseline_deltas("20240101-000002-aaaaaa")
    assert deltas[cell].delta == -1.0 and deltas[cell].regressed  # 10/10 → 0/10: p ≈ 1e-5
    drawn = chart(FolderViewData(tmp_path).cell_history(*cell))
    # Each measured point's whisker spans its 95% interval: 10/10 is [72%, 100%].
    first = drawn.points[0]
    assert first.y_high == first.y and first.y_low is not None and first.y_low > first.y


def test_a_cell_with_nothing_measured_has_no_rate_and_no_baseline(tmp_path: Path) -> None:
    cell = ("judge/tone", "v1")
    write_run(tmp_path, "20240101-000001-aaaaaa", T0, {cell: ["void", "void"]})
    write_run(tmp_path, "20240101-000002-aaaaaa", T0 + 1, {cell: ["passed", "void"]})
    write_run(tmp_path, "20240101-000003-aaaaaa", T0 + 2, {cell: ["failed", "void"]})
    data = FolderViewData(tmp_path)
    history = data.cell_history(*cell)
    assert [p.pass_rate for p in history] == [None, 1.0, 0.0]
    drawn = chart(history, "20240101-000003-aaaaaa")
    assert [p.measured for p in drawn.points] == [False, True, True]
    assert drawn.line.count(",") == 2  # the line joins the two measured runs only
    deltas = data.baseline_deltas("20240101-000003-aaaaaa")
    assert deltas[cell].baseline_run_id == "20240101-000002-aaaaaa"
    assert deltas[cell].delta == -1.0 and not deltas[cell].regressed  # 1/1 → 0/1 proves nothing
    cells = data.run("20240101-000001-aaaaaa").cells  # type: ignore[union-attr]
    assert cells[0].has_void and not cells[0].failing and cells[0].summary.pass_rate is None


def test_a_finished_run_is_read_once_and_read_again_when_its_files_change(tmp_path: Path) -> None:
    cell = ("a", "v1")
    run_dir = write_run(tmp_path, "20240101-000000-aaaaaa", T0, {cell: ["passed"]})
    data = FolderViewData(tmp_path)
    first = data.run("20240101-000000-aaaaaa")
    again = data.run("20240101-000000-aaaaaa")
    assert first is not None and again is not None
    assert again.cells is first.cells and again.record is first.record  # the cached reading

    writer = RunWriter(run_dir, resume=True)
    writer.write_trial(TrialResult("a", "v1", 1, "failed", reason="no"), [])
    writer.close()
    grown = data.run("20240101-000000-aaaaaa")
    assert grown is not None and grown.cells is not first.cells
    assert grown.cells[0].verdicts == ("passed", "failed")
    assert grown.cells[0].flaky and grown.cells[0].failing


def test_a_running_run_is_summed_from_its_lines_and_a_dead_one_reads_as_crashed(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "20240101-000000-aaaaaa", T0, {("a", "v1"): ["passed", "failed", "passed"]},
                        status="running", summaries=False)
    record = json.loads((run_dir / "run.json").read_text())
    record["owner"] = {"pid": 2**22 + 17, "started": 1, "host": None}
    (run_dir / "run.json").write_text(json.dumps(record))
    (row,) = FolderViewData(tmp_path).runs()
    assert row.status == "crashed"
    assert row.totals["trials"] == 3 and row.totals["passed"] == 2 and row.pass_rate == 2 / 3
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running", "the view writes nothing"


def test_a_trial_is_read_from_its_line_and_its_events_from_their_byte_range(tmp_path: Path) -> None:
    write_run(tmp_path, "20240101-000000-aaaaaa", T0, {("a", "v1"): ["passed", "failed"], ("b", "v1"): ["passed"]})
    data = FolderViewData(tmp_path)
    trial = data.trial("20240101-000000-aaaaaa", "a", "v1", 1)
    assert trial is not None
    assert trial.result.verdict == "failed" and trial.result.assertions[0].actual == "reply 1"
    assert [e.data["text"] for e in trial.events] == ["reply 1"]
    assert trial.cell_trials == 2 and trial.problems == []
    assert data.trial("20240101-000000-aaaaaa", "a", "v1", 2) is None
    assert data.trial("20240101-000000-aaaaaa", "a", "other", 0) is None
    assert data.trial("../20240101-000000-aaaaaa", "a", "v1", 0) is None
    assert data.run("..") is None and data.run("") is None
