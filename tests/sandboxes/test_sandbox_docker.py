"""The docker sandbox with a real container engine (podman here; docker where its daemon runs):
commands run in the trial's container, its network is closed but trial services are bridged in,
caps bind and fail the trial naming them, bad set-ups are void with one line, and nothing of a
trial is left — not even after its runner is SIGKILLed."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from container_support import containers, sandbox_image
from project_support import eval_file
from sandbox_support import run, spec

from anpord.sandboxes import SandboxError, sweep_stale
from anpord.sandboxes._owner import default_tmp_root
from anpord.sandboxes._bridge import bind_unix
from anpord.sandboxes._container import LABEL
from anpord.sandboxes.docker import DockerSandbox

# One worker runs them all, one after another: several assert that no container is left at all.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docker")]


@pytest.fixture(scope="module")
def image() -> str:
    return sandbox_image()


def test_commands_run_in_the_trials_container_with_its_workspace_and_home(image: str, tmp_root: Path) -> None:
    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image))
        try:
            assert inst.container in containers()
            done = await inst.exec("pwd; echo $HOME; echo made > out.txt; test -w / || echo read-only /")
            assert done.ok, done
            assert done.stdout.splitlines() == [str(inst.workspace), str(inst.home), "read-only /"]
            assert (inst.workspace / "out.txt").read_text() == "made\n"  # the same files on the host
            # In the container: its own hostname and process list, not the host's.
            seen = await inst.exec("cat /proc/sys/kernel/hostname; ls /proc | grep -c '^[0-9]' || true")
            assert seen.stdout.split()[0] == "sandbox" and int(seen.stdout.split()[1]) < 10, seen
        finally:
            await inst.close()
        assert inst.container not in containers()

    run(body())


def test_what_a_command_leaves_running_ends_with_it_and_a_timeout_kills_its_tree(image: str, tmp_root: Path) -> None:
    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image))
        try:
            await inst.exec("(setsid sleep 300 &) ; (sleep 301 &); echo started")
            timed = await inst.exec("sleep 302 & sleep 303", timeout=1)
            assert timed.timed_out
            left = await inst.exec("for d in /proc/[0-9]*; do cat $d/cmdline 2>/dev/null; echo; done")
            assert not any(f"sleep\x0030{n}" in left.stdout for n in range(4)), left.stdout
        finally:
            await inst.close()

    run(body())


def test_the_network_is_closed_but_a_trial_service_is_bridged_in(image: str, tmp_root: Path, listener: Any) -> None:
    reach = "import socket,sys; s=socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3); s.sendall(b'hi'); print(s.recv(9).decode())"

    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image))
        served: list[bytes] = []

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            served.append(await reader.read(2))
            writer.write(b"back")
            await writer.drain()
            writer.close()

        path = inst.state_dir / "svc.sock"
        server = await asyncio.start_unix_server(echo, sock=bind_unix(path))
        try:
            assert inst.loopback_bridged
            inst.bridge_loopback(listener.port, path)  # the host's port, now inside too
            done = await inst.exec(f"python3 -c \"{reach}\" {listener.port}", timeout=20)
            assert done.ok and done.stdout.strip() == "back", done
            assert served == [b"hi"] and listener.connections == 0  # not the host's listener
            closed = await inst.exec(f"python3 -c \"{reach}\" {listener.port + 1}", timeout=20)
            assert not closed.ok and "Connection refused" in closed.stderr, closed
        finally:
            server.close()
            await inst.close()

    run(body())


def test_a_missing_image_and_a_failing_dockerfile_are_set_up_errors_with_the_builds_tail(tmp_path: Path, tmp_root: Path, image: str) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {image}\nRUN echo about to fail && exit 3\n")

    async def body() -> None:
        sandbox = DockerSandbox(tmp_root=tmp_root)
        with pytest.raises(SandboxError) as missing:
            await sandbox.open(spec(sandbox="docker", image="localhost/anpord-no-such-image:1"))
        assert "image 'localhost/anpord-no-such-image:1' is not on this machine" in str(missing.value)
        with pytest.raises(SandboxError) as failed:
            await sandbox.open(spec(base=tmp_path, sandbox="docker", dockerfile="Dockerfile"))
        text = str(failed.value)
        assert text.startswith(f"building {tmp_path / 'Dockerfile'} failed"), text
        assert "about to fail" in text, text

    run(body())


def test_a_dockerfile_is_built_once_and_reused_by_content(tmp_path: Path, tmp_root: Path, image: str) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {image}\nRUN echo {time.time_ns()} > /built\n")

    async def body() -> list[str]:
        sandbox, stamps = DockerSandbox(tmp_root=tmp_root), []
        for _ in range(2):
            inst = await sandbox.open(spec(base=tmp_path, sandbox="docker", dockerfile="Dockerfile"))
            try:
                stamps.append((await inst.exec("cat /built")).stdout)
            finally:
                await inst.close()
        return stamps

    try:
        first, second = run(body())
    finally:
        _remove_images("localhost/anpord-build:")
    assert first == second and first.strip(), (first, second)  # one build: the same file


def _remove_images(prefix: str) -> None:
    """Remove the images a test made (their name starts with ``prefix``)."""
    from anpord.sandboxes._container import find_cli

    cli = find_cli()
    names = cli.run_sync("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    made = [n for n in names if n.startswith(prefix)]
    if made:
        cli.run_sync("rmi", "-f", *made)


CAPS_CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    timeout=60,
    max_concurrency=4,
    variants=[Variant(name="capped", sandbox="docker", image={image!r},
                      harness='command:bash -c "$ANPORD_PROMPT"', memory="128M", pids=32,
                      options={{"sandbox_size": "16M"}})],
)
"""
FORKER = """python3 -c '
import os, sys, time
for generation in range(9):
    if os.fork() and os.fork():
        break
else:
    sys.stdout.write("forked them all\\n")
time.sleep(60)
'"""
HOG = """python3 -c '
chunks = [b"x" * (16 << 20) for _ in range(64)]
print("allocated them all")
'"""
FILLER = "head -c 64000000 /dev/zero > /tmp/big && echo filled it"
WORKSPACE_FILLER = "head -c 64000000 /dev/zero > big && echo filled it"


