"""A trial's events as the view reads them: all at once when every line reads, one by one when
one does not (which is said, and the rest shown); and a settled reading (as the static export
does) that keeps a run's files open and reads the same."""

from __future__ import annotations

from pathlib import Path

from anpord.events import Event
from anpord.results import CellRecord, RunRecord, TrialResult, summarize_cell
from anpord.results.artifacts import RunWriter
from anpord.view import FolderViewData

T0 = 1_700_000_000.0
RUN = "20240101-000000-aaaaaa"


def _run(project: Path, trials: int = 2) -> Path:
    run_dir = project / ".anpord" / "runs" / RUN
    writer = RunWriter(run_dir)
    record = RunRecord(RUN, "finished", T0, cells=[CellRecord("c", "v", trials, 30.0)])
    results = []
    for i in range(trials):
        r = TrialResult("c", "v", i, "passed", started_at=T0)
        writer.write_trial(r, [Event("message.completed", {"role": "user", "text": f"hi {i}"}, T0),
                               Event("note", {"level": "info", "text": f"<b>{i}</b>"}, T0 + 0.1),
                               Event("message.completed", {"role": "assistant", "text": f"reply {i}"}, T0 + 0.2)])
        results.append(r)
    record.cells[0].summary = summarize_cell(results)
    writer.write_run(record)
    writer.close()
    return run_dir


def _replace_line(path: Path, index: int, make: bytes) -> None:
    """Line ``index`` of ``path`` replaced by ``make`` padded to its length: the byte ranges hold."""
    lines = path.read_bytes().split(b"\n")
    assert len(make) <= len(lines[index])
    lines[index] = make.ljust(len(lines[index]))
    path.write_bytes(b"\n".join(lines))


def test_events_read_at_once_and_a_bad_line_is_said_and_skipped(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    data = FolderViewData(tmp_path)
    trial = data.trial(RUN, "c", "v", 0)
    assert trial is not None and not trial.problems
    assert [e.data["text"] for e in trial.events] == ["hi 0", "<b>0</b>", "reply 0"]

    _replace_line(run_dir / "events.ndjson", 1, b"{not json")  # trial 0's second event
    _replace_line(run_dir / "events.ndjson", 3, b"5")  # trial 1's first: JSON, but not an event
    first = FolderViewData(tmp_path).trial(RUN, "c", "v", 0)
    assert first is not None
    assert [e.data["text"] for e in first.events] == ["hi 0", "reply 0"]
    assert len(first.problems) == 1 and first.problems[0].startswith("event 2 of this trial does not read")
    second = FolderViewData(tmp_path).trial(RUN, "c", "v", 1)
    assert second is not None
    assert [e.data["text"] for e in second.events] == ["<b>1</b>", "reply 1"]
    assert len(second.problems) == 1 and second.problems[0].startswith("event 1 of this trial does not read")


def test_a_settled_reading_keeps_the_files_open_and_reads_the_same(tmp_path: Path) -> None:
    _run(tmp_path, trials=3)
    plain = FolderViewData(tmp_path)
    settled = FolderViewData(tmp_path)
    assert settled.run(RUN) is not None
    settled.settle()
    for i in (0, 2, 1, 0):
        a, b = plain.trial(RUN, "c", "v", i), settled.trial(RUN, "c", "v", i)
        assert a is not None and b is not None
        assert (a.result, list(a.events), a.problems) == (b.result, list(b.events), b.problems)
    assert len(settled._open_files) == 2  # results.jsonl and events.ndjson, each opened once
    settled.close()
    assert not settled._open_files
