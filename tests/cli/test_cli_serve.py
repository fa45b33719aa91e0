"""``anpord serve``: the command's arguments and errors, its URL line, the agent's setup and
teardown hooks, and a clean stop on SIGTERM or Ctrl-C, even mid-turn."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from project_support import Project, anpord_command, run_env
from serve_support import request, serve, stream_lines


def _serve_once(project: Project, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*anpord_command(), "serve", *args], cwd=cwd or project.folder, env=run_env(env),
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
    )


def test_help_lists_serve_and_its_options(make_project: Callable[..., Project]) -> None:
    project = make_project()
    top = subprocess.run([*anpord_command(), "--help"], capture_output=True, text=True, env=run_env(), check=False)
    assert "serve SPEC" in top.stdout
    done = _serve_once(project, "--help")
    assert done.returncode == 0
    for option in ("--port N", "--host HOST", "--idle-timeout S", "package.module:attr"):
        assert option in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere.agent:agent"], "cannot import nowhere.agent: ModuleNotFoundError"),
        (["agents.kit:missing"], "agents.kit has no attribute 'missing'"),
        (["agents.kit:not_callable"], "not_callable is not callable (int)"),
        (["agents.kit"], "must be 'python:package.module:attr'"),
        (["agents.kit:agent", "--port", "70000"], "expected a port number from 0 to 65535"),
        (["agents.kit:agent", "--idle-timeout", "0"], "expected a positive number of seconds"),
    ],
)
def test_a_bad_spec_or_argument_is_one_line_and_exit_2(
    make_project: Callable[..., Project], args: list[str], message: str
) -> None:
    done = _serve_once(make_project(), *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_port_in_use_is_one_line_and_exit_2(make_project: Callable[..., Project]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve_once(make_project(), "agents.kit:agent", "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.strip() == f"anpord serve: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_the_python_prefix_and_the_project_folder_resolve_the_spec(make_project: Callable[..., Project]) -> None:
    project = make_project()
    # From inside evals/: the agents package is found through the project folder.
    server = serve("python:agents.kit:agent", project.folder / "evals")
    try:
        assert server.stdout[0].startswith(f"anpord serve: agents.kit:agent at {server.url}")
        info = request(server.url, "GET", "/v1/info").json()
        assert info["name"] == "agents.kit:agent"
    finally:
        assert server.stop() == 0


def test_hooks_run_once_around_the_server_and_sigterm_stops_it_cleanly(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    project = make_project()
    log = tmp_path / "hooks.log"
    server = serve("agents.hooked:hooked", project.folder, env={"HOOKS_LOG": str(log)})
    try:
        assert log.read_text().splitlines() == ["setup"]  # before the URL was printed
        request(server.url, "POST", "/v1/sessions", {"session_id": "s1"})
        lines = list(stream_lines(server.url, "/v1/sessions/s1/turns", {"input": "hi"}))
        assert lines[-1]["message"] == "ready=True"
    finally:
        code = server.stop(signal.SIGTERM)
    assert code == 0, server.output
    assert log.read_text().splitlines() == ["setup", "teardown"]
    assert "anpord serve: stopping" in "".join(server.stderr)


def test_ctrl_c_mid_turn_ends_the_stream_cancelled_and_exits_0(make_project: Callable[..., Project]) -> None:
    project = make_project()
    server = serve("agents.kit:agent", project.folder)
    request(server.url, "POST", "/v1/sessions", {"session_id": "s1"})
    seen: list[dict[str, Any]] = []
    started = threading.Event()

    def read() -> None:
        for line in stream_lines(server.url, "/v1/sessions/s1/turns", {"input": "slow 30"}):
            seen.append(line)
            started.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert started.wait(60)
    code = server.stop(signal.SIGINT)
    reader.join(60)
    assert code == 0, server.output
    assert seen[0] == {"type": "progress", "step": 1, "session_id": "s1"}
    assert seen[-1]["type"] == "turn.end" and seen[-1]["status"] == "cancelled"


def test_a_failing_setup_hook_stops_the_server_with_one_line(make_project: Callable[..., Project]) -> None:
    done = _serve_once(make_project(), "agents.hooked:broken_setup", "--port", "0")
    assert done.returncode == 1
    assert done.stderr.strip() == "anpord serve: the agent's setup hook failed: RuntimeError: no database"
    assert done.stdout == ""  # never announced a URL
