"""``--executor ray`` against a real Ray cluster: a head node and a second node, started on this
machine's loopback addresses for this module and stopped at its end (see ``ray_support``).

The suites run through ``anpord eval`` as a subprocess, exactly as a user runs them: the same
results as a local run, trials on both nodes, a worker killed mid-run, Ctrl-C, and the one-line
refusals (an unreachable address, a project over Ray's upload limit, a node with another anpord).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import ray  # noqa: F401 - a machine without Ray fails these tests; it never skips them
from project_support import END, Project, Run, eval_file, run_env
from ray_support import LocalCluster, Node

import anpord
from anpord.runner._ray import NodeRoom, WorkerShape, plan_workers, project_excludes

# One worker runs the whole module: its clusters (each several processes and a hundred ports) one
# after another, never beside another of this suite's.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # Each node holds two sandboxes at once, as `ray start --resources '{"anpord_sandbox": 2}'`.
    nodes = LocalCluster([Node(num_cpus=1, resources={"anpord_sandbox": 2}),
                          Node(num_cpus=1, resources={"anpord_sandbox": 2})])
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()
    assert nodes.killed and not nodes.left_running(), "the cluster left processes behind"


def on_ray(project: Project, cluster: LocalCluster, *args: str, timeout: float = 180, **kw: Any) -> Run:
    return project.run(*args, "--executor", "ray", "--ray-address", cluster.address, timeout=timeout, **kw)


# -- sizing the pool (no cluster) ----------------------------------------------------------------


def test_the_pool_spreads_over_nodes_and_splits_the_concurrency() -> None:
    two = [NodeRoom("a", cpus=1), NodeRoom("b", cpus=1)]
    assert plan_workers(two, max_concurrency=400) == [WorkerShape("a", 200, None), WorkerShape("b", 200, None)]
    # Round-robin: the small node gets a worker before the big one gets its second.
    shapes = plan_workers([NodeRoom("big", cpus=8), NodeRoom("small", cpus=1)], max_concurrency=5)
    assert Counter(s.node_id for s in shapes) == {"big": 4, "small": 1}
    assert sum(s.slots for s in shapes) == 5
    # Never more workers than trials at once.
    assert plan_workers([NodeRoom("a", cpus=64)], max_concurrency=3) == [WorkerShape("a", 1, None)] * 3


def test_declared_sandbox_slots_bound_each_worker_and_the_config_bounds_their_sum() -> None:
    nodes = [NodeRoom("a", cpus=4, sandboxes=8), NodeRoom("b", cpus=4), NodeRoom("c", cpus=2, sandboxes=3)]
    shapes = plan_workers(nodes, max_concurrency=60)
    assert {s.node_id for s in shapes} == {"a", "c"}  # a node that declares no slots gets no worker
    by_node: dict[str, int] = {}
    for s in shapes:
        assert s.sandboxes is not None
        by_node[s.node_id] = by_node.get(s.node_id, 0) + s.sandboxes
    assert by_node == {"a": 8, "c": 3}  # each node's slots, all of them, never more
    capped = plan_workers(nodes, max_concurrency=60, max_sandboxes=4)
    assert sum(s.sandboxes or 0 for s in capped) == 4 and len(capped) == 4
    free = plan_workers([NodeRoom("a", cpus=2), NodeRoom("b", cpus=2)], max_concurrency=10, max_sandboxes=3)
    assert sorted(s.sandboxes or 0 for s in free) == [1, 1, 1] and sum(s.slots for s in free) == 10


def test_no_node_that_can_hold_a_worker_is_a_usage_error() -> None:
    from anpord.runner import UsageError

    with pytest.raises(UsageError, match=r"no node of the Ray cluster can hold an anpord worker \(each needs 1 CPU\)"):
        plan_workers([NodeRoom("a", cpus=0.5)], max_concurrency=8)
    nodes = [NodeRoom("a", cpus=8, memory=3 << 30), NodeRoom("b", cpus=8, memory=9 << 30)]
    assert Counter(s.node_id for s in plan_workers(nodes, max_concurrency=8, memory_per_worker=2 << 30)) == {
        "a": 1, "b": 4}  # as many as each node's memory holds
    with pytest.raises(UsageError, match=r"each needs 1 CPU and 16\.0 GiB of memory\)"):
        plan_workers(nodes, max_concurrency=8, memory_per_worker=16 << 30)


def test_virtualenvs_and_run_folders_do_not_travel(tmp_path: Path) -> None:
    (tmp_path / "tools-env").mkdir()
    (tmp_path / "tools-env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "agents").mkdir()
    excludes = project_excludes(tmp_path)
    assert {".anpord/", ".git/", ".venv/", "/tools-env/"} <= set(excludes)
    assert not any("agents" in e for e in excludes)


# -- the same suite, locally and on Ray ------------------------------------------------------------

TOKEN = "tok-for-the-ray-test-3141"
SUITE_CONFIG = """\
from anpord import Variant, define_eval_config
config = define_eval_config(
    harness="python:agents.kit:agent", timeout=30, max_concurrency=4,
    variants=[Variant(harness="python:agents.kit:agent", secrets=["ANPORD_RAY_TEST_TOKEN"])],
)
"""
SUITE = {
    "evals/mixed.eval.py": eval_file(f"""
        @define_eval(each=["Sunny", "Rain"], id=lambda row: row.lower())
        async def test(t, row):
            await t.send("weather Brooklyn")
            t.called_tool("get_weather")
            t.log("checking " + row)
            await t.send(row)
            t.check(t.reply, includes("Sunny"))
            {END}
    """),
    "evals/slow.eval.py": eval_file(f"""
        @define_eval(each=range(6))
        async def test(t, row):
            await t.send("slow 1.5")
            t.check(t.reply, equals("finished slowly"))
            {END}
    """),
    "evals/decl.eval.py": eval_file("""
        case = define_eval(prompt="echo hi", source=files({"a.txt": "x"}),
                           validate=lambda c: (c.exists("a.txt"), "a.txt is there"))
    """),
    # A fixture folder next to the eval file, and the agent's own package: both travel.
    "evals/fixture.eval.py": eval_file("""
        from anpord import directory
        case = define_eval(prompt="edit", source=directory("fixtures/seed"),
                           validate=lambda c: (c.read_text("result.txt") == "HELLO", "upper-cased"))
    """),
    "evals/fixtures/seed/seed.txt": "hello",
    # The declared secret reaches the sandbox from the driver's environment, on any node.
    "evals/secret.eval.py": eval_file(f"""
        async def token_is_there(c):
            done = await c.exec('test "$ANPORD_RAY_TEST_TOKEN" = "{TOKEN}"')
            return done.exit_code == 0, "the secret reached the sandbox"

        case = define_eval(prompt="echo hi", source=files({{"x": ""}}), validate=token_is_there)
    """),
    "evals/boom.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("raise")
            t.succeeded()
    """),
    "evals/printing.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("print")
            {END}
    """),
    "evals/skipping.eval.py": eval_file("""
        @define_eval
        async def test(t):
            t.skip("not on this day")
    """),
}
MASKED = ("duration", "started_at", "host")


def comparable(run: Run) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Each trial's record with what may differ between two runs of the same suite masked —
    timings, the host, where its events sit in events.ndjson — and its per-trial files' text and
    its events put in, without timestamps and generated ids (a process numbers its tool calls in
    the order its trials make them, whichever executor runs them)."""
    assert run.run_dir is not None, run.output
    reading = run.reading()
    out = {}
    for line in run.results():
        key = (line["case_id"], line["variant"], line["trial"])
        for name in MASKED:
            line.pop(name)
        line["events"] = {"count": line["events"]["count"]}
        line["files"] = {k: (run.run_dir / v).read_text() for k, v in line["files"].items()}
        events = [e.to_dict() for e in reading.events(reading.trial(key[0], index=key[2]))]
        line["event_list"] = [{k: v for k, v in e.items() if k not in ("ts", "session_id", "call_id")}
                              for e in events]
        out[key] = line
    return out


