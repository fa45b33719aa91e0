"""``anpord view`` as a command: where it listens, what it prints, how it stops, where it works."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from project_support import Project, anpord_command, eval_file, run_env
from view_support import ViewServer, view_server


def anpord(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*anpord_command(), *args], check=False, cwd=cwd, env=run_env(),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_it_listens_on_this_machine_prints_its_url_and_stops_cleanly_on_sigterm(
    make_project: Callable[..., Project],
) -> None:
    project = make_project({})
    server = ViewServer(project.folder)
    try:
        assert server.host == "127.0.0.1" and server.port > 0
        assert str(project.folder) in server.first_line and "Ctrl-C" in server.first_line
        status, _, body = server.get("/")
        assert status == 200 and "No runs yet" in body
    finally:
        code, _, err = server.stop(signal.SIGTERM)
    assert code == 0, err
    assert "Traceback" not in err


def test_ctrl_c_stops_it_with_exit_0(make_project: Callable[..., Project]) -> None:
    server = ViewServer(make_project({}).folder)
    assert server.get("/")[0] == 200
    code, _, err = server.stop(signal.SIGINT)
    assert code == 0 and "Traceback" not in err, err


def test_it_finds_the_project_from_a_folder_inside_it(make_project: Callable[..., Project]) -> None:
    project = make_project({"evals/weather/sunny.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("weather Brooklyn")
            t.check(t.reply, includes("Sunny"))
        """
    )})
    run = project.run()
    assert run.run_dir is not None, run.output
    with view_server(project.folder / "evals" / "weather") as server:
        status, _, body = server.get("/")
        assert status == 200 and run.run_dir.name in body


def test_outside_a_project_it_says_what_to_create_in_one_line(tmp_path: Path) -> None:
    proc = anpord("view", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anpord view: no evals.config.py found"), proc.stderr


def test_a_bad_port_or_a_busy_one_is_one_line_and_exit_2(make_project: Callable[..., Project]) -> None:
    project = make_project({})
    proc = anpord("view", "--port", "70000", cwd=project.folder)
    assert proc.returncode == 2 and "expected a port number from 0 to 65535" in proc.stderr
    with view_server(project.folder) as first:
        proc = anpord("view", "--port", str(first.port), cwd=project.folder)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"anpord view: cannot listen on 127.0.0.1:{first.port}")
        assert len(proc.stderr.strip().splitlines()) == 1


def test_help_lists_the_command() -> None:
    proc = anpord("--help")
    assert "view" in proc.stdout and "web page" in proc.stdout
    proc = anpord("view", "--help")
    assert proc.returncode == 0 and "--port N" in proc.stdout and "127.0.0.1" in proc.stdout
