"""A bwrap sandbox holds no privilege, whether anpord runs as root (as CI does) or not: no
capability, no write to kernel settings (/proc/sys, sysrq), the system, the host's HOME or the
project folder. As root, programs run as an unprivileged user of the host.

The unprivileged case runs in a child that drops root after importing what it needs (the
interpreter may live where that user cannot read)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sandbox_support import live_with, run, spec

from anpord.authoring import files
from anpord.sandboxes import bwrap
from anpord.sandboxes.bwrap import DEFAULT_SANDBOX_UID, BwrapSandbox, Privileges, _held_back

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
NOBODY = 65534

# Each line a probe: what a hostile agent would try first. Only successes print.
PROBES = r"""
grep -E '^(Uid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\t ' ' '
v=$(cat /proc/sys/fs/lease-break-time); (echo "$v" > /proc/sys/fs/lease-break-time) 2>/dev/null && echo WROTE lease-break-time
python3 -c 'open("/proc/sys/kernel/core_pattern", "w")' 2>/dev/null && echo OPENED core_pattern
python3 -c 'open("/proc/sysrq-trigger", "w")' 2>/dev/null && echo OPENED sysrq-trigger
python3 -c 'open("/proc/sys/vm/drop_caches", "w")' 2>/dev/null && echo OPENED drop_caches
for p in /usr/anpord-probe /etc/anpord-probe /anpord-probe "$HOST_HOME/anpord-probe" "$PROJECT/anpord-probe"; do
  (echo x > "$p") 2>/dev/null && echo "WROTE $p"
