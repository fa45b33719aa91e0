"""The view over runs that went wrong on disk — a torn line, a corrupt ``run.json``, a run folder
deleted while the view runs, a dead run still marked running — and over a 1 MB tool output, which
is shown cut with a "show all" control."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from project_support import Project, eval_file
from view_support import Pages, copy_run, trial_path, view_server

VARIANT = "python:agents.big:agent/default"
BIG = 1_000_000

CONFIG = """\
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.big:agent", timeout=30)
"""

FILES = {
    "agents/big.py": f"""
        async def agent(turn):
            out = await turn.call_tool("dump", {{"n": {BIG}}}, lambda i: "x" * i["n"] + "END")
            return f"dumped {{len(out)}} characters"
        """,
    "evals/big.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("dump")
            t.called_tool("dump")
            t.check(t.reply, includes("dumped"))
        """
    ),
    "evals/small.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("dump")
            t.check(t.reply, includes("never"))
        """
    ),
}


@pytest.mark.slow
def test_a_megabyte_tool_output_is_cut_and_show_all_brings_it_whole(
    make_project: Callable[..., Project], browser: Any, tmp_path: Path
) -> None:
    project = make_project(FILES, config=CONFIG, agents=False)
    run = project.run()
    assert run.run_dir is not None and run.verdicts() == {"big": "passed", "small": "failed"}, run.output
    with view_server(project.folder) as server:
        pages = Pages(browser, server.url, tmp_path / "screenshots")
        response = pages.visit(trial_path(run.run_dir.name, "big", VARIANT, 0), "big output cut")
        assert response.status == 200
        body_size = len(response.body())
        assert body_size < 200_000, f"the page carried {body_size} bytes for a cut value"
        output = pages.page.locator("li.tool .cut-wrap pre").first
        shown = output.inner_text()
        assert 1000 < len(shown) <= 4000 and set(shown) == {"x"}
        button = pages.page.locator("li.tool button.show-all").first
        assert "show all (1.0 M characters" in button.inner_text()
        button.click()
        pages.page.wait_for_function(
            "el => !el.hasAttribute('data-cut')", arg=output.element_handle(), timeout=60_000
        )
        pages.shot("big output shown whole")
        full = output.evaluate("el => el.textContent")
        assert len(full) == BIG + 3 and full.endswith("END")
        assert pages.page.locator("li.tool button.show-all").count() == 0
        assert pages.dialogs == [] and not pages.errors, pages.errors
        pages.close()


@pytest.mark.slow
def test_broken_runs_show_with_a_note_and_never_break_the_view(
    make_project: Callable[..., Project], browser: Any, tmp_path: Path
) -> None:
    project = make_project(FILES, config=CONFIG, agents=False)
    run = project.run("small")
    assert run.run_dir is not None, run.output
    good = run.run_dir
    torn = copy_run(good, "20000101-000001-aaaaaa")
    with open(torn / "results.jsonl", "ab") as f:
        f.write(b'{"v":1,"case_id":"small","variant":"x","tri')  # a write cut by a kill
    corrupt = copy_run(good, "20000101-000002-bbbbbb")
    (corrupt / "run.json").write_text('{"format": 1, "run_id": "20000101-000002-bbbbbb", "status": ')
    foreign = copy_run(good, "20000101-000003-cccccc")
    (foreign / "run.json").write_text(json.dumps({"format": 1, "run_id": "x", "status": "exploded", "started_at": 0}))
    dead = copy_run(good, "20000101-000004-dddddd")
    record = json.loads((dead / "run.json").read_text())
    record.update(status="running", owner={"pid": 2**22 + 17, "started": 1, "host": None})
    (dead / "run.json").write_text(json.dumps(record))
    doomed = copy_run(good, "20000101-000005-eeeeee")

    with view_server(project.folder) as server:
        pages = Pages(browser, server.url, tmp_path / "screenshots")
        pages.visit("/", "runs with broken ones")
        rows = {r["run"]: r for r in pages.page.locator("tr.run").evaluate_all(
            "rows => rows.map(r => ({run: r.dataset.run, status: r.querySelector('.badge').textContent,"
            " text: r.textContent}))")}
        assert set(rows) == {good.name, torn.name, corrupt.name, foreign.name, dead.name, doomed.name}
        assert rows[corrupt.name]["status"] == "unreadable"
        assert "run.json is not JSON" in rows[corrupt.name]["text"]
        assert rows[foreign.name]["status"] == "unreadable"
        assert "run.json: unknown status 'exploded'" in rows[foreign.name]["text"]
        assert "run.json: run.json" not in rows[foreign.name]["text"]
        assert rows[dead.name]["status"] == "crashed"
        assert rows[torn.name]["status"] == "finished"

        response = pages.visit(f"/runs/{torn.name}", "torn run")
        assert response.status == 200
        note = pages.page.locator(".problems").inner_text()
        assert "the last line is torn" in note
        assert pages.page.locator('tr[data-case="small"] a.dot.v-failed').count() == 1

        response = pages.visit(f"/runs/{corrupt.name}", "corrupt run")
        assert response.status == 200
        assert "This run cannot be read" in pages.page.locator("main").inner_text()

        pages.visit(f"/runs/{doomed.name}", "doomed run before")
        assert pages.page.locator('tr[data-case="small"]').count() == 1
        shutil.rmtree(doomed)  # deleted by hand while the view runs
        pages.visit("/", "runs after a deletion")
        listed = pages.page.locator("tr.run").evaluate_all("rows => rows.map(r => r.dataset.run)")
        assert doomed.name not in listed and good.name in listed
        response = pages.visit(f"/runs/{doomed.name}", "deleted run")
        assert response.status == 404
        assert server.get(trial_path(doomed.name, "small", VARIANT, 0))[0] == 404
        assert not [e for e in pages.errors if "404" not in e], pages.errors
        pages.close()
