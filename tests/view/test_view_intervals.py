"""The view shows every pass rate with its 95% interval: the run's header (each variant's mean of
per-case rates), the grid's cells and variant columns, and a whisker on each point of a cell's
chart — in a real browser over real runs of ``anpord eval``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from project_support import Project, eval_file
from view_support import Pages, cell_path, view_server

VARIANT = "python:agents.kit:agent/default"

FILES = {
    "evals/weather/sunny.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("weather Brooklyn")
            t.check(t.reply, includes("Sunny"))
        """
    ),
    "evals/weather/rain.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("weather Paris")
            t.check(t.reply, includes("Rain"))
        """
    ),
}


def test_rates_carry_intervals_in_the_header_grid_and_chart(
    make_project: Callable[..., Project], browser: Any, tmp_path: Any
) -> None:
    project = make_project(FILES)
    runs = []
    for _ in range(2):
        run = project.run("--trials", "3")
        assert run.run_dir is not None, run.output
        runs.append(run.run_dir.name)
    with view_server(project.folder) as server:
        pages = Pages(browser, server.url, tmp_path / "shots")
        try:
            page = pages.page
            pages.visit(f"/runs/{runs[-1]}", "grid with intervals")
            # The header: sunny 3/3 and rain 0/3 average to 50% over two cases.
            header = page.locator("dl.estimates div").first.inner_text()
            assert VARIANT in header and "50%" in header and "mean over 2 cases" in header
            assert re.search(r"\[\d+–\d+%\]", header), header
            sunny = page.locator('tr[data-case="weather/sunny"] td.cell .ci').inner_text()
            rain = page.locator('tr[data-case="weather/rain"] td.cell .ci').inner_text()
            assert (sunny, rain) == ("[44–100%]", "[0–56%]")  # Wilson for 3/3 and 0/3
            assert re.search(r"50% \[\d+–\d+%\]", page.locator("th.variant .sub").inner_text())

            pages.visit(cell_path(runs[-1], "weather/sunny", VARIANT), "cell chart whiskers")
            whiskers = page.locator("svg.history line.whisker")
            assert whiskers.count() == 2  # one per run that measured the cell
            ends = whiskers.evaluate_all(
                "ws => ws.map(w => [Number(w.getAttribute('y1')), Number(w.getAttribute('y2'))])"
            )
            point_y = page.locator("svg.history circle.point").evaluate_all(
                "ps => ps.map(p => Number(p.getAttribute('cy')))"
            )
            for (low, high), y in zip(ends, point_y):
                assert high == y < low  # 100% at the top, the lower end 44% further down
            assert "[44–100%]" in page.locator("dl.meta").inner_text()
            assert not pages.errors, pages.errors
        finally:
            pages.close()


def test_the_flaky_badge_and_filter_use_the_cells_history(
    make_project: Callable[..., Project], browser: Any, tmp_path: Any
) -> None:
    flip = eval_file(
        """
        COUNTER = Path(__file__).parent / "flip.count"

        @define_eval
        async def test(t):
            await t.send(f"flip {COUNTER}")
            t.check(t.reply, equals("pass"))
        """
    )
    project = make_project({**FILES, "evals/flip.eval.py": flip})
    runs = []
    for _ in range(2):  # one trial a run: it passes in one run and fails in the other
        run = project.run("--trials", "1")
        assert run.run_dir is not None, run.output
        runs.append(run.run_dir.name)
    with view_server(project.folder) as server:
        pages = Pages(browser, server.url, tmp_path / "shots")
        try:
            pages.visit(f"/runs/{runs[-1]}?filter=flaky", "grid flaky from history")
            cases = pages.page.locator("table.grid tbody tr").evaluate_all(
                "rows => rows.map(r => r.dataset.case)"
            )
            assert cases == ["flip"]  # deterministic within the run, flaky across runs
            assert pages.page.locator('tr[data-case="flip"] .flag.flaky.history').count() == 1
            assert not pages.errors, pages.errors
        finally:
            pages.close()
