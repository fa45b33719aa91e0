"""The weather example, run by the real CLI in a subprocess on a copy of the project."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather"

GOOD_CASES = {
    "approvals/delete_files",
    "approvals/email_approved",
    "approvals/email_denied",
    "weather/brooklyn_forecast",
    "weather/cancel_long_operation",
    "weather/cities/paris",
    "weather/cities/reykjavik",
    "weather/cities/tokyo",
    "weather/follow_up",
    "weather/greetings/good-morning",
    "weather/greetings/hello",
    "weather/greetings/hi-there",
    "weather/unknown_city",
    "weather/workspace_report",
}
DEMO_FAILURE = "demo/failing_on_purpose"


def anpord(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "anpord", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("example") / "weather"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".anpord", "__pycache__"))
    return dest


@pytest.fixture(scope="module")
def default_run(project: Path) -> subprocess.CompletedProcess[str]:
    return anpord("eval", "--exclude-tag", "demo-failure", cwd=project)


@pytest.fixture(scope="module")
def demo_run(project: Path) -> subprocess.CompletedProcess[str]:
    return anpord("eval", "--tag", "demo-failure", cwd=project)


def test_list_shows_every_case_and_tags_the_demo_failure(project: Path) -> None:
    proc = anpord("eval", "--list", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    rows = {row["id"]: row for row in json.loads(proc.stdout)}
    assert set(rows) == GOOD_CASES | {DEMO_FAILURE}
    assert rows[DEMO_FAILURE]["tags"] == ["demo-failure"]
    assert not any("demo-failure" in rows[c]["tags"] for c in GOOD_CASES)
    assert rows["weather/workspace_report"]["declarative"] is True


def test_default_run_passes_every_case(default_run: subprocess.CompletedProcess[str]) -> None:
    assert default_run.returncode == 0, default_run.stdout + default_run.stderr
    closing = default_run.stdout.strip().splitlines()[-1]
    assert closing == f"{len(GOOD_CASES)} passed, 0 failed"
    for case_id in GOOD_CASES:
        assert re.search(rf"^✓ {re.escape(case_id)}\b", default_run.stdout, re.MULTILINE), case_id
    assert DEMO_FAILURE not in default_run.stdout


def test_default_run_verdicts_in_json(project: Path) -> None:
    proc = anpord("eval", "--exclude-tag", "demo-failure", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    verdicts = {c["case_id"]: [r["verdict"] for r in c["results"]] for c in summary["cells"]}
    assert verdicts == {case_id: ["passed"] for case_id in GOOD_CASES}


def test_default_run_writes_artifacts_inside_the_copy(
    project: Path, default_run: subprocess.CompletedProcess[str]
) -> None:
    runs = sorted((project / ".anpord" / "runs").iterdir())
    assert runs, "no run folder"
    lines = [
        json.loads(line)
        for run in runs
        for line in (run / "results.jsonl").read_text().splitlines()
    ]
    assert {line["case_id"] for line in lines} >= GOOD_CASES
    # The cancel case's events, read back, show the cancelled turn.
    from anpord.results import read_run

    reading = next(read_run(run) for run in runs if '"weather/cancel_long_operation"' in (run / "results.jsonl").read_text())
    types = [e.type for e in reading.events(reading.trial("weather/cancel_long_operation"))]
    assert "turn.cancelled" in types
    assert types.index("tool.called") < types.index("turn.cancelled")


def test_demo_failure_exits_1_and_names_the_failing_assertions(
    demo_run: subprocess.CompletedProcess[str],
) -> None:
    out = demo_run.stdout
    assert demo_run.returncode == 1, out + demo_run.stderr
    assert out.strip().splitlines()[-1] == "0 passed, 1 failed"
    assert f"✗ {DEMO_FAILURE}" in out
    # The failed gates, by name, with what was expected and what was seen.
    assert 'called_tool("get_weather", input={"city": "Osaka"})' in out
    assert 'expected "Osaka", saw "Tokyo"' in out
    assert "the reply promises sunshine" in out
    assert "It is Cloudy in Tokyo" in out


def test_running_one_case_by_id(project: Path) -> None:
    proc = anpord("eval", "weather/cities/tokyo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "1 passed, 0 failed"
