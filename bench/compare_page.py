"""The compare page of two 10,000-trial runs in headless Chromium, and the static export of a
10,000-trial run.

    python bench/compare_page.py [--cases 1000] [--variants 2] [--trials 5] [--keep DIR]
                                 [--only compare|export] [--repeat N]

Writes two runs of cases × variants × trials synthetic trials (10,000 each by default) as
``bench/view_pages.py`` does, files them in the run store (``anpord db rebuild``), starts the
real ``anpord view`` and opens ``/compare?base=…&cand=…`` and a compared cell's page in Chromium.
The figure is the browser's navigation timing: **server** the time to the first byte, **load**
to the end of the load event (the page is rendered by then: it is plain HTML), **goto** the same
seen from the driver. Target: load ≤ 1 s. "cold" is a request the moment a fresh server prints
its URL (it may still be reading the runs); "first" the first request for the comparison once the
server's start-up has read the newest run and paired it with its baseline; "again" a later one.

Then ``anpord view --export`` of a project holding one 10,000-trial run: its wall time (target
≤ 10 s), its CPU time (the export's process and its workers') and the folder's size (target
≤ 50 MB), with the number of pages written; ``--repeat N`` exports N times. The wall time is
only as good as the machine is idle: the load average while measuring is printed with it, and
the CPU time is the figure to compare between two versions on a busy machine.

``--keep DIR`` keeps the projects; a later run with the same ``--keep DIR`` uses them as they are.

Needs Debian's chromium (``/usr/bin/chromium``) and ``pip install playwright``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from view_pages import CHROMIUM, CHROMIUM_ARGS, SRC, make_project, start_view, timing  # noqa: E402

PAGE_TARGET_S = 1.0
EXPORT_TARGET_S = 10.0
EXPORT_TARGET_MB = 50.0


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _project(folder: Path, args: argparse.Namespace, history: int) -> str:
    """A project of synthetic runs, filed in its store; one kept from an earlier ``--keep`` run
    is used as it is."""
    if (folder / ".anpord" / "runs").is_dir():
        return "20250102-000000-bbbbbb"
    cand = make_project(folder, cases=args.cases, variants=args.variants, trials=args.trials, history=history)
    subprocess.run([sys.executable, "-m", "anpord", "db", "rebuild"], cwd=folder, check=True, env=_env(),
                   stdout=subprocess.DEVNULL)
    return cand


def _compare(root: Path, args: argparse.Namespace, n: int) -> list[tuple[str, str, dict[str, float]]]:
    from playwright.sync_api import sync_playwright

    rows = []
    two = root / "two-runs"
    started = time.perf_counter()
    kept = (two / ".anpord" / "runs").is_dir()
    cand = _project(two, args, history=1)
    base = "20250101-000000-aaaaa0"
    print(f"the 2 runs of {n:,} trials kept in {two}" if kept else
          f"wrote and filed 2 runs of {n:,} trials in {time.perf_counter() - started:.1f}s")
    case, variant = "weather/city_0007", "python/model-1"
    for state in ("cold", "first", "again"):
        proc, url = start_view(two)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()
                if state != "cold":
                    timing(page, f"{url}/runs/{cand}")  # the server has read the newest run
                if state == "again":
                    timing(page, f"{url}/compare?base={base}&cand={cand}")
                rows.append(("compare page", state, timing(page, f"{url}/compare?base={base}&cand={cand}")))
                if state == "again":
                    rows.append(("compare, regressed only", state, timing(
                        page, f"{url}/compare?base={base}&cand={cand}&status=regressed")))
                    cell = (f"{url}/compare/cells/{quote(case)}?base={base}&cand={cand}"
                            f"&variant={quote(variant)}&bt=0&ct=0")
                    rows.append(("compared cell", state, timing(page, cell)))
                browser.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    return rows


def _export(root: Path, args: argparse.Namespace) -> tuple[float, float, float, int]:
    """The export's wall and CPU time (its process and its workers'), size in MB, pages."""
    one = root / "one-run"
    _project(one, args, history=0)
    site = root / "site"
    shutil.rmtree(site, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "anpord", "view", "--export", str(site)], cwd=one,
                          env=_env(), capture_output=True, text=True, check=False)
    export_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the export and its workers
    export_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"anpord view --export failed: {done.stderr}")
    return export_s, export_cpu, _size(site) / 1e6, sum(1 for _ in site.rglob("*.html"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="write the projects here and keep them")
    ap.add_argument("--only", choices=("compare", "export"), help="measure only the compare page or the export")
    ap.add_argument("--repeat", type=int, default=1, help="export this many times (each is printed)")
    args = ap.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="anpord-compare-bench-"))
    n = args.cases * args.variants * args.trials
    rows: list[tuple[str, str, dict[str, float]]] = []
    exports = []
    try:
        if args.only != "export":
            rows = _compare(root, args, n)
        if args.only != "compare":
            exports = [_export(root, args) for _ in range(max(1, args.repeat))]
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)

    if rows:
        print(f"\ntwo {n:,}-trial runs ({args.cases} cases × {args.variants} variants × {args.trials} trials); "
              f"target: load ≤ {PAGE_TARGET_S:.1f}s\n")
        print(f"{'page':<26}{'':<7}{'server':>9}{'load':>9}{'goto':>9}")
        for name, state, t in rows:
            flag = "" if t["load"] <= PAGE_TARGET_S else "  over target"
            print(f"{name:<26}{state:<7}{t['server']:>8.3f}s{t['load']:>8.3f}s{t['wall']:>8.3f}s{flag}")
    for export_s, export_cpu, size_mb, pages in exports:
        over = [w for w, bad in (("time", export_s > EXPORT_TARGET_S), ("size", size_mb > EXPORT_TARGET_MB)) if bad]
        print(f"\nexport of one {n:,}-trial run ({pages:,} pages; CPU is the export's and its workers')")
        print(f"{'':<10}{'target':>10}{'measured':>10}")
        print(f"{'wall':<10}{'≤ %.0fs' % EXPORT_TARGET_S:>10}{export_s:>9.1f}s{'  over target' if 'time' in over else ''}")
        print(f"{'CPU':<10}{'':>10}{export_cpu:>9.1f}s")
        print(f"{'size':<10}{'≤ %.0f MB' % EXPORT_TARGET_MB:>10}{size_mb:>7.1f} MB{'  over target' if 'size' in over else ''}")
    print(f"\nload average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
