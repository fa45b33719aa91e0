"""A plugin used by a suite reaches Ray workers: each worker resolves the same harness name through
its own entry points (the package installed on the node, here on the node's ``PYTHONPATH``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray  # noqa: F401 - a machine without Ray fails these tests; it never skips them
from plugin_support import install_example, plugin_path
from ray_support import LocalCluster, Node

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

SUITE = {
    "evals/shouts.eval.py": """
        from anpord import define_eval


        @define_eval()
        async def shouts(t):
            turn = await t.send("hello there")
            turn.message_includes("BOT: HELLO THERE")
    """,
}
CONFIG = """\
from anpord import define_eval_config
config = define_eval_config(harness="shout:BOT", timeout=30)
"""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_example(tmp_path_factory.mktemp("example") / "site")


@pytest.fixture(scope="module")
def cluster(example: Path) -> Iterator[LocalCluster]:
    nodes = LocalCluster([Node(num_cpus=1, resources={"anpord_sandbox": 2})],
                         env={"PYTHONPATH": str(example)})
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()
    assert nodes.killed and not nodes.left_running(), "the cluster left processes behind"


def test_a_plugin_harness_and_reporter_run_on_ray(make_project: Any, example: Path, cluster: LocalCluster) -> None:
    project = make_project(SUITE, config=CONFIG)
    run = project.run("--trials", "3", "--reporter", "tally", "--executor", "ray",
                      "--ray-address", cluster.address, env=plugin_path(example), timeout=240)
    assert run.code == 0, run.output
    results = run.results()
    assert [r["verdict"] for r in results] == ["passed"] * 3
    node = next(iter(cluster.node_ids().values()))
    assert {r["host"].split("/")[1] for r in results} == {node[:12]}  # run by the Ray worker
    assert run.run_json()["executor"] == "ray"
    assert "tally: 3 trials, 3 passed" in run.stderr