@pytest.fixture
def run_root() -> Iterator[Path]:
    """A folder of its own for a run's trial folders, where the runner would put them anyway
    (/dev/shm when it can: a tmpfs, so the size cap is a mount): the run's containers are told
    from other runs' on this machine by their folders."""
    root = Path(tempfile.mkdtemp(prefix="runs-", dir=default_tmp_root()))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_caps_bind_in_a_run_each_breach_fails_naming_its_cap_and_the_others_pass(make_project: Any, image: str, run_root: Path) -> None:
    project = make_project({
        "evals/caps.eval.py": eval_file(f"""
            COMMANDS = {{"forker": {FORKER!r}, "hog": {HOG!r}, "filler": {FILLER!r},
                         "workspace": {WORKSPACE_FILLER!r}, "calm": "sleep 1; echo calm"}}

            @define_eval(each=list(COMMANDS), id=lambda row: row)
            async def test(t, row):
                await t.send(COMMANDS[row])
                t.check(t.reply, includes("calm"))
        """),
    }, config=CAPS_CONFIG.format(image=image))
    run_ = project.run(timeout=240, env={"ANPORD_SANDBOX_TMP": str(run_root)})
    assert run_.code == 1, run_.output
    got = {row: run_.result(f"caps/{row}") for row in ("forker", "hog", "filler", "workspace", "calm")}
    assert got["calm"]["verdict"] == "passed", got["calm"]
    for row, reason in (("forker", "process limit reached: 32 processes"),
                        ("hog", "memory limit reached: 128 MiB"),
                        ("filler", "workspace size limit reached: 16 MiB"),
                        ("workspace", "workspace size limit reached: 16 MiB")):
        assert got[row]["verdict"] == "failed" and got[row]["error"]["kind"] == "limit", got[row]
        assert reason in got[row]["reason"], got[row]["reason"]
    assert not any(w in run_.output for w in ("forked them all", "allocated them all", "filled it"))
    assert containers(under=run_root) == [], run_.output
    assert list(run_root.iterdir()) == []


