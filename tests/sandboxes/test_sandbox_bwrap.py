"""The bwrap sandbox holds: the system read-only, the host's HOME and files out of sight, the
network closed unless opened, its own PID namespace — and a missing bwrap is a clear error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from proc_support import wait_until
from sandbox_support import Listener, run, spec

from anpord.authoring import files
from anpord.sandboxes import ExecResult, SandboxError
from anpord.sandboxes.bwrap import BwrapSandbox

REPO = Path(__file__).resolve().parents[2]


def bwrap_result(tmp_root: Path, cmd: str, **variant: object) -> ExecResult:
    async def go() -> ExecResult:
        inst = await BwrapSandbox(tmp_root=tmp_root).open(spec(files({"in.txt": "x"}), **variant))
        try:
            return await inst.exec(cmd, timeout=30)
        finally:
            await inst.close()

    return run(go())


def bwrap_exec(tmp_root: Path, cmd: str, **variant: object) -> str:
    """The command's stdout."""
    return bwrap_result(tmp_root, cmd, **variant).stdout


def test_bwrap_is_installed_where_the_tests_run() -> None:
    # No skips: CI installs bubblewrap (apt-get install bubblewrap); a missing one must fail here.
    assert os.access(BwrapSandbox().binary, os.X_OK), "bubblewrap is not installed"


def test_writing_to_etc_or_the_system_fails(tmp_root: Path) -> None:
    out = bwrap_exec(
        tmp_root,
        "for p in /etc/anpord-escape /usr/anpord-escape /anpord-escape /bin/anpord-escape; do "
        "  (echo pwned > $p) 2>/dev/null && echo WROTE $p; done; "
        "(echo pwned >> /etc/passwd) 2>/dev/null && echo WROTE passwd; echo checked",
    )
    assert out == "checked\n", out
    for p in ("/etc/anpord-escape", "/usr/anpord-escape", "/anpord-escape"):
        assert not os.path.exists(p)
    assert "pwned" not in Path("/etc/passwd").read_text()


def test_the_host_home_is_not_visible_nor_writable(tmp_root: Path) -> None:
    host_home = Path.home()
    marker = host_home / f".anpord-escape-{os.getpid()}"
    out = bwrap_exec(
        tmp_root,
        f"ls -A {host_home} 2>/dev/null | head -3; (echo pwned > {marker}) 2>/dev/null && echo WROTE; "
        f'echo "home=$HOME"; echo checked',
    )
    assert "WROTE" not in out and not marker.exists()
    assert out.endswith("checked\n") and f"home={host_home}\n" not in out
    # The host's HOME holds files; none of them was listed.
    listed = out.split("home=")[0].split()
    assert not set(listed) & set(os.listdir(host_home))


def test_files_outside_the_sandbox_cannot_be_read(tmp_root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET")
    out = bwrap_exec(
        tmp_root, f"cat {secret} 2>&1; ls {REPO} 2>&1; cat /etc/shadow 2>&1; echo checked"
    )
    assert "TOP-SECRET" not in out
    assert "pyproject.toml" not in out  # the project folder is not there
    assert out.endswith("checked\n")


def test_a_mount_is_visible_read_only(tmp_root: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "tool.txt").write_text("tool")
    out = bwrap_exec(
        tmp_root,
        f"cat {shared}/tool.txt; (echo x > {shared}/new) 2>/dev/null || echo read-only",
        mounts=[str(shared)],
    )
    assert out == "toolread-only\n"
    assert not (shared / "new").exists()


def test_a_missing_mount_is_a_sandbox_error(tmp_root: Path, tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"mount .*does not exist"):
        run(BwrapSandbox(tmp_root=tmp_root).open(spec(mounts=[str(tmp_path / "nope")])))


def test_exec_that_bwrap_could_not_set_up_is_a_sandbox_error(tmp_root: Path, tmp_path: Path) -> None:
    # Not an exit 1 of the command: a check that never ran must not read as one that failed.
    shared = tmp_path / "shared"
    shared.mkdir()

    async def go() -> None:
        inst = await BwrapSandbox(tmp_root=tmp_root).open(spec(mounts=[str(shared)]))
        try:
            assert (await inst.exec("exit 1")).exit_code == 1
            shared.rmdir()
            with pytest.raises(SandboxError, match="could not start the program: bwrap: Can't find"):
                await inst.exec("true")
        finally:
            await inst.close()

    run(go())


def test_the_network_is_closed_unless_the_variant_opens_it(
    tmp_root: Path, listener: Listener
) -> None:
    probe = (
        f"(echo hello-from-sandbox > /dev/tcp/127.0.0.1/{listener.port}) 2>/dev/null && echo CONNECTED; "
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener.port}), 2)' "
        "2>/dev/null && echo CONNECTED; echo checked"
    )
    out = bwrap_exec(tmp_root, probe)
    assert out == "checked\n", out
    assert listener.connections == 0 and listener.received == b""
    # Control: with network=True the same probe reaches the listener, so the test can see one.
    out = bwrap_exec(tmp_root, probe, network=True)
    assert "CONNECTED" in out
    wait_until(lambda: b"hello-from-sandbox" in listener.received, "the listener to get the probe's line")


def test_own_pid_namespace_and_private_tmp(tmp_root: Path, tmp_path: Path) -> None:
    host_tmp_file = Path("/tmp") / f"anpord-host-{os.getpid()}"
    host_tmp_file.write_text("host")
    try:
        out = bwrap_exec(
            tmp_root,
            f"ls /proc | grep -c '^[0-9]'; test -e {host_tmp_file} && echo SEES-HOST-TMP; "
            "echo mine > /tmp/mine; cat /tmp/mine; cut -d: -f1 /etc/passwd | sort | tr '\\n' ' '",
        )
    finally:
        host_tmp_file.unlink()
    lines = out.splitlines()
    assert int(lines[0]) < 10  # a handful of processes, not the host's
    assert "SEES-HOST-TMP" not in out
    assert lines[1] == "mine"
    assert set(lines[2].split()) <= {"root", "agent", "nobody"}  # the host's users are not listed
    assert not Path("/tmp/mine").exists()


def test_workspace_and_home_are_writable(tmp_root: Path) -> None:
    res = bwrap_result(tmp_root, 'echo w > out.txt && echo h > "$HOME/h" && cat out.txt "$HOME/h"')
    assert (res.exit_code, res.stdout) == (0, "w\nh\n"), res.stderr


def test_a_missing_bwrap_binary_is_a_clear_sandbox_error(tmp_root: Path) -> None:
    sandbox = BwrapSandbox(binary="/nonexistent/bwrap", tmp_root=tmp_root)
    with pytest.raises(SandboxError) as info:
        run(sandbox.open(spec()))
    assert str(info.value) == (
        "bubblewrap not found at /nonexistent/bwrap: install it (apt-get install bubblewrap) "
        "or use sandbox='local'"
    )


def test_a_bwrap_that_cannot_sandbox_is_a_clear_sandbox_error(
    tmp_root: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(
        SandboxError, match="bubblewrap cannot create a sandbox here: bwrap: No permissions"
    ):
        run(BwrapSandbox(binary=str(fake), tmp_root=tmp_root).open(spec()))


def test_python_runs_inside_with_tls_certificates(tmp_root: Path) -> None:
    res = bwrap_result(
        tmp_root,
        "python3 -c 'import ssl; c = ssl.create_default_context(); print(c.cert_store_stats()[\"x509_ca\"] > 0)'",
    )
    assert (res.exit_code, res.stdout) == (0, "True\n"), res.stderr
