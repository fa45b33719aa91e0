"""The view in a browser, over real runs of ``anpord eval``: a team member finds a failing trial
and sees what it checked, the agent's injected markup stays text, a cell's history is a chart."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from project_support import Project, eval_file
from view_support import Pages, ViewServer, cell_path, trial_path, view_server

# A real browser through the view, page by page.
pytestmark = pytest.mark.slow

VARIANT = "python:agents.kit:agent/default"  # the label of the config's only variant
INJECTED = "<script>alert(1)</script><img src=x onerror=alert(2)>"

FILES = {
    "evals/weather/sunny.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("weather Brooklyn")
            t.called_tool("get_weather")
            t.check(t.reply, includes("Sunny"))
        """
    ),
    "evals/weather/rain.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("weather Paris")
            t.check(t.reply, includes("Rain")).label("says rain")
        """
    ),
    "evals/inject.eval.py": eval_file(
        f"""
        @define_eval
        async def test(t):
            await t.send({INJECTED!r})
            t.check(t.reply, includes("echo"))
        """
    ),
    "evals/flaky.eval.py": eval_file(
        """
        COUNTER = Path(__file__).parent / "flip.count"

        @define_eval
        async def test(t):
            await t.send(f"flip {COUNTER}")
            t.check(t.reply, equals("pass"))
        """
    ),
}


@dataclass
class Flow:
    project: Project
    run_ids: list[str]
    server: ViewServer


@pytest.fixture(scope="module")
def flow(make_module_project: Callable[..., Project]) -> Iterator[Flow]:
    project = make_module_project(FILES)
    run_ids = []
    for _ in range(3):
        run = project.run("--trials", "2")
        assert run.code == 1 and run.run_dir is not None, run.output  # weather/rain fails
        run_ids.append(run.run_dir.name)
    with view_server(project.folder) as server:
        yield Flow(project, run_ids, server)


@pytest.fixture
def pages(browser: Any, flow: Flow, tmp_path: Path) -> Iterator[Pages]:
    p = Pages(browser, flow.server.url, tmp_path / "screenshots")
    yield p
    p.close()


def grid_cases(pages: Pages) -> list[str]:
    return pages.page.locator("table.grid tbody tr").evaluate_all("rows => rows.map(r => r.dataset.case)")


def test_find_a_failing_trial_from_the_runs_list_and_see_what_it_expected(flow: Flow, pages: Pages) -> None:
    page = pages.page
    response = pages.visit("/", "runs list")
    assert response.status == 200
    listed = page.locator("tr.run").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert listed == list(reversed(flow.run_ids)), "newest run first"
    newest = page.locator(f'tr.run[data-run="{flow.run_ids[-1]}"]')
    assert newest.locator(".badge").inner_text() == "finished"
    # 4 cases × 2 trials: sunny 2, inject 2, flaky 1 passed; rain 2 and flaky 1 failed.
    cells = newest.locator("td.num").all_inner_texts()
    assert cells[:6] == ["8", "5", "3", "0", "0", "0"], cells
    assert cells[6] == "62%"  # 5 of 8

    page.click(f"text={flow.run_ids[-1]}")
    page.wait_for_url(re.compile(rf"/runs/{flow.run_ids[-1]}$"))
    pages.shot("grid")
    assert sorted(grid_cases(pages)) == ["flaky", "inject", "weather/rain", "weather/sunny"]

    page.check("input[name=filter][value=failing]")  # applies at once
    page.wait_for_url(re.compile(r"filter=failing"))
    pages.shot("grid failing")
    assert sorted(grid_cases(pages)) == ["flaky", "weather/rain"]
    assert page.locator("label.f-failing .n").inner_text() == "2"

    row = page.locator('tr[data-case="weather/rain"]')
    assert row.locator("a.rate").inner_text() == "0%"
    row.locator("a.dot.v-failed").first.click()
    page.wait_for_url(re.compile(r"/trials/weather/rain\?"))
    pages.shot("failing trial")
    assert page.locator("h1 .badge").inner_text() == "failed"
    check = page.locator('.assertion[data-name="says rain"]')
    assert check.locator(".badge").inner_text() == "failed"
    assert check.locator(".a-kind").inner_text() == "gate"
    assert check.locator(".expected pre").inner_text() == 'includes("Rain")'
    assert check.locator(".actual pre").inner_text() == "It is Sunny in Paris."
    # The conversation: the user's message, the tool call paired with its result, the answer.
    convo = page.locator("ol.conversation > li")
    assert convo.nth(0).inner_text().endswith("weather Paris")
    tool = page.locator("li.tool")
    assert tool.locator(".tool-name").inner_text() == "get_weather"
    assert '"city": "Paris"' in tool.locator("pre").nth(0).inner_text()
    assert '"forecast": "Sunny"' in tool.locator("pre").nth(1).inner_text()
    assert "It is Sunny in Paris." in page.locator("li.msg.role-assistant").inner_text()
    types = page.locator("table.timeline td.type").all_inner_texts()
    assert types.index("tool.called") < types.index("tool.result") < len(types)
    assert all(re.fullmatch(r"\+\d+\.\d{3}s", t) for t in page.locator("table.timeline td.num").all_inner_texts())

    page.go_back()
    page.wait_for_url(re.compile(r"filter=failing"))
    assert sorted(grid_cases(pages)) == ["flaky", "weather/rain"], "back returns to the filtered grid"
    assert page.is_checked("input[name=filter][value=failing]")
    assert not pages.errors, pages.errors


def test_flaky_filter_and_search_narrow_the_grid(flow: Flow, pages: Pages) -> None:
    run_id = flow.run_ids[-1]
    pages.visit(f"/runs/{run_id}?filter=flaky", "grid flaky")
    assert grid_cases(pages) == ["flaky"]
    assert pages.page.locator('tr[data-case="flaky"] .flag.flaky').count() == 1
    pages.visit(f"/runs/{run_id}", "grid")
    pages.page.fill("input[name=q]", "WEATHER/")
    pages.page.press("input[name=q]", "Enter")
    pages.page.wait_for_url(re.compile(r"q=WEATHER"))
    pages.shot("grid search")
    assert sorted(grid_cases(pages)) == ["weather/rain", "weather/sunny"]
    pages.visit(f"/runs/{run_id}?filter=void", "grid void")
    assert grid_cases(pages) == []
    assert "No case matches" in pages.page.locator(".summary-line").inner_text()


def test_markup_in_an_agent_answer_is_shown_as_text_and_never_runs(flow: Flow, pages: Pages) -> None:
    variant = VARIANT
    response = pages.visit(trial_path(flow.run_ids[-1], "inject", variant, 0), "injected answer")
    assert response.status == 200, response.status
    pages.page.wait_for_timeout(300)  # an injected handler would have fired by now
    assert pages.dialogs == []
    answer = pages.page.locator("li.msg.role-assistant pre").inner_text()
    assert answer == f"echo: {INJECTED}"
    assert pages.page.locator("li.msg.role-user pre").inner_text() == INJECTED
    assert pages.page.locator("main script, main img").count() == 0
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_a_cells_chart_has_one_point_per_run(flow: Flow, pages: Pages) -> None:
    variant = VARIANT
    pages.visit(f"/runs/{flow.run_ids[-1]}", "grid")
    pages.page.locator('tr[data-case="weather/sunny"] a.rate').click()
    pages.page.wait_for_url(re.compile(r"/cells/weather/sunny\?"))
    pages.shot("cell chart")
    points = pages.page.locator("svg.history circle.point")
    assert points.count() == 3
    assert points.evaluate_all("ps => ps.map(p => p.dataset.run)") == flow.run_ids
    assert points.evaluate_all("ps => ps.map(p => p.dataset.rate)") == ["1.0", "1.0", "1.0"]
    assert pages.page.locator("svg.history circle.point.current").get_attribute("data-run") == flow.run_ids[-1]
    # The flaky cell alternates pass/fail per call: one pass and one fail in every run.
    pages.visit(cell_path(flow.run_ids[0], "flaky", variant), "flaky chart")
    rates = pages.page.locator("svg.history circle.point").evaluate_all("ps => ps.map(p => p.dataset.rate)")
    assert rates == ["0.5", "0.5", "0.5"]
    history = pages.page.locator("table.history-table tbody tr").all_inner_texts()
    assert len(history) == 3 and all("50%" in row for row in history)
