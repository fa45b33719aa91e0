"""Plugins by entry point: a third-party package installed beside anpord adds a harness and a
reporter that ``anpord plugins`` lists and ``anpord eval`` runs; one that does not import is named
with its error and stops a suite that uses it with one line; built-ins need no metadata."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from plugin_support import install_broken, install_example, plugin_path
from project_support import anpord_command, run_env

SUITE = {
    "evals/shouts.eval.py": """
        from anpord import define_eval


        @define_eval()
        async def shouts(t):
            turn = await t.send("hello there")
            turn.message_includes("BOT: HELLO THERE")
    """,
    "evals/whispers.eval.py": """
        from anpord import define_eval


        @define_eval()
        async def whispers(t):
            turn = await t.send("quiet")
            turn.message_includes("quiet")  # the agent shouts: this one fails
    """,
}
SHOUT_CONFIG = """\
from anpord import define_eval_config
config = define_eval_config(harness="shout:BOT", timeout=10)
"""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_example(tmp_path_factory.mktemp("example") / "site")


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_broken(tmp_path_factory.mktemp("broken") / "site")


def plugins(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), "plugins", *args], env=run_env(env), capture_output=True,
                          text=True, timeout=60, check=False)


def test_plugins_lists_the_built_ins_and_the_installed_package(example: Path) -> None:
    done = plugins(plugin_path(example), "--json")
    assert done.returncode == 0, done.stderr
    rows = {(r["group"], r["name"]): r for r in json.loads(done.stdout)}
    assert rows["anpord.harnesses", "shout"]["package"] == "anpord-shout"
    assert rows["anpord.harnesses", "shout"]["version"] == "0.1.0"
    assert rows["anpord.reporters", "tally"]["target"] == "anpord_shout.reporter:TallyReporter"
    # Every built-in of every group, from anpord itself, declared in code (the installed
    # distribution's metadata declares none of them).
    for key in [("anpord.harnesses", "python"), ("anpord.harnesses", "claude"), ("anpord.sandboxes", "bwrap"),
                ("anpord.executors", "ray"), ("anpord.importers", "promptfoo")]:
        assert rows[key]["package"] == "anpord" and rows[key]["error"] is None, rows[key]
    text = plugins(plugin_path(example)).stdout
    assert any(line.split()[:3] == ["harnesses", "shout", "anpord-shout"] for line in text.splitlines()), text


def test_a_plugin_that_does_not_import_is_named_with_its_error(example: Path, broken: Path) -> None:
    done = plugins(plugin_path(example, broken))
    assert done.returncode == 1
    error = "ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    lines = [line for line in done.stdout.splitlines() if " broken " in line]
    assert len(lines) == 2 and all("broken-plugin 0.2" in line and error in line for line in lines), done.stdout
    assert "shout" in done.stdout  # the others are still listed
    assert done.stderr.count("does not load") == 2


def test_a_suite_runs_the_plugin_harness_and_reporter(make_project: Any, example: Path) -> None:
    project = make_project(SUITE, config=SHOUT_CONFIG)
    run = project.run("--json", "--reporter", "tally:tally.txt", env=plugin_path(example))
    assert run.code == 1, run.output
    assert run.verdicts() == {"shouts": "passed", "whispers": "failed"}
    assert (project.folder / "tally.txt").read_text() == "tally: 2 trials, 1 failed, 1 passed\n"
    # --harness points any suite at the plugin too, and a name in the config is a reporter.
    project.write({"evals/evals.config.py": """
        from anpord import define_eval_config
        config = define_eval_config(harness="python:agents.kit:agent", reporters=["tally"])
    """})
    run = project.run("evals/shouts.eval.py", "--harness", "shout:BOT", env=plugin_path(example))
    assert run.code == 0, run.output
    assert "tally: 1 trials, 1 passed" in run.stderr


def test_a_spec_the_plugin_refuses_is_one_line_exit_2(make_project: Any, example: Path) -> None:
    project = make_project(SUITE, config=SHOUT_CONFIG)
    run = project.run("--harness", "shout:bot", env=plugin_path(example))
    assert run.code == 2 and run.run_dir is None
    assert run.stderr.strip().splitlines() == ["anpord eval: shout:bot: the prefix must be in capitals, got 'bot'"]


@pytest.mark.parametrize(("args", "line"), [
    (["--harness", "broken:x"],
     "anpord eval: broken:x: harness 'broken' from broken-plugin 0.2 does not load: "
     "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    (["--harness", "shout:BOT", "--reporter", "broken"],
     "anpord eval: reporter 'broken' from broken-plugin 0.2 does not load: "
     "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    (["--harness", "shout:BOT", "--reporter", "talley"], "anpord eval: unknown reporter 'talley': known reporters are broken, tally"),
    (["--harness", "shout:BOT", "--executor", "nope"], "anpord eval: --executor nope: unknown executor 'nope': known executors are local, ray"),
    (["--harness", "shout:BOT", "--sandbox", "nope"], "anpord eval: unknown sandbox 'nope': known sandboxes are bwrap, docker, local"),
])
def test_a_suite_that_uses_a_broken_or_unknown_plugin_exits_2_with_one_line(
        make_project: Any, example: Path, broken: Path, args: list[str], line: str) -> None:
    project = make_project(SUITE, config=SHOUT_CONFIG)
    run = project.run(*args, env=plugin_path(example, broken))
    assert run.code == 2 and run.run_dir is None, run.output
    assert run.stderr.strip().splitlines() == [line]


def test_register_harness_adds_a_spec_head_in_code(tmp_path: Path) -> None:
    from anpord.harnesses import HARNESSES, register_harness, resolve_harness
    from anpord.harnesses.python import PythonHarness

    seen: list[tuple[str, Path | None]] = []

    def resolve(spec: str, project_dir: Path | None) -> PythonHarness:
        seen.append((spec, project_dir))
        return PythonHarness(spec, lambda turn: "ok")

    register_harness("inhouse:", resolve)
    try:
        harness = resolve_harness("inhouse:anything", tmp_path)
        assert harness.spec == "inhouse:anything" and seen == [("inhouse:anything", tmp_path)]
    finally:
        HARNESSES._entries.pop("inhouse")
        HARNESSES._loaded.pop("inhouse", None)


def test_a_reporter_without_every_method_is_refused_in_one_line(make_project: Any) -> None:
    project = make_project({
        "evals/evals.config.py": """
            from anpord import define_eval_config
            from anpord.results import ReporterBase


            class Partial:
                def on_run_end(self, summary, results):
                    pass


            class Whole(ReporterBase):  # the base class gives the other four
                def on_run_end(self, summary, results):
                    print("whole reporter ran")


            config = define_eval_config(harness="python:agents.kit:agent", reporters=[Whole(), Partial()])
        """,
        "evals/one.eval.py": """
            from anpord import define_eval


            @define_eval()
            async def one(t):
                turn = await t.send("hi")
                turn.succeeded()
        """,
    })
    run = project.run()
    assert run.code == 2 and run.run_dir is None, run.output
    assert run.stderr.strip().splitlines() == [
        "anpord eval: reporter Partial lacks on_run_start, on_trial_start, on_log, on_trial_end: a reporter "
        "has all five Reporter methods (subclass anpord.results.ReporterBase to define only the ones it needs)"]
    project.write({"evals/evals.config.py": project.path("evals/evals.config.py").read_text()
                   .replace("[Whole(), Partial()]", "[Whole()]")})
    run = project.run()
    assert run.code == 0 and "whole reporter ran" in run.stdout, run.output
