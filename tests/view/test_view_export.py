"""``anpord view --export DIR``: static HTML over real runs, opened from disk in Chromium with
file:// URLs — runs, grid, trial and compare pages, every link resolving, agent text as text."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from project_support import anpord_command, run_env
from test_view_compare import project, run_ids


def export(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), "view", "--export", *args], cwd=folder, env=run_env(),
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)


def test_export_opens_from_disk(tmp_path: Path, browser: Any) -> None:
    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    base, cand = run_ids(p)
    out = tmp_path / "site"
    done = export(p.folder, str(out))
    assert done.returncode == 0, done.stderr
    assert re.match(r"anpord view: wrote \d+ pages \([\d.]+ MB\) to ", done.stdout), done.stdout

    # No page points outside the folder, and every relative link names a file that is there.
    pages = list(out.rglob("*.html"))
    texts = {page: page.read_text() for page in pages}
    ids = {page: set(re.findall(r'\bid="([^"]*)"', html)) for page, html in texts.items()}
    # 24 trials, each a section of its cell's page; plus grids, cells, compare pages
    assert sum(html.count('<section class="trial" id="t') for html in texts.values()) == 24
    assert len(pages) > 8
    for page, html in texts.items():
        assert "<script>document.title" not in html, page
        assert len(ids[page]) == len(re.findall(r'\bid="', html)), page  # no id twice on a page
        for link in re.findall(r'(?:href|src|action)="([^"]*)"', html):
            assert not re.match(r"(https?:)?//", link) and not link.startswith("/"), (page, link)
            target, _, anchor = link.partition("#")
            if target and not target.startswith("file:"):
                assert (page.parent / target).is_file(), (page, link)
                if anchor:  # a trial's section on its cell's page
                    assert anchor in ids[(page.parent / target).resolve()], (page, link)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "index.html").as_uri())
    assert page.locator("tr.run").count() == 2
    assert page.locator("input[type=radio]").count() == 0  # picking runs needs the server
    page.click(f"tr.run[data-run='{cand}'] a")
    page.wait_for_selector("table.grid")
    assert page.evaluate("getComputedStyle(document.body).fontFamily") != ""  # the stylesheet loaded
    page.click("a.compare-baseline")
    page.wait_for_selector("table.compare")
    assert {page.locator("tr.compare-row").nth(i).get_attribute("data-status") for i in range(2)} == {"regressed"}
    page.locator("tr.compare-row a").first.click()
    page.wait_for_selector("section.side-candidate pre.answer")
    assert "<script>document.title='pwned'</script> | nope" in page.locator("section.side-candidate pre.answer").inner_text()
    page.locator("section.side-candidate a.dot").first.click()  # the candidate's trial, on its cell's page
    page.wait_for_selector("section.trial ol.conversation")
    anchor = page.url.partition("#")[2]
    assert re.fullmatch(r"t\d+", anchor), page.url
    shown = page.locator(f"section.trial[id='{anchor}'] ol.conversation")
    assert "<script>document.title='pwned'</script>" in shown.inner_text()
    assert "pwned" not in page.title() and page.url.startswith("file://")
    assert not errors, errors
    page.close()

    # A folder with something in it needs --force, said in one line.
    refused = export(p.folder, str(out))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [f"anpord view: --export: {out} is not empty (--force replaces what is in it)"]
    (out / "stale.html").write_text("old")
    again = export(p.folder, str(out), "--force")
    assert again.returncode == 0, again.stderr
    assert not (out / "stale.html").exists() and (out / "index.html").is_file()
    lone = subprocess.run([*anpord_command(), "view", "--force"], cwd=p.folder, env=run_env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert lone.returncode == 2 and "--force goes with --export DIR" in lone.stderr


def test_forked_workers_write_the_same_site_as_one_process(tmp_path: Path) -> None:
    """The cell pages written by forked workers (as a big run's export does) are byte for byte
    those one process writes: every trial in its section, every page there."""
    from anpord.view import StoreViewData
    from anpord.view._export import export_view

    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    sites = {}
    for workers in (1, 2):
        out = tmp_path / f"site-{workers}"
        report = export_view(StoreViewData(p.folder), out, title="p", project_folder=str(p.folder),
                             workers=workers)
        files = {f.relative_to(out): f.read_bytes() for f in out.rglob("*") if f.is_file()}
        assert report.pages == sum(1 for f in files if f.suffix == ".html")
        assert report.bytes == sum(len(b) for f, b in files.items() if f.suffix == ".html")
        sites[workers] = files
    assert sites[1] == sites[2]
    cells = [b for f, b in sites[2].items() if f.name.startswith("cell-")]
    assert len(cells) == 4 and sum(b.count(b'<section class="trial" id="t') for b in cells) == 24
    assert all(b.rstrip().endswith(b"</html>") for b in cells)
