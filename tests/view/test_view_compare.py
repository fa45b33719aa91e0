"""The compare page in Chromium over real runs: two runs picked in the runs list, the cells
side by side with their paired statuses, a cell's trials from both runs, agent text as text."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from project_support import Project, build_project
from view_support import view_server

AGENT = """
import os


async def agent(turn):
    if os.environ.get("MOOD") == "evil":
        return "<script>document.title='pwned'</script> | nope"
    return "ok " + turn.input
"""

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.moody:agent", trials=6, timeout=20)
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=["alpha", "beta"])
async def test(t, row):
    await t.send(row)
    t.check(t.reply, includes("ok"))
"""

OTHER = """
from anpord import define_eval
from anpord.expect import includes


@define_eval
async def lone(t):
    await t.send("hi")
    t.check(t.reply, includes("ok"))
"""


def project(folder: Path) -> Project:
    return build_project(folder, {"agents/moody.py": AGENT, "evals/greet.eval.py": EVAL}, config=CONFIG)


def run_ids(p: Project) -> list[str]:
    """The project's runs, oldest first: by start time (two runs may start in the same second,
    when their ids' order is their random suffixes')."""
    runs = [d for d in (p.folder / ".anpord" / "runs").iterdir() if (d / "run.json").is_file()]
    started = {d.name: json.loads((d / "run.json").read_text()).get("started_at") or 0.0 for d in runs}
    return sorted(started, key=lambda name: (started[name], name))


def test_compare_two_runs_in_chromium(tmp_path: Path, browser: Any) -> None:
    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    base, cand = run_ids(p)
    with view_server(p.folder) as server:
        page = browser.new_page()
        page.goto(server.url + "/")
        page.check(f"input[name=base][value='{base}']")
        page.check(f"input[name=cand][value='{cand}']")
        page.click("button.compare-go")
        page.wait_for_selector("table.compare")
        assert f"base={base}" in page.url and f"cand={cand}" in page.url
        rows = page.locator("tr.compare-row")
        assert rows.count() == 2
        assert {rows.nth(i).get_attribute("data-status") for i in range(2)} == {"regressed"}
        assert "p = " in rows.nth(0).locator("td.why").inner_text()
        assert "6/6 100%" in rows.nth(0).inner_text() and "0/6 0%" in rows.nth(0).inner_text()
        change = page.locator("tr.variant-change")
        assert change.count() == 1 and change.get_attribute("data-status") == "regressed"
        assert "over 2 shared cases" in change.inner_text()
        # the filter: none unchanged
        page.check("input[name=status][value=unchanged]")
        page.wait_for_selector("p.summary-line:has-text('0 cells')")
        assert page.locator("tr.compare-row").count() == 0
        page.go_back()
        page.wait_for_selector("tr.compare-row")
        # a cell's trials side by side; the agent's <script> is text
        page.locator("tr.compare-row a").first.click()
        page.wait_for_selector("section.side-candidate pre.answer")
        answer = page.locator("section.side-candidate pre.answer").inner_text()
        assert "<script>document.title='pwned'</script> | nope" in answer
        assert page.locator("section.side-candidate script").count() == 0
        assert "pwned" not in page.title()
        assert page.locator("section.side-base pre.answer").inner_text().startswith("ok ")
        assert page.locator("pre.diff .d-del").count() == 1 and page.locator("pre.diff .d-add").count() == 1
        checks = page.locator("section.side-candidate table.checks").inner_text()
        assert "failed" in checks and "ok" in checks
        # compare with baseline, from the candidate's run page
        page.goto(server.url + f"/runs/{cand}")
        page.click("a.compare-baseline")
        page.wait_for_selector("table.compare")
        assert f"base={base}" in page.url
        page.close()

        # unknown runs are 404; the message names the run
        status, _, body = server.get(f"/compare?base={base}&cand=nope")
        assert status == 404 and "run nope" in body
        status, _, _ = server.get("/compare")
        assert status == 404


def test_no_case_in_common_and_a_crashed_run(tmp_path: Path, browser: Any) -> None:
    p = project(tmp_path / "p")
    assert p.run().code == 0
    shutil.move(str(p.folder / "evals" / "greet.eval.py"), str(tmp_path / "greet.eval.py"))
    p.write({"evals/lone.eval.py": OTHER})
    assert p.run().code == 0
    base, cand = run_ids(p)
    # the candidate's process died: its record says it was running
    record = p.folder / ".anpord" / "runs" / cand / "run.json"
    record.write_text(re.sub(r'"status": "finished"', '"status": "crashed"', record.read_text()))
    with view_server(p.folder) as server:
        page = browser.new_page()
        page.goto(server.url + f"/compare?base={base}&cand={cand}")
        assert "no case in common" in page.locator("p.no-common").inner_text()
        banner = page.locator("p.banner")
        assert banner.count() == 1 and f"run {cand} is crashed" in banner.inner_text()
        page.close()


def test_a_variant_on_another_model_is_incomparable(tmp_path: Path, browser: Any) -> None:
    import json

    p = project(tmp_path / "p")
    assert p.run("--trials", "1").code == 0
    assert p.run("--trials", "1").code == 0
    base, cand = run_ids(p)
    record_path = p.folder / ".anpord" / "runs" / cand / "run.json"
    record = json.loads(record_path.read_text())
    record["variants"][0]["model"] = "other-model"  # as if the variant had been pointed elsewhere
    record_path.write_text(json.dumps(record))
    with view_server(p.folder) as server:
        page = browser.new_page()
        page.goto(server.url + f"/compare?base={base}&cand={cand}")
        rows = page.locator("tr.compare-row")
        assert rows.count() == 2
        for i in range(2):
            assert rows.nth(i).get_attribute("data-status") == "incomparable"
            assert "→ other-model" in rows.nth(i).locator("td.why").inner_text()
        page.close()
