"""Helpers for the core tests: a throw-away project on disk and real runs of ``anpord eval``.

``make_project({...})`` writes a project folder (``evals/evals.config.py`` pointing at the example
agents in ``agents/kit.py``, plus the files given) and returns a ``Project``; ``project.run(...)``
runs ``anpord eval ...`` as a subprocess with the project folder as its cwd and returns a ``Run``
(exit code, stdout, stderr, the run folder and readers for its artifacts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AGENTS_DIR = Path(__file__).parent / "project_agents"
DEFAULT_CONFIG = """\
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.kit:agent", timeout=10)
"""


SRC = Path(__file__).resolve().parents[1] / "src"


def anpord_command() -> list[str]:
    """This checkout's anpord, never a console script on PATH (it may belong to another install)."""
    return [sys.executable, "-m", "anpord"]


def run_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.pop("FORCE_COLOR", None)
    if extra:
        env.update(extra)
    return env


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    run_dir: Path | None
    wall: float

    # -- artifacts --------------------------------------------------------------------------

    def results(self) -> list[dict[str, Any]]:
        assert self.run_dir is not None, f"no run folder was written\n{self.output}"
        path = self.run_dir / "results.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def run_json(self) -> dict[str, Any]:
        assert self.run_dir is not None, f"no run folder was written\n{self.output}"
        return json.loads((self.run_dir / "run.json").read_text())

    def by_case(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for line in sorted(self.results(), key=lambda r: (r["case_id"], r["variant"], r["trial"])):
            out.setdefault(line["case_id"], []).append(line)
        return out

    def verdicts(self) -> dict[str, str]:
        """case id → verdict of its (only) trial."""
        out = {}
        for case_id, lines in self.by_case().items():
            assert len(lines) == 1, f"{case_id} ran {len(lines)} trials"
            out[case_id] = lines[0]["verdict"]
        return out

    def result(self, case_id: str, trial: int = 0) -> dict[str, Any]:
        for line in self.results():
            if line["case_id"] == case_id and line["trial"] == trial:
                return line
        raise AssertionError(f"no result for {case_id} #{trial}; have {sorted(self.by_case())}")

    def assertions(self, case_id: str, trial: int = 0) -> dict[str, dict[str, Any]]:
        """The trial's assertions by label (falling back to name)."""
        return {a["label"] or a["name"]: a for a in self.result(case_id, trial)["assertions"]}

    def reading(self) -> Any:
        """The run read back through the public reader (``anpord.results.read_run``)."""
        from anpord.results import read_run

        assert self.run_dir is not None, f"no run folder was written\n{self.output}"
        return read_run(self.run_dir)

    def trial(self, case_id: str, trial: int = 0) -> dict[str, Any]:
        """The trial's record as the reader gives it, with its traceback and logs loaded (also
        when they were kept in files under trials/)."""
        reading = self.reading()
        record = reading.trial(case_id, index=trial)
        out = record.to_dict()
        out["traceback"] = reading.traceback(record)
        out["logs"] = reading.logs(record)
        return out

    def events(self, case_id: str, trial: int = 0) -> list[dict[str, Any]]:
        reading = self.reading()
        return [e.to_dict() for e in reading.events(reading.trial(case_id, index=trial))]

    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    @property
    def output(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


class Project:
    def __init__(self, folder: Path):
        self.folder = folder

    def write(self, files: Mapping[str, str]) -> None:
        for name, text in files.items():
            path = self.folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))

    def path(self, name: str) -> Path:
        return self.folder / name

    def _runs(self) -> set[Path]:
        runs = self.folder / ".anpord" / "runs"
        return set(runs.iterdir()) if runs.is_dir() else set()

    def run(self, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> Run:
        before = self._runs()
        started = time.monotonic()
        proc = subprocess.run(
            [*anpord_command(), "eval", *args],
            check=False,
            cwd=cwd or self.folder,
            env=run_env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        wall = time.monotonic() - started
        new = sorted(self._runs() - before)
        return Run(proc.returncode, proc.stdout, proc.stderr, new[-1] if new else None, wall)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*anpord_command(), "eval", *args],
            cwd=self.folder,
            env=run_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def latest_run_dir(self) -> Path | None:
        runs = sorted(self._runs())
        return runs[-1] if runs else None

    def finished_trials(self) -> int:
        """The lines the latest run has written to its results.jsonl: its finished trials."""
        run_dir = self.latest_run_dir()
        results = run_dir / "results.jsonl" if run_dir else None
        return results.read_text().count("\n") if results is not None and results.is_file() else 0


def build_project(folder: Path, files: Mapping[str, str] | None = None, *,
                  config: str | None = DEFAULT_CONFIG, agents: bool = True) -> Project:
    """Write a project folder: the example agents, ``evals/evals.config.py`` and ``files``
    (paths relative to the project folder, text dedented)."""
    folder.mkdir(parents=True)
    project = Project(folder)
    if agents:
        shutil.copytree(AGENTS_DIR, folder / "agents", ignore=shutil.ignore_patterns("__pycache__"))
    if config is not None:
        project.write({"evals/evals.config.py": config})
    project.write(files or {})
    return project


def eval_file(body: str, imports: str = "") -> str:
    """An eval file: the common imports, then ``body`` (both dedented)."""
    head = (
        "import asyncio, json, re, time\n"
        "from pathlib import Path\n"
        "from anpord import define_eval, define_suite, files\n"
        "from anpord.expect import includes, equals, matches, satisfies, similarity\n"
    )
    return head + textwrap.dedent(imports) + "\n" + textwrap.dedent(body).lstrip("\n")


# Ends a test body so a run proves the body got to its last line.
END = 't.check("end", equals("end")).label("reached the end")'


def assert_passed(run: Run, case_id: str, trial: int = 0) -> dict[str, Any]:
    """The trial passed, every one of its assertions passed and its body reached ``END``."""
    line = run.result(case_id, trial)
    assert line["verdict"] == "passed", f"{case_id}: {line['verdict']}: {line['reason']}\n{run.output}"
    labels = {a["label"] for a in line["assertions"]}
    assert "reached the end" in labels, f"{case_id} did not reach its last line"
    assert all(a["status"] == "passed" for a in line["assertions"]), line["assertions"]
    return line
