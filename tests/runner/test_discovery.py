"""Discovery and identity: the evals root, ids from paths, arguments, datasets, suites, tags,
--list, and every way a project or a command line is refused (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from project_support import END, Project, Run, assert_passed, eval_file

GOOD = {
    "evals/smoke.eval.py": eval_file(f"""
        @define_eval(tags=["smoke"], name="Smoke", description="the quickest check")
        async def test(t):
            await t.send("echo smoke")
            {END}
    """),
    "evals/weather/shared.py": 'CITY = "Brooklyn"\n',
    "evals/weather/brooklyn.eval.py": eval_file(f"""
        from weather.shared import CITY
        import agents.kit

        @define_eval(tags=["weather", "slow"])
        async def test(t):
            await t.send(f"weather {{CITY}}")
            t.check(t.reply, includes(CITY))
            {END}
    """),
    "evals/weather/paris.eval.py": eval_file(f"""
        @define_eval(tags="weather")
        async def test(t):
            await t.send("weather Paris")
            {END}
    """),
    "evals/data/rows.eval.py": eval_file(f"""
        @define_eval(each=list(range(12)))
        async def test(t, row):
            await t.send(f"echo {{row}}")
            t.check(t.reply, equals(f"echo: echo {{row}}"))
            t.log(f"row={{row}}")
            {END}
    """),
    "evals/data/named.eval.py": eval_file(f"""
        @define_eval(each=[{{"name": "New York"}}, {{"name": "São Paulo"}}], id=lambda row: row["name"])
        async def test(t, row):
            {END}
    """),
    # A folder of the project named like an eval folder: the argument `data` still means the id.
    "data/fixture.json": "{}\n",
    "evals/.hidden/skipped.eval.py": "raise SystemExit('hidden folders are not searched')\n",
}

ALL_IDS = (
    ["data/named/new-york", "data/named/são-paulo"]
    + [f"data/rows/{i:04d}" for i in range(12)]
    + ["smoke", "weather/brooklyn", "weather/paris"]
)


@pytest.fixture(scope="module")
def good(make_module_project: Any) -> Project:
    return make_module_project(GOOD)


def listed(project: Project, *args: str, cwd: Path | None = None) -> list[str]:
    run = project.run(*args, "--list", "--json", cwd=cwd)
    assert run.code == 0, run.output
    return [row["id"] for row in run.json()]


def test_ids_come_from_paths(good: Project) -> None:
    run = good.run("--list", "--json")
    assert run.code == 0, run.output
    rows = run.json()
    assert [r["id"] for r in rows] == ALL_IDS
    smoke = next(r for r in rows if r["id"] == "smoke")
    assert smoke["tags"] == ["smoke"] and smoke["name"] == "Smoke"
    assert smoke["description"] == "the quickest check"
    assert smoke["file"] == "evals/smoke.eval.py"
    assert not (good.folder / ".anpord" / "runs").exists()  # listing runs nothing (it may cache code)


def test_list_text(good: Project) -> None:
    run = good.run("weather", "--list")
    assert run.code == 0
    assert run.stdout.splitlines() == ["weather/brooklyn  [weather, slow]", "weather/paris  [weather]", "2 cases"]


@pytest.mark.parametrize(
    "args, ids",
    [
        (["weather"], ["weather/brooklyn", "weather/paris"]),
        (["weather/"], ["weather/brooklyn", "weather/paris"]),
        (["weather/paris"], ["weather/paris"]),
        (["evals/weather"], ["weather/brooklyn", "weather/paris"]),
        (["evals/weather/brooklyn.eval.py"], ["weather/brooklyn"]),
        (["data/rows/0003", "data/rows/0011"], ["data/rows/0003", "data/rows/0011"]),
        (["smoke", "data/named/são-paulo"], ["data/named/são-paulo", "smoke"]),
        (["data/rows"], [f"data/rows/{i:04d}" for i in range(12)]),
        (["data"], ALL_IDS[:14]),
        (["--tag", "weather"], ["weather/brooklyn", "weather/paris"]),
        (["--tag", "weather", "--exclude-tag", "slow"], ["weather/paris"]),
        (["--tag", "smoke", "--tag", "slow"], ["smoke", "weather/brooklyn"]),
        (["weather", "--exclude-tag", "weather"], []),
    ],
)
def test_arguments_select_cases(good: Project, args: list[str], ids: list[str]) -> None:
    assert listed(good, *args) == ids


def test_the_root_is_found_from_a_subfolder_and_from_outside(good: Project) -> None:
    weather = good.folder / "evals" / "weather"
    # From inside the evals root, as pytest does: no argument means the current folder.
    assert listed(good, cwd=weather) == [i for i in ALL_IDS if i.startswith("weather/")]
    assert listed(good, str(good.folder / "evals"), cwd=weather) == ALL_IDS
    outside = good.folder.parent
    assert listed(good, str(good.folder / "evals" / "smoke.eval.py"), cwd=outside) == ["smoke"]


def test_a_case_id_runs_only_that_row(good: Project) -> None:
    run = good.run("data/rows/0007", "weather/brooklyn")
    assert run.code == 0, run.output
    assert sorted(run.by_case()) == ["data/rows/0007", "weather/brooklyn"]
    assert run.trial("data/rows/0007")["logs"] == ["row=7"]
    assert_passed(run, "weather/brooklyn")  # imported weather.shared and agents.kit


def test_wide_datasets_get_wider_keys(make_project: Any) -> None:
    project = make_project({
        "evals/big.eval.py": eval_file("""
            @define_eval(each=range(10001))
            async def test(t, row):
                t.check(row, equals(row))
        """),
    })
    ids = listed(project)
    assert len(ids) == 10001
    assert ids[0] == "big/00000" and ids[-1] == "big/10000"


# -- refusals -------------------------------------------------------------------------------

BAD = {
    "evals/ok.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            {END}
    """),
    "evals/dup_suite.eval.py": eval_file("""
        suite = define_suite(cases=[
            define_eval(id="Same", prompt="a", validate=lambda c: True),
            define_eval(id="same", prompt="b", validate=lambda c: True),
        ])
    """),
    "evals/dup_each.eval.py": eval_file("""
        @define_eval(each=[1, 2, 3], id=lambda row: "odd" if row % 2 else "even")
        async def test(t, row):
            pass
    """),
    "evals/unbound.eval.py": eval_file("""
        def helper():
            return define_eval(prompt="x", validate=lambda c: True)
    """),
    "evals/twice.eval.py": eval_file("""
        first = define_eval(prompt="x", validate=lambda c: True)
        second = define_eval(prompt="y", validate=lambda c: True)
    """),
    "evals/syntax.eval.py": "from anpord import define_eval\n\ndef broken(:\n    pass\n",
    "evals/imports.eval.py": "import not_a_module_anywhere_xyz\n",
    "evals/raises.eval.py": "from anpord import define_eval\nraise RuntimeError('set-up went wrong')\n",
    "evals/both.eval.py": eval_file("""
        async def body(t):
            pass

        case = define_eval(test=body, prompt="also a prompt")
    """),
    "evals/clash.eval.py": eval_file("""
        @define_eval(each=[1], id=lambda row: "one")
        async def test(t, row):
            pass
    """),
    "evals/clash/one.eval.py": eval_file("""
        @define_eval
        async def test(t):
            pass
    """),
    "agents/bad_import.py": "raise RuntimeError('this agent module is broken')\n",
}


