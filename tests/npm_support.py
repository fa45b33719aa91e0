"""A pinned CLI from npm for the tests that run the real thing, installed into a cache folder on
first use: one installer at a time (a lock), into a temporary folder renamed in place, so a half
install never shows."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path


def npm_program(package: str, version: str, folder: str, program: str) -> Path:
    """``program`` (a path under the install's folder) of ``package@version``, installed under
    ``<cache>/anpord-tests/<folder>-<version>``."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "anpord-tests"
    target = cache / f"{folder}-{version}"
    binary = target / program
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            partial = cache / f".{folder}-{version}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(partial),
                                   f"{package}@{version}"],
                                  capture_output=True, text=True, timeout=900, check=False)
            assert done.returncode == 0, f"npm install failed:\n{done.stdout}\n{done.stderr}"
            partial.rename(target)
    assert binary.exists(), f"{binary} missing after npm install"
    return binary
