"""The Node.js agent example: a server written in another language, standard library only, run on
a free port and evaluated by the real ``anpord eval`` through the HTTP harness."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from project_support import run_env
from serve_support import Server, start_server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node_agent"
CASES = {"approval", "cancel", "denied", "forecast_data", "memory", "unknown_city", "weather/lisbon",
         "weather/oslo"}


def anpord(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anpord", *args], cwd=cwd, env=run_env(env), capture_output=True,
        text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("example") / "node_agent"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".anpord", "__pycache__"))
    return dest


@pytest.fixture(scope="module")
def node(project: Path) -> Iterator[Server]:
    executable = shutil.which("node")
    assert executable, "this test needs Node.js on PATH (Debian/Ubuntu package: nodejs)"
    server = start_server([executable, "server.mjs", "--port", "0"], project)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def run(project: Path, node: Server) -> dict[str, Any]:
    done = anpord("eval", "--json", cwd=project, env={"NODE_AGENT_URL": node.url})
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout), run_dir=Path(json.loads(done.stdout)["run_dir"]))


def _events(run: dict[str, Any], case_id: str) -> list[dict[str, Any]]:
    from anpord.results import read_run

    reading = read_run(run["run_dir"])
    return [e.to_dict() for e in reading.events(reading.trial(case_id))]


def test_every_case_of_the_example_passes_against_the_node_server(run: dict[str, Any], node: Server) -> None:
    verdicts = {c["case_id"]: [r["verdict"] for r in c["results"]] for c in run["cells"]}
    assert verdicts == {case: ["passed"] for case in CASES}
    assert {c["variant"] for c in run["cells"]} == {f"{node.url}/default"}


def test_the_approval_round_trip_is_recorded_as_anpord_events(run: dict[str, Any]) -> None:
    events = _events(run, "approval")
    asked = next(e for e in events if e["type"] == "input.requested")
    assert asked["request_id"] == "delete:notes.txt"
    assert asked["options"] == [{"id": "approve", "label": "Delete it"}, {"id": "deny", "label": "Keep it"}]
    types = [e["type"] for e in events]
    assert types.index("input.requested") < types.index("session.waiting") < types.index("input.resolved")
    assert types.index("input.resolved") < types.index("tool.called")


def test_the_cancelled_turn_streamed_progress_then_stopped(run: dict[str, Any]) -> None:
    types = [e["type"] for e in _events(run, "cancel")]
    assert types[:3] == ["session.started", "turn.started", "message.completed"]
    assert types[3:5] == ["usage", "progress"]
    assert types.count("progress") < 100
    assert types[-3:] == ["turn.cancelled", "session.waiting", "session.completed"]


def test_a_wrong_expectation_fails_against_the_node_server(project: Path, node: Server) -> None:
    (project / "evals" / "wrong.eval.py").write_text(
        "from anpord import define_eval\n\n"
        "@define_eval\n"
        "async def test(t):\n"
        "    await t.send('weather in Lisbon')\n"
        "    t.message_includes('Rainy')\n"
    )
    try:
        done = anpord("eval", "wrong", "--harness", node.url, cwd=project)
    finally:
        (project / "evals" / "wrong.eval.py").unlink()
    assert done.returncode == 1
    assert 'no assistant message includes "Rainy"' in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "0 passed, 1 failed"


def test_with_the_server_stopped_every_trial_is_void(project: Path, node: Server, run: dict[str, Any]) -> None:
    node.stop()
    done = anpord("eval", "weather", cwd=project, env={"NODE_AGENT_URL": node.url})
    assert done.returncode == 1
    assert done.stdout.strip().splitlines()[-1] == "0 passed, 0 failed, 2 void"
    assert f"cannot reach the agent server at {node.url}: Connection refused" in done.stdout