@pytest.fixture(scope="module")
def bad(make_module_project: Any) -> Project:
    return make_module_project(BAD)


def refused(run: Run, *needles: str) -> str:
    """Exit 2, one line on stderr naming what is wrong, nothing on stdout, no traceback."""
    assert run.code == 2, run.output
    err = run.stderr.strip()
    assert err and "\n" not in err, run.output
    assert "Traceback" not in run.stderr
    for needle in needles:
        assert needle in err, (needle, err)
    assert run.stdout == ""
    return err


@pytest.mark.parametrize(
    "args, needles",
    [
        (["dup_suite"], ["dup_suite.eval.py", "duplicate", "dup_suite/same"]),
        (["dup_each"], ["dup_each.eval.py", "duplicate", "dup_each/odd"]),
        (["clash", "clash/one"], ["duplicate case id clash/one", "clash.eval.py", "clash/one.eval.py"]),
        (["unbound"], ["unbound.eval.py", "binds no eval"]),
        (["twice"], ["twice.eval.py", "first", "second"]),
        (["syntax"], ["syntax.eval.py:3", "syntax"]),
        (["imports"], ["imports.eval.py", "not_a_module_anywhere_xyz"]),
        (["raises"], ["raises.eval.py:2", "RuntimeError", "set-up went wrong"]),
        (["both"], ["both.eval.py", "test", "prompt"]),
        (["nope"], ["nope"]),
        (["ok/0001"], ["ok/0001"]),
        (["evals/missing.eval.py"], ["evals/missing.eval.py"]),
        (["ok", "--trials", "0"], ["--trials", "0"]),
        (["ok", "--timeout", "abc"], ["--timeout", "abc"]),
        (["ok", "--timeout", "-1"], ["--timeout"]),
        (["ok", "--max-concurrency", "x"], ["--max-concurrency"]),
        (["ok", "--fail-on", "sometimes"], ["--fail-on"]),
        (["ok", "--no-such-flag"], ["--no-such-flag"]),
        (["ok", "--harness", "python:agents.kit"], ["python:agents.kit"]),
        (["ok", "--harness", "python:agents.no_such_module:agent"], ["agents.no_such_module"]),
        (["ok", "--harness", "python:agents.kit:nope"], ["nope"]),
        (["ok", "--harness", "python:agents.kit:not_callable"], ["not_callable"]),
        (["ok", "--harness", "python:agents.bad_import:agent"], ["agents.bad_import", "broken"]),
        (["ok", "--harness", "carrier-pigeon:fast"], ["carrier-pigeon"]),
        (["ok", "--variant", "nope"], ["nope", "python:agents.kit:agent/default"]),
        (["ok", "--tag", "absent"], ["nothing to run"]),
    ],
)
def test_refusals(bad: Project, args: list[str], needles: list[str]) -> None:
    run = bad.run(*args)
    refused(run, *needles)
    assert run.run_dir is None  # nothing ran, no run folder


