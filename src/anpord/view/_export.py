"""``anpord view --export DIR``: the view as static HTML that opens from disk, with no server.

The live view's templates render every page, with the same autoescaping; only the URLs differ:
each page is a file named from what it shows (``pages/run-….html``), linked by relative paths,
and the stylesheet, script and icon are copied beside them, so nothing is fetched from elsewhere.
What needs a server is left out: the filter and search forms, picking two runs, "show all" of a
cut value (the trial's page keeps the first part; the run folder has the whole).

Written: the runs list (``index.html``), each run's grid pages, each cell's page with each of its
trials as a section (``cell-….html#t3``: one file per cell, not per trial), and each run's compare
page against its baseline (the earliest run that measured its cells) with each compared cell's
page. The parent reads every run's cells, deltas and cells' histories first; then a process per
core (forked, so it shares what was read, and never touches the store's connection) renders and
writes the cell pages — each trial read from its run's files kept open, in file order — while the
parent writes the grid and compare pages. Every page loses the templates' indentation.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import re
import shutil
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ._compare import compare_cell_page, compare_page
from ._data import ViewData
from ._pages import CELL_PAGE_TRIALS, GridQuery, cell_page, grid_page, runs_page, trial_page

__all__ = ["ExportError", "ExportReport", "export_view"]

PAGES = "pages"


class ExportError(Exception):
    """Why the export cannot be written (one line)."""


@dataclass(frozen=True)
class ExportReport:
    folder: Path
    pages: int
    bytes: int


@functools.lru_cache(maxsize=1 << 16)  # a cell's name is asked for by every link to it
def _slug(*parts: object) -> str:
    """A file-name-safe, collision-free name for ``parts``: a readable head and a hash."""
    text = "\x00".join(str(p) for p in parts)
    head = re.sub(r"[^A-Za-z0-9._-]+", "_", str(parts[0]))[:40].strip("._") or "x"
    return f"{head}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _names() -> dict[str, Any]:
    def run_url(run_id: str, filters: Collection[str] = (), q: str = "", page: int = 1) -> str:
        return f"run-{_slug(run_id)}" + (f"-p{page}" if page > 1 else "") + ".html"

    def trial_url(run_id: str, case_id: str, variant: str, trial: int, **extra: Any) -> str:
        # A trial is a section of its cell's page (the page of CELL_PAGE_TRIALS that lists it).
        return cell_url(run_id, case_id, variant, page=trial // CELL_PAGE_TRIALS + 1) + f"#t{trial}"

    def cell_url(run_id: str, case_id: str, variant: str, **extra: Any) -> str:
        page = extra.get("page") or 1
        return f"cell-{_slug(case_id, run_id, variant)}" + (f"-p{page}" if page > 1 else "") + ".html"

    def value_url(run_id: str, case_id: str, variant: str, trial: int, at: str) -> str:
        return "#"

    def compare_url(base: str, cand: str, statuses: Collection[str] = ()) -> str:
        return f"compare-{_slug(cand, base)}.html"

    def compare_cell_url(base: str, cand: str, case_id: str, variant: str, bt: int = 0, ct: int = 0) -> str:
        return f"ccell-{_slug(case_id, base, cand, variant)}.html"

    return {"run_url": run_url, "trial_url": trial_url, "cell_url": cell_url, "value_url": value_url,
            "compare_url": compare_url, "compare_cell_url": compare_cell_url}


def _prefixed(names: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {k: (lambda fn: lambda *a, **kw: prefix + fn(*a, **kw))(fn) for k, fn in names.items()}


_PRE = re.compile(r"(<pre\b.*?</pre>)", re.S)
_GAP = re.compile(r">[ \t]*\n\s*<")
_VALUE = re.compile(r'(<pre class="value[^"<>]*">)([^<]*)(</pre>)')


def _unquote(m: re.Match[str]) -> str:
    # A value's text holds no tag: in element text a quote needs no escaping.
    return m.group(1) + m.group(2).replace("&#34;", '"').replace("&#39;", "'") + m.group(3)


def _lean(html: str) -> str:
    """``html`` with the templates' indentation dropped: whitespace between two tags that spans
    a line becomes one newline (it renders the same), except inside ``<pre>``; and the quotes of
    a value's text unescaped (plain text in element content, never in an attribute)."""
    parts = _PRE.split(html)
    for i in range(0, len(parts), 2):
        parts[i] = _GAP.sub(">\n<", parts[i])
    return _VALUE.sub(_unquote, "".join(parts))


