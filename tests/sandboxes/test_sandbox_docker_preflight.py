"""A run whose variants use ``sandbox="docker"`` checks the container CLI once, before any trial:
with none, or one whose daemon is down, every trial of those variants is ``void`` with the one
line saying which and how to fix it, and none of them starts (its harness is not even set up);
the run's other variants run as usual."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from project_support import END, Project, assert_passed, eval_file

CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(trials=3, variants=[
    Variant(name="boxed", sandbox="docker", image="localhost/anpord-never-pulled:1",
            harness="python:agents.hooked:hooked"),
    Variant(name="here", sandbox="local", harness='command:bash -c "$ANPORD_PROMPT"'),
])
"""
CASES = {
    "evals/one.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("echo hi")
            {END}
    """),
}
# A docker client with no daemon behind it, noting each time it is run.
DOWN_DOCKER = """#!/bin/sh
echo "$*" >> {calls}
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
exit 1
"""


def _by_variant(run: object) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for line in run.results():  # type: ignore[attr-defined]
        out.setdefault(str(line["variant"]), []).append(line)
    return out


def _down_docker(tmp_path: Path) -> tuple[Path, Path]:
    """A ``docker`` whose daemon is down, and the log of the arguments it is called with."""
    calls = tmp_path / "calls.log"
    stub = tmp_path / "bin" / "docker"
    stub.parent.mkdir()
    stub.write_text(DOWN_DOCKER.format(calls=calls))
    stub.chmod(0o755)
    return stub, calls


def _assert_not_started(run: object, reason: str, hooks: Path) -> None:
    boxed = _by_variant(run)["boxed"]
    assert len(boxed) == 3, boxed
    for line in boxed:
        assert (line["verdict"], line["reason"]) == ("void", reason), line
        assert (line["error"]["kind"], line["error"]["message"]) == ("sandbox", reason), line["error"]
    # Its harness was never set up: no trial of the variant began.
    assert not hooks.exists(), hooks.read_text()
    for trial in range(3):
        line = next(r for r in _by_variant(run)["here"] if r["trial"] == trial)
        assert line["verdict"] == "passed", line


def test_no_container_cli_voids_the_docker_variants_trials_before_any_starts(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    project = make_project(CASES, config=CONFIG)
    hooks = tmp_path / "hooks.log"
    run = project.run(timeout=120, env={"ANPORD_CONTAINER_CLI": "/nonexistent", "HOOKS_LOG": str(hooks)})
    assert run.code == 1, run.output
    reason = ("ANPORD_CONTAINER_CLI=/nonexistent: no such program; install it or set "
              "ANPORD_CONTAINER_CLI to docker or podman")
    _assert_not_started(run, reason, hooks)
    assert "Traceback" not in run.output


def test_a_docker_daemon_that_is_down_is_probed_once_and_voids_those_trials_with_the_fix(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    stub, calls = _down_docker(tmp_path)
    project = make_project(CASES, config=CONFIG)
    hooks = tmp_path / "hooks.log"
    run = project.run(timeout=120, env={"ANPORD_CONTAINER_CLI": str(stub), "HOOKS_LOG": str(hooks)})
    assert run.code == 1, run.output
    reason = (f"the Docker daemon is not reachable through {stub}: Cannot connect to the Docker daemon "
              "at unix:///var/run/docker.sock. Is the docker daemon running?; start it "
              "(systemctl start docker) or set ANPORD_CONTAINER_CLI=podman")
    _assert_not_started(run, reason, hooks)
    # One cheap probe for the whole run; no trial ran the CLI.
    assert calls.read_text().splitlines() == ["version --format {{.Server.Version}}"]


def test_a_run_without_docker_variants_never_runs_a_container_cli(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    stub, calls = _down_docker(tmp_path)
    project = make_project(CASES, config=CONFIG)
    run = project.run("--variant", "here", timeout=120, env={"ANPORD_CONTAINER_CLI": str(stub)})
    assert run.code == 0, run.output
    assert_passed(run, "one")
    assert not calls.exists()