def test_only_selected_files_are_imported_and_listing_resolves_no_harness(bad: Project) -> None:
    assert listed(bad, "ok") == ["ok"]
    assert listed(bad, "ok", "--harness", "python:agents.bad_import:agent") == ["ok"]
    run = bad.run("ok")  # runs, despite its broken neighbours
    assert run.code == 0, run.output
    assert_passed(run, "ok")


def test_a_config_harness_that_does_not_import(make_project: Any) -> None:
    project = make_project(
        {
            "evals/ok.eval.py": BAD["evals/ok.eval.py"],
            "agents/bad_import.py": BAD["agents/bad_import.py"],
        },
        config="from anpord import define_eval_config\n"
        "config = define_eval_config(harness='python:agents.bad_import:agent')\n",
    )
    refused(project.run(), "agents.bad_import", "broken")
    assert listed(project) == ["ok"]


def test_missing_config(make_project: Any) -> None:
    project = make_project({"evals/ok.eval.py": BAD["evals/ok.eval.py"]}, config=None)
    refused(project.run(), "evals.config.py", "define_eval_config()")
    refused(project.run("--list"), "evals.config.py")


def test_an_empty_config_file_suffices(make_project: Any) -> None:
    project = make_project({"evals/ok.eval.py": BAD["evals/ok.eval.py"]}, config="")
    assert listed(project) == ["ok"]
    run = project.run("--harness", "python:agents.kit:agent", "--json")
    assert run.code == 0, run.output
    assert json.loads(run.stdout)["totals"]["passed"] == 1
