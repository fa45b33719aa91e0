"""What the view refuses: paths outside the runs, unknown runs, other methods, other hosts, links
out of a run folder — and the headers every answer carries. Plain HTTP requests against the real
``anpord view``, sent exactly as written (no client-side clean-up of ``..``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from project_support import Project, eval_file
from view_support import ViewServer, trial_path, view_server

SECRET = "TOP-SECRET-CONTENT-7f3a"
VARIANT = "python:agents.kit:agent/default"

FILES = {
    "evals/boom.eval.py": eval_file(
        """
        @define_eval
        async def test(t):
            await t.send("raise")
        """
    ),
}


@dataclass
class Served:
    project: Project
    run_id: str
    server: ViewServer
    outside: Path


@pytest.fixture(scope="module")
def served(make_module_project: Callable[..., Project], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    project = make_module_project(FILES)
    run = project.run()
    assert run.run_dir is not None and run.result("boom")["files"].get("traceback"), run.output
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text(SECRET)
    # FIFOs outside the runs: opening one for reading blocks until a writer comes, so a request
    # that read any of them would hang instead of answering 404.
    for name in ("fifo", "passwd"):
        os.mkfifo(outside / name)
    os.mkfifo(project.folder / "secret-fifo")
    os.mkfifo(project.folder / ".anpord" / "fifo")
    with view_server(project.folder) as server:
        yield Served(project, run.run_dir.name, server, outside)


TRAVERSALS = [
    "/runs/..",
    "/runs/../secret-fifo",
    "/runs/%2e%2e",
    "/runs/%2e%2e/%2e%2e/secret-fifo",
    "/runs/..%2f..%2fsecret-fifo",
    "/runs/%2E%2E%2Ffifo",
    "/runs/..%5c..%5csecret-fifo",
    "/runs/%2Fetc%2Fpasswd",
    "/runs//etc/passwd",
    "/runs/{outside}%2Ffifo",
    "/runs/{run}/../../secret-fifo",
    "/runs/{run}/trials/..%2f..%2f..%2fsecret-fifo",
    "/runs/{run}/value/boom?variant=x&trial=0&at=../../secret-fifo",
    "/static/..%2f..%2f..%2fpyproject.toml",
    "/static/%2e%2e/_app.py",
    "/static/../templates/base.html",
    "/static/view.css/../../_app.py",
    "/..%2f..%2f..%2fetc%2fpasswd",
    "/%2e%2e/%2e%2e/secret-fifo",
    "{outside_raw}/fifo",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_a_path_outside_the_runs_is_404_and_nothing_is_read(served: Served, target: str) -> None:
    target = target.format(run=served.run_id, outside=str(served.outside).replace("/", "%2F"),
                           outside_raw=served.outside)
    status, headers, body = served.server.get(target, timeout=30)  # a read FIFO would hang
    assert status == 404, (target, status, body[:200])
    assert headers.get("x-content-type-options") == "nosniff"
    assert SECRET not in body and "root:" not in body and "import" not in body


def test_an_unknown_run_is_a_404_page(served: Served) -> None:
    status, headers, body = served.server.get("/runs/20990101-000000-ffffff")
    assert status == 404
    assert headers["content-type"].startswith("text/html")
    assert "Not found" in body and "run 20990101-000000-ffffff" in body
    status, _, body = served.server.get(trial_path(served.run_id, "no/such/case", VARIANT, 0))
    assert status == 404 and "Not found" in body
    status, _, _ = served.server.get(trial_path(served.run_id, "boom", VARIANT, 7))
    assert status == 404
    status, _, _ = served.server.get(f"/runs/{served.run_id}/trials/boom?variant=x&trial=-1")
    assert status == 404


def test_every_answer_carries_a_strict_policy_and_nosniff(served: Served) -> None:
    for target in ["/", f"/runs/{served.run_id}", trial_path(served.run_id, "boom", VARIANT, 0),
                   "/static/view.js", "/runs/nope", "/nowhere"]:
        status, headers, _ = served.server.get(target)
        assert status in (200, 404), target
        csp = headers.get("content-security-policy", "")
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, (target, csp)
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert headers.get("x-content-type-options") == "nosniff", target
        assert headers.get("x-frame-options") == "DENY"


def test_only_get_and_head_are_served(served: Served) -> None:
    status, _, body = served.server.get("/", method="HEAD")
    assert status == 200 and body == ""
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, headers, _ = served.server.get(f"/runs/{served.run_id}", method=method,
                                               headers={"Content-Length": "0"})
        assert status == 405, method
        assert "content-security-policy" in headers


def test_a_request_naming_another_host_is_refused(served: Served) -> None:
    # A page elsewhere that rebinds its own name to 127.0.0.1 still sends its own Host.
    status, _, body = served.server.get("/", headers={"Host": f"evil.example:{served.server.port}"})
    assert status == 403 and served.run_id not in body
    status, _, body = served.server.get("/", headers={"Host": f"localhost:{served.server.port}"})
    assert status == 200 and served.run_id in body


def test_files_that_link_out_of_the_run_folder_are_not_followed(served: Served) -> None:
    run_dir = served.project.folder / ".anpord" / "runs" / served.run_id
    result = next(line for line in (run_dir / "results.jsonl").read_text().splitlines() if line)
    traceback_file = run_dir / __import__("json").loads(result)["files"]["traceback"]
    page = trial_path(served.run_id, "boom", VARIANT, 0)
    status, _, body = served.server.get(page)
    assert status == 200 and "RuntimeError: agent exploded" in body and "Traceback" in body

    traceback_file.unlink()
    traceback_file.symlink_to(served.outside / "secret.txt")
    events = run_dir / "events.ndjson"
    events.rename(run_dir / "events.real")
    events.symlink_to(served.outside / "secret.txt")
    try:
        status, _, body = served.server.get(page)
        assert status == 200
        assert SECRET not in body
        assert "is outside the run" in body  # the traceback's link, refused and said so
        assert "events.ndjson is a link: not followed" in body
        assert "RuntimeError: agent exploded" in body  # the line's own error still shows
    finally:
        events.unlink()
        (run_dir / "events.real").rename(events)

    # A run folder that is a link to a folder elsewhere is not a run of this project.
    link = run_dir.parent / "20990101-000000-linked"
    link.symlink_to(served.outside, target_is_directory=True)
    status, _, body = served.server.get("/")
    assert "20990101-000000-linked" not in body
    assert served.server.get("/runs/20990101-000000-linked")[0] == 404