done
(echo x >> /etc/passwd) 2>/dev/null && echo WROTE /etc/passwd
echo x > "$HOME/ok" && echo x > ./ok && echo x > /tmp/ok && echo writable-own-folders
echo probed
"""


def probe_findings(out: str) -> tuple[dict[str, str], list[str]]:
    """(the status fields, every probe that succeeded) from the probe's output."""
    status = dict(
        line.split(": ", 1)
        for line in out.splitlines()
        if line.split(":")[0] in ("Uid", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs")
    )
    breaches = [line for line in out.splitlines() if line.startswith(("WROTE", "OPENED"))]
    return status, breaches


def assert_unprivileged(out: str, uid: int) -> None:
    assert out.endswith("writable-own-folders\nprobed\n"), out
    status, breaches = probe_findings(out)
    assert breaches == []
    for cap in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert int(status[cap], 16) == 0, f"{cap} {status[cap]}"
    assert status["Uid"].split() == [str(uid)] * 4
    assert status["NoNewPrivs"] == "1"


def test_the_suite_runs_as_root() -> None:
    # As CI does: the root case is what most needs holding. The other is tested below by
    # dropping to nobody in a child process.
    assert os.geteuid() == 0, (
        "run the sandbox tests as root (the unprivileged case drops to nobody itself)"
    )


def test_as_root_a_sandboxed_program_holds_no_privilege(shm_root: Path) -> None:
    lease = Path("/proc/sys/fs/lease-break-time").read_text()
    core = Path("/proc/sys/kernel/core_pattern").read_text()

    async def go() -> str:
        inst = await BwrapSandbox(tmp_root=shm_root).open(spec(files({"a.txt": "a"})))
        try:
            res = await inst.exec(PROBES, env={"HOST_HOME": str(Path.home()), "PROJECT": str(REPO)})
            return res.stdout
        finally:
            await inst.close()

    out = run(go())
    assert_unprivileged(out, DEFAULT_SANDBOX_UID)
    for p in ("/usr/anpord-probe", "/etc/anpord-probe", "/anpord-probe"):
        assert not os.path.exists(p)
    assert not (Path.home() / "anpord-probe").exists() and not (REPO / "anpord-probe").exists()
    assert Path("/proc/sys/fs/lease-break-time").read_text() == lease
    assert Path("/proc/sys/kernel/core_pattern").read_text() == core


def test_as_root_the_host_sees_an_unprivileged_user(shm_root: Path) -> None:
    # Not just what the program is told: the host's own view of the process.
    token = f"{5000 + os.getpid() % 1000}.{os.getpid() % 89}"

    def sleeping() -> list[tuple[str, str]]:
        seen = []
        for pid in live_with(token):
            try:
                fields = dict(
                    line.split(":", 1)
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                )
            except OSError:
                continue
            if fields["Name"].strip() == "sleep":
                seen.append((fields["Uid"].split()[0], fields["CapEff"].strip()))
        return seen

    async def go() -> list[tuple[str, str]]:
        inst = await BwrapSandbox(tmp_root=shm_root).open(spec())
        try:
            proc = await inst.spawn(["sleep", token], env=inst.environment())
            deadline = time.monotonic() + 60
            while not (seen := sleeping()) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await inst.kill_tree(proc)
            return seen
        finally:
            await inst.close()

    assert run(go()) == [(str(DEFAULT_SANDBOX_UID), "0000000000000000")]


def test_as_root_the_probe_says_who_programs_run_as() -> None:
    privileges = run(BwrapSandbox().privileges())
    assert (privileges.mode, privileges.uid, privileges.host_uid) == (
        "host-user",
        DEFAULT_SANDBOX_UID,
        DEFAULT_SANDBOX_UID,
    )
    assert privileges.description == (
        f"uid {DEFAULT_SANDBOX_UID} of the host, no capabilities, no user namespaces"
    )


# Each line a way to regain capabilities in a user namespace of one's own; only successes print.
NESTED = r"""
unshare -Urn true 2>/dev/null && echo NESTED unshare -Urn
unshare -U true 2>/dev/null && echo NESTED unshare -U
unshare -Ur sh -c 'grep CapEff /proc/self/status' 2>/dev/null
python3 - <<'PY'
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
print("NESTED ctypes unshare" if libc.unshare(0x10000000) == 0 else f"refused {os.strerror(ctypes.get_errno())}", flush=True)
pid = libc.syscall(56, 0x10000000 | signal.SIGCHLD, 0, 0, 0, 0)  # clone(2) itself, x86_64
if pid == 0:
    os.write(1, b"NESTED raw clone\n")
    os._exit(0)
print(f"refused {os.strerror(ctypes.get_errno())}" if pid < 0 else f"clone {os.waitpid(pid, 0)[1]}", flush=True)
PY
python3 -c 'import os; pid = os.fork(); os._exit(0) if pid == 0 else print("fork", os.waitpid(pid, 0)[1])'
sh -c 'echo threads and children still work' &
wait
echo probed
"""


def test_as_root_a_sandboxed_program_cannot_make_a_user_namespace(shm_root: Path) -> None:
    # In a user namespace of its own a program holds every capability again (raw and netfilter
    # sockets, mounts). As root there is no --disable-userns (the program has no user namespace
    # to disable them in): a seccomp filter refuses them.
    async def go() -> str:
        inst = await BwrapSandbox(tmp_root=shm_root).open(spec())
        try:
            return (await inst.exec(NESTED)).stdout
        finally:
            await inst.close()

    out = run(go())
    assert "NESTED" not in out and "CapEff" not in out, out
    assert out.endswith("threads and children still work\nprobed\n"), out
    assert out.count("refused Operation not permitted") == 2, out
    assert "fork 0" in out


def test_as_root_the_sandbox_user_is_configurable(
    shm_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANPORD_SANDBOX_UID", "4242")

    async def go() -> str:
        inst = await BwrapSandbox(tmp_root=shm_root).open(spec())
        try:
            return (await inst.exec("id -u; id -un; stat -c %u .")).stdout
        finally:
            await inst.close()

    assert run(go()) == "4242\nagent\n4242\n"


def test_files_the_runner_adds_later_are_the_sandbox_users_too(shm_root: Path) -> None:
    # A Python agent (running as root, in the runner) writes into the workspace; a check that
    # runs afterwards in the sandbox must be able to change those files.
    async def go() -> str:
        inst = await BwrapSandbox(tmp_root=shm_root).open(spec(files({"a.txt": "a"})))
        try:
            await inst.exec("true")
            (inst.workspace / "made" / "deep").mkdir(parents=True)
            (inst.workspace / "made" / "deep" / "f.txt").write_text("root wrote this")
            os.chmod(inst.workspace / "made" / "deep" / "f.txt", 0o600)
            return (
                await inst.exec(
                    "echo changed > made/deep/f.txt && touch made/new && cat made/deep/f.txt"
                )
            ).output
        finally:
            await inst.close()

    assert run(go()) == "changed\n"


def test_a_status_showing_capabilities_is_refused() -> None:
    # The probe fails closed: a bwrap whose program would keep a capability is not used.
    privileges = Privileges("host-user", NOBODY, NOBODY, NOBODY)
    clean = "Uid:\t65534\t65534\t65534\t65534\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\nCapAmb:\t0\n"
    assert _held_back(clean, privileges) is None
    assert _held_back(clean.replace("CapBnd:\t0", "CapBnd:\t000001ffffffffff"), privileges) == (
        "a sandboxed program would hold capabilities (CapBnd 000001ffffffffff)"
    )
    assert _held_back(clean.replace("65534", "0"), privileges) == (
        "a sandboxed program would run as uid 0 0 0 0, not 65534"
    )


# -- not root -----------------------------------------------------------------------------------

UNPRIVILEGED = """
import asyncio, ctypes, json, os, sys, concurrent.futures.thread, asyncio.subprocess, shutil, subprocess
from pathlib import Path
from anpord.authoring import Variant, files
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox
import anpord.sandboxes._size, anpord.sandboxes._owner, anpord.sandboxes._proc

roots, home, project, probes = sys.argv[1:5]
# Everything imported first: the interpreter's own files may sit where nobody can read.
os.setgroups([]); os.setgid(65534); os.setuid(65534)
os.environ["HOME"] = home

async def main():
    out = {}
    bwrap = BwrapSandbox(tmp_root=Path(roots))
    out["mode"] = (await bwrap.privileges()).mode
    inst = await bwrap.open(SandboxSpec(Variant(), files({"a.txt": "a"})))
    try:
        res = await inst.exec(probes, env={"HOST_HOME": home, "PROJECT": project})
        out["probes"] = res.stdout + res.stderr
    finally:
        await inst.close()
    # The size cap without root: measured, and the trial's processes killed when over.
    local = LocalSandbox(tmp_root=Path(roots))
    inst = await local.open(SandboxSpec(Variant(options={"sandbox_size": "4M"}), files({})))
    try:
        res = await inst.exec("head -c 8M /dev/zero > big; sleep 600; echo survived", timeout=120)
        out["capped"] = [res.exit_code, res.stdout, await inst.limit_exceeded(), not res.timed_out]
    finally:
        await inst.close()
    out["left"] = os.listdir(roots)
    print(json.dumps(out))

asyncio.run(main())
"""


def test_not_root_a_sandboxed_program_holds_no_privilege(tmp_path: Path) -> None:
    # Folders the unprivileged user owns: where instances go, its HOME, its project.
    base = Path("/dev/shm") / f"anpord-test-{os.getpid()}"
    dirs = [base, base / "roots", base / "home", base / "project"]
    for d in dirs:
        d.mkdir()
        os.chown(d, NOBODY, NOBODY)
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(UNPRIVILEGED), *map(str, dirs[1:]), PROBES],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["mode"] == "caller"
        assert_unprivileged(out["probes"], NOBODY)
        assert not (base / "home" / "anpord-probe").exists()
        assert not (base / "project" / "anpord-probe").exists()
        code, stdout, reason, by_the_watcher = out["capped"]  # not by the exec's timeout
        assert (code, stdout, by_the_watcher) == (-9, "", True)
        assert reason.startswith("workspace size limit reached: 4 MiB")
        assert out["left"] == []
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_as_root_without_setpriv_a_user_namespace_still_holds(
    shm_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine without setpriv (util-linux): the fallback is a user namespace, which leaves
    # the program uid 0 to the host, so /proc's settings must be read-only, and it says so.
    real_which = bwrap.shutil.which
    monkeypatch.setattr(bwrap, "_probed", {})  # probed again, on this machine without setpriv
    monkeypatch.setattr(
        bwrap.shutil,
        "which",
        lambda name, *a, **k: None if name == "setpriv" else real_which(name, *a, **k),
    )
    sandbox = BwrapSandbox(tmp_root=shm_root)
    privileges = run(sandbox.privileges())
    assert (privileges.mode, privileges.host_uid) == ("user-namespace", 0)
    assert "setpriv is not installed" in privileges.description

    async def go() -> str:
        inst = await sandbox.open(spec(files({"a.txt": "a"})))
        try:
            env = {"HOST_HOME": str(Path.home()), "PROJECT": str(REPO)}
            return (await inst.exec(PROBES, env=env)).stdout
        finally:
            await inst.close()

    assert_unprivileged(run(go()), DEFAULT_SANDBOX_UID)