def masked_json(run: Run) -> Any:
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()
                    if k not in (*MASKED, "run_id", "run_dir", "events", "files")}
        if isinstance(value, list):
            return sorted((walk(v) for v in value), key=json.dumps)
        return value

    return walk(run.json())


def junit_cases(path: Path) -> list[tuple[str, str, str]]:
    root = ET.parse(path).getroot()
    return sorted((c.get("classname") or "", c.get("name") or "", ",".join(ch.tag for ch in c))
                  for c in root.iter("testcase"))


def test_a_suite_on_ray_gives_the_local_results_and_runs_on_both_nodes(
        make_project: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    project = make_project(SUITE, config=SUITE_CONFIG)
    env = {"ANPORD_RAY_TEST_TOKEN": TOKEN}
    local = project.run("--trials", "2", "--json", "--verbose", "--junit", str(tmp_path / "local.xml"), env=env)
    remote = on_ray(project, cluster, "--trials", "2", "--json", "--verbose", "--junit", str(tmp_path / "ray.xml"),
                    env=env)
    assert local.code == remote.code == 1, remote.output  # boom and mixed/rain fail: the gate says so
    assert remote.stderr.strip().splitlines()[-1] == local.stderr.strip().splitlines()[-1] \
        == "22 passed, 4 failed, 2 skipped", remote.output

    want, got = comparable(local), comparable(remote)
    assert len(got) == 28 and got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    assert got[("secret", "python:agents.kit:agent/default", 0)]["verdict"] == "passed"
    assert "AGENT-STDOUT-LINE" in got[("printing", "python:agents.kit:agent/default", 0)]["logs"]
    # A traceback names the user's files, not the worker's copy of the project.
    assert str(project.folder / "agents" / "kit.py") in "".join(got[("boom", "python:agents.kit:agent/default", 0)]["logs"])

    # The trials' log lines streamed to the console as they ran, on Ray as here.
    streamed = sorted(x for x in remote.stderr.splitlines() if " | " in x)
    assert streamed == sorted(x for x in local.stderr.splitlines() if " | " in x)
    assert "mixed/rain [python:agents.kit:agent/default #1] | checking Rain" in streamed, remote.stderr
    local_doc, remote_doc = masked_json(local), masked_json(remote)
    # The Ray run is compared with the local one before it: nothing moved.
    counts = remote_doc.pop("comparison")["counts"]
    # Few trials a cell: equal readings are unchanged or, too few to say so, inconclusive.
    assert (counts["regressed"], counts["improved"], counts["incomparable"]) == (0, 0, 1), remote.stdout
    assert counts["unchanged"] + counts["inconclusive"] == 13, remote.stdout
    local_doc.pop("comparison")  # the first run: nothing to compare with
    assert remote_doc == local_doc
    assert junit_cases(tmp_path / "ray.xml") == junit_cases(tmp_path / "local.xml")

    hosts = {line["host"] for line in remote.results()}
    node_ids = set(cluster.node_ids().values())
    assert {h.split("/")[1] for h in hosts} == {n[:12] for n in node_ids}, hosts  # both nodes ran trials
    assert {line["host"] for line in local.results()} == {None}
    assert remote.run_json()["executor"] == "ray"


HOOKED_AGENT = """\
import asyncio, os
from pathlib import Path

LOG = Path({log!r})


class Agent:
    async def setup(self):
        with LOG.open("a") as f:
            f.write(f"setup {{os.getpid()}}\\n")

    async def teardown(self):
        with LOG.open("a") as f:
            f.write(f"teardown {{os.getpid()}}\\n")

    async def __call__(self, turn):
        await asyncio.sleep(0.3)
        return str(os.getpid())


agent = Agent()
"""


def test_an_agent_is_set_up_once_per_worker_and_torn_down_at_the_end(
        make_project: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    log = tmp_path / "hooks.log"
    project = make_project({
        "agents/hooked_here.py": HOOKED_AGENT.format(log=str(log)),
        "evals/evals.config.py": 'from anpord import define_eval_config\n'
                                 'config = define_eval_config(harness="python:agents.hooked_here:agent", '
                                 'max_concurrency=4)\n',
        "evals/many.eval.py": eval_file("""
            @define_eval(each=range(16))
            async def test(t, row):
                await t.send("which process?")
                t.check(t.reply, matches(r"^\\d+$"))
        """),
    }, config=None)
    run = on_ray(project, cluster)
    assert run.code == 0, run.output
    replies = {e["text"] for r in run.results() for e in run.events(r["case_id"])
               if e["type"] == "message.completed" and e["role"] == "assistant"}
    lines = log.read_text().splitlines()
    setups = sorted(int(x.split()[1]) for x in lines if x.startswith("setup"))
    teardowns = sorted(int(x.split()[1]) for x in lines if x.startswith("teardown"))
    assert len(setups) == len(set(setups)) <= 2, lines  # once per worker process, not per trial
    assert {int(pid) for pid in replies} == set(setups)  # every trial ran in a worker that set it up
    assert teardowns == setups, lines


def test_workers_reserve_the_sandbox_slots_their_nodes_declare(make_project: Any, cluster: LocalCluster) -> None:
    # A trial asks Ray, from inside its worker, what the cluster has and what is left free.
    project = make_project({"evals/room.eval.py": eval_file("""
        @define_eval
        async def test(t):
            import ray

            t.log(json.dumps([ray.cluster_resources().get("anpord_sandbox"),
                              ray.available_resources().get("anpord_sandbox", 0)]))
            t.check(1, equals(1))
    """)})
    run = on_ray(project, cluster, "--max-concurrency", "8")
    assert run.code == 0, run.output
    total, free = json.loads(run.result("room")["logs"][0])
    assert (total, free) == (4, 0)  # both workers hold their node's two slots while the run lasts


# -- faults ----------------------------------------------------------------------------------------

HOLD_AGENT = """\
import asyncio, os
from pathlib import Path


async def agent(turn):
    # Says which worker process runs the trial, then holds it until the test creates the file
    # "release" (or for at most SECONDS); a cancelled trial says so too.
    folder, name, seconds = turn.input.split()
    Path(folder, f"started-{name}-{os.getpid()}").touch()
    try:
        for _ in range(int(float(seconds) / 0.05)):
            if Path(folder, "release").exists():
                break
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        Path(folder, f"cancelled-{name}-{os.getpid()}").touch()
        raise
    return "held"
"""


def hold_suite(folder: Path, trials: int, seconds: float) -> dict[str, str]:
    return {
        "agents/hold.py": HOLD_AGENT,
        "evals/evals.config.py": 'from anpord import define_eval_config\n'
                                 'config = define_eval_config(harness="python:agents.hold:agent", max_concurrency=4,'
                                 ' timeout=900)\n',
        "evals/hold.eval.py": eval_file(f"""
            @define_eval(each=range({trials}))
            async def test(t, row):
                await t.send("{folder} " + str(row) + " {seconds}")
                t.check(t.reply, equals("held"))
        """),
    }


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def marks(folder: Path, kind: str) -> list[tuple[str, int]]:
    """(trial row, worker pid) of each ``kind`` marker."""
    return [(p.name.split("-")[1], int(p.name.split("-")[2])) for p in folder.glob(f"{kind}-*")]


def popen_on_ray(project: Project, cluster: LocalCluster, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "anpord", "eval", *args, "--executor", "ray", "--ray-address", cluster.address],
        cwd=project.folder, env=run_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL,
    )


def test_a_killed_worker_reruns_its_trials_once_elsewhere_and_nothing_is_lost_or_doubled(
        make_project: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    folder = tmp_path / "marks"
    folder.mkdir()
    project = make_project(hold_suite(folder, trials=8, seconds=120), config=None)
    proc = popen_on_ray(project, cluster, "--json")
    try:
        wait_for(lambda: len(marks(folder, "started")) >= 2, 120, "trials to start on the workers")
        victim = marks(folder, "started")[0][1]
        on_victim = {row for row, pid in marks(folder, "started") if pid == victim}
        os.kill(victim, signal.SIGKILL)  # its trials are held: in flight when it dies
        (folder / "release").touch()
        out, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "died; its trials run again on another worker (once: a trial that loses its worker twice is void)" \
        in err
    summary = json.loads(out)
    assert summary["totals"]["passed"] == 8 and summary["totals"]["trials"] == 8, summary["totals"]
    run_dir = Path(summary["run_dir"])
    lines = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in lines) == [f"hold/{i:04d}" for i in range(8)]  # each once
    retried = {r["case_id"].split("/")[1].lstrip("0") or "0" for r in lines if r["attempt"] == 1}
    assert on_victim and on_victim <= retried, (on_victim, retried)
    assert all(r["verdict"] == "passed" for r in lines)
    for row in on_victim:  # started once on the killed worker, once more in another process
        pids = [pid for r, pid in marks(folder, "started") if r == row]
        assert len(pids) == 2 and victim in pids, (row, pids)


def test_a_lost_node_has_its_trials_run_again_on_the_other(make_project: Any, tmp_path: Path) -> None:
    own = LocalCluster([Node(num_cpus=1), Node(num_cpus=1)])  # this test takes a node away
    try:
        own.start()
        second = own.node_ids()["127.0.0.3"][:12]
        folder = tmp_path / "marks"
        folder.mkdir()
        project = make_project(hold_suite(folder, trials=8, seconds=120), config=None)
        proc = popen_on_ray(project, own, "--json")
        try:
            wait_for(lambda: len({pid for _, pid in marks(folder, "started")}) == 2, 120,
                     "trials to start on both workers")
            own.kill_node(1)  # every process of the second node, at once, while it holds trials
            (folder / "release").touch()
            out, err = proc.communicate(timeout=240)
        finally:
            proc.kill()
    finally:
        own.stop()
    assert proc.returncode == 0, err
    assert f"the Ray worker on {socket.gethostname()}/{second} died" in err, err
    lines = [json.loads(x) for x in (Path(json.loads(out)["run_dir"]) / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in lines) == [f"hold/{i:04d}" for i in range(8)]
    assert all(r["verdict"] == "passed" for r in lines)
    retried = [r for r in lines if r["attempt"] == 1]
    assert retried and all(not r["host"].endswith(second) for r in retried), lines  # on the other node


def test_a_trial_whose_worker_dies_on_both_attempts_is_void_with_the_reason(
        make_project: Any, cluster: LocalCluster) -> None:
    project = make_project({
        "evals/suicide.eval.py": eval_file("""
            import os, signal

            @define_eval
            async def test(t):
                os.kill(os.getpid(), signal.SIGKILL)  # takes its worker process down, every time
        """),
        "evals/calm.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hello")
                {END}
        """),
    })
    run = on_ray(project, cluster, "--max-concurrency", "1")
    assert run.code == 1, run.output
    verdicts = {r["case_id"]: (r["verdict"], r["attempt"], r["reason"]) for r in run.results()}
    assert len(run.results()) == 2
    verdict, attempt, reason = verdicts["suicide"]
    assert (verdict, attempt) == ("void", 1)
    assert reason.startswith("its Ray worker died, on both attempts (the second on "), reason
    assert verdicts["calm"][0] == "passed"
    assert run.stdout.strip().splitlines()[-1] == "1 passed, 0 failed, 1 void", run.output


def test_when_no_worker_is_left_every_trial_is_still_reported_void(make_project: Any, cluster: LocalCluster) -> None:
    # One worker at a time, replaced twice: three workers die, then none is left for the rest.
    project = make_project({
        "evals/a_suicide.eval.py": eval_file("""
            import os, signal

            @define_eval(each=range(3))
            async def test(t, row):
                os.kill(os.getpid(), signal.SIGKILL)
        """),
        "evals/b_calm.eval.py": eval_file(f"""
            @define_eval(each=range(2))
            async def test(t, row):
                await t.send("hello")
                {END}
        """),
    })
    run = on_ray(project, cluster, "--max-concurrency", "1")
    assert run.code == 1, run.output
    lines = {r["case_id"]: r for r in run.results()}
    assert sorted(lines) == ["a_suicide/0000", "a_suicide/0001", "a_suicide/0002", "b_calm/0000", "b_calm/0001"]
    assert all(r["verdict"] == "void" for r in lines.values()), run.output
    assert lines["a_suicide/0000"]["reason"].startswith("its Ray worker died, on both attempts")
    left = [r for r in lines.values() if r["reason"].startswith("no Ray worker is left to run it (the last, on ")]
    assert len(left) == 4, run.output
    assert run.stdout.strip().splitlines()[-1] == "0 passed, 0 failed, 5 void", run.output


def test_ctrl_c_cancels_the_remote_trials_and_exits_130(
        make_project: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    folder = tmp_path / "marks"
    folder.mkdir()
    # Held far longer than the run may take to stop: a stop that waited for them would time out.
    project = make_project(hold_suite(folder, trials=4, seconds=600), config=None)
    proc = popen_on_ray(project, cluster)
    try:
        wait_for(lambda: len(marks(folder, "started")) == 4, 120, "all four trials to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Interrupted: 0 of 4 trials finished" in out, out
    # Every remote trial heard its cancellation (its finally ran), and its worker is gone.
    assert sorted(marks(folder, "cancelled")) == sorted(marks(folder, "started"))
    for _, pid in marks(folder, "started"):
        wait_for(lambda pid=pid: not Path(f"/proc/{pid}").exists(), 30, f"worker {pid} to end")
    run_dir = max((project.folder / ".anpord" / "runs").iterdir())
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"


# -- refusals: one line, exit 2, nothing written -----------------------------------------------------


def one_line_refusal(run: Run) -> str:
    assert run.code == 2, run.output
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.output
    assert run.run_dir is None
    return lines[0]


def test_an_unreachable_cluster_address_is_one_line(make_project: Any) -> None:
    project = make_project({"evals/a.eval.py": eval_file("case = define_eval(prompt='hi', validate=lambda c: True)")})
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.2", 0))
        closed = s.getsockname()[1]
    line = one_line_refusal(project.run("--executor", "ray", "--ray-address", f"127.0.0.2:{closed}"))
    assert line == f"anpord eval: cannot reach the Ray cluster at 127.0.0.2:{closed}: Connection refused"

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.2", 0), Page)  # something that is not a Ray cluster
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        # Told by a probe of the address (a bound on a hang, not a measure of speed).
        line = one_line_refusal(project.run("--executor", "ray", "--ray-address", f"127.0.0.2:{port}",
                                            timeout=50))
    finally:
        server.shutdown()
    assert line.startswith(f"anpord eval: 127.0.0.2:{port} is not a Ray cluster's address")


def test_options_ray_cannot_honour_are_refused(make_project: Any) -> None:
    project = make_project({"evals/a.eval.py": eval_file("case = define_eval(prompt='hi', validate=lambda c: True)")})
    assert one_line_refusal(project.run("--executor", "ray", "--cache")).startswith(
        "anpord eval: --cache is not available with --executor ray")
    assert one_line_refusal(project.run("--ray-address", "127.0.0.2:6379")) == (
        'anpord eval: --ray-address needs --executor ray (or executor="ray" in evals.config.py)')
    # The config chooses Ray for every run; --executor local wins over it.
    project.write({"evals/evals.config.py": 'from anpord import define_eval_config\n'
                                            'config = define_eval_config(harness="python:agents.kit:agent", '
                                            'executor="ray")\n'})
    assert one_line_refusal(project.run("--cache")).startswith("anpord eval: --cache is not available with --executor ray")
    local = project.run("--executor", "local", "--cache")
    assert local.code == 0 and local.run_json()["executor"] == "local", local.output


def test_a_project_over_rays_upload_limit_is_one_line_and_excluded_folders_do_not_count(
        make_project: Any, cluster: LocalCluster) -> None:
    project = make_project({"evals/a.eval.py": eval_file("case = define_eval(prompt='hi', validate=lambda c: True)")})
    limit = {"RAY_max_grpc_message_size": str(600_000)}  # Ray's limit, lowered for the driver
    for hidden in (".git/objects/pack.bin", ".anpord/cache/blob.bin", "tools-env/lib/big.so"):
        path = project.folder / hidden
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(700_000))
    (project.folder / "tools-env" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv
    fits = on_ray(project, cluster, env=limit)
    assert fits.code == 0, fits.output  # 2.1 MB of run folders, history and virtualenv stayed home
    (project.folder / "evals" / "fixtures").mkdir()
    (project.folder / "evals" / "fixtures" / "blob.bin").write_bytes(os.urandom(700_000))
    line = one_line_refusal(on_ray(project, cluster, env=limit))
    assert re.fullmatch(
        rf"anpord eval: the project folder {re.escape(str(project.folder))} is too large to send to Ray: "
        r"0\.\d+MiB zipped, over Ray's limit of 0\.57MiB; exclude what the trials do not need "
        r"\(\.gitignore or \.rayignore\)", line), line


def test_workers_no_node_can_hold_are_refused_before_any_trial(make_project: Any, cluster: LocalCluster) -> None:
    project = make_project({"evals/a.eval.py": eval_file("case = define_eval(prompt='hi', validate=lambda c: True)")})
    line = one_line_refusal(on_ray(project, cluster, env={"ANPORD_RAY_WORKER_MEMORY": "64T"}))
    assert line == ("anpord eval: no node of the Ray cluster can hold an anpord worker "
                    "(each needs 1 CPU, 65,536.0 GiB of memory and 1 anpord_sandbox)")


@pytest.mark.parametrize("version", ["0.0.1.dev7", anpord.__version__])
def test_a_node_with_another_anpord_is_refused_before_any_trial(
        make_project: Any, cluster: LocalCluster, tmp_path: Path, version: str) -> None:
    # The project ships its own `anpord` package: on the cluster it shadows the installed one —
    # another version, or the same version number over other code.
    project = make_project({
        "evals/a.eval.py": eval_file("case = define_eval(prompt='hi', validate=lambda c: True)"),
        "anpord/__init__.py": f"__version__ = {version!r}\n",
    })
    elsewhere = tmp_path / "elsewhere"  # the driver must not import it: run from another folder
    elsewhere.mkdir()
    line = one_line_refusal(on_ray(project, cluster, str(project.folder / "evals"), cwd=elsewhere))
    why = (f"its anpord {re.escape(version)} is other code than this driver's \\(another checkout or a changed "
           "install\\): install the driver's anpord there" if version == anpord.__version__
           else f"it has anpord {re.escape(version)}, this driver {re.escape(anpord.__version__)}")
    assert re.fullmatch(rf"anpord eval: Ray node 127\.0\.0\.[23] \(\w{{12}}\) cannot run this run's trials: {why}",
                        line), line


def test_ray_is_imported_only_when_a_run_asks_for_it(make_project: Any) -> None:
    project = make_project({"evals/a.eval.py": eval_file("case = define_eval(prompt='hi', validate=lambda c: True)")})
    probe = ("import sys\nfrom anpord.cli.main import main\ncode = main(sys.argv[1:])\n"
             "print('RAY-IMPORTED' if 'ray' in sys.modules else 'NO-RAY', code, file=sys.__stderr__)")
    for args in (["--help"], ["eval", "--json"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=project.folder, env=run_env(),
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.stderr.strip().splitlines()[-1] == "NO-RAY 0", done.stderr