def test_no_usable_container_cli_voids_the_trials_with_one_line(make_project: Any, image: str) -> None:
    project = make_project({
        "evals/one.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("echo hi")
        """),
    }, config=CAPS_CONFIG.format(image=image))
    run_ = project.run(timeout=60, env={"ANPORD_CONTAINER_CLI": "no-such-docker"})
    line = run_.result("one")
    assert line["verdict"] == "void", line
    assert line["reason"] == (
        "ANPORD_CONTAINER_CLI=no-such-docker: no such program; install it or set "
        "ANPORD_CONTAINER_CLI to docker or podman"
    ), line["reason"]
    assert "Traceback" not in run_.output


HOLDER = """
import asyncio, sys
sys.path[:0] = [{tests!r}]
from sandbox_support import spec
from anpord.sandboxes._container import LABEL, OWNER_LABEL
from anpord.sandboxes._owner import instance_prefix
from anpord.sandboxes.docker import DockerSandbox

async def main():
    inst = await DockerSandbox(tmp_root={root!r}).open(spec(sandbox="docker", image={image!r}))
    # As a start that finished after its trial was given up on: the runner's label, no note.
    stray = inst.container + "-late"
    code, _, err = await inst.cli.run("run", "-d", "--name", stray, "--label", f"{{LABEL}}=1",
                                      "--label", f"{{OWNER_LABEL}}={{instance_prefix()}}",
                                      "--entrypoint", "sleep", {image!r}, "infinity")
    assert code == 0, err
    print(inst.container, stray, flush=True)
    {then}

asyncio.run(main())
"""


def _holder(image: str, root: Path, then: str, **popen: Any) -> subprocess.Popen[str]:
    script = HOLDER.format(tests=str(Path(__file__).parent), root=str(root), image=image, then=then)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE,
                            text=True, env=env, **popen)


def _hold_and_kill(image: str, root: Path, kill_watchdog: bool) -> list[str]:
    """Start a runner that opens a docker instance and starts a stray container of its own,
    SIGKILL it (and its watchdog too, when asked) and return the two containers' names."""
    holder = _holder(image, root, "await asyncio.sleep(600)", start_new_session=not kill_watchdog)
    try:
        assert holder.stdout is not None
        names = holder.stdout.readline().split()
        assert len(names) == 2 and set(names) <= set(containers()), names
    finally:
        if kill_watchdog:  # the watchdog is in a session of its own: found by its parent
            for pid in subprocess.run(["pgrep", "-P", str(holder.pid)], capture_output=True,
                                      text=True).stdout.split():
                os.kill(int(pid), signal.SIGKILL)
        holder.kill()
        holder.wait()
    return names


def test_the_containers_of_a_sigkilled_runner_are_removed_by_its_watchdog(image: str, tmp_path: Path) -> None:
    root = tmp_path / "roots"
    root.mkdir()
    names = _hold_and_kill(image, root, kill_watchdog=False)
    deadline = time.monotonic() + 30
    while (set(names) & set(containers()) or list(root.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not set(names) & set(containers()) and list(root.iterdir()) == []


def test_what_a_runner_and_its_watchdog_both_left_is_removed_by_the_next_sweep(image: str, tmp_path: Path) -> None:
    root = tmp_path / "roots"
    root.mkdir()
    names = _hold_and_kill(image, root, kill_watchdog=True)
    time.sleep(1)
    assert set(names) <= set(containers())  # nobody is left to remove them
    sweep_stale(root)
    assert not set(names) & set(containers())
    assert list(root.iterdir()) == []


def test_a_runner_removes_every_container_labelled_as_its_own_as_it_exits(image: str, tmp_path: Path) -> None:
    root = tmp_path / "roots"
    root.mkdir()
    holder = _holder(image, root, "await inst.close()")
    out, _ = holder.communicate(timeout=120)
    assert holder.returncode == 0
    names = out.split()
    assert len(names) == 2 and not set(names) & set(containers()), names
    assert list(root.iterdir()) == []


RUN_CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    timeout=60,
    variants=[Variant(name="boxed", sandbox="docker", image={image!r},
                      harness='command:bash -c "$ANPORD_PROMPT"')],
)
"""


def test_a_run_puts_every_turn_context_exec_and_the_verifiers_in_the_container(make_project: Any, image: str, run_root: Path) -> None:
    project = make_project({
        "evals/boxed.eval.py": eval_file("""
            from anpord.verifiers import command

            async def validate(context):
                inside = await context.exec("cat /proc/sys/kernel/hostname; cat seed.txt")
                return (
                    inside.stdout.split() == ["sandbox", "seed"]
                    and context.read_text("out.txt").strip() == "sandbox"  # copied to the host's view
                    and isinstance(context.workspace, Path),
                    f"saw {inside.stdout!r}",
                )

            case = define_eval(
                prompt="cat /proc/sys/kernel/hostname > out.txt; echo wrote it",
                source=files({"seed.txt": "seed"}),
                validate=[command("grep -qx sandbox /proc/sys/kernel/hostname && test -s out.txt"), validate],
            )
        """),
    }, config=RUN_CONFIG.format(image=image))
    run_ = project.run(timeout=180, env={"ANPORD_SANDBOX_TMP": str(run_root)})
    assert run_.code == 0, run_.output
    assert run_.result("boxed")["verdict"] == "passed"
    assert containers(under=run_root) == [] and list(run_root.iterdir()) == []


def test_files_go_in_and_out_through_the_protocol_inside_the_workspace_and_beyond_it(image: str, tmp_root: Path, tmp_path: Path) -> None:
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "sub" / "a.txt").write_text("a")

    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image))
        try:
            assert inst.host_paths and await inst.workspace_view() == inst.workspace
            await inst.write_file("notes/n.txt", b"in the workspace")
            await inst.write_file("/tmp/t.bin", b"\x00\x01 in the container's /tmp")
            await inst.copy_in(tmp_path / "tree", "/tmp/tree")
            seen = await inst.exec("cat notes/n.txt; echo; cat /tmp/tree/sub/a.txt; echo; wc -c < /tmp/t.bin")
            assert seen.stdout.split("\n")[:3] == ["in the workspace", "a", "26"], seen
            assert await inst.read_file("/tmp/t.bin") == b"\x00\x01 in the container's /tmp"
            assert (await inst.read_file("/etc/passwd")).startswith(b"root:")  # the image's own
            await inst.copy_out("/tmp/tree", tmp_path / "back")
            assert (tmp_path / "back" / "sub" / "a.txt").read_text() == "a"
            with pytest.raises(FileNotFoundError):
                await inst.read_file("/tmp/missing")
        finally:
            await inst.close()

    run(body())


DOWN_DOCKER = """#!/bin/sh
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
exit 1
"""


def test_a_docker_whose_daemon_is_down_is_named_with_the_fix_and_podman_is_used_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from anpord.sandboxes import _container

    stub = tmp_path / "bin" / "docker"  # a docker client with no daemon behind it
    stub.parent.mkdir()
    stub.write_text(DOWN_DOCKER)
    stub.chmod(0o755)
    monkeypatch.setenv("ANPORD_CONTAINER_CLI", str(stub))
    down = _container._probe()
    assert down == (
        f"the Docker daemon is not reachable through {stub}: Cannot connect to the Docker daemon at "
        "unix:///var/run/docker.sock. Is the docker daemon running?; start it (systemctl start docker) "
        "or set ANPORD_CONTAINER_CLI=podman"
    ), down
    monkeypatch.delenv("ANPORD_CONTAINER_CLI")
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    chosen = _container._probe()  # docker first on PATH, but down: podman answers
    assert isinstance(chosen, _container.ContainerCLI) and chosen.podman, chosen


def test_the_variants_caps_are_the_containers_limits(image: str, tmp_root: Path) -> None:
    async def body() -> None:
        variant = {"sandbox": "docker", "image": image, "memory": "64M", "pids": 16, "cpus": 0.5}
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(**variant))
        try:
            seen = await inst.exec(
                "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max "
                "/sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us 2>/dev/null "
                "|| cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max"
            )
            values = seen.stdout.split()
            assert values[:2] == [str(64 << 20), "16"], seen
            assert int(values[2]) * 2 == int(values[3]), seen  # half a CPU's time
        finally:
            await inst.close()

    run(body())


def test_the_container_settings_of_a_variant_are_checked_and_recorded() -> None:
    from anpord.authoring import Variant

    with pytest.raises(TypeError, match="Variant image= must be a string, got int"):
        Variant(image=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Variant cpus= must be a positive number of CPUs, got 0"):
        Variant(cpus=0)
    shown = Variant(sandbox="docker", image="python:3.12", memory="2G", cpus=1.5).snapshot()
    assert (shown["image"], shown["memory"], shown["cpus"]) == ("python:3.12", "2G", 1.5)
    assert "dockerfile" not in shown and "image" not in Variant().snapshot()  # only what is set


def test_an_image_without_bash_is_a_set_up_error_naming_it(tmp_root: Path, tmp_path: Path) -> None:
    from anpord.sandboxes._container import find_cli

    cli = find_cli()
    sleep = Path("/usr/bin/sleep")
    libs = subprocess.run(["ldd", str(sleep)], capture_output=True, text=True).stdout.split()
    members = [str(sleep), *(w for w in libs if w.startswith("/") and os.path.exists(w))]
    subprocess.run(["tar", "--hard-dereference", "-chf", str(tmp_path / "root.tar"), *members],
                   check=True, capture_output=True)
    name = "localhost/anpord-test-no-bash:1"
    subprocess.run([cli.path, "import", "--change", f"LABEL {LABEL}=1", str(tmp_path / "root.tar"), name],
                   check=True, capture_output=True, env=cli.env)

    async def body() -> None:
        inst = await DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=name))
        try:
            with pytest.raises(SandboxError) as caught:
                await inst.exec("true")
            text = str(caught.value)
            assert text.startswith(f"the {cli.name} sandbox could not start the program: "), text
            assert "bash" in text and "\n" not in text, text
        finally:
            await inst.close()

    try:
        run(body())
    finally:
        _remove_images(name)


# The container CLI, but it says in a file when it starts a container (``run``) or looks at one
# (``inspect``), and then, when told to hold, waits for the test's go.
HELD_CLI = """#!/bin/bash
if [ "$1" = {step} ]; then
  : > {flag}
  while [ ! -e {go} ]; do sleep 0.05; done
fi
exec {real} "$@"
"""


@pytest.mark.parametrize("step", ["run", "inspect"])
def test_a_trial_cancelled_while_its_container_starts_leaves_no_container(
    image: str, tmp_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    from anpord.sandboxes import _container

    real = _container.find_cli()
    flag, go = tmp_path / "held", tmp_path / "go"
    held = tmp_path / "held-cli"
    held.write_text(HELD_CLI.format(step=step, flag=flag, go=go, real=real.path))
    held.chmod(0o755)
    monkeypatch.setattr(_container, "_found", [_container.ContainerCLI(str(held), real.podman, real.env)])
    if step == "run":
        go.touch()  # the start goes on at once: cancelled once the engine lists the container

    async def body() -> None:
        opening = asyncio.ensure_future(DockerSandbox(tmp_root=tmp_root).open(spec(sandbox="docker", image=image)))
        while not opening.done() and (not flag.exists() or not containers(under=tmp_root)):
            await asyncio.sleep(0.05)
        assert step == "run" or not opening.done(), opening  # an inspect is held: not done yet
        go.touch()
        # Given up on as the engine has made the container: the start's CLI may still be running
        # (``run``: it starts it now) or be over and the runner looking at it (``inspect``).
        opening.cancel()
        try:
            inst = await opening
        except asyncio.CancelledError:
            return
        await inst.close()  # the start was over and nothing awaited since: it opened in time

    run(body())
    assert containers(under=tmp_root) == []