class _Snapshot:
    """``data`` read once for the export: the runs, each run's view, deltas and cells' histories
    are asked for once (every page of a run needs them), the rest is passed through."""

    def __init__(self, data: ViewData) -> None:
        self._data = data
        self._runs: Any = None
        self._views: dict[str, Any] = {}
        self._deltas: dict[str, Any] = {}
        self._flaky: Any = None
        self._histories: dict[Any, Any] = {}

    def runs(self) -> Any:
        if self._runs is None:
            self._runs = self._data.runs()
        return self._runs

    def run(self, run_id: str) -> Any:
        if run_id not in self._views:
            self._views[run_id] = self._data.run(run_id)
        return self._views[run_id]

    def baseline_deltas(self, run_id: str) -> Any:
        if run_id not in self._deltas:
            self._deltas[run_id] = self._data.baseline_deltas(run_id)
        return self._deltas[run_id]

    def cell_history(self, case_id: str, variant: str) -> Any:
        key = (case_id, variant)
        if key not in self._histories:
            self._histories[key] = self._data.cell_history(case_id, variant)
        return self._histories[key]

    def read_histories(self, keys: list[Any]) -> None:
        """Every cell's history in ``keys``, read now (a few queries): the workers forked next
        find them here and never use the store's connection, which a forked process must not."""
        prefetch = getattr(self._data, "prefetch_histories", None)
        for at in range(0, len(keys), 500):
            if prefetch is not None:
                prefetch(keys[at : at + 500])
            for key in keys[at : at + 500]:
                self.cell_history(*key)

    def flaky_history(self) -> Any:
        if self._flaky is None:
            fn = getattr(self._data, "flaky_history", None)
            self._flaky = fn() if fn is not None else frozenset()
        return self._flaky

    def __getattr__(self, name: str) -> Any:
        return getattr(self._data, name)


# Where a cell page's trial sections go: rendered in its place, then replaced by them.
_SECTIONS = Markup("<!--anpord:trial-sections-->")

# What the cell pages' workers render from: set before they are forked, so each has it.
_WORK: dict[str, Any] = {}


