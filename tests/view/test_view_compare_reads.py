"""What the compare page reads: a finished run's cell summaries from its ``run.json`` (not its
trials), the trials of a run that has no summaries yet, and the run folders when the store has
lost a run's row."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from test_view_compare import project, run_ids
from view_support import view_server


class _TrialsOnly:
    """The same data without ``run_summary``: the compare page pairs the runs' trials."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name == "run_summary":
            raise AttributeError(name)
        return getattr(self._data, name)


def _table(ctx: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r.case_id, r.variant, r.status, r.why, r.base.summary if r.base else None,
             r.cand.summary if r.cand else None) for r in ctx["rows"]]


def test_summaries_pair_as_the_trials_do_and_a_running_run_is_read_from_its_trials(tmp_path: Path) -> None:
    from anpord.view import FolderViewData
    from anpord.view._compare import compare_page

    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    base, cand = run_ids(p)
    data = FolderViewData(p.folder)
    summed = compare_page(data, base, cand)
    assert summed is not None
    assert all(r.cand.verdicts == () for r in summed["rows"])  # no trial was read for it
    from_trials = compare_page(_TrialsOnly(FolderViewData(p.folder)), base, cand)
    assert from_trials is not None and from_trials["rows"][0].cand.verdicts  # its trials were read
    assert _table(summed) == _table(from_trials)
    assert [r.status for r in summed["rows"]] == ["regressed", "regressed"]
    assert summed["counts"] == from_trials["counts"] and summed["shared"] == from_trials["shared"] == 2

    # A run whose run.json has no summaries (still running, say): its trials are what it has.
    record_path = p.folder / ".anpord" / "runs" / cand / "run.json"
    record = json.loads(record_path.read_text())
    for cell in record["cells"]:
        cell["summary"] = None
    record_path.write_text(json.dumps(record))
    again = compare_page(FolderViewData(p.folder), base, cand)
    assert again is not None and _table(again) == _table(from_trials)


def test_a_comparison_does_not_wait_for_a_run_being_read(tmp_path: Path) -> None:
    """While another request holds the lock around reading a run's trials (the server's warm-up
    reading a big run), the compare page is still made: it reads only the runs' run.json."""
    from anpord.view import FolderViewData
    from anpord.view._compare import compare_page

    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    base, cand = run_ids(p)
    data = FolderViewData(p.folder)
    held, release = threading.Event(), threading.Event()

    def reading() -> None:
        with data._lock:  # as run() holds it while it reads a run's results.jsonl
            held.set()
            release.wait(60)

    reader = threading.Thread(target=reading)
    reader.start()
    try:
        assert held.wait(30)
        done: list[Any] = []
        asker = threading.Thread(target=lambda: done.append(compare_page(data, base, cand)))
        asker.start()
        asker.join(60)  # blocked on the lock, it would wait until the reader lets go
        assert done and done[0] is not None and not asker.is_alive()
        assert [r.status for r in done[0]["rows"]] == ["regressed", "regressed"]
    finally:
        release.set()
        reader.join()


def test_a_run_the_store_lost_is_compared_from_its_folder(tmp_path: Path) -> None:
    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    base, cand = run_ids(p)
    db = sqlite3.connect(p.folder / ".anpord" / "anpord.db")
    with db:
        pk = db.execute("SELECT id FROM runs WHERE run_id = ?", (cand,)).fetchone()[0]
        for table in ("trials", "cells"):
            db.execute(f"DELETE FROM {table} WHERE run_pk = ?", (pk,))
        db.execute("DELETE FROM runs WHERE id = ?", (pk,))
    db.close()
    with view_server(p.folder) as server:
        status, _, body = server.get(f"/compare?base={base}&cand={cand}")
        assert status == 200, body
        assert len(re.findall(r'<tr class="compare-row" data-status="regressed"', body)) == 2
        status, _, body = server.get(f"/runs/{cand}")
        assert status == 200 and "compare-baseline" in body
