"""Runs that re-use earlier work (``--cache``, ``--rerun-failed``) are kept and shown, but never
become a baseline: a comparison against one would compare a run with itself."""

from __future__ import annotations

from pathlib import Path

from history_support import anpord, as_json, history_project


def test_cached_and_rerun_runs_never_become_baselines(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    cached = project.run("--cache", env={"MOOD": "bad"})
    assert cached.code == 1 and cached.run_dir is not None
    rerun = project.run("--rerun-failed", cached.run_dir.name, env={"MOOD": "bad"})
    assert rerun.run_dir is not None and rerun.run_dir != cached.run_dir
    # Neither is anyone's baseline: the first plain run is, and the next is compared with it.
    first = project.run(env={"MOOD": "bad"})
    second = project.run()
    assert first.run_dir is not None and second.run_dir is not None
    doc = as_json(anpord(project, "compare", "--json"))
    assert {c["base"]["run_id"] for c in doc["cells"]} == {first.run_dir.name}

    refused = anpord(project, "baseline", "set", cached.run_dir.name)
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(
        "cannot be a baseline (set one made by a plain `anpord eval`)"
    ), refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    runs = as_json(anpord(project, "runs", "--json"))
    kinds = {r["run_id"]: r["kind"] for r in runs}
    assert kinds[cached.run_dir.name] == "cached" and kinds[rerun.run_dir.name] == "rerun"
    assert kinds[first.run_dir.name] == "eval"

    # A rebuild from the folders keeps the rule.
    assert anpord(project, "db", "rebuild").returncode == 0
    again = as_json(anpord(project, "compare", "--json"))
    assert {c["base"]["run_id"] for c in again["cells"]} == {first.run_dir.name}


def test_a_rebuild_finds_each_cells_first_reading_by_start_time_not_folder_name(tmp_path: Path) -> None:
    # Two runs started in the same second are named in the order of their random suffixes, so
    # the folder that sorts first need not be the run that started first.
    import json

    project = history_project(tmp_path / "p")
    one, two = project.run(env={"MOOD": "bad"}), project.run()
    assert one.run_dir is not None and two.run_dir is not None
    named_first, named_last = sorted([one.run_dir, two.run_dir], key=lambda d: d.name)
    # Make the run whose folder sorts first the one that started last.
    records = {d: json.loads((d / "run.json").read_text()) for d in (named_first, named_last)}
    records[named_first]["started_at"] = records[named_last]["started_at"] + 5
    for d, record in records.items():
        (d / "run.json").write_text(json.dumps(record))
    assert anpord(project, "db", "rebuild").returncode == 0
    doc = as_json(anpord(project, "compare", "--json"))
    assert doc["candidate"] == named_first.name, doc  # the latest by start time
    assert {c["base"]["run_id"] for c in doc["cells"]} == {named_last.name}
