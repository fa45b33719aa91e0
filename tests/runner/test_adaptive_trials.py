"""Adaptive trials end to end: ``--trials MIN..MAX`` gives each cell as many trials as its
question needs, and each cell records why it stopped."""

from __future__ import annotations

from typing import Any

from project_support import END, eval_file

CASES = {
    "steady": f"""
        @define_eval
        async def test(t):
            await t.send("echo steady")
            {END}
    """,
    "breaks": f"""
        @define_eval
        async def test(t):
            await t.send("echo breaks")
            t.check((Path(__file__).resolve().parent.parent / "broken").exists(), equals(False))
            {END}
    """,
    "failing": """
        @define_eval
        async def test(t):
            await t.send("echo failing")
            t.check("no", equals("yes"))
    """,
}


def _adaptive_run(make_project: Any) -> tuple[Any, Any, dict[str, int], dict[str, Any]]:
    """A project run with 3 fixed trials, then, one case broken, with ``--trials 2..6``."""
    project = make_project({f"evals/{name}.eval.py": eval_file(body) for name, body in CASES.items()})
    first = project.run("--json", "--trials", "3")
    assert first.code == 1, first.output
    assert all("stop_reason" not in c for c in first.run_json()["cells"])  # fixed trials: none

    (project.folder / "broken").write_text("")
    run = project.run("--json", "--trials", "2..6", "--max-concurrency", "1")
    assert run.code == 1, run.output
    counts: dict[str, int] = {}
    for line in run.results():
        counts[line["case_id"].rsplit("/", 1)[-1]] = counts.get(line["case_id"].rsplit("/", 1)[-1], 0) + 1
    cells = {c["case_id"].rsplit("/", 1)[-1]: c for c in run.run_json()["cells"]}
    return project, run, counts, cells


def test_trials_vary_per_cell_and_stop_reasons_are_recorded(make_project: Any) -> None:
    # Which cell the variant's sequence draws is seeded by the run's id: with an unlucky draw
    # the sequence stays undecided and every cell takes the maximum. That is allowed, but then
    # nothing shows the counts varying, so the run is made again (each time a new id, a new seed).
    for _ in range(3):
        project, run, counts, cells = _adaptive_run(make_project)
        reasons = {name: c["stop_reason"] for name, c in cells.items()}
        assert all(2 <= n <= 6 for n in counts.values()), counts
        if len(set(counts.values())) > 1:
            break
    assert len(set(counts.values())) > 1, (counts, reasons)  # not every cell took the same number
    assert counts["breaks"] > 2, (counts, reasons)  # 1 → 0: not stopped at 0/2
    assert all(r and r != "unfinished" for r in reasons.values()), reasons
    assert reasons["breaks"].startswith(("its own drop is significant: 0/", "reached the maximum of 6: 0/6 vs 3/3")), reasons
    # Each reason is about its own cell: its counts against its own baseline's.
    assert "(0/3)" in reasons["failing"] and "(3/3)" in reasons["steady"], reasons
    assert {c["trials"] for c in cells.values()} == {6}  # the most a cell could take

    assert {c["case_id"].rsplit("/", 1)[-1]: c["stop_reason"] for c in run.json()["cells"]} == reasons

    from anpord.view import FolderViewData
    from anpord.view._pages import cell_page

    rid = run.run_json()["run_id"]
    breaks = next(c for c in run.run_json()["cells"] if c["case_id"].endswith("breaks"))
    page = cell_page(FolderViewData(project.folder), rid, breaks["case_id"], breaks["variant"])
    assert page is not None and page["stop_reason"] == reasons["breaks"]

    bad = project.run("--trials", "5..2")
    assert bad.code == 2 and "below MIN" in bad.stderr, bad.output
    assert len(bad.stderr.strip().splitlines()) == 1


def test_trials_auto_in_the_config_and_no_resume(make_project: Any) -> None:
    config = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.kit:agent", timeout=10, trials="2..3")
"""
    project = make_project({"evals/steady.eval.py": eval_file(CASES["steady"])}, config=config)
    run = project.run("--json")
    assert run.code == 0, run.output
    (cell,) = run.run_json()["cells"]
    assert cell["trials"] == 3 and cell["stop_reason"], cell
    again = project.run("--resume", run.run_json()["run_id"])
    assert again.code == 2 and "cannot be resumed" in again.stderr, again.output


def test_rerun_failed_of_an_adaptive_run_reruns_its_failed_trials(make_project: Any) -> None:
    project = make_project({"evals/failing.eval.py": eval_file(CASES["failing"])})
    run = project.run("--json", "--trials", "2..3")
    assert run.code == 1, run.output
    failed = sorted(r["trial"] for r in run.results())
    again = project.run("--json", "--rerun-failed", run.run_json()["run_id"])
    assert sorted(r["trial"] for r in again.results()) == failed, again.output
    assert all("stop_reason" not in c for c in again.run_json()["cells"])
