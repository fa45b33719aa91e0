"""What ``sweep_stale()`` costs at the start of a command: with nothing to sweep, and with 100
instance folders left by a runner killed together with its watchdog.

    python bench/sweep_stale.py [--leftovers 100] [--files 20] [--tmp DIR]

The leftovers are made as a run makes them: named for a runner that is gone (a real process
that has exited), holding a workspace of ``--files`` small files, HOME and state folders, and —
as root, in memory — each a size-capped tmpfs of its own. The place also holds 50 unrelated
entries, as a shared /dev/shm does. Figures are wall-clock ms (median of 200 sweeps for the
empty case, one sweep for the leftovers).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def dead_owner() -> str:
    """The name prefix of a runner that has exited."""
    from anpord.sandboxes._watchdog import boot_id, start_time

    proc = subprocess.Popen(["sleep", "0.2"])
    started = start_time(proc.pid)
    proc.wait()
    return f"anpord-{proc.pid}-{started}-{boot_id()}-"


def make_leftovers(place: Path, count: int, files: int) -> None:
    from anpord.sandboxes._size import DEFAULT_SIZE, mount_capped

    prefix = dead_owner()
    for i in range(count):
        root = place / f"{prefix}{i:08d}"
        root.mkdir()
        mount_capped(root, DEFAULT_SIZE)
        for sub in ("workspace/src", "home", "state", "tmp"):
            (root / sub).mkdir(parents=True)
        for j in range(files):
            (root / "workspace" / "src" / f"m{j}.py").write_text("x = 1\n" * 20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leftovers", type=int, default=100)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--tmp", default="/dev/shm")
    args = parser.parse_args()
    from anpord.sandboxes import sweep_stale

    with tempfile.TemporaryDirectory(prefix="anpord-bench-sweep-", dir=args.tmp) as tmp:
        place = Path(tmp)
        for i in range(50):
            (place / f"unrelated-{i}").mkdir()
        times = []
        for _ in range(200):
            started = time.perf_counter()
            assert sweep_stale(place) == 0
            times.append((time.perf_counter() - started) * 1000)
        print(f"sweep_stale() in {args.tmp}, 50 unrelated entries, as uid {os.geteuid()}")
        print(f"  nothing to sweep: median {statistics.median(times):.3f} ms")
        make_leftovers(place, args.leftovers, args.files)
        mounted = sum(os.path.ismount(p) for p in place.iterdir())
        started = time.perf_counter()
        removed = sweep_stale(place)
        took = (time.perf_counter() - started) * 1000
        print(
            f"  {args.leftovers} leftovers ({args.files} files each, {mounted} tmpfs mounts): "
            f"{took:.1f} ms ({took / max(removed, 1):.2f} ms per folder), removed {removed}"
        )
        left = [p.name for p in place.iterdir() if not p.name.startswith("unrelated-")]
        if removed != args.leftovers or left:
            print(f"  left behind: {left}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