def _cell_pages(job: tuple[str, str, str, tuple[int, ...]]) -> tuple[int, int]:
    """Write one cell's pages, each trial a section of one (rendered here, in a worker): the
    pages and bytes written."""
    run_id, case_id, variant, indices = job
    data, write = _WORK["data"], _WORK["write"]
    template, urls, names = _WORK["template"], _WORK["urls"], _WORK["names"]
    sections = []
    for i in indices:
        ctx = trial_page(data, run_id, case_id, variant, i, with_timeline=False)
        if ctx is None:
            continue
        body = _lean(template.render(**urls, **ctx, section_id=f"t{i}-"))
        sections.append((i, f'<section class="trial" id="t{i}">\n{body}</section>\n'))
    pages = written = 0
    ctx = cell_page(data, run_id, case_id, variant)
    for n in range(1, (ctx or {"pages": 0})["pages"] + 1):
        more = ctx if n == 1 else cell_page(data, run_id, case_id, variant, n)
        if more is None:
            continue
        lo, hi = (n - 1) * CELL_PAGE_TRIALS, n * CELL_PAGE_TRIALS
        written += write(_WORK["pages"] / names["cell_url"](run_id, case_id, variant, page=n), "cell.html",
                         {**more, "trial_sections": [_SECTIONS]}, urls, [h for i, h in sections if lo <= i < hi])
        pages += 1
    return pages, written


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_target(folder: Path, force: bool) -> None:
    if folder.exists() and not folder.is_dir():
        raise ExportError(f"{folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise ExportError(f"{folder} is not empty (--force replaces what is in it)")
    if not folder.parent.is_dir():
        raise ExportError(f"folder {folder.parent} does not exist")


def export_view(data: ViewData, folder: Path, *, title: str, project_folder: str,
                force: bool = False, workers: int | None = None) -> ExportReport:
    """Write the view of ``data`` into ``folder``. ``workers``: processes that write the cell
    pages (None: one per core, once there are enough trials to be worth a fork; 1: this one)."""
    from ._app import template_env

    folder = folder.resolve()
    check_target(folder, force)
    if folder.is_dir() and force:
        for child in folder.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    (folder / PAGES).mkdir(parents=True, exist_ok=True)
    (folder / "static").mkdir(exist_ok=True)
    env, static = template_env()
    env.auto_reload = False  # one moment's templates: not a stat of each per page
    for name, (body, _) in static.items():
        (folder / "static" / name).write_bytes(body)
    names = _names()
    env.globals.update(title=title, project_folder=project_folder, static_export=True)
    inner = {**names, "home_url": lambda: "../index.html", "asset": lambda n: f"../static/{n}"}
    root = {**_prefixed(names, PAGES + "/"), "home_url": lambda: "index.html",
            "asset": lambda n: f"static/{n}"}
    templates = {n: env.get_template(n) for n in (
        "runs.html", "run.html", "cell.html", "trial.html", "compare.html", "compare_cell.html")}
    snap = _Snapshot(data)

    def write(path: Path, template: str, ctx: dict[str, Any], urls: dict[str, Any],
              sections: list[str] | None = None) -> int:
        """Write one page; its size in bytes. ``sections``: a cell page's trials, in at the mark."""
        html = _lean(templates[template].render(**urls, **ctx))
        if sections is not None:
            head, tail = html.split(_SECTIONS, 1)
            html = "".join([head, *sections, tail])
        body = html.encode("utf-8")
        with open(path, "wb") as f:
            f.write(body)
        return len(body)

    written = [1, write(folder / "index.html", "runs.html", runs_page(snap), root)]
    pages = folder / PAGES
    jobs = []  # one cell's pages each
    shown = []
    for row in snap.runs():
        view = snap.run(row.run_id)
        if view is None:
            continue
        shown.append(row.run_id)
        if view.cells:
            snap.baseline_deltas(row.run_id)  # read now, for the workers
        for cell in view.cells:
            jobs.append((row.run_id, *cell.key, tuple(i for i, v in enumerate(cell.verdicts) if v is not None)))
    settle = getattr(snap, "settle", None)
    if settle is not None:  # the trials are read from the runs as the pages show them
        settle()
    snap.read_histories(list(dict.fromkeys(j[1:3] for j in jobs)))
    # A process per core renders and writes the cell pages (their trials are nearly all of the
    # export), forked now so it shares what was read; this one writes the grid and compare pages.
    _WORK.update(data=snap, template=env.get_template("_trial.html"), urls=inner, names=names,
                 write=write, pages=pages)
    trials = sum(len(j[3]) for j in jobs)
    pool = None
    if workers is None:
        workers = _workers() if trials >= 500 else 1
    if workers > 1:
        pool = multiprocessing.get_context("fork").Pool(workers)
        done: Any = pool.imap_unordered(_cell_pages, jobs, chunksize=8)
    else:
        done = None
    try:
        for run_id in shown:
            first = grid_page(snap, run_id, GridQuery())
            if first is None:
                continue
            written[0] += 1
            written[1] += write(pages / names["run_url"](run_id), "run.html", first, inner)
            for n in range(2, first["pages"] + 1):
                ctx = grid_page(snap, run_id, GridQuery(page=n))
                if ctx is not None:
                    written[0] += 1
                    written[1] += write(pages / names["run_url"](run_id, page=n), "run.html", ctx, inner)
            baselines = first["baselines"]
            if baselines and baselines[0] != run_id:
                base = baselines[0]
                cctx = compare_page(snap, base, run_id, limit=None)  # every row, each with its page
                if cctx is not None:
                    written[0] += 1
                    written[1] += write(pages / names["compare_url"](base, run_id), "compare.html", cctx, inner)
                    for r in cctx["rows"]:
                        ctx = compare_cell_page(snap, base, run_id, r.case_id, r.variant)
                        if ctx is not None:
                            written[0] += 1
                            written[1] += write(
                                pages / names["compare_cell_url"](base, run_id, r.case_id, r.variant),
                                "compare_cell.html", ctx, inner)
        for n, size in done if done is not None else map(_cell_pages, jobs):
            written[0] += n
            written[1] += size
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORK.clear()
        close = getattr(snap, "close", None)
        if close is not None:
            close()
    return ExportReport(folder, written[0], written[1])
