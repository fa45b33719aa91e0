"""A runner that exits without closing its trials (a forced exit, or a plain sys.exit) still
leaves no process and no folder behind: cleanup_all() runs at exit and before os._exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proc_support import wait_until
from sandbox_support import KINDS, live_with

SCRIPT = """
import asyncio, os, sys
from pathlib import Path
from anpord.authoring import Variant, files
from anpord.sandboxes import SandboxSpec, cleanup_all
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox

def sleeping(token):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\\0")[:2] == [b"sleep", token.encode()]:
                    found.append(pid)
        except OSError:
            pass
    return found

async def main(kind, how, token, roots):
    sandbox = LocalSandbox(tmp_root=Path(roots)) if kind == "local" else BwrapSandbox(tmp_root=Path(roots))
    inst = await sandbox.open(SandboxSpec(Variant(), files({"a.txt": "a"})))
    await inst.spawn(["bash", "-c", f"(setsid sleep {token} &); sleep {token}"], env=inst.environment())
    while len(sleeping(token)) < 2:  # both jobs started
        await asyncio.sleep(0.02)
    print("running", flush=True)
    if how == "forced":
        cleanup_all()
        os._exit(130)
    os._exit(0) if how == "killed" else sys.exit(3)

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["forced", "exit"])
def test_nothing_outlives_a_runner_that_exits_without_closing(kind: str, how: str, tmp_root: Path) -> None:
    token = f"{6000 + os.getpid() % 1000}.{len(kind)}{len(how)}"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), kind, how, token, str(tmp_root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == "running\n", done.stderr
    # Were they left behind, they would sleep for well over an hour.
    wait_until(lambda: live_with(token) == [], "the sandbox's processes to be gone")
    # tmp_root (fixture) checks that the instance folder is gone.
